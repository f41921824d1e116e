/* load_run.c - the load generator's client threads and snapshot thread. */
/*
 * Each client is one thread with its own connection to every agent, doing
 * one transfer at a time (a closed loop, like pgbench's clients): pick a
 * random channel S->D and a random amount, send TRANSFER to S, wait for
 * the reply (sent by the agent only once the SEND record is durable).
 * Threads share nothing while they run; their results are merged after
 * they have been joined.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/buf.h"
#include "../common/client.h"
#include "../common/wire.h"
#include "../coordinator/coordinator.h"
#include "cmd.h"
#include "load.h"

struct pair {
	int src, dst;
};

struct client {
	const struct load_opts *o;
	const struct pair *pairs;
	size_t npairs;
	int64_t t0_us, end_us;	/* monotonic us: run start, run end */
	uint64_t rng;		/* xorshift64 state, never 0 */
	int *fds;		/* one per agent, -1 until connected */
	struct load_req *reqs;
	size_t n, cap;
	uint64_t insufficient, failures;
	char first_failure[256];
	int oom;
};

struct snapper {
	const struct load_opts *o;
	int64_t t0_us, end_us;
	struct load_snap *v;
	size_t n, cap;
	char first_failure[256];
	int oom;
};

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Count a failed request; keep the first one's "AGENT: message". */
static void
note_failure(struct client *cl, const char *agent, const char *msg)
{
	cl->failures++;
	if (cl->first_failure[0] == '\0')
		snprintf(cl->first_failure, sizeof(cl->first_failure),
		    "%.63s: %.180s", agent, msg);
}

static int
record(struct client *cl, int64_t start, int64_t dur)
{
	struct load_req *v;
	size_t ncap;

	if (cl->n == cl->cap) {
		ncap = cl->cap ? cl->cap * 2 : 4096;
		if ((v = realloc(cl->reqs, ncap * sizeof(*v))) == NULL)
			return -1;
		cl->reqs = v;
		cl->cap = ncap;
	}
	cl->reqs[cl->n].start_us = start - cl->t0_us;
	cl->reqs[cl->n].dur_us = dur;
	cl->n++;
	return 0;
}

/* One transfer on pair p. A broken connection is closed and reopened by
 * the next request to that agent. */
static void
one_transfer(struct client *cl, const struct pair *p, struct wbuf *req)
{
	const struct cfg *c = cl->o->c;
	const char *sname = c->agents[p->src].name;
	struct cs_err e;
	uint8_t code, *body = NULL;
	size_t blen;
	int64_t n, t;
	char msg[200];

	n = 1 + (int64_t)(rnd(&cl->rng) % (uint64_t)cl->o->max_amount);
	wbuf_reset(req);
	wbuf_put_bytes(req, LOAD_KEY, strlen(LOAD_KEY));
	wbuf_put_str(req, c->agents[p->dst].name);
	wbuf_put_bytes(req, LOAD_KEY, strlen(LOAD_KEY));
	wbuf_put_i64(req, n);
	if (req->oom) {
		cl->oom = 1;
		return;
	}
	if (cl->fds[p->src] == -1 && (cl->fds[p->src] =
	    client_connect(c->agents[p->src].sock, sname, &e)) == -1) {
		note_failure(cl, sname, e.msg);
		return;
	}
	t = now_us();
	if (client_call(cl->fds[p->src], W_REQ_TRANSFER, req->data, req->len,
	    &code, &body, &blen, CMD_REQ_TIMEOUT_MS, &e) == -1) {
		note_failure(cl, sname, e.msg);
		close(cl->fds[p->src]);
		cl->fds[p->src] = -1;
		goto out;
	}
	if (code == REPLY_OK) {
		if (record(cl, t, now_us() - t) == -1)
			cl->oom = 1;
	} else {
		cmd_printable(body, blen, msg, sizeof(msg));
		if (code == REPLY_FAIL &&
		    strncmp(msg, "insufficient funds", 18) == 0)
			cl->insufficient++;
		else
			note_failure(cl, sname, msg);
	}
out:
	free(body);
}

static void *
client_main(void *arg)
{
	struct client *cl = arg;
	struct wbuf req;

	wbuf_init(&req);
	while (!cl->oom && now_us() < cl->end_us)
		one_transfer(cl, &cl->pairs[rnd(&cl->rng) % cl->npairs],
		    &req);
	wbuf_free(&req);
	return NULL;
}

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
	co.timeout_s = 60;
	for (;;) {
		next += (int64_t)s->o->snap_every_ms * 1000;
		/* Fixed rate; a snapshot that took longer than the period
		 * is followed by the next one at once. */
		while ((now = now_us()) < next && now < s->end_us)
			cmd_sleep_ms(next - now > 50000 ? 50 :
			    (int)((next - now) / 1000) + 1);
		if (now >= s->end_us)
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
		v->start_us = now_us() - s->t0_us;
		rc = coord_snapshot(s->o->c, &co, &v->id, &e);
		v->end_us = now_us() - s->t0_us;
		v->ok = rc == 0;
		if (rc == -1 && s->first_failure[0] == '\0')
			cmd_snapshot_error(v->id, e.msg, s->first_failure,
			    sizeof(s->first_failure));
	}
	return NULL;
}

/* Every channel of the config, as (src, dst) pairs. */
static int
make_pairs(const struct cfg *c, struct pair **out, size_t *n)
{
	struct pair *v;
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
merge(struct client *cls, int k, struct load_result *r)
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

int
load_run(const struct load_opts *o, struct load_result *r,
    struct cs_err *e)
{
	struct client *cls = NULL;
	struct snapper sn;
	struct pair *pairs = NULL;
	pthread_t *tids = NULL, stid;
	size_t npairs;
	int64_t t0;
	int i, j, started = 0, snap_started = 0, rc = -1, oom = 0;

	memset(r, 0, sizeof(*r));
	memset(&sn, 0, sizeof(sn));
	if (make_pairs(o->c, &pairs, &npairs) == -1 ||
	    (cls = calloc((size_t)o->clients, sizeof(*cls))) == NULL ||
	    (tids = calloc((size_t)o->clients, sizeof(*tids))) == NULL) {
		cs_errf(e, "out of memory");
		goto out;
	}
	t0 = now_us();
	for (i = 0; i < o->clients; i++) {
		cls[i].o = o;
		cls[i].pairs = pairs;
		cls[i].npairs = npairs;
		cls[i].t0_us = t0;
		cls[i].end_us = t0 + (int64_t)o->seconds * 1000000;
		cls[i].rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1) ^
		    (uint64_t)t0 ^ (uint64_t)getpid();
		if (cls[i].rng == 0)
			cls[i].rng = 1;
		if ((cls[i].fds = malloc((size_t)o->c->nagents *
		    sizeof(int))) == NULL) {
			cs_errf(e, "out of memory");
			goto join;
		}
		for (j = 0; j < o->c->nagents; j++)
			cls[i].fds[j] = -1;
	}
	for (i = 0; i < o->clients; i++) {
		if ((errno = pthread_create(&tids[i], NULL, client_main,
		    &cls[i])) != 0) {
			cs_errno(e, "pthread_create");
			goto join;
		}
		started++;
	}
	if (o->snap_every_ms > 0) {
		sn.o = o;
		sn.t0_us = t0;
		sn.end_us = cls[0].end_us;
		if ((errno = pthread_create(&stid, NULL, snapper_main,
		    &sn)) != 0) {
			cs_errno(e, "pthread_create");
			goto join;
		}
		snap_started = 1;
	}
	rc = 0;
join:
	/* On a failed start, the running clients end at their deadline. */
	for (i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	r->elapsed_us = now_us() - t0;
	if (snap_started)
		pthread_join(stid, NULL);
	for (i = 0; i < o->clients; i++)
		oom |= cls[i].oom;
	if (rc == 0 && (oom || sn.oom || merge(cls, o->clients, r) == -1)) {
		cs_errf(e, "out of memory");
		rc = -1;
	}
	r->snaps = sn.v;
	r->nsnaps = sn.n;
	sn.v = NULL;
	memcpy(r->first_snap_failure, sn.first_failure,
	    sizeof(r->first_snap_failure));
out:
	for (i = 0; cls != NULL && i < o->clients; i++) {
		for (j = 0; cls[i].fds != NULL && j < o->c->nagents; j++)
			if (cls[i].fds[j] != -1)
				close(cls[i].fds[j]);
		free(cls[i].fds);
		free(cls[i].reqs);
	}
	free(sn.v);
	free(cls);
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
