/* load_io.c - the load generator's worker threads. */
/*
 * A thread per client, each blocked in its own request/reply, costs a
 * sleeping thread and two context switches per transfer; on a small
 * machine the load generator then takes the CPU the agents need and caps
 * what it measures. Instead each worker thread (one by default)
 * multiplexes its share of the clients, pgbench-style, with one epoll
 * instance over their non-blocking connections, so one wake-up usually
 * carries several replies.
 *
 * A client is still a closed loop: one TRANSFER outstanding at a time,
 * on a random channel S->D with a random amount, its latency measured
 * from the send to the reply. A request unanswered within
 * LOAD_REQ_TIMEOUT_MS, or any error on a connection, counts a failure and
 * closes that connection; the next request to that agent reconnects.
 */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../net/client.h"
#include "../lib/util.h"
#include "../net/wire.h"
#include "../net/xport.h"
#include "load.h"
#include "load_io.h"

#define IN_START 512
#define IN_MAX (4 + (size_t)WIRE_MAX_FRAME)	/* wire_parse refuses more */
#define MAX_EVENTS 64
#define TIMEOUT_US ((int64_t)LOAD_REQ_TIMEOUT_MS * 1000)

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int
load_client_init(struct load_client *cl, int nagents, uint64_t seed)
{
	int i;

	memset(cl, 0, sizeof(*cl));
	cl->rng = seed ? seed : 1;
	cl->cur = -1;
	wbuf_init(&cl->out);
	if ((cl->conns = calloc((size_t)nagents, sizeof(*cl->conns))) == NULL)
		return -1;
	for (i = 0; i < nagents; i++)
		cl->conns[i].fd = -1;
	return 0;
}

/* Close a connection (also drops it from the epoll set). */
static void
conn_drop(struct load_conn *lc)
{
	netconn_close(lc->nc);	/* and fd */
	lc->nc = NULL;
	lc->fd = -1;
}

/* A netconn_rc as send(2) and read(2) say it: -1 with errno (EAGAIN
 * when the transport waits for the socket; a failure keeps its own, EIO
 * for TLS), 0 at the end. */
static ssize_t
conn_rc(ssize_t k)
{
	if (k > 0)
		return k;
	if (k == NETCONN_EOF)
		return 0;
	if (k == NETCONN_WANT_READ || k == NETCONN_WANT_WRITE)
		errno = EAGAIN;
	return -1;
}

static ssize_t
conn_write(struct load_conn *lc, const void *p, size_t n)
{
	return conn_rc(netconn_write(lc->nc, p, n));
}

static ssize_t
conn_read(struct load_conn *lc, void *p, size_t n)
{
	return conn_rc(netconn_read(lc->nc, p, n));
}

void
load_client_free(struct load_client *cl, int nagents)
{
	int i;

	for (i = 0; cl->conns != NULL && i < nagents; i++)
		conn_drop(&cl->conns[i]);
	free(cl->conns);
	wbuf_free(&cl->out);
	free(cl->in);
	free(cl->reqs);
	cl->conns = NULL;
	cl->in = NULL;
	cl->reqs = NULL;
}

int
load_io_init(struct load_worker *w, struct cs_err *e)
{
	if ((w->ready = calloc((size_t)w->ncls, sizeof(*w->ready))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if ((w->epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		return cs_errno(e, "epoll_create1");
	return 0;
}

void
load_io_free(struct load_worker *w)
{
	if (w->epfd != -1)
		close(w->epfd);
	w->epfd = -1;
	free(w->ready);
	w->ready = NULL;
}

/* The epoll key of client ci's connection to agent a, at its current gen. */
static uint64_t
conn_key(const struct load_worker *w, int ci, int a)
{
	int nag = w->o->c->nagents;

	return (uint64_t)w->cls[ci].conns[a].gen << 32 |
	    (uint32_t)(ci * nag + a);
}

/* Count a failed request; keep the first one's "AGENT: message". */
static void
note_failure(struct load_client *cl, const char *agent, const char *msg)
{
	cl->failures++;
	if (cl->first_failure[0] == '\0')
		snprintf(cl->first_failure, sizeof(cl->first_failure),
		    "%.63s: %.180s", agent, msg);
}

/* Client cl has no request any more: it starts its next one from the
 * ready list, once every event of the current batch has been handled. So
 * the replies of a batch are all timed before any new request is sent
 * (a send may wake an agent that takes this thread's core), and a client
 * whose request failed inside client_next is not restarted from there. */
static void
make_ready(struct load_worker *w, struct load_client *cl)
{
	cl->cur = -1;
	w->ready[w->nready++] = (int)(cl - w->cls);
}

/* Count a failure on agent a's connection and close it. */
static void
conn_fail(struct load_worker *w, struct load_client *cl, int a,
    const char *msg)
{
	note_failure(cl, w->o->c->agents[a].name, msg);
	conn_drop(&cl->conns[a]);
	if (cl->cur == a)
		make_ready(w, cl);
}

/* Connect client ci to agent a; a failure counts against the client
 * unless quiet. 0 / -1. */
static int
conn_open(struct load_worker *w, int ci, int a, int quiet)
{
	struct load_client *cl = &w->cls[ci];
	const struct cfg_agent *ag = &w->o->c->agents[a];
	struct epoll_event ev;
	struct netconn *nc = NULL;
	struct xconn *x = NULL;
	struct cs_err e;
	int fd;

	/* Over TLS this thread drives the connection itself: a relay thread
	 * per connection costs two more wake-ups per request. */
	if (ag->addr[0] != '\0' ?
	    xport_client_open(w->o->c, a, -1, &fd, &x, &e) == -1 :
	    (fd = client_connect(ag->sock, ag->name, &e)) == -1)
		goto fail;
	if ((nc = x != NULL ? netconn_tls_wrap(fd, x) : netconn_plain(fd)) ==
	    NULL) {
		cs_errc(&e, CS_E_NOMEM, "out of memory");
		goto fail;
	}
	x = NULL;	/* nc owns fd and x now */
	cl->conns[a].gen++;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.u64 = conn_key(w, ci, a);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1) {
		cs_errno(&e, "fcntl");
		goto fail;
	}
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) == -1) {
		cs_errno(&e, "epoll_ctl");
		goto fail;
	}
	cl->conns[a].fd = fd;
	cl->conns[a].nc = nc;
	return 0;
fail:
	if (nc != NULL)
		netconn_close(nc);
	else {
		xconn_free(x);
		if (fd != -1)
			close(fd);
	}
	if (!quiet)
		note_failure(cl, ag->name, e.msg);
	return -1;
}

void
load_io_connect(struct load_worker *w)
{
	uint8_t *down;
	size_t p;
	int ci, a;

	/* An agent that refuses (or is not there) once is not tried again
	 * here: a host that does not answer costs a connect timeout. */
	if ((down = calloc((size_t)w->o->c->nagents, 1)) == NULL)
		return;
	for (ci = 0; ci < w->ncls; ci++)
		for (p = 0; p < w->npairs; p++) {
			a = w->pairs[p].src;
			if (!down[a] && w->cls[ci].conns[a].fd == -1 &&
			    conn_open(w, ci, a, 1) == -1)
				down[a] = 1;
		}
	free(down);
}

/* Ask epoll to report (or no longer report) the current connection as
 * writable; only needed while a request could not be sent at once. */
static int
want_out(struct load_worker *w, int ci, int on)
{
	struct load_client *cl = &w->cls[ci];
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | (on ? EPOLLOUT : 0);
	ev.data.u64 = conn_key(w, ci, cl->cur);
	return epoll_ctl(w->epfd, EPOLL_CTL_MOD, cl->conns[cl->cur].fd, &ev);
}

/* Write what is left of the request. A full socket buffer (never seen with
 * requests this small, but possible) waits for EPOLLOUT. */
static void
flush(struct load_worker *w, int ci)
{
	struct load_client *cl = &w->cls[ci];
	int a = cl->cur;
	struct cs_err e;
	ssize_t n;

	while (cl->sent < cl->out.len) {
		n = conn_write(&cl->conns[a], cl->out.data + cl->sent,
		    cl->out.len - cl->sent);
		if (n >= 0) {
			cl->sent += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			cs_errno(&e, "send");
			conn_fail(w, cl, a, e.msg);
			return;
		}
		if (!cl->pollout && want_out(w, ci, 1) == -1)
			goto epoll_fail;
		cl->pollout = 1;
		return;
	}
	if (cl->pollout && want_out(w, ci, 0) == -1)
		goto epoll_fail;
	cl->pollout = 0;
	return;
epoll_fail:
	cs_errno(&e, "epoll_ctl");
	conn_fail(w, cl, a, e.msg);
}

/* Start client ci's next transfer, or retire it once the run is over. */
static void
client_next(struct load_worker *w, int ci)
{
	struct load_client *cl = &w->cls[ci];
	const struct cfg *c = w->o->c;
	const struct load_pair *p;
	uint8_t hdr[WIRE_HDR_LEN] = { 0 };
	int64_t n;

	if (cl->oom || load_stopping() || (cs_now_ns() / 1000) >= w->end_us) {
		if (!cl->done) {
			cl->done = 1;
			w->active--;
		}
		return;
	}
	p = &w->pairs[rnd(&cl->rng) % w->npairs];
	n = 1 + (int64_t)(rnd(&cl->rng) % (uint64_t)w->o->max_amount);
	/* The frame: a header, filled in once the payload's length is known. */
	wbuf_reset(&cl->out);
	wbuf_put_raw(&cl->out, hdr, sizeof(hdr));
	wbuf_put_bytes(&cl->out, LOAD_KEY, strlen(LOAD_KEY));
	wbuf_put_str(&cl->out, c->agents[p->dst].name);
	wbuf_put_bytes(&cl->out, LOAD_KEY, strlen(LOAD_KEY));
	wbuf_put_i64(&cl->out, n);
	if (cl->out.oom) {
		cl->oom = 1;
		client_next(w, ci);	/* retires it */
		return;
	}
	wire_header(cl->out.data, W_REQ_TRANSFER, cl->out.len - WIRE_HDR_LEN);
	if (cl->conns[p->src].fd == -1 &&
	    conn_open(w, ci, p->src, 0) == -1) {
		/* Counted; the next round picks a new pair. */
		make_ready(w, cl);
		return;
	}
	cl->cur = p->src;
	cl->sent = 0;
	cl->pollout = 0;
	cl->inlen = 0;
	cl->start_us = (cs_now_ns() / 1000);
	cl->deadline_us = cl->start_us + TIMEOUT_US;
	flush(w, ci);
}

static int
record(struct load_worker *w, struct load_client *cl, int64_t end)
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
	cl->reqs[cl->n].start_us = cl->start_us - w->t0_us;
	cl->reqs[cl->n].dur_us = end - cl->start_us;
	cl->n++;
	return 0;
}

/* The whole reply frame to client ci's request: count it, start the next. */
static void
on_reply(struct load_worker *w, int ci, uint8_t type, const uint8_t *p,
    size_t plen)
{
	struct load_client *cl = &w->cls[ci];
	int64_t end = (cs_now_ns() / 1000);
	const uint8_t *body;
	struct cs_err e;
	size_t blen;
	uint8_t code;
	char msg[200];

	if (client_reply_decode(type, p, plen, &code, &body, &blen, &e) == -1) {
		conn_fail(w, cl, cl->cur, e.msg);
		return;
	}
	if (code == REPLY_OK) {
		if (record(w, cl, end) == -1)
			cl->oom = 1;
	} else {
		/* CONFLICT: the source's balance is below the amount, an
		 * outcome of random transfers, not a failure. */
		if (code == REPLY_CONFLICT) {
			cl->insufficient++;
		} else {
			cs_printable(body, blen, msg, sizeof(msg), 0);
			note_failure(cl, w->o->c->agents[cl->cur].name, msg);
		}
	}
	make_ready(w, cl);
}

/* Read on the connection carrying client ci's request until its reply is
 * whole (then handle it) or the socket is drained. */
static void
read_reply(struct load_worker *w, int ci)
{
	struct load_client *cl = &w->cls[ci];
	int a = cl->cur;
	const uint8_t *p;
	struct cs_err e;
	size_t plen, used, ncap;
	uint8_t type, *nin;
	ssize_t n;
	int r;

	for (;;) {
		if (cl->inlen == cl->incap) {
			ncap = cl->incap ? cl->incap * 2 : IN_START;
			if (ncap > IN_MAX)
				ncap = IN_MAX;
			if (ncap == cl->incap ||
			    (nin = realloc(cl->in, ncap)) == NULL) {
				cl->oom = 1;
				conn_fail(w, cl, a, "out of memory");
				return;
			}
			cl->in = nin;
			cl->incap = ncap;
		}
		n = conn_read(&cl->conns[a], cl->in + cl->inlen,
		    cl->incap - cl->inlen);
		if (n == 0) {
			conn_fail(w, cl, a, "connection closed by peer");
			return;
		}
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			cs_errno(&e, "read");
			conn_fail(w, cl, a, e.msg);
			return;
		}
		cl->inlen += (size_t)n;
		r = wire_parse(cl->in, cl->inlen, &type, &p, &plen, &used, &e);
		if (r == -1) {
			conn_fail(w, cl, a, e.msg);
			return;
		}
		if (r == 1) {
			/* One request, one reply: anything more is a protocol
			 * error that would shift every later reply. */
			if (used != cl->inlen)
				conn_fail(w, cl, a,
				    "unexpected data after the reply");
			else
				on_reply(w, ci, type, p, plen);
			return;
		}
	}
}

/* Input on a connection without a request: the agent closed it (or broke
 * the protocol). Close it now; the next request there reconnects. */
static void
idle_input(struct load_worker *w, int ci, int a)
{
	struct load_client *cl = &w->cls[ci];
	struct cs_err e;
	uint8_t b[64];
	ssize_t n;

	n = conn_read(&cl->conns[a], b, sizeof(b));
	if (n == 0)
		conn_fail(w, cl, a, "connection closed by peer");
	else if (n > 0)
		conn_fail(w, cl, a, "unexpected data with no request");
	else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
		cs_errno(&e, "read");
		conn_fail(w, cl, a, e.msg);
	}
}

static void
on_event(struct load_worker *w, const struct epoll_event *ev)
{
	int nag = w->o->c->nagents;
	uint32_t idx = (uint32_t)ev->data.u64;
	int ci = (int)(idx / (uint32_t)nag), a = (int)(idx % (uint32_t)nag);
	struct load_client *cl = &w->cls[ci];

	/* An event for a connection closed (or replaced) earlier in this
	 * batch: the fd may since have been reused. */
	if (cl->conns[a].fd == -1 ||
	    cl->conns[a].gen != (uint32_t)(ev->data.u64 >> 32))
		return;
	if (cl->cur != a) {
		idle_input(w, ci, a);
		return;
	}
	if ((ev->events & EPOLLOUT) && cl->sent < cl->out.len) {
		flush(w, ci);
		if (cl->cur != a)
			return;
	}
	if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		read_reply(w, ci);
}

/* Fail every request past its deadline; return the next deadline to look
 * at. A request started later has a deadline after now + TIMEOUT_US. */
static int64_t
expire(struct load_worker *w, int64_t now)
{
	int64_t next = now + TIMEOUT_US;
	struct load_client *cl;
	int i;

	for (i = 0; i < w->ncls; i++) {
		cl = &w->cls[i];
		if (cl->cur == -1)
			continue;
		if (cl->deadline_us <= now)
			conn_fail(w, cl, cl->cur,
			    "timed out waiting for a reply");
		else if (cl->deadline_us < next)
			next = cl->deadline_us;
	}
	return next;
}

/* Start the next transfer of each client made ready since the last call.
 * One that fails to start makes itself ready again, for the next round:
 * each call pushes at most once, so it writes a slot already read. */
static void
start_ready(struct load_worker *w)
{
	int i, n = w->nready;

	w->nready = 0;
	for (i = 0; i < n; i++)
		client_next(w, w->ready[i]);
}

void *
load_io_main(void *arg)
{
	struct load_worker *w = arg;
	struct epoll_event evs[MAX_EVENTS];
	struct cs_err e;
	int64_t now, check = w->t0_us + TIMEOUT_US;
	int i, n, ms;

	w->active = w->ncls;
	for (i = 0; i < w->ncls; i++)
		w->ready[i] = i;
	w->nready = w->ncls;
	for (;;) {
		now = (cs_now_ns() / 1000);
		if (now >= check)
			check = expire(w, now);
		start_ready(w);
		if (w->active == 0)
			break;
		/* A client still ready could not connect: retry at once, as
		 * a blocking client would. */
		ms = w->nready > 0 ? 0 : (int)((check - now + 999) / 1000);
		if ((n = epoll_wait(w->epfd, evs, MAX_EVENTS, ms)) == -1) {
			if (errno == EINTR)
				continue;
			/* Cannot wait any more: fail what is outstanding. */
			cs_errno(&e, "epoll_wait");
			for (i = 0; i < w->ncls; i++)
				if (w->cls[i].cur != -1)
					conn_fail(w, &w->cls[i],
					    w->cls[i].cur, e.msg);
			break;
		}
		for (i = 0; i < n; i++)
			on_event(w, &evs[i]);
	}
	return NULL;
}
