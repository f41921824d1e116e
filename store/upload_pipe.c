/* upload_pipe.c - chunk objects put create-only through a backend by
 * worker threads while the writer goes on (upload_pipe.h).
 *
 * The writer copies each object into one allocation (item, key, body)
 * and appends it to a FIFO; b->parallel workers (1 to PIPE_WORKERS_MAX)
 * take from its head and put it. One mutex guards everything below; a
 * worker waits on `work` for an item or the stop, the writer and drain
 * wait on `done`, which every answer broadcasts.
 *
 * Invariants, whenever the mutex is free (pipe_check):
 * - qn counts the items of the FIFO, qmem their body bytes; inflight
 *   counts the items workers took and hold, fmem their body bytes.
 * - The bodies held, qmem + fmem, stay within STORE_PIPE_MEM unless one
 *   body alone is held: store_pipe_put waits while adding its body would
 *   pass the bound and anything else is held, so a body larger than the
 *   bound goes through alone and is never refused. Only bodies count:
 *   an item's key and header are small beside a chunk's bytes.
 * - Once failed, the FIFO is empty: what was queued behind a failure is
 *   dropped (the caller stops), so drain does not wait on uploads whose
 *   answers no longer matter. Only the first failure is kept.
 * - Once stopping, no worker takes an item: store_pipe_stop frees what
 *   is left after joining them. */
#include <assert.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "upload_pipe.h"

#define PIPE_QUEUE_PER_WORKER 4	/* items queued, not yet taken */
/* More workers than this add connections, not throughput. */
#define PIPE_WORKERS_MAX 64

struct pipe_item {
	struct pipe_item *next;	/* toward the FIFO's tail */
	size_t len;		/* body bytes, at body */
	uint8_t *body;		/* in this allocation, after the key */
	char key[];		/* NUL-terminated */
};

struct store_pipe {
	struct store_backend *b;	/* borrowed */
	pthread_t th[PIPE_WORKERS_MAX];
	int nth;			/* workers started */
	pthread_mutex_t mu;
	pthread_cond_t work;		/* an item was queued, or the stop */
	pthread_cond_t done;		/* an answer came, or the stop */
	struct pipe_item *head, *tail;	/* the FIFO, oldest first */
	size_t qn, inflight;		/* items queued; taken, unanswered */
	uint64_t qmem, fmem;		/* their body bytes */
	int stopping;			/* store_pipe_stop: take nothing */
	int failed;			/* err holds the first failure */
	struct cs_err err;
	struct store_pipe_stats st;	/* answers so far */
};

/* The invariants above, in O(1); true so that it goes under assert(). */
static int
pipe_check(const struct store_pipe *p)
{
	assert((p->qn == 0) == (p->head == NULL));
	assert((p->head == NULL) == (p->tail == NULL));
	assert(p->qn > 0 || p->qmem == 0);
	assert(p->inflight > 0 || p->fmem == 0);
	assert(p->inflight <= (size_t)p->nth);
	assert(p->qn + p->inflight <= 1 ||
	    p->qmem + p->fmem <= STORE_PIPE_MEM);
	assert(!p->failed || p->qn == 0);
	return 1;
}

/* Under the mutex: frees the FIFO's items. */
static void
drop_queue(struct store_pipe *p)
{
	struct pipe_item *it;

	while ((it = p->head) != NULL) {
		p->head = it->next;
		free(it);
	}
	p->tail = NULL;
	p->qn = 0;
	p->qmem = 0;
}

/* Under the mutex: counts the answer to it (rc and e, from the backend's
 * put). */
static void
answer(struct store_pipe *p, const struct pipe_item *it, int rc,
    struct cs_err *e)
{
	p->inflight--;
	p->fmem -= it->len;
	if (rc == 0) {
		p->st.put++;
		p->st.bytes += it->len;
	} else if (cs_err_code(e) == CS_E_EXISTS) {
		p->st.had++;	/* create-only: the same bytes by name */
	} else if (!p->failed) {
		p->failed = 1;
		/* A backend's message names the object (backend.h); one
		 * with no words still gets the key. */
		if (e->msg[0] == '\0')
			cs_errf(e, "put %s failed", it->key);
		p->err = *e;
		drop_queue(p);
	}
	pthread_cond_broadcast(&p->done);
}

static void *
worker(void *arg)
{
	struct store_pipe *p = arg;
	struct pipe_item *it;
	struct cs_err e;
	int rc;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->head == NULL && !p->stopping)
			pthread_cond_wait(&p->work, &p->mu);
		if (p->stopping)
			break;
		it = p->head;
		if ((p->head = it->next) == NULL)
			p->tail = NULL;
		p->qn--;
		p->qmem -= it->len;
		p->inflight++;
		p->fmem += it->len;
		/* A place in the queue came free: a waiting put may go on. */
		pthread_cond_broadcast(&p->done);
		assert(pipe_check(p));
		pthread_mutex_unlock(&p->mu);

		memset(&e, 0, sizeof(e));
		rc = p->b->ops->put(p->b, it->key, it->body, it->len,
		    STORE_PUT_CREATE, NULL, NULL, &e);

		pthread_mutex_lock(&p->mu);
		answer(p, it, rc, &e);
		assert(pipe_check(p));
		free(it);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Joins the workers and frees p; they must have been told to stop. */
static void
pipe_free(struct store_pipe *p)
{
	int i;

	for (i = 0; i < p->nth; i++)
		pthread_join(p->th[i], NULL);
	drop_queue(p);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

int
store_pipe_start(struct store_backend *b, struct store_pipe **out,
    struct cs_err *e)
{
	struct store_pipe *p;
	sigset_t all, old;
	int i, n;

	*out = NULL;
	if (b->ops->put == NULL)
		return cs_errc(e, CS_E_USAGE, "this repository's storage "
		    "takes no uploads");
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	p->b = b;
	if (pthread_mutex_init(&p->mu, NULL) != 0) {
		free(p);
		return cs_errf(e, "cannot start the upload pipe");
	}
	if (pthread_cond_init(&p->work, NULL) != 0) {
		pthread_mutex_destroy(&p->mu);
		free(p);
		return cs_errf(e, "cannot start the upload pipe");
	}
	if (pthread_cond_init(&p->done, NULL) != 0) {
		pthread_cond_destroy(&p->work);
		pthread_mutex_destroy(&p->mu);
		free(p);
		return cs_errf(e, "cannot start the upload pipe");
	}
	n = b->parallel < 1 ? 1 : b->parallel > PIPE_WORKERS_MAX ?
	    PIPE_WORKERS_MAX : b->parallel;
	/* Signals stay the caller's threads' business. A worker that
	 * cannot be created only means fewer of them. The workers wait for
	 * the mutex until nth is final (pipe_check reads it). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_mutex_lock(&p->mu);
	for (i = 0; i < n; i++)
		if (pthread_create(&p->th[p->nth], NULL, worker, p) == 0)
			p->nth++;
	pthread_mutex_unlock(&p->mu);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (p->nth == 0) {
		pipe_free(p);
		return cs_errf(e, "cannot start the upload threads");
	}
	*out = p;
	return 0;
}

int
store_pipe_put(struct store_pipe *p, const char *key, const void *data,
    size_t len, struct cs_err *e)
{
	struct pipe_item *it;
	size_t klen = strlen(key);
	int rc = -1;

	if (len > SIZE_MAX - sizeof(*it) - klen - 1 ||
	    (it = malloc(sizeof(*it) + klen + 1 + len)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory for the upload "
		    "of %s", key);
	it->next = NULL;
	it->len = len;
	memcpy(it->key, key, klen + 1);
	it->body = (uint8_t *)it->key + klen + 1;
	if (len > 0)
		memcpy(it->body, data, len);

	pthread_mutex_lock(&p->mu);
	/* Also at most PIPE_QUEUE_PER_WORKER items per worker wait: the
	 * copy runs only a little ahead of the upload, so an interrupted
	 * snapshot stops while it copies, not after, with its uploads
	 * still queued. */
	while (((p->qn + p->inflight > 0 &&
	    p->qmem + p->fmem + len > STORE_PIPE_MEM) ||
	    p->qn >= (size_t)p->nth * PIPE_QUEUE_PER_WORKER) &&
	    !p->failed && !p->stopping)
		pthread_cond_wait(&p->done, &p->mu);
	if (p->failed) {
		if (e != NULL)
			*e = p->err;
	} else if (p->stopping) {
		cs_errf(e, "the upload of %s was not queued: the pipe stopped",
		    key);
	} else {
		if (p->tail != NULL)
			p->tail->next = it;
		else
			p->head = it;
		p->tail = it;
		p->qn++;
		p->qmem += len;
		it = NULL;
		pthread_cond_signal(&p->work);
		rc = 0;
	}
	assert(pipe_check(p));
	pthread_mutex_unlock(&p->mu);
	free(it);
	return rc;
}

int
store_pipe_drain(struct store_pipe *p, struct store_pipe_stats *st,
    struct cs_err *e)
{
	int rc = 0;

	pthread_mutex_lock(&p->mu);
	/* A failure empties the FIFO; the puts in flight still answer,
	 * so that nothing of this batch is under way once drain returns. */
	while ((p->qn > 0 || p->inflight > 0) && !p->stopping)
		pthread_cond_wait(&p->done, &p->mu);
	if (p->failed) {
		if (e != NULL)
			*e = p->err;
		rc = -1;
	}
	if (st != NULL)
		*st = p->st;
	pthread_mutex_unlock(&p->mu);
	return rc;
}

void
store_pipe_stop(struct store_pipe *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_broadcast(&p->work);
	pthread_cond_broadcast(&p->done);
	pthread_mutex_unlock(&p->mu);
	pipe_free(p);
}
