/* objchain.c - the manifest of an object-store commit as a chain: the
 * whole manifest an earlier commit uploaded (the base) and the deltas
 * of the commits since (store/mdelta.c: SQLite changesets), so that a
 * snapshot's commit uploads objects of the size of its own rows, not of
 * every snapshot's.
 *
 * The chain stays short, and each byte of history is uploaded again
 * only a few times: a new delta is merged with the chain's last one
 * while that one is no more than twice its size (a binary counter: the
 * deltas shrink geometrically along the chain, so there are about
 * log2(commits) of them), and the whole manifest is uploaded as a new
 * base once the merged delta reaches half the base's size, when a
 * delta cannot carry the change (a schema migration), or when the chain
 * is full. So a base is uploaded again only after the history has
 * about doubled: what a commit uploads, taken over many commits, is a
 * few times its own change, flat in the number of snapshots kept.
 *
 * Readers fetch the base and each delta, check each against the SHA-256
 * the commit names, and apply them in order; a delta that does not
 * apply fails the command (the bucket's objects are damaged), as a
 * manifest that does not match its commit does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "objchain.h"
#include "store.h"

/* The largest manifest piece, a whole one or a delta, an object store
 * takes or gives here: read_whole refuses a larger manifest. */
#define DELTA_CAP ((size_t)1 << 30)

static int
valid_key(const char *k)
{
	return strncmp(k, "manifests/", 10) == 0 && strstr(k, "..") == NULL &&
	    strspn(k + 10, "0123456789abcdefghijklmnopqrstuvwxyz-.") ==
	    strlen(k + 10);
}

int
objchain_parse(const char *text, struct objchain *c)
{
	unsigned long long size;
	const char *p;
	int ver;

	memset(c, 0, sizeof(*c));
	if (sscanf(text, "cutsnap-commit %d\nmanifest %127s\nsha256 %64s\n"
	    "size %llu\n", &ver, c->base.key, c->base.hex, &size) != 4 ||
	    (ver != 1 && ver != 2) || strlen(c->base.hex) != 64 ||
	    !valid_key(c->base.key))
		return -1;
	c->base.size = size;
	if (ver == 1)
		return 0;
	for (p = text; (p = strstr(p, "\ndelta ")) != NULL; p++) {
		struct objpiece *d;

		if (c->n == OBJCHAIN_MAX)
			return -1;
		d = &c->d[c->n];
		if (sscanf(p, "\ndelta %127s %64s %llu", d->key, d->hex,
		    &size) != 3 || strlen(d->hex) != 64 || !valid_key(d->key))
			return -1;
		d->size = size;
		c->n++;
	}
	return c->n > 0 ? 0 : -1;
}

int
objchain_text(const struct objchain *c, char *buf, size_t cap)
{
	size_t i, off;
	int k;

	k = snprintf(buf, cap, "cutsnap-commit %d\nmanifest %s\nsha256 %s\n"
	    "size %llu\n", c->n > 0 ? 2 : 1, c->base.key, c->base.hex,
	    (unsigned long long)c->base.size);
	if (k < 0 || (size_t)k >= cap)
		return -1;
	off = (size_t)k;
	for (i = 0; i < c->n; i++) {
		k = snprintf(buf + off, cap - off, "delta %s %s %llu\n",
		    c->d[i].key, c->d[i].hex,
		    (unsigned long long)c->d[i].size);
		if (k < 0 || (size_t)k >= cap - off)
			return -1;
		off += (size_t)k;
	}
	return 0;
}

const char *
objchain_state(const struct objchain *c)
{
	return c->n > 0 ? c->d[c->n - 1].hex : c->base.hex;
}

int
objchain_names(const struct objchain *c, const char *key)
{
	size_t i;

	if (strcmp(c->base.key, key) == 0)
		return 1;
	for (i = 0; i < c->n; i++)
		if (strcmp(c->d[i].key, key) == 0)
			return 1;
	return 0;
}

/* Delta d fetched whole and checked against its SHA-256. */
static int
fetch_delta(struct store_backend *s, const struct objpiece *d, uint8_t **body,
    size_t *len, struct cs_err *e)
{
	char hex[SHA_HEX_LEN], where[512], *b = NULL;
	uint8_t sum[SHA_LEN];

	*body = NULL;
	if (s->ops->read(s, d->key, DELTA_CAP, &b, len, NULL, e) < 0) {
		if (cs_err_code(e) != CS_E_NOTFOUND)
			return -1;
		s->ops->where(s, d->key, where, sizeof(where));
		return cs_errf(e, "%s is missing from the bucket", where);
	}
	if (sha256_buf(b, *len, sum) < 0) {
		free(b);
		return cs_errf(e, "sha256 of %s failed", d->key);
	}
	sha_hex(sum, hex);
	if (strcmp(hex, d->hex) != 0) {
		free(b);
		s->ops->where(s, d->key, where, sizeof(where));
		return cs_errc(e, CS_E_CORRUPT, "%s does not match its "
		    "commit (sha256 %.12s..., expected %.12s...): the object "
		    "was changed in the bucket", where, hex, d->hex);
	}
	*body = (uint8_t *)b;
	return 0;
}

int
objchain_apply(struct store_backend *s, const struct objchain *c,
    const char *path, struct cs_err *e)
{
	uint8_t *b;
	size_t i, len;
	int rc;

	for (i = 0; i < c->n; i++) {
		if (fetch_delta(s, &c->d[i], &b, &len, e) < 0)
			return -1;
		rc = store_mdelta_apply(path, b, len, e);
		free(b);
		if (rc < 0) {
			char where[512];

			s->ops->where(s, c->d[i].key, where, sizeof(where));
			cs_errctx(e, "%s", where);
			return -1;
		}
	}
	return 0;
}

/* The key of a new piece of commit gen. */
static int
piece_key(uint64_t gen, const char *ext, char *out, size_t n,
    struct cs_err *e)
{
	uint8_t rnd[4];

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return cs_errno(e, "getrandom");
	snprintf(out, n, "manifests/%020llu-%02x%02x%02x%02x.%s",
	    (unsigned long long)gen, rnd[0], rnd[1], rnd[2], rnd[3], ext);
	return 0;
}

/* newm's whole bytes into *body. */
static int
read_whole(const char *path, uint8_t **body, size_t *len, struct cs_err *e)
{
	struct stat sb;
	FILE *f;

	*body = NULL;
	if ((f = fopen(path, "re")) == NULL)
		return cs_errno(e, "open %s", path);
	if (fstat(fileno(f), &sb) < 0 || (uint64_t)sb.st_size > DELTA_CAP) {
		fclose(f);
		return cs_errf(e, "manifest too large for an object store "
		    "(%llu bytes)", (unsigned long long)sb.st_size);
	}
	*len = (size_t)sb.st_size;
	if ((*body = malloc(*len + 1)) == NULL ||
	    fread(*body, 1, *len, f) != *len) {
		fclose(f);
		free(*body);
		*body = NULL;
		return cs_errno(e, "read %s", path);
	}
	fclose(f);
	return 0;
}

/* *d, *n: the new delta merged with the last pieces of out while the
 * last is no more than twice its size; out loses the merged ones. */
static int
merge_tail(struct store_backend *s, struct objchain *out, uint8_t **d,
    size_t *n, struct cs_err *e)
{
	uint8_t *prev, *m;
	size_t plen, mlen;

	while (out->n > 0 && out->d[out->n - 1].size <= 2 * (uint64_t)*n) {
		if (fetch_delta(s, &out->d[out->n - 1], &prev, &plen, e) < 0)
			return -1;
		if (store_mdelta_concat(prev, plen, *d, *n, &m, &mlen, e) < 0) {
			free(prev);
			return -1;
		}
		free(prev);
		free(*d);
		*d = m;
		*n = mlen;
		out->n--;
	}
	return 0;
}

int
objchain_next(struct store_backend *s, const struct objchain *c,
    const char *oldm, const char *newm, uint64_t gen, struct objchain *out,
    uint8_t **body, size_t *len, int *full, struct cs_err *e)
{
	uint8_t sum[SHA_LEN], *d = NULL;
	size_t n = 0;
	struct objpiece *p;
	int r;

	*body = NULL;
	*full = 1;
	*out = *c;
	if (oldm != NULL) {
		if ((r = store_mdelta_make(oldm, newm, &d, &n, e)) < 0)
			return -1;
		*full = r == 1;
	}
	if (!*full && merge_tail(s, out, &d, &n, e) < 0) {
		free(d);
		return -1;
	}
	if (!*full && (2 * (uint64_t)n >= c->base.size ||
	    out->n == OBJCHAIN_MAX))
		*full = 1;
	if (*full) {
		free(d);
		d = NULL;
		out->n = 0;
		p = &out->base;
		if (read_whole(newm, &d, &n, e) < 0 ||
		    piece_key(gen, "db", p->key, sizeof(p->key), e) < 0)
			goto fail;
	} else {
		p = &out->d[out->n++];
		if (piece_key(gen, "delta", p->key, sizeof(p->key), e) < 0)
			goto fail;
	}
	if (sha256_buf(d, n, sum) < 0) {
		cs_errf(e, "sha256 of the manifest failed");
		goto fail;
	}
	sha_hex(sum, p->hex);
	p->size = n;
	*body = d;
	*len = n;
	return 0;
fail:
	free(d);
	return -1;
}
