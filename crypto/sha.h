/* sha.h - SHA-256 through OpenSSL's EVP API. The only module that includes
 * OpenSSL headers. */
#ifndef CUTSNAP_SHA_H
#define CUTSNAP_SHA_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/err.h"

#define SHA_LEN 32
#define SHA_HEX_LEN 65	/* 64 hex digits and a NUL */

struct sha_ctx;	/* opaque */

/* Returns a new context already initialised, or NULL (out of memory / EVP
 * failure). Free with sha_free (accepts NULL). */
struct sha_ctx *sha_new(void);
void sha_free(struct sha_ctx *c);
int sha_update(struct sha_ctx *c, const void *p, size_t n);	/* 0 / -1 */
/* Finalises c; c must not be updated again. */
int sha_final(struct sha_ctx *c, uint8_t out[SHA_LEN]);
/* The digest of everything fed so far, without disturbing c (copies the
 * state: O(1) in the amount hashed). */
int sha_peek(const struct sha_ctx *c, uint8_t out[SHA_LEN]);

int sha256_buf(const void *p, size_t n, uint8_t out[SHA_LEN]);
/* Hash exactly len bytes of fd from offset 0 using pread; -1 with e set
 * if the file is shorter or unreadable. */
int sha256_fd(int fd, uint64_t len, uint8_t out[SHA_LEN], struct cs_err *e);

void sha_hex(const uint8_t sha[SHA_LEN], char hex[SHA_HEX_LEN]);
/* Parses 64 hex digits; 0 / -1. */
int sha_unhex(const char *hex, uint8_t sha[SHA_LEN]);

#endif
