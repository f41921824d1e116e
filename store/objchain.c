/* objchain.c - the manifest of an object-store commit as a chain: the
 * whole manifest an earlier commit uploaded (the base) and the deltas
 * of the commits since (store/mdelta.c: SQLite changesets), so that a
 * snapshot's commit uploads objects of the size of its own rows, not of
 * every snapshot's.
 *
 * A commit uploads its own delta and nothing else of the history: the
 * bytes it uploads do not grow with the number of snapshots kept. It
 * names the chain's newest OBJCHAIN_INLINE deltas itself; when they are
 * that many, the next commit first uploads them as an index object
 * (manifests/GEN-R.idx: those deltas, and the index before it), so
 * the commit text stays small too. Each byte of history is uploaded
 * once, plus an index line about one commit in OBJCHAIN_INLINE.
 *
 * Folding the chain into a new whole manifest is maintenance, as
 * restic's prune repacks and Iceberg's rewrite-manifests merges: prune
 * does it, under the lease, in its fence commit (objrepo.c). A commit
 * uploads a whole manifest only for a new repository, when a delta
 * cannot carry the change (a schema migration), or when the chain holds
 * OBJCHAIN_FOLD deltas (a repository nobody prunes: a reader with no
 * cache then fetches at most that many).
 *
 * Readers walk the indexes back from the commit (one GET per
 * OBJCHAIN_INLINE deltas), fetch the deltas several at a time, check
 * each against the SHA-256 its commit or index names, and apply them in
 * order; a piece that does not match or does not apply fails the
 * command (the bucket's objects are damaged), as a manifest that does
 * not match its commit does. */
#include <pthread.h>
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
/* An index names at most OBJCHAIN_LEGACY deltas (a version 2 commit of
 * an earlier release named up to that many): its text is far smaller. */
#define INDEX_CAP ((size_t)64 << 10)
/* The most deltas a reader accepts a chain to hold: a bound on what a
 * damaged or hostile commit makes it allocate. */
#define READ_MAX (4 * (uint64_t)OBJCHAIN_FOLD)
/* Deltas fetched ahead of the one being applied, and fetching threads. */
#define FETCH_WINDOW 64
#define FETCH_THREADS 8

static int
valid_key(const char *k)
{
	return strncmp(k, "manifests/", 10) == 0 && strstr(k, "..") == NULL &&
	    strspn(k + 10, "0123456789abcdefghijklmnopqrstuvwxyz-.") ==
	    strlen(k + 10);
}

/* "KEY SHA256 SIZE" at s into p; 0, or -1 when malformed. */
static int
parse_piece(const char *s, struct objpiece *p)
{
	unsigned long long size;

	if (sscanf(s, "%127s %64s %llu", p->key, p->hex, &size) != 3 ||
	    strlen(p->hex) != 64 || strspn(p->hex, "0123456789abcdef") != 64 ||
	    !valid_key(p->key))
		return -1;
	p->size = size;
	return 0;
}

/* The "delta" lines after text into d (at most cap of them); their
 * count, or -1 when one is malformed or there are too many. */
static int
parse_deltas(const char *text, struct objpiece *d, size_t cap)
{
	const char *p;
	size_t n = 0;

	for (p = text; (p = strstr(p, "\ndelta ")) != NULL; p++) {
		if (n == cap || parse_piece(p + 7, &d[n]) < 0)
			return -1;
		n++;
	}
	return (int)n;
}

/* "KEY SHA256 SIZE COUNT" after the word at s (an "index" or "prev"
 * line) into p and *count. */
static int
parse_link(const char *s, struct objpiece *p, uint64_t *count)
{
	unsigned long long n;

	if (parse_piece(s, p) < 0 ||
	    sscanf(s, "%*s %*s %*s %llu", &n) != 1 || n == 0 || n > READ_MAX)
		return -1;
	*count = n;
	return 0;
}

int
objchain_parse(const char *text, struct objchain *c)
{
	unsigned long long size;
	const char *p;
	int ver, n;

	memset(c, 0, sizeof(*c));
	if (sscanf(text, "cutsnap-commit %d\nmanifest %127s\nsha256 %64s\n"
	    "size %llu\n", &ver, c->base.key, c->base.hex, &size) != 4 ||
	    ver < 1 || ver > 3 || strlen(c->base.hex) != 64 ||
	    !valid_key(c->base.key))
		return -1;
	c->base.size = size;
	if ((p = strstr(text, "\nfolded ")) != NULL &&
	    (sscanf(p + 8, "%64s", c->folded) != 1 ||
	    strlen(c->folded) != 64 ||
	    strspn(c->folded, "0123456789abcdef") != 64))
		return -1;
	if (ver == 1)
		return 0;
	if (ver == 3 && ((p = strstr(text, "\nindex ")) == NULL ||
	    parse_link(p + 7, &c->idx, &c->nidx) < 0))
		return -1;
	if ((n = parse_deltas(text, c->d, OBJCHAIN_LEGACY)) <= 0)
		return -1;
	c->n = (size_t)n;
	return 0;
}

/* After buf's first off bytes: a "WORD KEY SHA256 SIZE COUNT" line for
 * link (none when its key is empty) and a "delta KEY SHA256 SIZE" line
 * for each of d[0..n). The new length, or -1 when it does not fit. */
static int
links_text(char *buf, size_t cap, size_t off, const char *word,
    const struct objpiece *link, uint64_t count, const struct objpiece *d,
    size_t n)
{
	size_t i;
	int k;

	if (link->key[0]) {
		k = snprintf(buf + off, cap - off, "%s %s %s %llu %llu\n", word,
		    link->key, link->hex, (unsigned long long)link->size,
		    (unsigned long long)count);
		if (k < 0 || (size_t)k >= cap - off)
			return -1;
		off += (size_t)k;
	}
	for (i = 0; i < n; i++) {
		k = snprintf(buf + off, cap - off, "delta %s %s %llu\n",
		    d[i].key, d[i].hex, (unsigned long long)d[i].size);
		if (k < 0 || (size_t)k >= cap - off)
			return -1;
		off += (size_t)k;
	}
	return (int)off;
}

int
objchain_text(const struct objchain *c, char *buf, size_t cap)
{
	int k;

	k = snprintf(buf, cap, "cutsnap-commit %d\nmanifest %s\nsha256 %s\n"
	    "size %llu\n", c->idx.key[0] ? 3 : c->n > 0 ? 2 : 1, c->base.key,
	    c->base.hex, (unsigned long long)c->base.size);
	if (k < 0 || (size_t)k >= cap)
		return -1;
	if (c->folded[0] && (size_t)k + 8 + SHA_HEX_LEN < cap)
		k += snprintf(buf + k, cap - (size_t)k, "folded %s\n",
		    c->folded);
	return links_text(buf, cap, (size_t)k, "index", &c->idx, c->nidx, c->d,
	    c->n) < 0 ? -1 : 0;
}

const char *
objchain_state(const struct objchain *c)
{
	return c->n > 0 ? c->d[c->n - 1].hex : c->base.hex;
}

uint64_t
objchain_deltas(const struct objchain *c)
{
	return c->nidx + c->n;
}

int
objchain_names(const struct objchain *c, const char *key)
{
	size_t i;

	if (strcmp(c->base.key, key) == 0 || strcmp(c->idx.key, key) == 0)
		return 1;
	for (i = 0; i < c->n; i++)
		if (strcmp(c->d[i].key, key) == 0)
			return 1;
	return 0;
}

uint64_t
objchain_piece_gen(const char *key)
{
	unsigned long long g;

	return sscanf(key, "manifests/%20llu", &g) == 1 ? g : 0;
}

/* Piece p fetched whole (at most cap bytes) and checked against its
 * SHA-256. */
static int
fetch_piece(struct store_backend *s, const struct objpiece *p, size_t cap,
    uint8_t **body, size_t *len, struct cs_err *e)
{
	char hex[SHA_HEX_LEN], where[512], *b = NULL;
	uint8_t sum[SHA_LEN];

	*body = NULL;
	if (s->ops->read(s, p->key, cap, &b, len, NULL, e) < 0) {
		if (cs_err_code(e) != CS_E_NOTFOUND)
			return -1;
		s->ops->where(s, p->key, where, sizeof(where));
		return cs_errf(e, "%s is missing from the bucket", where);
	}
	if (sha256_buf(b, *len, sum) < 0) {
		free(b);
		return cs_errf(e, "sha256 of %s failed", p->key);
	}
	sha_hex(sum, hex);
	if (strcmp(hex, p->hex) != 0) {
		free(b);
		s->ops->where(s, p->key, where, sizeof(where));
		return cs_errc(e, CS_E_CORRUPT, "%s does not match its "
		    "commit (sha256 %.12s..., expected %.12s...): the object "
		    "was changed in the bucket", where, hex, p->hex);
	}
	*body = (uint8_t *)b;
	return 0;
}

/* ---- indexes ---- */

/* The text of an index: the one before it (none when prev->key is
 * empty) with the nprev deltas it names, then deltas d[0..n). */
static char *
index_text(const struct objpiece *prev, uint64_t nprev,
    const struct objpiece *d, size_t n, size_t *len)
{
	size_t cap = 64 + (n + 1) * (sizeof(d->key) + SHA_HEX_LEN + 48);
	char *t;
	int k;

	if ((t = malloc(cap)) == NULL)
		return NULL;
	k = snprintf(t, cap, "cutsnap-index 1\n");
	if ((k = links_text(t, cap, (size_t)k, "prev", prev, nprev, d, n)) <
	    0) {
		free(t);
		return NULL;
	}
	*len = (size_t)k;
	return t;
}

/* The deltas of chain c, in order, into *out (malloc'd, *n of them):
 * the indexes walked back from the commit's, each checked against the
 * SHA-256 that names it, then the commit's own. */
static int
chain_deltas(struct store_backend *s, const struct objchain *c,
    struct objpiece **out, size_t *n, struct cs_err *e)
{
	uint64_t total = objchain_deltas(c), at = c->nidx, nprev;
	struct objpiece cur = c->idx, prev, d[OBJCHAIN_LEGACY];
	uint8_t *body;
	size_t len;
	char where[512];
	int k;

	*out = NULL;
	*n = 0;
	if (total > READ_MAX)
		return cs_errc(e, CS_E_CORRUPT, "the commit names %llu "
		    "manifest deltas, more than %llu",
		    (unsigned long long)total, (unsigned long long)READ_MAX);
	if (total == 0)
		return 0;
	if ((*out = calloc((size_t)total, sizeof(**out))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	memcpy(*out + at, c->d, c->n * sizeof(*c->d));
	while (at > 0) {
		if (fetch_piece(s, &cur, INDEX_CAP, &body, &len, e) < 0)
			goto fail;
		memset(&prev, 0, sizeof(prev));
		nprev = 0;
		k = strncmp((char *)body, "cutsnap-index 1\n", 16) != 0 ? -1 :
		    parse_deltas((char *)body, d, OBJCHAIN_LEGACY);
		if (k > 0 && strstr((char *)body, "\nprev ") != NULL &&
		    parse_link(strstr((char *)body, "\nprev ") + 6, &prev,
		    &nprev) < 0)
			k = -1;
		free(body);
		if (k <= 0 || nprev + (uint64_t)k != at) {
			s->ops->where(s, cur.key, where, sizeof(where));
			cs_errc(e, CS_E_CORRUPT, "%s: not the index of %llu "
			    "manifest deltas its commit names", where,
			    (unsigned long long)at);
			goto fail;
		}
		at = nprev;
		memcpy(*out + at, d, (size_t)k * sizeof(*d));
		cur = prev;
	}
	*n = (size_t)total;
	return 0;
fail:
	free(*out);
	*out = NULL;
	return -1;
}

/* ---- reading a chain ---- */

/* Threads fetching the deltas ahead of the one applied (at most
 * FETCH_WINDOW ahead), each with its backend connection. */
struct fetcher {
	struct store_backend *s;
	const struct objpiece *p;
	size_t n;
	uint8_t **body;
	size_t *len;
	int *state;		/* 0 pending, 1 fetched, -1 failed */
	struct cs_err err[FETCH_WINDOW];	/* of a failed one, by slot */
	size_t next;		/* the next one to fetch */
	size_t applied;		/* the ones below are applied */
	int stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static void *
fetch_worker(void *arg)
{
	struct fetcher *f = arg;
	struct cs_err e;
	uint8_t *b;
	size_t i, len;
	int r;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		while (!f->stop && f->next < f->n &&
		    f->next >= f->applied + FETCH_WINDOW)
			pthread_cond_wait(&f->cv, &f->mu);
		if (f->stop || f->next >= f->n)
			break;
		i = f->next++;
		pthread_mutex_unlock(&f->mu);
		r = fetch_piece(f->s, &f->p[i], DELTA_CAP, &b, &len, &e);
		pthread_mutex_lock(&f->mu);
		f->body[i] = b;
		f->len[i] = len;
		f->state[i] = r < 0 ? -1 : 1;
		if (r < 0)
			f->err[i % FETCH_WINDOW] = e;
		pthread_cond_broadcast(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* Applies f's deltas to path in order as they arrive. */
static int
apply_fetched(struct fetcher *f, const char *path, struct cs_err *e)
{
	size_t i;
	int rc;

	for (i = 0; i < f->n; i++) {
		pthread_mutex_lock(&f->mu);
		while (f->state[i] == 0)
			pthread_cond_wait(&f->cv, &f->mu);
		pthread_mutex_unlock(&f->mu);
		if (f->state[i] < 0) {
			*e = f->err[i % FETCH_WINDOW];
			return -1;
		}
		rc = store_mdelta_apply(path, f->body[i], f->len[i], e);
		free(f->body[i]);
		f->body[i] = NULL;
		if (rc < 0) {
			char where[512];

			f->s->ops->where(f->s, f->p[i].key, where,
			    sizeof(where));
			cs_errctx(e, "%s", where);
			return -1;
		}
		pthread_mutex_lock(&f->mu);
		f->applied = i + 1;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
	}
	return 0;
}

/* Deltas d[0..n) fetched and applied to path, in order. */
static int
apply_deltas(struct store_backend *s, const struct objpiece *d, size_t n,
    const char *path, struct cs_err *e)
{
	struct fetcher *f;
	pthread_t th[FETCH_THREADS];
	size_t i, nth = 0, want;
	int rc = -1;

	if (n == 0)
		return 0;
	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    (f->body = calloc(n, sizeof(*f->body))) == NULL ||
	    (f->len = calloc(n, sizeof(*f->len))) == NULL ||
	    (f->state = calloc(n, sizeof(*f->state))) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	f->s = s;
	f->p = d;
	f->n = n;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	want = s->parallel > 1 ? (size_t)s->parallel : 1;
	if (want > FETCH_THREADS)
		want = FETCH_THREADS;
	if (want > n)
		want = n;
	for (nth = 0; nth < want; nth++)
		if (pthread_create(&th[nth], NULL, fetch_worker, f) != 0)
			break;
	if (nth == 0)
		cs_errf(e, "cannot start a thread to fetch manifest deltas");
	else
		rc = apply_fetched(f, path, e);
	pthread_mutex_lock(&f->mu);
	f->stop = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	for (i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < n; i++)
		free(f->body[i]);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
out:
	if (f != NULL) {
		free(f->body);
		free(f->len);
		free(f->state);
	}
	free(f);
	return rc;
}

int
objchain_apply(struct store_backend *s, const struct objchain *c,
    const char *path, struct cs_err *e)
{
	struct objpiece *d;
	size_t n;
	int rc;

	if (chain_deltas(s, c, &d, &n, e) < 0)
		return -1;
	rc = apply_deltas(s, d, n, path, e);
	free(d);
	return rc;
}

int
objchain_catch_up(struct store_backend *s, const struct objchain *c,
    const char *state, const char *path, size_t *applied, struct cs_err *e)
{
	struct objpiece *d;
	size_t n, j;
	int rc = 0;

	*applied = 0;
	if (strcmp(state, c->base.hex) == 0 || strcmp(state, c->folded) == 0)
		return objchain_apply(s, c, path, e) < 0 ? -1 :
		    (*applied = (size_t)objchain_deltas(c), 1);
	if (chain_deltas(s, c, &d, &n, e) < 0)
		return -1;
	for (j = n; j > 0 && strcmp(d[j - 1].hex, state) != 0; j--)
		;
	if (j > 0) {
		rc = apply_deltas(s, d + j, n - j, path, e) < 0 ? -1 : 1;
		*applied = n - j;
	}
	free(d);
	return rc;
}

/* ---- writing a chain ---- */

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

/* Piece p (its key already chosen) named after body's bytes, and the
 * upload of them into *up (which takes body). */
static int
piece_of(struct objpiece *p, uint8_t *body, size_t len,
    struct objupload *up, struct cs_err *e)
{
	uint8_t sum[SHA_LEN];

	if (sha256_buf(body, len, sum) < 0) {
		free(body);
		return cs_errf(e, "sha256 of %s failed", p->key);
	}
	sha_hex(sum, p->hex);
	p->size = len;
	*up = (struct objupload){ p, body, len };
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

int
objchain_whole(const char *path, uint64_t gen, struct objchain *out,
    struct objupload *up, struct cs_err *e)
{
	uint8_t *body;
	size_t len = 0;

	memset(out, 0, sizeof(*out));
	if (read_whole(path, &body, &len, e) < 0)
		return -1;
	if (piece_key(gen, "db", out->base.key, sizeof(out->base.key), e) < 0) {
		free(body);
		return -1;
	}
	return piece_of(&out->base, body, len, up, e);
}

int
objchain_next(const struct objchain *c, const char *oldm,
    const char *newm, uint64_t gen, struct objchain *out,
    struct objupload up[2], size_t *nup, int *full, struct cs_err *e)
{
	uint8_t *d = NULL;
	size_t n = 0, tl = 0;
	struct objpiece *p;
	char *t;
	int r;

	*nup = 0;
	*full = 1;
	*out = *c;
	out->folded[0] = '\0';
	if (oldm != NULL) {
		if ((r = store_mdelta_make(oldm, newm, &d, &n, e)) < 0)
			return -1;
		*full = r == 1 || objchain_deltas(c) >= OBJCHAIN_FOLD;
	}
	if (*full) {
		free(d);
		if (objchain_whole(newm, gen, out, &up[0], e) < 0)
			return -1;
		*nup = 1;
		return 0;
	}
	/* The commit's own deltas full: they go into an index first. */
	if (out->n >= OBJCHAIN_INLINE) {
		if ((t = index_text(&c->idx, c->nidx, c->d, c->n, &tl)) ==
		    NULL) {
			free(d);
			return cs_errc(e, CS_E_NOMEM, "out of memory");
		}
		if (piece_key(gen, "idx", out->idx.key, sizeof(out->idx.key),
		    e) < 0) {
			free(t);
			free(d);
			return -1;
		}
		if (piece_of(&out->idx, (uint8_t *)t, tl, &up[0], e) < 0) {
			free(d);
			return -1;
		}
		*nup = 1;
		out->nidx += out->n;
		out->n = 0;
	}
	p = &out->d[out->n++];
	if (piece_key(gen, "delta", p->key, sizeof(p->key), e) < 0) {
		free(d);
		goto fail;
	}
	if (piece_of(p, d, n, &up[*nup], e) < 0)	/* it freed d */
		goto fail;
	(*nup)++;
	return 0;
fail:
	if (*nup == 1)
		free(up[0].body);
	*nup = 0;
	return -1;
}
