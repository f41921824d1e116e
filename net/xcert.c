/* xcert.c - an agent's check of its own TLS certificate (xcert.h). */
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "xcert.h"

/* t as "Dec  5 09:00:00 2026 GMT" into out. */
static void
asn1_time(const ASN1_TIME *t, char *out, size_t sz)
{
	BIO *b = BIO_new(BIO_s_mem());
	int n = 0;

	out[0] = '\0';
	if (b != NULL && ASN1_TIME_print(b, t) == 1 &&
	    (n = BIO_read(b, out, (int)sz - 1)) > 0)
		out[n] = '\0';
	BIO_free(b);
}

/* The certificates of a PEM file: the first into *leaf, the others onto
 * *rest (NULL when none). 0, or -1 with e set. */
static int
read_pem(const char *path, X509 **leaf, STACK_OF(X509) **rest,
    struct cs_err *e)
{
	BIO *b;
	X509 *x;

	*leaf = NULL;
	*rest = NULL;
	if ((b = BIO_new_file(path, "r")) == NULL ||
	    (*leaf = PEM_read_bio_X509(b, NULL, NULL, NULL)) == NULL) {
		BIO_free(b);
		ERR_clear_error();
		return cs_errf(e, "cannot read the certificate %s", path);
	}
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		if ((*rest == NULL && (*rest = sk_X509_new_null()) == NULL) ||
		    sk_X509_push(*rest, x) == 0) {
			X509_free(x);
			break;
		}
	}
	ERR_clear_error();	/* the end of the file */
	BIO_free(b);
	return 0;
}

/* Its CN is me and now is within its validity. */
static int
check_name_time(X509 *x, const char *crt, const char *me, struct cs_err *e)
{
	char cn[256], when[64];

	if (X509_NAME_get_text_by_NID(X509_get_subject_name(x),
	    NID_commonName, cn, sizeof(cn)) < 0)
		cn[0] = '\0';
	if (strcmp(cn, me) != 0)
		return cs_errf(e, "certificate %s is for '%s', not agent %s: "
		    "give each agent its own (cutsnap cert)", crt, cn, me);
	if (X509_cmp_current_time(X509_get0_notAfter(x)) == -1) {
		asn1_time(X509_get0_notAfter(x), when, sizeof(when));
		return cs_errf(e, "certificate %s of agent %s expired on %s: "
		    "renew it (cutsnap cert)", crt, me, when);
	}
	if (X509_cmp_current_time(X509_get0_notBefore(x)) == 1) {
		asn1_time(X509_get0_notBefore(x), when, sizeof(when));
		return cs_errf(e, "certificate %s of agent %s is not valid "
		    "before %s (is this host's clock right?)", crt, me, when);
	}
	return 0;
}

/* It verifies against the CA file ca. */
static int
check_ca(X509 *x, STACK_OF(X509) *rest, const char *crt, const char *ca,
    struct cs_err *e)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	int rc = -1;

	if (st == NULL || ctx == NULL) {
		cs_errf(e, "out of memory for TLS");
		goto out;
	}
	if (X509_STORE_load_file(st, ca) != 1) {
		cs_errf(e, "cannot read the cluster CA %s", ca);
		goto out;
	}
	if (X509_STORE_CTX_init(ctx, st, x, rest) != 1) {
		cs_errf(e, "out of memory for TLS");
		goto out;
	}
	if (X509_verify_cert(ctx) != 1) {
		cs_errf(e, "certificate %s is not signed by the cluster CA "
		    "%s: %s (cutsnap cert issues one)", crt, ca,
		    X509_verify_cert_error_string(
		    X509_STORE_CTX_get_error(ctx)));
		goto out;
	}
	rc = 0;
out:
	ERR_clear_error();
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	return rc;
}

int
xcert_check_own(const struct cfg *c, const char *me, struct cs_err *e)
{
	char ca[PATH_MAX], crt[PATH_MAX];
	STACK_OF(X509) *rest = NULL;
	X509 *x = NULL;
	int n, rc = -1;

	n = snprintf(crt, sizeof(crt), "%s/%s.crt", c->tls_dir, me);
	if (n < 0 || (size_t)n >= sizeof(crt) ||
	    snprintf(ca, sizeof(ca), "%s/ca.crt", c->tls_dir) >=
	    (int)sizeof(ca))
		return cs_errf(e, "tls_dir path %s is too long", c->tls_dir);
	if (read_pem(crt, &x, &rest, e) == 0 &&
	    check_name_time(x, crt, me, e) == 0 &&
	    check_ca(x, rest, crt, ca, e) == 0)
		rc = 0;
	X509_free(x);
	sk_X509_pop_free(rest, X509_free);
	return rc;
}
