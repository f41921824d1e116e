/* aead.h - the primitives behind encrypted repositories, through OpenSSL
 * (with sha.c and mac.c the only code that includes its headers):
 * AES-256-GCM with a fresh random nonce per message, HKDF-SHA256 and
 * scrypt. */
#ifndef CUTSNAP_AEAD_H
#define CUTSNAP_AEAD_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/err.h"

#define AEAD_KEY_LEN 32
#define AEAD_NONCE_LEN 12
#define AEAD_TAG_LEN 16
/* A sealed message: nonce | ciphertext | tag. */
#define AEAD_OVERHEAD (AEAD_NONCE_LEN + AEAD_TAG_LEN)

/* Seal in[0, n) into out (n + AEAD_OVERHEAD bytes; out + AEAD_NONCE_LEN
 * may be in, for sealing in place), binding aad[0, aadlen). */
int aead_seal(const uint8_t key[AEAD_KEY_LEN], const void *aad,
    size_t aadlen, const uint8_t *in, size_t n, uint8_t *out,
    struct cs_err *e);
/* Open in[0, n) (n >= AEAD_OVERHEAD) into out (n - AEAD_OVERHEAD bytes;
 * out may be in + AEAD_NONCE_LEN). -1 with e "authentication failed"
 * when the bytes, the key or the aad differ. */
int aead_open(const uint8_t key[AEAD_KEY_LEN], const void *aad,
    size_t aadlen, const uint8_t *in, size_t n, uint8_t *out,
    struct cs_err *e);

/* aead_open with the opened bytes split: the first n1 into out, the rest
 * where where(wctx, out) says, chosen from those first bytes (e.g. a
 * header saying whether the rest can go straight to its final place).
 * Nothing opened may be trusted, the first bytes included, unless this
 * returns 0. where NULL: all into out. */
typedef uint8_t *(*aead_where_fn)(void *wctx, const uint8_t *first);
int aead_open_split(const uint8_t key[AEAD_KEY_LEN], const void *aad,
    size_t aadlen, const uint8_t *in, size_t n, uint8_t *out, size_t n1,
    aead_where_fn where, void *wctx, struct cs_err *e);

/* HKDF-SHA256: AEAD_KEY_LEN bytes from key under the label info. */
int aead_hkdf(const uint8_t *key, size_t klen, const char *info,
    uint8_t out[AEAD_KEY_LEN], struct cs_err *e);

/* scrypt(pass, salt, N, r, p) into AEAD_KEY_LEN bytes (RFC 7914). */
int aead_scrypt(const void *pass, size_t passlen, const uint8_t *salt,
    size_t saltlen, uint64_t n, uint32_t r, uint32_t p,
    uint8_t out[AEAD_KEY_LEN], struct cs_err *e);
/* N, r, p valid for aead_scrypt (N a power of two from 2 to 2^22,
 * r and p from 1 to 32, memory 128*N*r within 1 GiB)? */
int aead_scrypt_valid(uint64_t n, uint32_t r, uint32_t p);

/* n random bytes from the OS (getrandom). */
int aead_random(void *p, size_t n, struct cs_err *e);

#endif
