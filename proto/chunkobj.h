/* chunkobj.h - the framed object of one chunk, as a repository with
 * compression stores it (store/object.c has the layout), made here so
 * that the store and an agent uploading its own chunks (agent/upload.c)
 * make the same bytes:
 *
 *   "CSO1" | u8 codec | 3 zero bytes | le64 plain length | payload
 *
 * codec CHUNKOBJ_STORED: the payload is the chunk itself;
 * codec CHUNKOBJ_ZSTD: zstd frames whose contents, one after the other,
 * are the chunk: one frame, or, for a chunk a snapshot stored as the
 * previous snapshot's object of it plus the bytes added since
 * (store/chunkdelta.c), a few. A single ZSTD_decompress call decodes
 * either. */
#ifndef CUTSNAP_CHUNKOBJ_H
#define CUTSNAP_CHUNKOBJ_H

#include <stddef.h>
#include <stdint.h>

#define CHUNKOBJ_MAGIC "CSO1"
#define CHUNKOBJ_HDR_LEN 16
#define CHUNKOBJ_STORED 0
#define CHUNKOBJ_ZSTD 1

/* The most bytes chunkobj_frame writes for a chunk of len bytes. */
size_t chunkobj_bound(size_t len);
/* The object of plain[0, len) into out (outsz >= chunkobj_bound(len)):
 * zstd-compressed when zstd is set and zstd makes it smaller, else
 * stored. Its length. */
size_t chunkobj_frame(int zstd, const uint8_t *plain, size_t len,
    uint8_t *out, size_t outsz);
/* The same for a chunk already in place at obj + CHUNKOBJ_HDR_LEN (obj
 * holds chunkobj_bound(len) bytes): the chunk stays where it is when it
 * is stored, saving its copy; compressing goes through scratch, and is
 * kept only when shorter than the chunk, so scratchsz >= len will do.
 * Its length. */
size_t chunkobj_frame_in_place(int zstd, uint8_t *obj, size_t len,
    uint8_t *scratch, size_t scratchsz);

/* The object header of a chunk of len plain bytes with codec, into
 * out[0, CHUNKOBJ_HDR_LEN). */
void chunkobj_header(uint8_t *out, int codec, size_t len);
/* plain[0, len) as one zstd frame, with the chunks' parameters, into
 * out[0, outsz): its length, or 0 when zstd failed (out too small). */
size_t chunkobj_zstd_frame(const uint8_t *plain, size_t len, uint8_t *out,
    size_t outsz);

/* The object-store key of the blob named hex (64 hex digits), the
 * bucket's image of a local repository's blobs/ab/<hex>: "blobs/ab/<hex>"
 * into out[0, outsz), CHUNKOBJ_KEY_MAX bytes being enough. 0, or -1 when
 * it did not fit. */
#define CHUNKOBJ_KEY_MAX 80
int chunkobj_key(const char *hex, char *out, size_t outsz);

#endif
