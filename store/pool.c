/* pool.c - run independent tasks on a few threads (one per core): the
 * chunk copy of a snapshot and the hashing and replay of verify. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "store_int.h"

struct pool {
	void (*fn)(void *ctx, size_t task, int worker);
	void *ctx;
	size_t ntasks;
	atomic_size_t next;
};

struct worker_arg {
	struct pool *p;
	int id;
};

static void *
worker(void *arg)
{
	struct worker_arg *w = arg;
	size_t t;

	while ((t = atomic_fetch_add(&w->p->next, 1)) < w->p->ntasks)
		w->p->fn(w->p->ctx, t, w->id);
	return NULL;
}

int
pool_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		return 1;
	return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)n;
}

void
pool_run(size_t ntasks, void (*fn)(void *ctx, size_t task, int worker),
    void *ctx)
{
	pthread_t th[POOL_MAX_THREADS];
	struct worker_arg wa[POOL_MAX_THREADS];
	struct pool p;
	int i, n, started = 0;

	if (ntasks == 0)
		return;
	p.fn = fn;
	p.ctx = ctx;
	p.ntasks = ntasks;
	atomic_init(&p.next, 0);
	n = pool_threads();
	if ((size_t)n > ntasks)
		n = (int)ntasks;
	/* The caller is one of the workers; a thread that cannot be
	 * created only means fewer helpers. */
	for (i = 0; i < n; i++) {
		wa[i].p = &p;
		wa[i].id = i;
	}
	for (i = 1; i < n; i++)
		if (pthread_create(&th[started], NULL, worker, &wa[i]) == 0)
			started++;
	worker(&wa[0]);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}
