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

#define OBJCHAIN_INLINE 16	/* deltas a commit names itself */
/* The most a version 2 commit of an earlier release names, and so the
 * most a commit or an index may name. */
#define OBJCHAIN_LEGACY 20
/* Deltas after a base at which a commit uploads a whole manifest: the
 * most a reader without a cache fetches before prune folds them. */
#define OBJCHAIN_FOLD 4096

struct objpiece {
	char key[128];		/* "manifests/GEN-RAND.db", ".delta", ".idx" */
	char hex[SHA_HEX_LEN];	/* its SHA-256 */
	uint64_t size;
};

struct objchain {
	struct objpiece base;
	/* The index of the deltas before the inline ones (key[0] == '\0':
	 * none) and how many it names, through the indexes before it. */
	struct objpiece idx;
	uint64_t nidx;
	struct objpiece d[OBJCHAIN_LEGACY];	/* the newest deltas */
	size_t n;
	/* A prune's fold: the state of the chain its base replaced, whose
	 * rows the base holds ("" for any other commit). */
	char folded[SHA_HEX_LEN];
};

/* A piece a commit uploads before it: its body (malloc'd). */
struct objupload {
	const struct objpiece *p;
	uint8_t *body;
	size_t len;
};

/* A commit's text into c: version 1 (a base alone), 2 (the base, then
 * "delta KEY SHA256 SIZE" lines in order) or 3 (an "index KEY SHA256
 * SIZE COUNT" line before them); any of them with a "folded SHA256"
 * line. -1 when it is malformed. */
int objchain_parse(const char *text, struct objchain *c);
/* c as the start of a commit's text (the lowest version that holds it,
 * so that earlier versions still read a chain without an index), into
 * buf: -1 when it does not fit. */
int objchain_text(const struct objchain *c, char *buf, size_t cap);
/* The hash that names the state c ends in: its last piece's. */
const char *objchain_state(const struct objchain *c);
/* The deltas after the base, with the index's ones. */
uint64_t objchain_deltas(const struct objchain *c);
/* Whether key is a piece c names itself (base, index, inline delta). */
int objchain_names(const struct objchain *c, const char *key);
/* The commit number in a piece's key ("manifests/GEN-..."), 0 if none. */
uint64_t objchain_piece_gen(const char *key);
/* Manifest path, the base already fetched and checked, brought to the
 * end of c: its indexes walked, each delta fetched (several at a time),
 * checked against its SHA-256 and applied in order. */
int objchain_apply(struct store_backend *s, const struct objchain *c,
    const char *path, struct cs_err *e);
/* Manifest path, at the state named state (the hash of c's base, of
 * the chain its base folded, or of one of its deltas), brought to the
 * end of c by the deltas after that one (*applied of them): 1; 0 when c
 * does not pass through state. */
int objchain_catch_up(struct store_backend *s, const struct objchain *c,
    const char *state, const char *path, size_t *applied, struct cs_err *e);
/* What the commit gen makes of the change from manifest oldm (the state
 * c ends in; NULL: none, a new repository) to newm: *out, the chain to
 * name, and the pieces to upload before the commit, in order (up[0..*nup),
 * at most 2: an index and a delta, or a whole manifest; free each body);
 * *full says whether a whole manifest is among them. */
int objchain_next(const struct objchain *c, const char *oldm,
    const char *newm, uint64_t gen, struct objchain *out,
    struct objupload up[2], size_t *nup, int *full, struct cs_err *e);
/* The whole manifest path as the base of a chain with no deltas, for
 * commit gen (prune's fold): *out names it, *up is its upload. */
int objchain_whole(const char *path, uint64_t gen, struct objchain *out,
    struct objupload *up, struct cs_err *e);

#endif
