/* crcblk.h - the CRC-32 of every 64 KiB block of a buffer, taken in the
 * same pass as its SHA-256, so that the CRC of any range of the buffer
 * can later be had reading only the range's unaligned ends.
 *
 * Why: verify decodes each chunk on one core and replays the records on
 * another; the replay's record checksums read every byte the decoder
 * just wrote, and that pulls each chunk across cores (the decoder then
 * writes the next chunk into lines the other core holds: zstd took twice
 * the CPU). Its block checksums, computed while the chunk is hot in the
 * decoder's cache, give a record's checksum from its ends and the blocks
 * between, combined (zlib's crc32_combine). The CRC is the one the data
 * log's records carry: CRC-32 as gzip and zlib compute it. */
#ifndef CUTSNAP_CRCBLK_H
#define CUTSNAP_CRCBLK_H

#include <stddef.h>
#include <stdint.h>

#include "../crypto/sha.h"

#define CRCBLK_SIZE (64u << 10)

/* How many blocks len bytes have (the last one may be shorter). */
size_t crcblk_count(size_t len);
/* The SHA-256 of p[0, len) into sha, and the CRC-32 of each of its blocks
 * into tbl[0, crcblk_count(len)). 0, or -1 (the hash failed). */
int crcblk_sha(const uint8_t *p, size_t len, uint32_t *tbl,
    uint8_t sha[SHA_LEN]);
/* crc continued over p[a, b) (a <= b <= len): the blocks wholly inside
 * from tbl (as crcblk_sha filled it for p[0, len)), the ends read. */
uint32_t crcblk_range(uint32_t crc, const uint8_t *p, size_t len,
    const uint32_t *tbl, size_t a, size_t b);
/* crc continued over p[0, n), read (the data log's record checksum:
 * dl_rec_crc). */
uint32_t crcblk_bytes(uint32_t crc, const uint8_t *p, size_t n);

#endif
