/* aead_int.h - between aead.c and aead_scrypt.c. */
#ifndef CUTSNAP_AEAD_INT_H
#define CUTSNAP_AEAD_INT_H

#include "aead.h"

#if defined(__SSE2__)
#define AEAD_SCRYPT_SSE2 1
/* scrypt with SSE2 (aead_scrypt.c): the same output as OpenSSL's;
 * parameters checked by the caller. */
int aead_scrypt_sse2(const void *pass, size_t passlen, const uint8_t *salt,
    size_t saltlen, uint64_t n, uint32_t r, uint32_t p,
    uint8_t out[AEAD_KEY_LEN], struct cs_err *e);
#endif

#endif
