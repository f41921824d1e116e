/* load_run.c - the load generator's run: its worker threads (load_io.c),
 * the snapshot thread, and the merge of their results. */
/*
 * The K clients are split into contiguous slices, one per worker thread;
 * each worker owns its clients and their connections outright, so the
 * threads share nothing while they run. Their results are merged after
 * they have been joined.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/util.h"
#include "../coordinator/coordinator.h"
#include "load.h"
#include "load_io.h"

/* Set by the handler, read by every worker thread: a lock-free atomic,
 * which a handler may store to and other threads see. int_caught is set
 * before the handler is installed. */
static atomic_int stop_flag;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "a handler needs a lock-free int");
static volatile sig_atomic_t int_caught;

/* Set sig's handler (SIG_DFL, SIG_IGN or a function) with flags. */
static int
set_handler(int sig, void (*handler)(int), int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = flags;
	return sigaction(sig, &sa, NULL);
}

/* The first SIGTERM or SIGINT of the run: the clients retire, and a
 * second signal of either kind has its default effect. */
static void
on_stop(int sig)
{
	(void)sig;
	atomic_store(&stop_flag, 1);
	(void)set_handler(SIGTERM, SIG_DFL, 0);
	if (int_caught)
		(void)set_handler(SIGINT, SIG_DFL, 0);
}

int
load_stopping(void)
{
	return atomic_load_explicit(&stop_flag, memory_order_relaxed) != 0;
}

/* Whether sig's handler is handler. */
static int
handler_is(int sig, void (*handler)(int))
{
	struct sigaction old;

	return sigaction(sig, NULL, &old) == 0 && old.sa_handler == handler;
}

int
load_catch_stop(void)
{
	/* A shell starts a background job with SIGINT ignored; keep it so. */
	int_caught = !handler_is(SIGINT, SIG_IGN);
	if (set_handler(SIGTERM, on_stop, 0) == -1 ||
	    (int_caught && set_handler(SIGINT, on_stop, 0) == -1))
		return -1;
	return 0;
}

void
load_release_stop(void)
{
	(void)set_handler(SIGTERM, SIG_DFL, 0);
	if (int_caught)
		(void)set_handler(SIGINT, SIG_DFL, 0);
}

struct snapper {
	const struct load_opts *o;
	int64_t t0_us, end_us;
	struct load_snap *v;
	size_t n, cap;
	char first_failure[256];
	int oom;
};

static void *
snapper_main(void *arg)
{
	struct snapper *s = arg;
	struct coord_opts co;
	struct load_snap *v;
	struct cs_err e;
	int64_t next = s->t0_us, now;
	size_t ncap;
	int rc;

	memset(&co, 0, sizeof(co));
	co.repo = s->o->repo;
	co.store = s->o->store;	/* the password, as snapshot's */
	co.timeout_s = 60;
	/* The default recheck age, as "cutsnap snapshot" has: 0 would read
	 * back, decode and hash every reused chunk on every snapshot. */
	co.recheck_age_s = -1;
	co.max_rate = s->o->c->snapshot_max_rate;
	for (;;) {
		next += (int64_t)s->o->snap_every_ms * 1000;
		/* Fixed rate; a snapshot that took longer than the period
		 * is followed by the next one at once. */
		while ((now = (cs_now_ns() / 1000)) < next &&
		    now < s->end_us && !load_stopping())
			cs_sleep_ms(next - now > 50000 ? 50 :
			    (int)((next - now) / 1000) + 1);
		if (now >= s->end_us || load_stopping())
			break;
		if (next < now)
			next = now;
		if (s->n == s->cap) {
			ncap = s->cap ? s->cap * 2 : 64;
			if ((v = realloc(s->v, ncap * sizeof(*v))) == NULL) {
				s->oom = 1;
				break;
			}
			s->v = v;
			s->cap = ncap;
		}
		v = &s->v[s->n++];
		memset(v, 0, sizeof(*v));
		v->start_us = (cs_now_ns() / 1000) - s->t0_us;
		rc = coord_snapshot(s->o->c, &co, &v->id, &e);
		if (rc == 0 && s->o->published != NULL &&
		    s->o->published(&e) < 0) {
			/* Taken, but not made visible in the object store. */
			rc = -1;
			v->id = 0;
		}
		v->end_us = (cs_now_ns() / 1000) - s->t0_us;
		v->ok = rc == 0;
		if (rc < 0 && s->first_failure[0] == '\0')
			snprintf(s->first_failure, sizeof(s->first_failure),
			    "%.*s", (int)sizeof(s->first_failure) - 1, e.msg);
	}
	return NULL;
}

/* Every channel of the config, as (src, dst) pairs. */
static int
make_pairs(const struct cfg *c, struct load_pair **out, size_t *n)
{
	struct load_pair *v;
	int s, d;

	*n = 0;
	if ((v = calloc((size_t)c->nagents * (size_t)c->nagents + 1,
	    sizeof(*v))) == NULL)
		return -1;
	for (s = 0; s < c->nagents; s++)
		for (d = 0; d < c->nagents; d++)
			if (s != d && cfg_has_channel(c, s, d)) {
				v[*n].src = s;
				v[*n].dst = d;
				(*n)++;
			}
	*out = v;
	return 0;
}

/* Merge the clients' results into r (taking their arrays' contents). */
static int
merge(struct load_client *cls, int k, struct load_result *r)
{
	size_t total = 0, off = 0;
	int i;

	for (i = 0; i < k; i++)
		total += cls[i].n;
	if ((r->reqs = malloc((total + 1) * sizeof(*r->reqs))) == NULL)
		return -1;
	for (i = 0; i < k; i++) {
		if (cls[i].n > 0)
			memcpy(r->reqs + off, cls[i].reqs,
			    cls[i].n * sizeof(*r->reqs));
		off += cls[i].n;
		r->insufficient += cls[i].insufficient;
		r->failures += cls[i].failures;
		if (r->first_failure[0] == '\0' && cls[i].first_failure[0])
			memcpy(r->first_failure, cls[i].first_failure,
			    sizeof(r->first_failure));
	}
	r->nreqs = total;
	return 0;
}

/* The worker threads: o->threads (default 1), never more than the
 * clients. One thread waits on all the clients' connections and so
 * carries more replies per wake-up than two: on a 2-core machine shared
 * with the agents, a second thread cost load 10-20% more CPU per
 * transfer (its own sleeps and wake-ups) for no more transfers/s; the
 * CPU a transfer needs is the agents'. */
static int
nworkers(const struct load_opts *o)
{
	int n = o->threads > 0 ? o->threads : 1;

	return n < o->clients ? n : o->clients;
}

int
load_run(const struct load_opts *o, struct load_result *r,
    struct cs_err *e)
{
	struct load_client *cls = NULL;
	struct load_worker *ws = NULL;
	struct snapper sn;
	struct load_pair *pairs = NULL;
	pthread_t *tids = NULL, stid;
	size_t npairs;
	int64_t t0;
	uint64_t seed;
	int i, nw = nworkers(o), ninit = 0, started = 0, snap_started = 0;
	int rc = -1, oom = 0;

	memset(r, 0, sizeof(*r));
	memset(&sn, 0, sizeof(sn));
	if (make_pairs(o->c, &pairs, &npairs) == -1 ||
	    (cls = calloc((size_t)o->clients, sizeof(*cls))) == NULL ||
	    (ws = calloc((size_t)nw, sizeof(*ws))) == NULL ||
	    (tids = calloc((size_t)nw, sizeof(*tids))) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	t0 = (cs_now_ns() / 1000);
	for (i = 0; i < o->clients; i++) {
		seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1) ^
		    (uint64_t)t0 ^ (uint64_t)getpid();
		ninit++;	/* freed at out: even a half-initialised one */
		if (load_client_init(&cls[i], o->c->nagents, seed) == -1) {
			cs_errc(e, CS_E_NOMEM, "out of memory");
			goto out;
		}
	}
	for (i = 0; i < nw; i++) {
		ws[i].o = o;
		ws[i].pairs = pairs;
		ws[i].npairs = npairs;
		ws[i].t0_us = t0;
		ws[i].end_us = t0 + (int64_t)o->seconds * 1000000;
		/* Contiguous slices whose sizes differ by at most one. */
		ws[i].cls = cls + (size_t)o->clients * (size_t)i / (size_t)nw;
		ws[i].ncls = (int)((size_t)o->clients * (size_t)(i + 1) /
		    (size_t)nw - (size_t)(ws[i].cls - cls));
		ws[i].epfd = -1;
	}
	for (i = 0; i < nw; i++)
		if (load_io_init(&ws[i], e) == -1)
			goto out;
	/* The clock starts once every client is connected. */
	for (i = 0; i < nw; i++)
		load_io_connect(&ws[i]);
	t0 = (cs_now_ns() / 1000);
	for (i = 0; i < nw; i++) {
		ws[i].t0_us = t0;
		ws[i].end_us = t0 + (int64_t)o->seconds * 1000000;
	}
	for (i = 0; i < nw; i++) {
		if ((errno = pthread_create(&tids[i], NULL, load_io_main,
		    &ws[i])) != 0) {
			cs_errno(e, "pthread_create");
			goto join;
		}
		started++;
	}
	if (o->snap_every_ms > 0) {
		sn.o = o;
		sn.t0_us = t0;
		sn.end_us = ws[0].end_us;
		if ((errno = pthread_create(&stid, NULL, snapper_main,
		    &sn)) != 0) {
			cs_errno(e, "pthread_create");
			goto join;
		}
		snap_started = 1;
	}
	rc = 0;
join:
	/* On a failed start, the running workers end at their deadline. */
	for (i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	r->elapsed_us = (cs_now_ns() / 1000) - t0;
	r->interrupted = load_stopping();
	if (snap_started)
		pthread_join(stid, NULL);
	for (i = 0; i < o->clients; i++)
		oom |= cls[i].oom;
	if (rc == 0 && (oom || sn.oom || merge(cls, o->clients, r) == -1)) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		rc = -1;
	}
	r->snaps = sn.v;
	r->nsnaps = sn.n;
	sn.v = NULL;
	memcpy(r->first_snap_failure, sn.first_failure,
	    sizeof(r->first_snap_failure));
out:
	for (i = 0; i < ninit; i++)
		load_client_free(&cls[i], o->c->nagents);
	for (i = 0; ws != NULL && i < nw; i++)
		load_io_free(&ws[i]);
	free(sn.v);
	free(cls);
	free(ws);
	free(tids);
	free(pairs);
	if (rc == -1)
		load_result_free(r);
	return rc;
}

void
load_result_free(struct load_result *r)
{
	free(r->reqs);
	free(r->snaps);
	r->reqs = NULL;
	r->snaps = NULL;
	r->nreqs = r->nsnaps = 0;
}
