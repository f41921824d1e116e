/* objgen.h - noticing a rolled-back object-store repository (objgen.c). */
#ifndef CUTSNAP_STORE_OBJGEN_H
#define CUTSNAP_STORE_OBJGEN_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/err.h"
#include "backend.h"

struct store_gen_floor;

/* What is known outside the manifest the newest commit names. */
struct objgen {
	char ident[40];		/* the bucket's identity, "" when none */
	uint64_t rec_gen, rec_max;	/* this user's record of it */
	uint64_t head, head_gen, head_max;	/* the newest commit's fields */
	uint64_t prev, prev_gen, prev_max;	/* the highest before it */
};

/* The identity and this user's record, read before the commits are
 * listed: a commit another process makes meanwhile is then at least as
 * new as anything the record says, never a false alarm. */
int objgen_start(struct store_backend *s, struct objgen *g, struct cs_err *e);
/* The optional generation and max_snapshot_id lines of a commit's text
 * (0 when absent: written by a version that did not keep them). */
void objgen_fields(const char *text, uint64_t *gen, uint64_t *max_id);
/* The fields of the commits numbered nums[0, n) (the ones before the
 * newest), the highest kept in g->prev*; one missing (pruned meanwhile)
 * or malformed is skipped. */
int objgen_earlier(struct store_backend *s, struct objgen *g,
    const uint64_t *nums, size_t n, struct cs_err *e);
/* The highest generation and id known, with where it was found, into
 * *out: the store's check at open (store_opts.gen_floor). */
void objgen_floor(const struct objgen *g, struct store_gen_floor *out);
/* Commit gen was created for the manifest of the stand-in dir: this
 * user's record is raised to its generation and max id. */
void objgen_published(const char *dir, uint64_t gen, uint64_t max_id);

#endif
