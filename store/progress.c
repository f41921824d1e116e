/* progress.c - the store's progress hook: bytes done of the operation's
 * total, with the agent whose file is being worked on. Verify and the
 * chunk copy run on several threads: one mutex serializes the counting
 * and the callback. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "store_int.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void
store_set_notes(struct store *st, problem_fn fn, void *ctx)
{
	st->nfn = fn;
	st->nctx = ctx;
}

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
store_progress_grow(struct store *st, uint64_t n)
{
	pthread_mutex_lock(&mu);
	st->ptotal += n;
	pthread_mutex_unlock(&mu);
}

void
store_progress_add(struct store *st, const char *agent, uint64_t n)
{
	pthread_mutex_lock(&mu);
	st->pdone += n;
	if (st->pdone > st->ptotal)
		st->ptotal = st->pdone;
	if (st->pfn != NULL)
		st->pfn(st->pctx, agent, st->pdone, st->ptotal);
	pthread_mutex_unlock(&mu);
}
