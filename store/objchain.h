/* objchain.h - the manifest an object-store commit names, as a chain: a
 * whole manifest (the base) and the deltas after it (store/mdelta.c),
 * so that a commit uploads what its command changed, not the history
 * (objchain.c). */
#ifndef CUTSNAP_STORE_OBJCHAIN_H
#define CUTSNAP_STORE_OBJCHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "../crypto/sha.h"
#include "../lib/err.h"
#include "backend.h"

#define OBJCHAIN_MAX 20		/* deltas after the base */

struct objpiece {
	char key[128];		/* "manifests/GEN-RAND.db" or ".delta" */
	char hex[SHA_HEX_LEN];	/* its SHA-256 */
	uint64_t size;
};

struct objchain {
	struct objpiece base;
	struct objpiece d[OBJCHAIN_MAX];
	size_t n;
};

/* A commit's text into c: version 1 (a base alone) or 2 (the base, then
 * "delta KEY SHA256 SIZE" lines in order). -1 when it is malformed. */
int objchain_parse(const char *text, struct objchain *c);
/* c as the start of a commit's text (version 1 without deltas, so that
 * earlier versions still read it), into buf: -1 when it does not fit. */
int objchain_text(const struct objchain *c, char *buf, size_t cap);
/* The hash that names the state c ends in: its last piece's. */
const char *objchain_state(const struct objchain *c);
/* Whether key is a piece of c. */
int objchain_names(const struct objchain *c, const char *key);
/* Manifest path, the base already fetched and checked, brought to the
 * end of c: each delta fetched, checked against its SHA-256, applied. */
int objchain_apply(struct store_backend *s, const struct objchain *c,
    const char *path, struct cs_err *e);
/* What the commit gen makes of the change from manifest oldm (the state
 * c ends in; NULL: none, a new repository) to newm: *out, the chain to
 * name, whose last piece (*body, *len bytes, malloc'd) is to be
 * uploaded; *full says whether that piece is a whole manifest. */
int objchain_next(struct store_backend *s, const struct objchain *c,
    const char *oldm, const char *newm, uint64_t gen, struct objchain *out,
    uint8_t **body, size_t *len, int *full, struct cs_err *e);

#endif
