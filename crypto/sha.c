/* sha.c - SHA-256 through OpenSSL's EVP API (see sha.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "../lib/fsutil.h"
#include "sha.h"

#define SHA_FD_CHUNK (256u << 10)

struct sha_ctx {
	EVP_MD_CTX *md;		/* owned */
};

/* SHA-256 fetched once: EVP_sha256() makes every init look the algorithm
 * up again (a name lookup under a lock), which cost more than hashing a
 * channel message's few dozen bytes. Shared by every thread, never
 * freed; NULL if the fetch failed (then EVP_sha256() as before). */
static EVP_MD *sha_md;
static pthread_once_t sha_md_once = PTHREAD_ONCE_INIT;

static void
sha_md_fetch(void)
{
	sha_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static const EVP_MD *
sha_md_get(void)
{
	pthread_once(&sha_md_once, sha_md_fetch);
	return sha_md != NULL ? sha_md : EVP_sha256();
}

struct sha_ctx *
sha_new(void)
{
	struct sha_ctx *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	if ((c->md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(c->md, sha_md_get(), NULL) != 1) {
		sha_free(c);
		return NULL;
	}
	return c;
}

void
sha_free(struct sha_ctx *c)
{
	if (c == NULL)
		return;
	EVP_MD_CTX_free(c->md);
	free(c);
}

int
sha_update(struct sha_ctx *c, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	return EVP_DigestUpdate(c->md, p, n) == 1 ? 0 : -1;
}

int
sha_final(struct sha_ctx *c, uint8_t out[SHA_LEN])
{
	unsigned int len = 0;

	if (EVP_DigestFinal_ex(c->md, out, &len) != 1 || len != SHA_LEN)
		return -1;
	return 0;
}

int
sha_peek(const struct sha_ctx *c, uint8_t out[SHA_LEN])
{
	EVP_MD_CTX *copy;
	unsigned int len = 0;
	int rc = -1;

	/* Finalise a copy: the running state stays usable, and copying is
	 * constant time however much has been hashed. */
	if ((copy = EVP_MD_CTX_new()) == NULL)
		goto out;
	if (EVP_MD_CTX_copy_ex(copy, c->md) != 1)
		goto out;
	if (EVP_DigestFinal_ex(copy, out, &len) != 1 || len != SHA_LEN)
		goto out;
	rc = 0;
out:
	EVP_MD_CTX_free(copy);
	return rc;
}

int
sha256_buf(const void *p, size_t n, uint8_t out[SHA_LEN])
{
	unsigned int len = 0;

	if (EVP_Digest(p, n, out, &len, sha_md_get(), NULL) != 1 ||
	    len != SHA_LEN)
		return -1;
	return 0;
}

int
sha256_fd(int fd, uint64_t len, uint8_t out[SHA_LEN], struct cs_err *e)
{
	struct sha_ctx *c = NULL;
	uint8_t *buf = NULL;
	uint64_t off = 0;
	size_t n;
	int rc = -1;

	if ((c = sha_new()) == NULL) {
		cs_errf(e, "sha256: cannot create a digest context");
		goto out;
	}
	if ((buf = malloc(SHA_FD_CHUNK)) == NULL) {
		cs_errno(e, "sha256");
		goto out;
	}
	while (off < len) {
		n = len - off < SHA_FD_CHUNK ? (size_t)(len - off) :
		    SHA_FD_CHUNK;
		if (fs_pread_all(fd, buf, n, (off_t)off) == -1) {
			if (errno == ENODATA)
				cs_errf(e, "sha256: file shorter than %llu "
				    "bytes", (unsigned long long)len);
			else
				cs_errno(e, "sha256: read at offset %llu",
				    (unsigned long long)off);
			goto out;
		}
		if (sha_update(c, buf, n) == -1) {
			cs_errf(e, "sha256: digest update failed");
			goto out;
		}
		off += n;
	}
	if (sha_final(c, out) == -1) {
		cs_errf(e, "sha256: digest final failed");
		goto out;
	}
	rc = 0;
out:
	free(buf);
	sha_free(c);
	return rc;
}

void
sha_hex(const uint8_t sha[SHA_LEN], char hex[SHA_HEX_LEN])
{
	static const char digits[] = "0123456789abcdef";
	int i;

	for (i = 0; i < SHA_LEN; i++) {
		hex[2 * i] = digits[sha[i] >> 4];
		hex[2 * i + 1] = digits[sha[i] & 0xf];
	}
	hex[2 * SHA_LEN] = '\0';
}

static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

int
sha_unhex(const char *hex, uint8_t sha[SHA_LEN])
{
	uint8_t tmp[SHA_LEN];
	int i, hi, lo;

	/* Exactly 64 digits: strlen would read past a short, unterminated
	 * input no sooner than the loop does, and it rejects a long one. */
	if (strlen(hex) != 2 * SHA_LEN)
		return -1;
	for (i = 0; i < SHA_LEN; i++) {
		hi = hexval(hex[2 * i]);
		lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		tmp[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(sha, tmp, SHA_LEN);
	return 0;
}
