/* s3chain.h - the manifest an object-store commit names, as a chain: a
 * whole manifest (the base) and the deltas after it (store/mdelta.c),
 * so that a commit uploads what its command changed, not the history
 * (s3chain.c). */
#ifndef CUTSNAP_CMD_S3CHAIN_H
#define CUTSNAP_CMD_S3CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "../crypto/sha.h"
#include "../lib/err.h"
#include "../s3/s3.h"

#define S3CHAIN_MAX 20		/* deltas after the base */

struct s3piece {
	char key[128];		/* "manifests/GEN-RAND.db" or ".delta" */
	char hex[SHA_HEX_LEN];	/* its SHA-256 */
	uint64_t size;
};

struct s3chain {
	struct s3piece base;
	struct s3piece d[S3CHAIN_MAX];
	size_t n;
};

/* A commit's text into c: version 1 (a base alone) or 2 (the base, then
 * "delta KEY SHA256 SIZE" lines in order). -1 when it is malformed. */
int s3chain_parse(const char *text, struct s3chain *c);
/* c as the start of a commit's text (version 1 without deltas, so that
 * earlier versions still read it), into buf: -1 when it does not fit. */
int s3chain_text(const struct s3chain *c, char *buf, size_t cap);
/* The hash that names the state c ends in: its last piece's. */
const char *s3chain_state(const struct s3chain *c);
/* Whether key is a piece of c. */
int s3chain_names(const struct s3chain *c, const char *key);
/* Manifest path, the base already fetched and checked, brought to the
 * end of c: each delta fetched, checked against its SHA-256, applied. */
int s3chain_apply(struct s3 *s, const struct s3chain *c, const char *path,
    struct cs_err *e);
/* What the commit gen makes of the change from manifest oldm (the state
 * c ends in; NULL: none, a new repository) to newm: *out, the chain to
 * name, whose last piece (*body, *len bytes, malloc'd) is to be
 * uploaded; *full says whether that piece is a whole manifest. */
int s3chain_next(struct s3 *s, const struct s3chain *c, const char *oldm,
    const char *newm, uint64_t gen, struct s3chain *out, uint8_t **body,
    size_t *len, int *full, struct cs_err *e);

#endif
