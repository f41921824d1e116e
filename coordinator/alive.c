/* alive.c - the coordinator's keepalive to its agents: W_SNAP_ALIVE once
 * a second while the run makes progress.
 *
 * An agent forgets a snapshot it joined once the coordinator's --timeout
 * (plus a grace) passes without word from it: that frees its recording
 * when the coordinator hangs (SIGSTOP) with the connection open. The
 * timeout counts time without progress, not the whole run, so a long
 * paced copy must tell the agents that it goes on: this thread does,
 * only while the run's deadline (moved by every report and every chunk
 * copied) lies ahead. A coordinator that stops, or stops progressing,
 * stops sending, and the agents give up on their own.
 *
 * It writes only to the connections no other thread writes during the
 * copy (not those of streamed agents, whose W_SNAP_FETCH and
 * W_SNAP_UPLOAD requests come from the copy's threads and count as word
 * from the coordinator on their own). */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "coord_int.h"
#include "../lib/buf.h"
#include "../lib/util.h"
#include "../net/wire.h"

#define ALIVE_EVERY_MS 1000

struct alive {
	const struct cfg *c;
	const int *fds;		/* per agent, borrowed */
	int *skip;		/* per agent: a streamed one, not written */
	const coord_deadline *deadline;
	struct wbuf frame;	/* the ALIVE payload: the run's uid */
	pthread_t t;
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* signalled by coord_alive_stop */
	int stop;
};

static void *
run(void *arg)
{
	struct alive *a = arg;
	struct timespec ts;
	struct cs_err e;
	sigset_t all;
	int i;

	/* Signals are the run's thread's (its interrupt flag, its poll). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&a->mu);
	while (!a->stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += ALIVE_EVERY_MS / 1000;
		(void)pthread_cond_timedwait(&a->cv, &a->mu, &ts);
		if (a->stop || cs_now_ms() >= atomic_load(a->deadline))
			continue;
		/* A failed write is the connection's end: the run notices it
		 * on its own (all_alive, the report it waits for). */
		for (i = 0; i < a->c->nagents; i++)
			if (!a->skip[i] && a->fds[i] >= 0)
				(void)wire_send(a->fds[i], W_SNAP_ALIVE,
				    a->frame.data, a->frame.len, &e);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

void
coord_alive_start(const struct cfg *c, const int *fds, const int *streamed,
    const struct snapuid *uid, const coord_deadline *deadline,
    struct alive **out)
{
	struct alive *a;
	int i;

	*out = NULL;
	if ((a = calloc(1, sizeof(*a))) == NULL ||
	    (a->skip = calloc((size_t)c->nagents, sizeof(*a->skip))) == NULL) {
		free(a);
		return;
	}
	a->c = c;
	a->fds = fds;
	a->deadline = deadline;
	for (i = 0; streamed != NULL && i < c->nagents; i++)
		a->skip[i] = streamed[i];
	wbuf_init(&a->frame);
	snapuid_put(&a->frame, uid);
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	if (a->frame.oom || pthread_create(&a->t, NULL, run, a) != 0) {
		pthread_cond_destroy(&a->cv);
		pthread_mutex_destroy(&a->mu);
		wbuf_free(&a->frame);
		free(a->skip);
		free(a);
		return;
	}
	*out = a;
}

void
coord_alive_stop(struct alive *a)
{
	if (a == NULL)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = 1;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->t, NULL);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	wbuf_free(&a->frame);
	free(a->skip);
	free(a);
}
