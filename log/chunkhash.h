/* chunkhash.h - the SHA-256 of every fixed-size chunk of an append-only
 * file, kept up to date as bytes are appended.
 *
 * The file is cut at fixed offsets: chunk i is [i*size, (i+1)*size), the
 * last one possibly shorter. Appending never changes a finished chunk, so
 * its digest is computed once, when its last byte is appended, and the
 * chunks of any prefix [0, L) are the finished ones below L plus the
 * partial one, whose digest is a copy of the running state (sha_peek):
 * recording them at a snapshot marker costs O(1). The repository stores
 * each chunk under its digest, so a later snapshot copies only chunks it
 * has not seen: for an append-only file that is the appended tail. */
#ifndef CUTSNAP_CHUNKHASH_H
#define CUTSNAP_CHUNKHASH_H

#include <stddef.h>
#include <stdint.h>

#define CHUNK_SIZE_DEFAULT	(4u << 20)
#define CHUNK_SIZE_MIN		4096u		/* a page: chunks map on pages */
#define CHUNK_SIZE_MAX		(64u << 20)
#define CHUNK_MAX_COUNT		(1u << 20)	/* chunks of one file */

struct chunkhash;	/* opaque */

/* 1 if size is a power of two within [CHUNK_SIZE_MIN, CHUNK_SIZE_MAX]. */
int chunk_size_valid(uint64_t size);
/* The chunk size new data files use: CHUNK_SIZE_DEFAULT, or the test hook
 * CUTSNAP_CHUNK_SIZE=N when N is valid (small chunks let the tests cover
 * many-chunk files with little data). */
uint32_t chunk_size_default(void);
/* Chunks of a file of len bytes: ceil(len / size). */
uint64_t chunk_count(uint64_t len, uint32_t size);

/* NULL when out of memory. Free with chunkhash_free (NULL ok). */
struct chunkhash *chunkhash_new(uint32_t size);
void chunkhash_free(struct chunkhash *h);
/* Feed the next n bytes of the file. 0 / -1 (out of memory, EVP). */
int chunkhash_update(struct chunkhash *h, const void *p, size_t n);
uint32_t chunkhash_size(const struct chunkhash *h);
uint64_t chunkhash_len(const struct chunkhash *h);	/* bytes fed */
/* Finished chunks so far; the digest of finished chunk i < that count
 * (a pointer into h, valid until the next update). */
size_t chunkhash_nfull(const struct chunkhash *h);
const uint8_t *chunkhash_digest(const struct chunkhash *h, size_t i);
/* The digest of the bytes fed since the last boundary (the partial last
 * chunk), without disturbing h. 0 / -1. */
int chunkhash_peek(const struct chunkhash *h, uint8_t out[32]);

#endif
