/* progress.c - the store's progress hook: bytes done of the operation's
 * total, with the agent whose file is being worked on. Verify and the
 * chunk copy run on several threads: one mutex serializes the counting
 * and the callback. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "store_int.h"

#define PROGRESS_STEP ((size_t)1 << 20)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void
store_set_progress(struct store *st, progress_fn fn, void *ctx)
{
	pthread_mutex_lock(&mu);
	st->pfn = fn;
	st->pctx = ctx;
	pthread_mutex_unlock(&mu);
}

void
store_progress_start(struct store *st, uint64_t total)
{
	pthread_mutex_lock(&mu);
	st->pdone = 0;
	st->ptotal = total;
	pthread_mutex_unlock(&mu);
}

void
progress_grow(struct store *st, uint64_t n)
{
	pthread_mutex_lock(&mu);
	st->ptotal += n;
	pthread_mutex_unlock(&mu);
}

void
progress_add(struct store *st, const char *agent, uint64_t n)
{
	pthread_mutex_lock(&mu);
	st->pdone += n;
	if (st->pdone > st->ptotal)
		st->ptotal = st->pdone;
	if (st->pfn != NULL)
		st->pfn(st->pctx, agent, st->pdone, st->ptotal);
	pthread_mutex_unlock(&mu);
}

int
progress_sha256(struct store *st, const char *agent, const void *p,
    size_t n, uint8_t out[SHA_LEN])
{
	const uint8_t *b = p;
	struct sha_ctx *c;
	size_t off, k;
	int rc = -1;

	if (st->pfn == NULL) {
		if (sha256_buf(b, n, out) < 0)
			return -1;
		progress_add(st, agent, n);
		return 0;
	}
	if ((c = sha_new()) == NULL)
		return -1;
	for (off = 0; off < n; off += k) {
		k = n - off < PROGRESS_STEP ? n - off : PROGRESS_STEP;
		if (sha_update(c, b + off, k) < 0)
			goto out;
		progress_add(st, agent, k);
	}
	if (sha_final(c, out) < 0)
		goto out;
	rc = 0;
out:
	sha_free(c);
	return rc;
}
