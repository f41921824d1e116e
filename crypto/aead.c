/* aead.c - AES-256-GCM, HKDF and scrypt through OpenSSL's EVP APIs. */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "aead.h"

int
aead_random(void *p, size_t n, struct cs_err *e)
{
	size_t off = 0;
	ssize_t k;

	while (off < n) {
		k = getrandom((uint8_t *)p + off, n - off, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return cs_errno(e, "getrandom");
		off += (size_t)k;
	}
	return 0;
}

/* One GCM pass: enc 1 seals, 0 opens; the tag is written or checked.
 * The output's first n1 bytes go to out, the rest to where(wctx, out)
 * when where is set (else on after them in out). */
static int
gcm(int enc, const uint8_t key[AEAD_KEY_LEN], const uint8_t *nonce,
    const void *aad, size_t aadlen, const uint8_t *in, size_t n,
    uint8_t *out, size_t n1, aead_where_fn where, void *wctx, uint8_t *tag,
    struct cs_err *e)
{
	EVP_CIPHER_CTX *c;
	uint8_t *rest;
	int len, ok = 0;

	if (n > INT32_MAX || aadlen > INT32_MAX)
		return cs_errf(e, "message too large to seal");
	if (n1 > n)
		n1 = n;
	if ((c = EVP_CIPHER_CTX_new()) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	ok = EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL,
	    enc) == 1 &&
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, AEAD_NONCE_LEN,
	    NULL) == 1 &&
	    EVP_CipherInit_ex(c, NULL, NULL, key, nonce, enc) == 1 &&
	    (aadlen == 0 || EVP_CipherUpdate(c, NULL, &len, aad,
	    (int)aadlen) == 1) &&
	    (n1 == 0 || EVP_CipherUpdate(c, out, &len, in, (int)n1) == 1);
	rest = out + n1;
	if (ok && where != NULL && n > n1)
		rest = where(wctx, out);
	if (ok)
		ok = n == n1 || EVP_CipherUpdate(c, rest, &len, in + n1,
		    (int)(n - n1)) == 1;
	if (ok && !enc)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, AEAD_TAG_LEN,
		    tag) == 1;
	if (ok)
		ok = EVP_CipherFinal_ex(c, rest + (n - n1), &len) == 1;
	if (ok && enc)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, AEAD_TAG_LEN,
		    tag) == 1;
	EVP_CIPHER_CTX_free(c);
	if (!ok)
		return cs_errf(e, enc ? "aes-256-gcm failed" :
		    "authentication failed");
	return 0;
}

int
aead_seal(const uint8_t key[AEAD_KEY_LEN], const void *aad, size_t aadlen,
    const uint8_t *in, size_t n, uint8_t *out, struct cs_err *e)
{
	uint8_t nonce[AEAD_NONCE_LEN];

	if (aead_random(nonce, sizeof(nonce), e) < 0)
		return -1;
	if (gcm(1, key, nonce, aad, aadlen, in, n, out + AEAD_NONCE_LEN, n,
	    NULL, NULL, out + AEAD_NONCE_LEN + n, e) < 0)
		return -1;
	memcpy(out, nonce, AEAD_NONCE_LEN);
	return 0;
}

int
aead_open(const uint8_t key[AEAD_KEY_LEN], const void *aad, size_t aadlen,
    const uint8_t *in, size_t n, uint8_t *out, struct cs_err *e)
{
	return aead_open_split(key, aad, aadlen, in, n, out, n, NULL, NULL, e);
}

int
aead_open_split(const uint8_t key[AEAD_KEY_LEN], const void *aad,
    size_t aadlen, const uint8_t *in, size_t n, uint8_t *out, size_t n1,
    aead_where_fn where, void *wctx, struct cs_err *e)
{
	uint8_t nonce[AEAD_NONCE_LEN], tag[AEAD_TAG_LEN];
	size_t len;

	if (n < AEAD_OVERHEAD)
		return cs_errf(e, "authentication failed (too short)");
	len = n - AEAD_OVERHEAD;
	memcpy(nonce, in, AEAD_NONCE_LEN);
	memcpy(tag, in + AEAD_NONCE_LEN + len, AEAD_TAG_LEN);
	return gcm(0, key, nonce, aad, aadlen, in + AEAD_NONCE_LEN, len, out,
	    n1, where, wctx, tag, e);
}

/* Derive AEAD_KEY_LEN bytes with KDF name and its params. */
static int
kdf(const char *name, OSSL_PARAM *params, uint8_t out[AEAD_KEY_LEN],
    struct cs_err *e)
{
	EVP_KDF *k;
	EVP_KDF_CTX *c = NULL;
	int ok;

	if ((k = EVP_KDF_fetch(NULL, name, NULL)) == NULL)
		return cs_errf(e, "%s is not available", name);
	c = EVP_KDF_CTX_new(k);
	ok = c != NULL && EVP_KDF_derive(c, out, AEAD_KEY_LEN, params) == 1;
	EVP_KDF_CTX_free(c);
	EVP_KDF_free(k);
	return ok ? 0 : cs_errf(e, "%s failed", name);
}

int
aead_hkdf(const uint8_t *key, size_t klen, const char *info,
    uint8_t out[AEAD_KEY_LEN], struct cs_err *e)
{
	OSSL_PARAM p[4];

	p[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
	    (char *)"SHA256", 0);
	p[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
	    (void *)key, klen);
	p[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
	    (void *)info, strlen(info));
	p[3] = OSSL_PARAM_construct_end();
	return kdf("HKDF", p, out, e);
}

int
aead_scrypt_valid(uint64_t n, uint32_t r, uint32_t p)
{
	return n >= 2 && n <= (1u << 22) && (n & (n - 1)) == 0 &&
	    r >= 1 && r <= 32 && p >= 1 && p <= 32 &&
	    128 * n * r <= (1ull << 30);
}

/* V (128*N*r bytes) is one OpenSSL allocation: in huge pages when the
 * process installed cryptomem (cryptomem.h says why that matters). */
int
aead_scrypt(const void *pass, size_t passlen, const uint8_t *salt,
    size_t saltlen, uint64_t n, uint32_t r, uint32_t p,
    uint8_t out[AEAD_KEY_LEN], struct cs_err *e)
{
	OSSL_PARAM prm[7];
	uint64_t maxmem = 128 * n * r * 2 + (1u << 20);

	if (!aead_scrypt_valid(n, r, p))
		return cs_errf(e, "invalid scrypt parameters N=%llu r=%u p=%u",
		    (unsigned long long)n, r, p);
	prm[0] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD,
	    (void *)pass, passlen);
	prm[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
	    (void *)salt, saltlen);
	prm[2] = OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_N, &n);
	prm[3] = OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_R, &r);
	prm[4] = OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_P, &p);
	prm[5] = OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_MAXMEM,
	    &maxmem);
	prm[6] = OSSL_PARAM_construct_end();
	return kdf("SCRYPT", prm, out, e);
}
