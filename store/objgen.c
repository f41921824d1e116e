/* objgen.c - noticing a rolled-back object-store repository.
 *
 * A directory repository keeps its own commit objects and this user's
 * record (store/generation.c); over an object store the store's records
 * are off, since the local stand-in commits before the upload, which may
 * still fail. Here the same two records are kept where they belong:
 *
 * - each commit object, created once and only after its manifest, says
 *   the generation and highest snapshot id of the manifest it names;
 * - this user's record ($XDG_STATE_HOME/cutsnap/repos/ID, the file the
 *   store uses) is raised only once the commit that publishes a
 *   generation was created in the bucket, so a failed upload never puts
 *   it ahead of the bucket.
 *
 * At open the manifest the newest commit names must be at least at the
 * generation that commit, the two before it and the record say; the store
 * does the comparison (writers refuse, readers warn) and reserves snapshot
 * ids past the highest any of them knows. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objgen.h"
#include "../lib/fsutil.h"
#include "store.h"

#define ID_HEX 32

/* id[0, n) is an identity: 32 lowercase hex digits, then only a newline. */
static int
take_ident(const char *p, size_t n, char out[40])
{
	size_t i;

	while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	out[0] = '\0';
	if (n != ID_HEX)
		return -1;
	for (i = 0; i < n; i++)
		if (strchr("0123456789abcdef", p[i]) == NULL || p[i] == '\0')
			return -1;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

int
objgen_start(struct store_backend *s, struct objgen *g, struct cs_err *e)
{
	char *body = NULL;
	size_t len = 0;
	struct cs_err re;

	(void)e;
	memset(g, 0, sizeof(*g));
	/* None (a new repository) or unreadable: the listing that follows
	 * reports the bucket's problem in its own words. */
	if (s->ops->read(s, "blobs/.repository-id", 4096, &body, &len, NULL,
	    &re) == 0 && take_ident(body, len, g->ident) == 0)
		store_gen_record_read(g->ident, &g->rec_gen, &g->rec_max);
	free(body);
	return 0;
}

void
objgen_fields(const char *text, uint64_t *gen, uint64_t *max_id)
{
	unsigned long long v;
	const char *p;

	*gen = *max_id = 0;
	if ((p = strstr(text, "\ngeneration ")) != NULL &&
	    sscanf(p, "\ngeneration %llu", &v) == 1)
		*gen = v;
	if ((p = strstr(text, "\nmax_snapshot_id ")) != NULL &&
	    sscanf(p, "\nmax_snapshot_id %llu", &v) == 1)
		*max_id = v;
}

int
objgen_earlier(struct store_backend *s, struct objgen *g,
    const uint64_t *nums, size_t n, struct cs_err *e)
{
	uint64_t cg, cm;
	char key[64], *body;
	size_t i, len;
	int st;

	for (i = 0; i < n; i++) {
		body = NULL;
		snprintf(key, sizeof(key), "commits/%020" PRIu64, nums[i]);
		/* One missing (pruned meanwhile) is skipped. */
		if ((st = s->ops->read(s, key, 4096, &body, &len, NULL, e)) < 0
		    && cs_err_code(e) != CS_E_NOTFOUND)
			return -1;
		/* Version 2 names deltas too (objchain.c): the same fields. */
		if (st == 0 && (strncmp(body, "cutsnap-commit 1\n", 17) == 0 ||
		    strncmp(body, "cutsnap-commit 2\n", 17) == 0)) {
			objgen_fields(body, &cg, &cm);
			if (cg > g->prev_gen) {
				g->prev_gen = cg;
				g->prev = nums[i];
			}
			if (cm > g->prev_max)
				g->prev_max = cm;
		}
		free(body);
	}
	return 0;
}

void
objgen_floor(const struct objgen *g, struct store_gen_floor *out)
{
	struct store_gen_floor f;

	memset(&f, 0, sizeof(f));
	f.gen = g->head_gen;
	snprintf(f.where, sizeof(f.where), "as the newest commit, commits/"
	    "%020" PRIu64 ", says", g->head);
	if (g->prev_gen > f.gen) {
		f.gen = g->prev_gen;
		snprintf(f.where, sizeof(f.where), "as commits/%020" PRIu64
		    " says; the commit read is %020" PRIu64, g->prev, g->head);
	}
	if (g->rec_gen > f.gen) {
		f.gen = g->rec_gen;
		snprintf(f.where, sizeof(f.where), "as this user's record "
		    "of it says; the newest commit is %020" PRIu64, g->head);
	}
	f.max_id = g->head_max;
	if (g->prev_max > f.max_id)
		f.max_id = g->prev_max;
	if (g->rec_max > f.max_id)
		f.max_id = g->rec_max;
	snprintf(f.fix, sizeof(f.fix), "put the newest commit and manifest "
	    "objects back");
	*out = f;
}

void
objgen_published(const char *dir, uint64_t gen, uint64_t max_id)
{
	char path[4200], id[40];
	uint8_t *p = NULL;
	struct cs_err e;
	size_t n;

	if (gen == 0)
		return;
	snprintf(path, sizeof(path), "%s/blobs/.repository-id", dir);
	if (fs_read_file(path, 64, &p, &n, &e) < 0)
		return;
	if (take_ident((const char *)p, n, id) == 0)
		store_gen_record_raise(id, gen, max_id);
	free(p);
}
