/* metrics.c - the agent's /metrics: Prometheus text exposition (format
 * 0.0.4) over plain HTTP on metrics_addr, served from the event loop.
 *
 * Invariants:
 * - Nothing here blocks: the listener and every scraper's socket are
 *   non-blocking; a scraper is read until the end of its request head
 *   (at most MX_REQ_MAX bytes), answered from one buffer built at once,
 *   and closed once the answer is written (Connection: close).
 * - At most MX_CONNS scrapers at a time, each for at most MX_IDLE_MS
 *   from its accept: a slow or silent client costs a slot for a while,
 *   never the agent's time. One beyond them gets a 503 and is closed.
 * - The page reads the agent's state; it changes nothing. */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/log.h"
#include "../log/dlrewrite.h"
#include "../net/xport.h"
#include "agent_int.h"

#define MX_CONNS	8		/* scrapers at a time */
#define MX_REQ_MAX	4096		/* a request head, at most */
#define MX_IDLE_MS	10000		/* a scraper's whole time */
#define MX_PAUSE_MS	100		/* accept failed (EMFILE): pause */
#define MX_PAGE_MAX	(16u << 20)	/* the page, at most */

struct mconn {
	int fd;			/* -1: slot free */
	char in[MX_REQ_MAX];	/* the request head so far */
	size_t inlen;
	int toolong;		/* no end of the head within MX_REQ_MAX */
	char *out;		/* the answer, heap; NULL until built */
	size_t outlen, outoff;
	int64_t deadline;	/* monotonic ms: closed then */
};

struct metrics {
	int lfd;
	int paused;		/* listener out of epoll until pause_end */
	int64_t pause_end;
	struct mconn c[MX_CONNS];
};

/* A growing text buffer; oom sticks. */
struct mbuf {
	char *p;
	size_t len, cap;
	int oom;
};

static void mb_printf(struct mbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
mb_printf(struct mbuf *b, const char *fmt, ...)
{
	va_list ap;
	size_t need, ncap;
	char *np;
	int n;

	if (b->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len :
	    0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = 1;
		return;
	}
	need = b->len + (size_t)n + 1;
	if (need > b->cap) {
		ncap = b->cap ? b->cap : 8192;
		while (ncap < need)
			ncap *= 2;
		if (ncap > MX_PAGE_MAX || (np = realloc(b->p, ncap)) == NULL) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = ncap;
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

/* HELP and TYPE of a family. */
static void
family(struct mbuf *b, const char *name, const char *type, const char *help)
{
	mb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample with the agent's label (names are [A-Za-z0-9_.-]: nothing
 * to escape), and a peer's when peer is not NULL. */
static void
sample(struct mbuf *b, const struct agent *a, const char *name,
    const char *peer, uint64_t v)
{
	if (peer != NULL)
		mb_printf(b, "%s{agent=\"%s\",peer=\"%s\"} %llu\n", name,
		    a->name, peer, (unsigned long long)v);
	else
		mb_printf(b, "%s{agent=\"%s\"} %llu\n", name, a->name,
		    (unsigned long long)v);
}

static void
one(struct mbuf *b, const struct agent *a, const char *name,
    const char *type, const char *help, uint64_t v)
{
	family(b, name, type, help);
	sample(b, a, name, NULL, v);
}

/* A family with one sample per configured channel: outgoing (out) or
 * incoming; v(a, d) is the value for peer d. */
static void
per_peer(struct mbuf *b, const struct agent *a, const char *name,
    const char *type, const char *help, int out,
    uint64_t (*v)(const struct agent *, int))
{
	int d;

	family(b, name, type, help);
	for (d = 0; d < a->n; d++)
		if (out ? a->out[d].configured : a->in[d].configured)
			sample(b, a, name, a->c->agents[d].name, v(a, d));
}

static uint64_t v_sent(const struct agent *a, int d) { return a->sent_to[d]; }
static uint64_t v_applied(const struct agent *a, int d)
{ return a->applied_from[d]; }
static uint64_t v_acked(const struct agent *a, int d) { return a->acked_by[d]; }
static uint64_t v_queued(const struct agent *a, int d)
{ return agent_outch_queued(a, d); }
static uint64_t v_unacked(const struct agent *a, int d)
{ return agent_outch_unacked(a, d); }
static uint64_t v_out_up(const struct agent *a, int d)
{ return a->out[d].up && !a->out[d].diverged; }
static uint64_t v_in_up(const struct agent *a, int d)
{ return a->in[d].conn != NULL && !a->in[d].diverged; }
static uint64_t v_held(const struct agent *a, int d) { return a->in[d].nheld; }

/* The page. */
static void
render(const struct agent *a, struct mbuf *b)
{
	const struct dl_state *st = datalog_state(a->dl);
	struct timespec now;
	uint64_t nsnaps = 0;
	size_t i;

	for (i = 0; i < SNAP_MAX; i++)
		nsnaps += a->snaps[i].phase != SNAP_NONE;
	clock_gettime(CLOCK_REALTIME, &now);
	one(b, a, "cutsnap_start_time_seconds", "gauge", "When the agent "
	    "started (Unix time).", (uint64_t)(now.tv_sec -
	    (cs_now_ms() - a->start_ms) / 1000));
	one(b, a, "cutsnap_transfers_total", "counter", "Transfers debited "
	    "here and sent on a channel.", a->ct.transfers);
	one(b, a, "cutsnap_client_writes_total", "counter", "Client write "
	    "requests (put, del, add, transfer).", a->writes);
	per_peer(b, a, "cutsnap_messages_sent_total", "counter", "Messages "
	    "emitted on the channel to peer (recorded in the data file).", 1,
	    v_sent);
	per_peer(b, a, "cutsnap_messages_acked_total", "counter", "Messages "
	    "peer acknowledged as durably applied.", 1, v_acked);
	per_peer(b, a, "cutsnap_messages_applied_total", "counter", "Messages "
	    "from peer applied here (dead letters included).", 0, v_applied);
	one(b, a, "cutsnap_acks_sent_total", "counter", "Acknowledgements "
	    "sent to senders.", a->ct.acks_sent);
	per_peer(b, a, "cutsnap_channel_queued", "gauge", "Messages and "
	    "markers queued on the channel to peer, not written yet.",
	    1, v_queued);
	per_peer(b, a, "cutsnap_channel_unacked", "gauge", "Messages sent to "
	    "peer and not acknowledged yet.", 1, v_unacked);
	per_peer(b, a, "cutsnap_channel_up", "gauge", "1 when the channel to "
	    "peer is connected and its history accepted.", 1, v_out_up);
	per_peer(b, a, "cutsnap_channel_in_up", "gauge", "1 when the channel "
	    "from peer is connected and its history accepted.", 0, v_in_up);
	per_peer(b, a, "cutsnap_channel_held_back", "gauge", "Messages from "
	    "peer that arrived early and wait for their turn.", 0, v_held);
	one(b, a, "cutsnap_snapshots_recorded_total", "counter", "Snapshots "
	    "recorded and reported here.", a->ct.snaps);
	one(b, a, "cutsnap_snapshots_committed_total", "counter", "Snapshots "
	    "its coordinator committed.", a->ct.snaps_done);
	one(b, a, "cutsnap_snapshots_failed_total", "counter", "Snapshots "
	    "aborted, timed out or left by their coordinator.",
	    a->ct.snaps_failed);
	one(b, a, "cutsnap_snapshots_in_progress", "gauge", "Snapshots under "
	    "way here.", nsnaps);
	one(b, a, "cutsnap_snapshot_recorded_bytes_total", "counter", "Bytes "
	    "of data file recorded by those snapshots.", a->ct.snap_bytes);
	family(b, "cutsnap_snapshot_record_seconds", "summary", "Time from "
	    "recording a snapshot's state to reporting it.");
	mb_printf(b, "cutsnap_snapshot_record_seconds_sum{agent=\"%s\"} "
	    "%.3f\n", a->name, (double)a->ct.snap_ms / 1000.0);
	mb_printf(b, "cutsnap_snapshot_record_seconds_count{agent=\"%s\"} "
	    "%llu\n", a->name, (unsigned long long)a->ct.snaps);
	one(b, a, "cutsnap_compactions_total", "counter", "Rewrites of the "
	    "data file to its live state.", a->compactions);
	one(b, a, "cutsnap_dead_letters_total", "counter", "Credits that "
	    "could not be applied and became dead letters.", a->ct.dead);
	one(b, a, "cutsnap_dead_letters_open", "gauge", "Dead letters not "
	    "resolved yet.", (uint64_t)st->nopen);
	one(b, a, "cutsnap_data_file_bytes", "gauge", "Size of the data "
	    "file.", datalog_end(a->dl));
	one(b, a, "cutsnap_data_file_live_bytes", "gauge", "Size the data "
	    "file would have after a compaction.", dl_live_size(st));
	one(b, a, "cutsnap_data_file_syncs_total", "counter", "fsyncs of the "
	    "data file (group commits).", datalog_syncs(a->dl));
	one(b, a, "cutsnap_fenced", "gauge", "1 while the agent is fenced "
	    "after a partial restore.", st->fenced ? 1 : 0);
}

static void
mc_close(struct agent *a, struct mconn *m)
{
	if (m->fd == -1)
		return;
	(void)epoll_ctl(a->ep, EPOLL_CTL_DEL, m->fd, NULL);
	close(m->fd);
	free(m->out);
	memset(m, 0, sizeof(*m));
	m->fd = -1;
}

/* The answer to the request head in m->in: status and body. */
static void
answer(struct agent *a, struct mconn *m)
{
	static const char hdr[] = "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n%s\r\n";
	struct mbuf body, all;
	const char *status = "200 OK", *extra = "";
	const char *ctype = "text/plain; version=0.0.4; charset=utf-8";
	char method[8], target[64];
	int head = 0;

	memset(&body, 0, sizeof(body));
	memset(&all, 0, sizeof(all));
	if (m->toolong) {
		status = "431 Request Header Fields Too Large";
	} else if (sscanf(m->in, "%7s %63s HTTP/1.%*c", method, target) != 2) {
		status = "400 Bad Request";
	} else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		status = "405 Method Not Allowed";
		extra = "Allow: GET, HEAD\r\n";
	} else if (strcmp(target, "/metrics") != 0 &&
	    strncmp(target, "/metrics?", 9) != 0) {
		status = "404 Not Found";
	} else {
		head = strcmp(method, "HEAD") == 0;
		render(a, &body);
	}
	if (body.oom)
		status = "500 Internal Server Error";
	if (strcmp(status, "200 OK") != 0) {
		free(body.p);
		memset(&body, 0, sizeof(body));
		ctype = "text/plain; charset=utf-8";
		mb_printf(&body, "%s\n", status);
	}
	mb_printf(&all, hdr, status, ctype, body.len, extra);
	if (!head && body.p != NULL)
		mb_printf(&all, "%s", body.p);
	free(body.p);
	if (all.oom) {
		free(all.p);
		mc_close(a, m);
		return;
	}
	m->out = all.p;
	m->outlen = all.len;
	m->outoff = 0;
}

/* Write what is left of the answer; closed once written. */
static void
mc_write(struct agent *a, struct mconn *m)
{
	struct epoll_event ev;
	ssize_t w;

	while (m->outoff < m->outlen) {
		w = send(m->fd, m->out + m->outoff, m->outlen - m->outoff,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			m->outoff += (size_t)w;
			continue;
		}
		if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			memset(&ev, 0, sizeof(ev));
			ev.events = EPOLLOUT;
			ev.data.ptr = m;
			(void)epoll_ctl(a->ep, EPOLL_CTL_MOD, m->fd, &ev);
			return;
		}
		if (w == -1 && errno == EINTR)
			continue;
		break;
	}
	mc_close(a, m);
}

static void
mc_read(struct agent *a, struct mconn *m)
{
	ssize_t r;

	for (;;) {
		if (m->inlen >= sizeof(m->in) - 1) {
			m->toolong = 1;
			break;
		}
		r = recv(m->fd, m->in + m->inlen, sizeof(m->in) - 1 - m->inlen,
		    MSG_DONTWAIT);
		if (r == 0) {
			mc_close(a, m);
			return;
		}
		if (r == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;		/* the rest comes later */
			mc_close(a, m);
			return;
		}
		m->inlen += (size_t)r;
		m->in[m->inlen] = '\0';
		if (strstr(m->in, "\r\n\r\n") != NULL ||
		    strstr(m->in, "\n\n") != NULL)
			break;
	}
	m->in[m->inlen] = '\0';
	answer(a, m);
	if (m->fd != -1)
		mc_write(a, m);
}

/* One beyond MX_CONNS: a short 503 if the socket takes it at once. */
static void
refuse(int fd)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\n"
	    "Content-Length: 0\r\nConnection: close\r\n\r\n";

	(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

static void
listener_interest(struct agent *a, int on)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = on ? EPOLLIN : 0;
	ev.data.ptr = &a->mx->lfd;
	(void)epoll_ctl(a->ep, EPOLL_CTL_MOD, a->mx->lfd, &ev);
	a->mx->paused = !on;
}

static void
mx_accept(struct agent *a)
{
	struct metrics *mx = a->mx;
	struct epoll_event ev;
	struct mconn *m;
	int fd, i;

	for (;;) {
		fd = accept4(mx->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				/* Out of descriptors: the level-triggered
				 * listener would wake the loop at once again;
				 * rest it a moment. */
				log_warn("metrics: accept: %s", strerror(errno));
				listener_interest(a, 0);
				mx->pause_end = cs_now_ms() + MX_PAUSE_MS;
			}
			return;
		}
		for (i = 0, m = NULL; i < MX_CONNS && m == NULL; i++)
			if (mx->c[i].fd == -1)
				m = &mx->c[i];
		if (m == NULL) {
			refuse(fd);
			continue;
		}
		m->fd = fd;
		m->inlen = 0;
		m->toolong = 0;
		m->deadline = cs_now_ms() + MX_IDLE_MS;
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLIN;
		ev.data.ptr = m;
		if (epoll_ctl(a->ep, EPOLL_CTL_ADD, fd, &ev) == -1) {
			close(fd);
			m->fd = -1;
		}
	}
}

int
agent_metrics_open(struct agent *a, struct cs_err *e)
{
	const char *addr = a->c->agents[a->self].metrics;
	struct epoll_event ev;
	struct cs_err le;
	int i;

	if (addr[0] == '\0')
		return 0;
	if ((a->mx = calloc(1, sizeof(*a->mx))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	for (i = 0; i < MX_CONNS; i++)
		a->mx->c[i].fd = -1;
	if ((a->mx->lfd = xport_tcp_listen(addr, &le)) == -1) {
		free(a->mx);
		a->mx = NULL;
		return cs_errf(e, "metrics_addr: %s (agents on one host need a "
		    "metrics_addr of their own each, under [agent NAME])",
		    le.msg);
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = &a->mx->lfd;
	if (epoll_ctl(a->ep, EPOLL_CTL_ADD, a->mx->lfd, &ev) == -1) {
		cs_errno(e, "epoll_ctl");
		agent_metrics_close(a);
		return -1;
	}
	log_info("agent %s serving metrics on http://%s/metrics", a->name,
	    addr);
	return 0;
}

int
agent_metrics_event(struct agent *a, void *tag, uint32_t ev)
{
	struct metrics *mx = a->mx;
	struct mconn *m;

	if (mx == NULL)
		return 0;
	if (tag == &mx->lfd) {
		mx_accept(a);
		return 1;
	}
	if ((char *)tag < (char *)&mx->c[0] ||
	    (char *)tag >= (char *)&mx->c[MX_CONNS])
		return 0;
	m = tag;
	if (m->fd == -1)
		return 1;
	if (ev & (EPOLLERR | EPOLLHUP) && m->out == NULL)
		mc_close(a, m);
	else if (m->out != NULL)
		mc_write(a, m);
	else
		mc_read(a, m);
	return 1;
}

int
agent_metrics_timeout(struct agent *a, int64_t now)
{
	struct metrics *mx = a->mx;
	int64_t next = -1, left;
	int i;

	if (mx == NULL)
		return -1;
	if (mx->paused) {
		if (now >= mx->pause_end)
			listener_interest(a, 1);
		else
			next = mx->pause_end - now;
	}
	for (i = 0; i < MX_CONNS; i++) {
		if (mx->c[i].fd == -1)
			continue;
		if ((left = mx->c[i].deadline - now) <= 0) {
			mc_close(a, &mx->c[i]);
			continue;
		}
		if (next < 0 || left < next)
			next = left;
	}
	return (int)next;
}

void
agent_metrics_close(struct agent *a)
{
	int i;

	if (a->mx == NULL)
		return;
	for (i = 0; i < MX_CONNS; i++)
		mc_close(a, &a->mx->c[i]);
	if (a->mx->lfd != -1)
		close(a->mx->lfd);
	free(a->mx);
	a->mx = NULL;
}
