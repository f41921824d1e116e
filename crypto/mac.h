/* mac.h - HMAC-SHA256 through OpenSSL's EVP_MAC API and a constant-time
 * compare, for authenticated manifests. With sha.c, the only code that
 * includes OpenSSL headers. */
#ifndef CUTSNAP_MAC_H
#define CUTSNAP_MAC_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/err.h"

#define MAC_LEN 32
#define MAC_KEY_MIN 16		/* bytes: shorter keys are refused */
#define MAC_KEY_MAX 4096

/* HMAC-SHA256 of msg[0, n) under key[0, klen). 0, or -1 with e set. */
int mac_hmac_sha256(const void *key, size_t klen, const void *msg, size_t n,
    uint8_t out[MAC_LEN], struct cs_err *e);

/* 1 if a and b are equal, 0 if not; the time taken does not depend on
 * where they differ (CRYPTO_memcmp). */
int mac_equal(const uint8_t *a, const uint8_t *b, size_t n);

/* Overwrite secret memory so that the compiler cannot elide it. */
void mac_cleanse(void *p, size_t n);

/* Read a key file: MAC_KEY_MIN..MAC_KEY_MAX bytes, used as they are (a
 * trailing newline included). *key is malloc'ed; free it with
 * mac_key_free. -1 with e set: unreadable, too short or too long. */
int mac_key_load(const char *path, uint8_t **key, size_t *klen,
    struct cs_err *e);
void mac_key_free(uint8_t *key, size_t klen);	/* cleanses; NULL ok */

#endif
