/* mac.c - HMAC-SHA256 through EVP_MAC, constant-time compare, key files
 * (see mac.h). */
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "../lib/fsutil.h"
#include "mac.h"

int
mac_hmac_sha256(const void *key, size_t klen, const void *msg, size_t n,
    uint8_t out[MAC_LEN], struct cs_err *e)
{
	EVP_MAC *mac = NULL;
	EVP_MAC_CTX *ctx = NULL;
	OSSL_PARAM params[2];
	char digest[] = "SHA256";
	size_t len = 0;
	int rc = -1;

	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	if ((mac = EVP_MAC_fetch(NULL, "HMAC", NULL)) == NULL ||
	    (ctx = EVP_MAC_CTX_new(mac)) == NULL ||
	    EVP_MAC_init(ctx, key, klen, params) != 1 ||
	    EVP_MAC_update(ctx, msg, n) != 1 ||
	    EVP_MAC_final(ctx, out, &len, MAC_LEN) != 1 || len != MAC_LEN) {
		cs_errf(e, "hmac-sha256 failed");
		goto out;
	}
	rc = 0;
out:
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
	return rc;
}

int
mac_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}

void
mac_cleanse(void *p, size_t n)
{
	if (p != NULL)
		OPENSSL_cleanse(p, n);
}

int
mac_key_load(const char *path, uint8_t **key, size_t *klen,
    struct cs_err *e)
{
	uint8_t *p = NULL;
	size_t n = 0;

	*key = NULL;
	*klen = 0;
	if (fs_read_file(path, MAC_KEY_MAX, &p, &n, e) < 0)
		return cs_errctx(e, "key file");
	if (n < MAC_KEY_MIN) {
		mac_key_free(p, n);
		return cs_errf(e, "key file %s: %zu bytes, at least %d needed "
		    "(make one with: head -c 32 /dev/urandom > %s)", path, n,
		    MAC_KEY_MIN, path);
	}
	*key = p;
	*klen = n;
	return 0;
}

void
mac_key_free(uint8_t *key, size_t klen)
{
	mac_cleanse(key, klen);
	free(key);
}
