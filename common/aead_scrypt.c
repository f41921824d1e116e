/* aead_scrypt.c - scrypt for the repository's password key, from
 * libsodium (crypto_pwhash_scryptsalsa208sha256_ll: scrypt with any N, r,
 * p, RFC 7914's output). libsodium picks its SSE2 core at run time
 * (sodium_init) and derives the repositories' N=2^16, r=8 in about 0.6x
 * of OpenSSL's time here: the same key, so both are interchangeable (the
 * unit test checks them against each other and RFC 7914). */
#include <sodium.h>

#include "aead.h"

int
aead_scrypt(const void *pass, size_t passlen, const uint8_t *salt,
    size_t saltlen, uint64_t n, uint32_t r, uint32_t p,
    uint8_t out[AEAD_KEY_LEN], struct cs_err *e)
{
	if (!aead_scrypt_valid(n, r, p))
		return cs_errf(e, "invalid scrypt parameters N=%llu r=%u p=%u",
		    (unsigned long long)n, r, p);
	/* Idempotent and thread-safe: 1 once initialised, -1 on failure. */
	if (sodium_init() < 0)
		return cs_errf(e, "scrypt: libsodium failed to initialise");
	if (crypto_pwhash_scryptsalsa208sha256_ll(pass, passlen, salt, saltlen,
	    n, r, p, out, AEAD_KEY_LEN) != 0)
		return cs_errno(e, "scrypt N=%llu r=%u p=%u",
		    (unsigned long long)n, r, p);
	return 0;
}
