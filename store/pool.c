/* pool.c - run independent tasks on a few threads (one per core): the
 * chunk copy of a snapshot and the hashing and replay of verify. */
#include <sys/resource.h>
#include <sys/syscall.h>

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
	int background;
};

/* Linux's ioprio_set(2) has no libc wrapper; these are its ABI values. */
#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_CLASS_IDLE 3
#define IOPRIO_CLASS_SHIFT 13
#define BACKGROUND_NICE 10

/* Lower the calling thread's priorities (both are per thread on Linux).
 * Only a hint: a kernel or scheduler without I/O classes ignores it, and
 * a failure only means the copy competes at normal priority. */
static void
lower_priority(void)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);

	(void)syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, (int)tid,
	    IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT);
	(void)setpriority(PRIO_PROCESS, (id_t)tid, BACKGROUND_NICE);
}

static void *
worker(void *arg)
{
	struct worker_arg *w = arg;
	size_t t;

	if (w->background)
		lower_priority();
	while ((t = atomic_fetch_add(&w->p->next, 1)) < w->p->ntasks)
		w->p->fn(w->p->ctx, t, w->id);
	return NULL;
}

static int
store_pool_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		return 1;
	return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)n;
}

/* How many workers: one per core in the foreground; two per core in
 * the background (RUN_BACKGROUND) and for foreground tasks that write
 * with direct I/O (RUN_WRITING); POOL_MAX_THREADS for tasks that
 * mostly wait on the disk (RUN_IO, in the background) or on an object
 * store's answers (RUN_REMOTE, in the foreground). */
enum run_kind { RUN_FOREGROUND, RUN_WRITING, RUN_BACKGROUND, RUN_IO,
    RUN_REMOTE };

static void
run(size_t ntasks, void (*fn)(void *ctx, size_t task, int worker),
    void *ctx, enum run_kind kind)
{
	const int background = kind == RUN_BACKGROUND || kind == RUN_IO;
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
	/* Background work and restore read, hash and write with direct
	 * I/O, which blocks the thread until the disk has the bytes: two
	 * threads per core keep the cores hashing while the others wait on
	 * the disk (restore of 590 MiB, median of 5: 590 ms on two threads,
	 * 530 ms on four, on the project's 2-core VM). */
	n = store_pool_threads() * (kind == RUN_FOREGROUND ? 1 : 2);
	/* fsyncs take little CPU and wait for the disk's cache flush: with
	 * more of them in flight, the block layer merges the flushes asked
	 * for at once (56 directory fsyncs: 41-67 ms one after the other,
	 * 12-15 ms on 8 threads, on the project's VM). */
	if (kind == RUN_IO || kind == RUN_REMOTE)
		n = POOL_MAX_THREADS;
	if (n > POOL_MAX_THREADS)
		n = POOL_MAX_THREADS;
	if ((size_t)n > ntasks)
		n = (int)ntasks;
	for (i = 0; i < n; i++) {
		wa[i].p = &p;
		wa[i].id = i;
		wa[i].background = background;
	}
	/* In the foreground the caller is worker 0. A thread that cannot be
	 * created only means fewer workers; a background pool that got none
	 * at all runs on the caller at the caller's priority. */
	for (i = background ? 0 : 1; i < n; i++)
		if (pthread_create(&th[started], NULL, worker, &wa[i]) == 0)
			started++;
	if (!background || started == 0) {
		wa[0].background = 0;
		worker(&wa[0]);
	}
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

void
store_pool_run(size_t ntasks, void (*fn)(void *ctx, size_t task, int worker),
    void *ctx)
{
	run(ntasks, fn, ctx, RUN_FOREGROUND);
}

void
store_pool_run_writing(size_t ntasks,
    void (*fn)(void *ctx, size_t task, int worker), void *ctx)
{
	run(ntasks, fn, ctx, RUN_WRITING);
}

void
store_pool_run_background(size_t ntasks,
    void (*fn)(void *ctx, size_t task, int worker), void *ctx)
{
	run(ntasks, fn, ctx, RUN_BACKGROUND);
}

void
store_pool_run_io(size_t ntasks,
    void (*fn)(void *ctx, size_t task, int worker), void *ctx)
{
	run(ntasks, fn, ctx, RUN_IO);
}

void
store_pool_run_remote(size_t ntasks,
    void (*fn)(void *ctx, size_t task, int worker), void *ctx)
{
	run(ntasks, fn, ctx, RUN_REMOTE);
}
