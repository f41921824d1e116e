/* ca.c - the cluster's certificate authority (ca.h): the CA and the
 * certificates of its agents and clients in tls_dir, creating only what
 * is missing. */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "../lib/fsutil.h"
#include "../net/xport.h"
#include "ca.h"

#define CERT_PEM_MAX		(64u << 10)
/* Certificates start an hour early, for hosts whose clocks differ. */
#define CERT_BACKDATE_S		3600

static int
ossl_fail(struct cs_err *e, const char *what)
{
	unsigned long ec = ERR_get_error();

	ERR_clear_error();
	return cs_errf(e, "%s: %s", what,
	    ec ? ERR_reason_error_string(ec) : "failed");
}

static int
path_in(const char *dir, const char *name, const char *ext, char *out,
    size_t sz, struct cs_err *e)
{
	int n = snprintf(out, sz, "%s/%s.%s", dir, name, ext);

	if (n < 0 || (size_t)n >= sz)
		return cs_errf(e, "path %s/%s.%s is too long", dir, name, ext);
	return 0;
}

static int
exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Write a PEM object through a memory BIO into path, atomically. */
static int
write_pem(const char *path, EVP_PKEY *key, X509 *crt, struct cs_err *e)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data;
	long n;
	int rc = -1;

	if (b == NULL) {
		ossl_fail(e, "BIO_new");
		goto out;
	}
	if ((key != NULL && PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0,
	    NULL, NULL) != 1) || (crt != NULL && PEM_write_bio_X509(b, crt) !=
	    1)) {
		ossl_fail(e, path);
		goto out;
	}
	n = BIO_get_mem_data(b, &data);
	rc = fs_atomic_write_file(path, data, (size_t)n, key ? 0600 : 0644, e);
out:
	BIO_free(b);
	return rc;
}

static int
read_pem(const char *path, EVP_PKEY **key, X509 **crt, struct cs_err *e)
{
	uint8_t *data = NULL;
	size_t len;
	BIO *b = NULL;
	int rc = -1;

	if (fs_read_file(path, CERT_PEM_MAX, &data, &len, e) == -1)
		goto out;
	if ((b = BIO_new_mem_buf(data, (int)len)) == NULL) {
		ossl_fail(e, "BIO_new_mem_buf");
		goto out;
	}
	if (key != NULL &&
	    (*key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL)) == NULL) {
		ossl_fail(e, path);
		goto out;
	}
	if (crt != NULL &&
	    (*crt = PEM_read_bio_X509(b, NULL, NULL, NULL)) == NULL) {
		ossl_fail(e, path);
		goto out;
	}
	rc = 0;
out:
	BIO_free(b);
	free(data);
	return rc;
}

static int
add_ext(X509 *crt, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, crt, NULL, NULL, 0);
	if ((ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)) == NULL)
		return -1;
	ok = X509_add_ext(crt, ext, -1);
	X509_EXTENSION_free(ext);
	return ok == 1 ? 0 : -1;
}

/* A certificate for key with CN cn, signed by ca_key (self-signed when
 * ca is NULL: the CA), valid for days (negative: already expired, for
 * tests). san: the subjectAltName value, or NULL. role: a client's role
 * (role.h), its OU; such a certificate may only authenticate a client
 * (extendedKeyUsage clientAuth): it can never serve as an agent. NULL:
 * an agent's or the CA. */
static X509 *
make_cert(EVP_PKEY *key, const char *cn, const char *role, X509 *ca,
    EVP_PKEY *ca_key, long days, const char *san, struct cs_err *e)
{
	X509 *crt = X509_new();
	X509_NAME *nm = X509_NAME_new();
	BIGNUM *bn = BN_new();
	ASN1_INTEGER *serial = NULL;
	int ok = 0;

	if (crt == NULL || nm == NULL || bn == NULL)
		goto out;
	if (X509_set_version(crt, 2) != 1 ||
	    BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
	    (serial = BN_to_ASN1_INTEGER(bn, NULL)) == NULL ||
	    X509_set_serialNumber(crt, serial) != 1)
		goto out;
	if (role != NULL && X509_NAME_add_entry_by_NID(nm,
	    NID_organizationalUnitName, MBSTRING_UTF8,
	    (const unsigned char *)role, -1, -1, 0) != 1)
		goto out;
	if (X509_NAME_add_entry_by_NID(nm, NID_commonName, MBSTRING_UTF8,
	    (const unsigned char *)cn, -1, -1, 0) != 1 ||
	    X509_set_subject_name(crt, nm) != 1 ||
	    X509_set_issuer_name(crt, ca ? X509_get_subject_name(ca) : nm) !=
	    1)
		goto out;
	if (X509_gmtime_adj(X509_getm_notBefore(crt), days < 0 ?
	    days * 86400 - CERT_BACKDATE_S : -CERT_BACKDATE_S) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(crt), days * 86400) == NULL ||
	    X509_set_pubkey(crt, key) != 1)
		goto out;
	if (ca == NULL) {
		if (add_ext(crt, crt, NID_basic_constraints,
		    "critical,CA:TRUE,pathlen:0") == -1 ||
		    add_ext(crt, crt, NID_key_usage,
		    "critical,keyCertSign,cRLSign") == -1 ||
		    add_ext(crt, crt, NID_subject_key_identifier, "hash") == -1)
			goto out;
	} else {
		if (add_ext(crt, ca, NID_basic_constraints,
		    "critical,CA:FALSE") == -1 ||
		    add_ext(crt, ca, NID_key_usage,
		    "critical,digitalSignature") == -1 ||
		    add_ext(crt, ca, NID_ext_key_usage, role != NULL ?
		    "clientAuth" : "serverAuth,clientAuth") == -1 ||
		    add_ext(crt, ca, NID_authority_key_identifier,
		    "keyid:always") == -1 ||
		    (san != NULL && add_ext(crt, ca, NID_subject_alt_name,
		    san) == -1))
			goto out;
	}
	if (X509_sign(crt, ca_key ? ca_key : key, EVP_sha256()) <= 0)
		goto out;
	ok = 1;
out:
	if (!ok) {
		ossl_fail(e, cn);
		X509_free(crt);
		crt = NULL;
	}
	ASN1_INTEGER_free(serial);
	BN_free(bn);
	X509_NAME_free(nm);
	return crt;
}

/* The subjectAltName of agent i: its name, and the host of its addr. */
static void
agent_san(const struct cfg *c, int i, char *out, size_t sz)
{
	char host[256], port[8];
	struct in6_addr a6;
	int n;

	n = snprintf(out, sz, "DNS:%s", c->agents[i].name);
	if (c->agents[i].addr[0] == '\0' || n < 0 || (size_t)n >= sz ||
	    xport_split(c->agents[i].addr, host, sizeof(host), port,
	    sizeof(port)) == -1)
		return;
	if (inet_pton(AF_INET, host, &a6) == 1 ||
	    inet_pton(AF_INET6, host, &a6) == 1)
		snprintf(out + n, sz - (size_t)n, ",IP:%s", host);
	else if (strcmp(host, c->agents[i].name) != 0)
		snprintf(out + n, sz - (size_t)n, ",DNS:%s", host);
}

/* Create NAME.key and NAME.crt unless both exist. *made set to 1 when
 * created. */
static int
leaf(const char *dir, const char *name, const char *role, const char *san,
    X509 *ca, EVP_PKEY *ca_key, long days, int *made, struct cs_err *e)
{
	char kp[PATH_MAX], cp[PATH_MAX];
	EVP_PKEY *key = NULL;
	X509 *crt = NULL;
	int rc = -1;

	*made = 0;
	if (path_in(dir, name, "key", kp, sizeof(kp), e) == -1 ||
	    path_in(dir, name, "crt", cp, sizeof(cp), e) == -1)
		goto out;
	if (exists(kp) && exists(cp)) {
		rc = 0;
		goto out;
	}
	if (exists(kp) != exists(cp)) {
		cs_errf(e, "%s exists without %s; remove it to have both "
		    "made anew", exists(kp) ? kp : cp, exists(kp) ? cp : kp);
		goto out;
	}
	if ((key = EVP_EC_gen("P-256")) == NULL) {
		ossl_fail(e, "EC key");
		goto out;
	}
	if ((crt = make_cert(key, name, role, ca, ca_key, days, san, e)) ==
	    NULL)
		goto out;
	/* The key first: a certificate is never there without its key. */
	if (write_pem(kp, key, NULL, e) == -1 ||
	    write_pem(cp, NULL, crt, e) == -1)
		goto out;
	*made = 1;
	rc = 0;
out:
	X509_free(crt);
	EVP_PKEY_free(key);
	return rc;
}

/* Make dir (mode 0700) unless it is there; refuse it, as every agent
 * and command would, when group or others may use it. what names it. */
static int
private_dir(const char *dir, const char *what, struct cs_err *e)
{
	if (fs_mkdir_p(dir, 0700, e) == -1)
		return -1;
	return xport_check_private(dir, what, e);
}

/* The CA of tls_dir dir, its key checked to be private first. */
static int
load_ca(const char *dir, X509 **ca, EVP_PKEY **ca_key, struct cs_err *e)
{
	char kp[PATH_MAX], cp[PATH_MAX];

	if (path_in(dir, "ca", "key", kp, sizeof(kp), e) == -1 ||
	    path_in(dir, "ca", "crt", cp, sizeof(cp), e) == -1 ||
	    xport_check_private(kp, "private key", e) == -1)
		return -1;
	if (read_pem(cp, NULL, ca, e) == -1 ||
	    read_pem(kp, ca_key, NULL, e) == -1)
		return -1;
	return 0;
}

int
ca_issue_client(const struct cfg *c, const char *name, const char *role,
    const char *out, long days, ca_made_fn *made_fn, void *arg,
    struct cs_err *e)
{
	const char *dir = out != NULL ? out : c->tls_dir;
	char kp[PATH_MAX], cp[PATH_MAX], san[NAME_MAX_LEN + 8];
	EVP_PKEY *ca_key = NULL;
	X509 *ca = NULL;
	int made, rc = -1;

	if (xport_check_private(c->tls_dir, "tls_dir", e) == -1 ||
	    private_dir(dir, out != NULL ? "directory" : "tls_dir", e) == -1)
		goto out;
	if (path_in(dir, name, "key", kp, sizeof(kp), e) == -1 ||
	    path_in(dir, name, "crt", cp, sizeof(cp), e) == -1)
		goto out;
	if (exists(kp) || exists(cp)) {
		cs_errf(e, "%s exists; remove %s and %s to issue it anew",
		    exists(cp) ? cp : kp, cp, kp);
		goto out;
	}
	if (load_ca(c->tls_dir, &ca, &ca_key, e) == -1) {
		cs_errctx(e, "the CA is needed to create %s (run cutsnap "
		    "cert -c %s first)", cp, c->path);
		goto out;
	}
	snprintf(san, sizeof(san), "DNS:%s", name);
	if (leaf(dir, name, role, san, ca, ca_key, days, &made, e) == -1)
		goto out;
	if (made_fn != NULL)
		made_fn(arg, cp, kp);
	rc = 0;
out:
	X509_free(ca);
	EVP_PKEY_free(ca_key);
	return rc;
}

int
ca_cluster(const struct cfg *c, long days, ca_made_fn *made_fn, void *arg,
    struct cs_err *e)
{
	const char *dir = c->tls_dir;
	char kp[PATH_MAX], cp[PATH_MAX], san[600];
	EVP_PKEY *ca_key = NULL;
	X509 *ca = NULL;
	int i, made, n = 0, rc = -1;

	if (private_dir(dir, "tls_dir", e) == -1)
		goto out;
	if (path_in(dir, "ca", "key", kp, sizeof(kp), e) == -1 ||
	    path_in(dir, "ca", "crt", cp, sizeof(cp), e) == -1)
		goto out;
	if (!exists(cp) && !exists(kp)) {
		if ((ca_key = EVP_EC_gen("P-256")) == NULL) {
			ossl_fail(e, "EC key");
			goto out;
		}
		if ((ca = make_cert(ca_key, "cutsnap CA", NULL, NULL, NULL,
		    days > 0 ? days : CA_DAYS_DEFAULT, NULL, e)) == NULL ||
		    write_pem(kp, ca_key, NULL, e) == -1 ||
		    write_pem(cp, NULL, ca, e) == -1)
			goto out;
		if (made_fn != NULL)
			made_fn(arg, cp, kp);
		n++;
	}
	for (i = -1; i < c->nagents; i++) {
		const char *name = i < 0 ? XPORT_CLIENT_CN : c->agents[i].name;
		char p1[PATH_MAX], p2[PATH_MAX];

		if (path_in(dir, name, "key", p1, sizeof(p1), e) == -1 ||
		    path_in(dir, name, "crt", p2, sizeof(p2), e) == -1)
			goto out;
		if (exists(p1) && exists(p2))
			continue;
		/* Something to sign: the CA's key is needed. */
		if (ca == NULL && load_ca(dir, &ca, &ca_key, e) == -1) {
			cs_errctx(e, "the CA is needed to create %s", p2);
			goto out;
		}
		if (i >= 0)
			agent_san(c, i, san, sizeof(san));
		else
			snprintf(san, sizeof(san), "DNS:%s", XPORT_CLIENT_CN);
		if (leaf(dir, name, i < 0 ? "admin" : NULL, san, ca, ca_key,
		    days, &made, e) == -1)
			goto out;
		if (made) {
			if (made_fn != NULL)
				made_fn(arg, p2, p1);
			n++;
		}
	}
	rc = n;
out:
	X509_free(ca);
	EVP_PKEY_free(ca_key);
	return rc;
}

