/* conn.c - nonblocking connections: input framing, output gated by the log. */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/log.h"
#include "../net/xport.h"
#include "agent_int.h"

#define READ_CHUNK	(256u << 10)
#define READ_BUDGET	(4u << 20)	/* per event, for fairness */
#define BUF_KEEP	(1u << 20)	/* larger buffers are freed once empty */

static const char *
role_name(const struct agent *a, const struct conn *c, char *buf, size_t sz)
{
	switch (c->role) {
	case ROLE_PEER_IN:
		snprintf(buf, sz, "channel %s>%s", a->c->agents[c->peer].name,
		    a->name);
		break;
	case ROLE_PEER_OUT:
		snprintf(buf, sz, "channel %s>%s", a->name,
		    a->c->agents[c->peer].name);
		break;
	default:
		snprintf(buf, sz, "client fd %d", c->fd);
		break;
	}
	return buf;
}

/* A get's value is next on c and released (its head is). */
static int
conn_stream_due(const struct conn *c)
{
	return c->vs != NULL && c->outoff == c->vs_at && c->rel >= c->vs_at;
}

static void conn_input(struct agent *a, struct conn *c);

static void
conn_set_events(struct agent *a, struct conn *c)
{
	struct epoll_event ev;
	uint32_t want = 0;

	if (c->dead)
		return;
	if (c->connecting)
		want = EPOLLOUT;
	else if (c->hs)
		want = c->hs_want;
	else {
		if (!c->eof && agent_conn_pending(c) < OUT_HIGH_WATER &&
		    c->vs == NULL && c->recv_at == 0)
			want |= EPOLLIN;
		/* A connection in dirty is written by the commit's pass
		 * before the loop waits again: asking for EPOLLOUT now and
		 * dropping it once written would cost two epoll_ctl per
		 * request. That pass asks for it if bytes are left. */
		if ((c->rel > c->outoff || conn_stream_due(c)) &&
		    (!c->in_dirty || a->flushing))
			want |= EPOLLOUT;
		if (c->rd_want_w)
			want |= EPOLLOUT;
		if (c->wr_want_r)
			want |= EPOLLIN;
		/* A parked RECV reads nothing, but its client's hang-up
		 * must free it at once, not at its deadline. */
		if (c->recv_at != 0)
			want |= EPOLLRDHUP;
	}
	if (want == c->events)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.events = want;
	ev.data.ptr = c;
	if (epoll_ctl(a->ep, EPOLL_CTL_MOD, c->fd, &ev) == -1)
		log_warn("epoll_ctl: %s", strerror(errno));
	c->events = want;
}

/* Room for need entries in the list *v of *cap; 0 / -1. */
static int
list_room(struct conn ***v, size_t *cap, size_t need)
{
	struct conn **p;
	size_t ncap;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 64;
	while (ncap < need)
		ncap *= 2;
	if ((p = realloc(*v, ncap * sizeof(*p))) == NULL)
		return -1;
	*v = p;
	*cap = ncap;
	return 0;
}

/* Add c to the list *v (*n entries of *cap), unless *in says it is
 * there. A list is made room for with every connection (agent_conn_new),
 * but a pass that drops an entry may see it added again behind it; if
 * growing for that fails, the loop goes back to scanning every
 * connection for good (lists_lost). */
static void
list_add(struct agent *a, struct conn ***v, size_t *n, size_t *cap,
    int *in, struct conn *c)
{
	if (*in)
		return;
	if (list_room(v, cap, *n + 1) == -1) {
		if (!a->lists_lost)
			log_error("out of memory for the loop's lists; "
			    "scanning every connection from now on");
		a->lists_lost = 1;
		return;
	}
	*in = 1;
	(*v)[(*n)++] = c;
}

/* c has frames queued: the next commit writes them. */
static void
conn_dirty(struct agent *a, struct conn *c)
{
	list_add(a, &a->dirty, &a->ndirty, &a->dirtycap, &c->in_dirty, c);
}

/* Why a read or write (what) on c failed, for the log: TLS has no errno
 * worth giving. */
static const char *
conn_io_why(const struct conn *c, const char *what)
{
	if (netconn_is_tls(c->nc))
		return strcmp(what, "read") == 0 ? "TLS read failed" :
		    "TLS write failed";
	return strerror(errno);
}

/* TLS is about to be used on c: it may then hold bytes read ahead that
 * epoll does not report; agent_conn_tls_pending looks at c. */
static void
conn_tls_used(struct agent *a, struct conn *c)
{
	if (c->nc != NULL && netconn_can_pend(c->nc))
		list_add(a, &a->tlsp, &a->ntlsp, &a->tlspcap, &c->in_tlsp, c);
}

void
agent_conn_lists_free(struct agent *a)
{
	free(a->dirty);
	free(a->tlsp);
	a->dirty = a->tlsp = NULL;
	a->ndirty = a->ntlsp = a->dirtycap = a->tlspcap = 0;
}

struct conn *
agent_conn_new(struct agent *a, int fd, enum conn_role role, int connecting)
{
	struct epoll_event ev;
	struct conn *c = NULL;

	if (list_room(&a->dirty, &a->dirtycap, a->nconns + 1) == -1 ||
	    list_room(&a->tlsp, &a->tlspcap, a->nconns + 1) == -1 ||
	    (c = calloc(1, sizeof(*c))) == NULL ||
	    (c->nc = netconn_plain(fd)) == NULL) {
		log_error("out of memory for a connection");
		free(c);
		close(fd);
		return NULL;
	}
	c->fd = fd;
	c->role = role;
	c->crole = CS_ROLE_ADMIN;	/* a Unix socket's: our own uid */
	c->peer = -1;
	c->connecting = connecting;
	wbuf_init(&c->out);
	memset(&ev, 0, sizeof(ev));
	ev.events = c->events = connecting ? EPOLLOUT : EPOLLIN;
	ev.data.ptr = c;
	if (epoll_ctl(a->ep, EPOLL_CTL_ADD, fd, &ev) == -1) {
		log_error("epoll_ctl add: %s", strerror(errno));
		netconn_close(c->nc);	/* and fd */
		free(c);
		return NULL;
	}
	c->next = a->conns;
	a->conns = c;
	a->nconns++;
	return c;
}

void
agent_conn_close(struct agent *a, struct conn *c, const char *why)
{
	char nm[160];

	if (c->dead)
		return;
	if (why != NULL)
		log_debug("%s: closed: %s", role_name(a, c, nm, sizeof(nm)),
		    why);
	epoll_ctl(a->ep, EPOLL_CTL_DEL, c->fd, NULL);
	/* TLS says close_notify only once its handshake is done. */
	netconn_close(c->nc);
	c->nc = NULL;
	agent_bigval_drop(c);
	agent_recv_closed(a, c);
	c->dead = 1;
	a->ndead++;
	if (c->hs)
		a->nhs--;
	agent_admit_done(a, c);
	/* Detach from whoever points at this connection. */
	if (c->role == ROLE_PEER_IN)
		agent_inch_closed(a, c);
	else if (c->role == ROLE_PEER_OUT)
		agent_outch_closed(a, c);
	agent_snap_conn_closed(a, c);
}

/* Drop the dead from list[0, *n). */
static void
conns_drop_dead(struct conn **list, size_t *n)
{
	size_t i, j = 0;

	for (i = 0; i < *n; i++)
		if (!list[i]->dead)
			list[j++] = list[i];
	*n = j;
}

/* Free the connections closed during this loop iteration: pointers to
 * them stay valid until every event of the iteration is handled. */
void
agent_conn_reap(struct agent *a)
{
	struct conn **pp = &a->conns, *c;

	if (a->ndead == 0)
		return;
	conns_drop_dead(a->dirty, &a->ndirty);
	conns_drop_dead(a->tlsp, &a->ntlsp);
	a->nconns -= a->ndead;
	a->ndead = 0;
	while ((c = *pp) != NULL) {
		if (!c->dead) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		free(c->in);
		wbuf_free(&c->out);
		free(c->marks);
		free(c);
	}
}

size_t
agent_conn_pending(const struct conn *c)
{
	return c->out.len - c->outoff + agent_stream_left(c);
}

/* The frame just added at the end of c->out is released once the data
 * file is synced to off. */
static void
conn_queued(struct agent *a, struct conn *c, uint64_t off)
{
	struct out_mark *m;

	if (c->out.oom) {
		log_error("out of memory queueing a reply");
		agent_conn_close(a, c, "out of memory");
		return;
	}
	conn_dirty(a, c);
	if (c->mhead == c->mtail && off <= datalog_synced(a->dl)) {
		c->rel = c->out.len;
		return;
	}
	if (c->mtail == c->mcap) {
		if (c->mhead > 0) {
			memmove(c->marks, c->marks + c->mhead,
			    (c->mtail - c->mhead) * sizeof(*m));
			c->mtail -= c->mhead;
			c->mhead = 0;
		} else {
			size_t ncap = c->mcap ? c->mcap * 2 : 16;

			if ((m = realloc(c->marks, ncap * sizeof(*m))) ==
			    NULL) {
				log_error("out of memory queueing a reply");
				agent_conn_close(a, c, "out of memory");
				return;
			}
			c->marks = m;
			c->mcap = ncap;
		}
	}
	c->marks[c->mtail].off = off;
	c->marks[c->mtail].end = c->out.len;
	c->mtail++;
}

void
agent_conn_send(struct agent *a, struct conn *c, uint8_t type,
    const void *payload, size_t plen, uint64_t off)
{
	if (c->dead)
		return;
	wire_frame(&c->out, type, payload, plen);
	conn_queued(a, c, off);
}

int
agent_conn_send_range(struct agent *a, struct conn *c, uint8_t type,
    const uint8_t *pre, size_t prelen, uint64_t off, size_t len)
{
	if (c->dead || agent_stream_range(a, c, type, pre, prelen, off,
	    len) != 1)
		return -1;
	conn_queued(a, c, 0);
	return 0;
}

void
agent_conn_reply_value(struct agent *a, struct conn *c,
    const struct kv_entry *ent, uint64_t off)
{
	/* The reply as agent_conn_reply(REPLY_OK, value) builds it: code, then
	 * the value as length-prefixed bytes. */
	const size_t plen = 1 + 4 + ent->vlen;
	struct cs_err e;
	uint8_t *p;

	if (c->dead)
		return;
	if (agent_stream_value(a, c, ent) == 1) {
		conn_queued(a, c, off);
		return;
	}
	if (ent->vlen > UINT32_MAX ||
	    (p = wbuf_extend(&c->out, WIRE_HDR_LEN + plen)) == NULL) {
		c->out.oom = 1;
		conn_queued(a, c, off);
		return;
	}
	wire_header(p, W_REPLY, plen);
	p[WIRE_HDR_LEN] = REPLY_OK;
	buf_le32_put(p + WIRE_HDR_LEN + 1, (uint32_t)ent->vlen);
	if (datalog_read_value_to(a->dl, ent, p + WIRE_HDR_LEN + 5,
	    &e) == -1) {
		c->out.len -= WIRE_HDR_LEN + plen;
		log_error("get: %s", e.msg);
		agent_conn_replyf(a, c, REPLY_FAIL, "%s", e.msg);
		return;
	}
	conn_queued(a, c, off);
}

void
agent_conn_reply(struct agent *a, struct conn *c, uint8_t code,
    const void *body, size_t blen, uint64_t off)
{
	struct wbuf w;

	wbuf_init(&w);
	wbuf_put_u8(&w, code);
	wbuf_put_bytes(&w, body, blen);
	if (w.oom) {
		log_error("out of memory building a reply");
		agent_conn_close(a, c, "out of memory");
	} else
		agent_conn_send(a, c, W_REPLY, w.data, w.len, off);
	wbuf_free(&w);
}

void
agent_conn_reply_wbuf(struct agent *a, struct conn *c, uint8_t code,
    const struct wbuf *w)
{
	if (w->oom)
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
	else
		agent_conn_reply(a, c, code, w->data, w->len,
		    datalog_need(a->dl));
}

void
agent_conn_replyf(struct agent *a, struct conn *c, uint8_t code,
    const char *fmt, ...)
{
	char msg[CS_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Failures and refusals depend on nothing unsynced in general, but
	 * the state they describe may: wait for the current end. */
	agent_conn_reply(a, c, code, msg, strlen(msg), datalog_need(a->dl));
}

void
agent_conn_release(struct agent *a, struct conn *c, uint64_t synced)
{
	(void)a;
	while (c->mhead < c->mtail && c->marks[c->mhead].off <= synced) {
		c->rel = c->marks[c->mhead].end;
		c->mhead++;
	}
	if (c->mhead == c->mtail) {
		c->mhead = c->mtail = 0;
		c->rel = c->out.len;
	}
}

/* Drop written bytes from the front of out once they dominate it. */
static void
conn_compact(struct conn *c)
{
	size_t i;

	if (c->outoff == c->out.len && c->mhead == c->mtail) {
		c->outoff = c->rel = c->vs_at = 0;
		wbuf_reset(&c->out);
		/* A large reply (a big value) does not stay resident. */
		if (c->out.cap > BUF_KEEP) {
			wbuf_free(&c->out);
			wbuf_init(&c->out);
		}
		return;
	}
	if (c->outoff < (64u << 10) || c->outoff < c->out.len / 2)
		return;
	memmove(c->out.data, c->out.data + c->outoff,
	    c->out.len - c->outoff);
	c->out.len -= c->outoff;
	c->rel -= c->outoff;
	for (i = c->mhead; i < c->mtail; i++)
		c->marks[i].end -= c->outoff;
	if (c->vs != NULL)
		c->vs_at -= c->outoff;
	c->outoff = 0;
}

void
agent_conn_flush(struct agent *a, struct conn *c)
{
	size_t lim;
	ssize_t k;
	int r, streamed = 0;

	if (c->dead || c->connecting || c->hs)
		return;
	conn_tls_used(a, c);
	c->wr_want_r = 0;
	while (c->outoff < c->rel || conn_stream_due(c)) {
		if (conn_stream_due(c)) {
			if ((r = agent_stream_send(a, c)) == -1)
				return;
			if (r == 0)
				break;
			streamed = 1;
			continue;
		}
		/* Up to a get's value that is still to come. */
		lim = c->vs != NULL && c->vs_at > c->outoff &&
		    c->vs_at < c->rel ? c->vs_at : c->rel;
		k = netconn_write(c->nc, c->out.data + c->outoff,
		    lim - c->outoff);
		if (k > 0) {
			c->outoff += (size_t)k;
			continue;
		}
		if (k == NETCONN_WANT_WRITE)
			break;
		if (k == NETCONN_WANT_READ) {	/* TLS */
			c->wr_want_r = 1;
			break;
		}
		agent_conn_close(a, c, conn_io_why(c, "write"));
		return;
	}
	conn_compact(c);
	/* Input waited for the value to go out: resume it. */
	if (streamed && c->inoff < c->inlen) {
		conn_input(a, c);
		if (c->dead)
			return;
	}
	if (c->eof && agent_conn_pending(c) == 0 && c->mhead == c->mtail) {
		agent_conn_close(a, c, "end of input");
		return;
	}
	conn_set_events(a, c);
}

void
agent_conn_resume(struct agent *a, struct conn *c)
{
	if (c->dead)
		return;
	if (c->inoff < c->inlen)
		conn_input(a, c);
	if (!c->dead)
		conn_set_events(a, c);
}

void
agent_conn_commit(struct agent *a, uint64_t synced)
{
	struct conn *c;
	size_t i, j = 0;

	a->flushing = 1;
	if (a->lists_lost) {
		for (c = a->conns; c != NULL; c = c->next) {
			if (c->dead)
				continue;
			agent_conn_release(a, c, synced);
			agent_conn_flush(a, c);
		}
		a->flushing = 0;
		return;
	}
	/* A flush may queue frames on other connections (a closed channel
	 * answers its snapshot's coordinator): they join the end of the
	 * array and are written in this pass too. */
	for (i = 0; i < a->ndirty; i++) {
		c = a->dirty[i];
		if (!c->dead) {
			agent_conn_release(a, c, synced);
			agent_conn_flush(a, c);
		}
		if (c->dead || (c->mhead == c->mtail &&
		    c->outoff == c->out.len && c->vs == NULL)) {
			c->in_dirty = 0;
			continue;
		}
		a->dirty[j++] = c;
	}
	a->ndirty = j;
	a->flushing = 0;
}

static void
conn_dispatch(struct agent *a, struct conn *c, uint8_t type,
    const uint8_t *p, size_t n)
{
	switch (c->role) {
	case ROLE_NEW:
		/* Over TLS each certificate has one part: a client's (one
		 * with a role) sends requests, an agent's opens its own
		 * channel (agent_inch_hello checks the name). An agent's
		 * requests are answered, refused, by agent_client_frame. */
		if (netconn_is_tls(c->nc) && (type == W_PEER_HELLO) !=
		    (c->crole == CS_ROLE_NONE)) {
			char who[64];

			xport_peer_name(c->fd, who, sizeof(who));
			log_warn("refused %s: certificate '%s' may not %s",
			    who, c->cn, type == W_PEER_HELLO ?
			    "open a channel" : "send client requests");
			if (type == W_PEER_HELLO) {
				agent_conn_close(a, c, NULL);
				return;
			}
		}
		if (type == W_PEER_HELLO) {
			agent_inch_hello(a, c, p, n);
			return;
		}
		c->role = ROLE_CLIENT;
		agent_client_frame(a, c, type, p, n);
		break;
	case ROLE_CLIENT:
		agent_client_frame(a, c, type, p, n);
		break;
	case ROLE_PEER_IN:
		agent_inch_frame(a, c, type, p, n);
		break;
	case ROLE_PEER_OUT:
		agent_outch_frame(a, c, type, p, n);
		break;
	}
}

/* Parse and handle every whole frame buffered, unless the connection's
 * output backs up: then the rest waits until the peer reads. */
static void
conn_input(struct agent *a, struct conn *c)
{
	const uint8_t *p;
	struct cs_err e;
	size_t plen, used;
	uint8_t type;
	char nm[160];
	int r, v;

	while (!c->dead && !a->fatal && c->vs == NULL && c->recv_at == 0 &&
	    agent_conn_pending(c) < OUT_HIGH_WATER) {
		if (c->sp != NULL) {
			agent_spool_feed(a, c);
			if (c->sp != NULL)
				break;	/* the rest of the value is to come */
			continue;
		}
		r = wire_parse(c->in + c->inoff, c->inlen - c->inoff, &type,
		    &p, &plen, &used, &e);
		if (r == 0 && agent_spool_begin(a, c) == 1)
			continue;
		if (r == 0)
			break;
		if (r == -1 && (v = wire_other_version(c->in + c->inoff,
		    c->inlen - c->inoff)) >= 0) {
			agent_version_refuse(a, c, (unsigned)v);
			return;
		}
		if (r == -1) {
			log_warn("%s: %s; closing it",
			    role_name(a, c, nm, sizeof(nm)), e.msg);
			agent_conn_close(a, c, NULL);
			return;
		}
		c->inoff += used;
		conn_dispatch(a, c, type, p, plen);
	}
	if (c->dead)
		return;
	if (c->role == ROLE_PEER_IN)
		agent_inch_batch_done(a, c);
	if (c->inoff == c->inlen) {
		c->inoff = c->inlen = 0;
		/* Nor does the buffer a large request (a put) grew. */
		if (c->incap > BUF_KEEP) {
			free(c->in);
			c->in = NULL;
			c->incap = 0;
		}
	}
}

/* Make room for at least want more bytes; 0 / -1. */
static int
conn_room(struct conn *c, size_t want)
{
	size_t ncap;
	uint8_t *p;

	if (c->inoff > 0 && c->incap - c->inlen < want) {
		memmove(c->in, c->in + c->inoff, c->inlen - c->inoff);
		c->inlen -= c->inoff;
		c->inoff = 0;
	}
	if (c->incap - c->inlen >= want)
		return 0;
	ncap = c->incap ? c->incap : 4096;
	while (ncap - c->inlen < want && ncap < IN_CAP)
		ncap *= 2;
	if (ncap > IN_CAP)
		ncap = IN_CAP;
	if (ncap <= c->incap)
		return 0;
	if ((p = realloc(c->in, ncap)) == NULL)
		return -1;
	c->in = p;
	c->incap = ncap;
	return 0;
}

static void
conn_read(struct agent *a, struct conn *c)
{
	size_t got = 0, want;
	ssize_t k;

	while (got < READ_BUDGET) {
		/* A client's large put goes to its spool as it arrives, not
		 * into a buffer grown to its frame. */
		if ((c->role == ROLE_CLIENT || c->role == ROLE_NEW) &&
		    (c->sp != NULL || c->inlen - c->inoff >= BIGVAL_MIN)) {
			conn_input(a, c);
			if (c->dead)
				return;
		}
		want = c->inlen - c->inoff < 4096 ? 4096 : READ_CHUNK;
		if (conn_room(c, want) == -1) {
			log_error("out of memory reading a frame");
			agent_conn_close(a, c, "out of memory");
			return;
		}
		if (c->inlen == c->incap)
			break;	/* a whole frame fits: parse first */
		want = c->incap - c->inlen;
		c->rd_want_w = 0;
		k = netconn_read(c->nc, c->in + c->inlen, want);
		if (k > 0) {
			c->inlen += (size_t)k;
			got += (size_t)k;
			/* The socket is drained, a short read said so (or, over
			 * TLS, nothing more is held): skip the read that would
			 * only say EAGAIN (epoll is level-triggered, so later
			 * data or EOF is reported again). */
			if (netconn_can_pend(c->nc) ?
			    !netconn_pending(c->nc) : (size_t)k < want)
				break;
			continue;
		}
		if (k == NETCONN_WANT_READ)
			break;
		if (k == NETCONN_WANT_WRITE) {	/* TLS */
			c->rd_want_w = 1;
			break;
		}
		if (k == NETCONN_ERR) {
			agent_conn_close(a, c, conn_io_why(c, "read"));
			return;
		}
		/* EOF: answer what was asked, then close. A coordinator or
		 * peer that goes away is gone at once. */
		conn_input(a, c);
		if (c->dead)
			return;
		if (c->role != ROLE_CLIENT || c->is_coord || c->sp != NULL) {
			/* A put cut short is dropped with its spool. */
			agent_conn_close(a, c, "closed by peer");
			return;
		}
		c->eof = 1;
		agent_conn_flush(a, c);
		return;
	}
	conn_input(a, c);
}

int
agent_conn_tls(struct agent *a, struct conn *c, int server)
{
	if (netconn_start_tls(c->nc, a->tls, server) == -1) {
		log_error("out of memory for a TLS connection");
		agent_conn_close(a, c, NULL);
		return -1;
	}
	c->crole = CS_ROLE_NONE;	/* until its certificate says */
	c->hs = 1;
	a->nhs++;
	c->hs_want = server ? EPOLLIN : EPOLLOUT;
	c->hs_deadline = cs_now_ms() + XPORT_HS_TIMEOUT_MS;
	if (!c->connecting)
		conn_set_events(a, c);
	return 0;
}

/* Whose certificate this may be: on a channel we opened, the agent we
 * meant (never a client's, whatever its CN); on an accepted connection,
 * a client's (with a known role, or the role-less "client", an admin)
 * or any agent of the cluster (which one is checked against its HELLO).
 * On an accepted one, *crole is set to what it may ask (role.h). */
static int
conn_cn_ok(struct agent *a, struct conn *c, const char *cn,
    enum cs_role role, enum cs_role *crole, char *why, size_t sz)
{
	if (role == CS_ROLE_BAD) {
		snprintf(why, sz, "certificate '%s' has an unknown role (its "
		    "OU: admin, backup or read-only, once)", cn);
		return 0;
	}
	if (c->role == ROLE_PEER_OUT) {
		if (strcmp(cn, a->c->agents[c->peer].name) == 0 &&
		    role == CS_ROLE_NONE)
			return 1;
		snprintf(why, sz, "certificate '%s'%s is not agent %s", cn,
		    role != CS_ROLE_NONE ? " (a client's)" : "",
		    a->c->agents[c->peer].name);
		return 0;
	}
	*crole = role;
	if (role != CS_ROLE_NONE)
		return 1;
	if (strcmp(cn, XPORT_CLIENT_CN) == 0) {
		*crole = CS_ROLE_ADMIN;	/* made before roles */
		return 1;
	}
	if (cfg_find(a->c, cn) != -1)
		return 1;
	snprintf(why, sz, "certificate CN '%s' is neither an agent of this "
	    "cluster nor a client's", cn);
	return 0;
}

static void
conn_handshake(struct agent *a, struct conn *c)
{
	char why[200], who[64], nm[160];
	struct netconn_peer peer;
	int r;

	r = netconn_handshake(c->nc, why, sizeof(why));
	if (r == NETCONN_WANT_READ || r == NETCONN_WANT_WRITE) {
		c->hs_want = r == NETCONN_WANT_READ ? EPOLLIN : EPOLLOUT;
		conn_set_events(a, c);
		return;
	}
	if (r == NETCONN_OK)
		netconn_peer(c->nc, &peer);
	if (r == NETCONN_OK && conn_cn_ok(a, c, peer.cn, peer.role,
	    &c->crole, why, sizeof(why))) {
		c->hs = 0;
		a->nhs--;
		agent_admit_done(a, c);
		snprintf(c->cn, sizeof(c->cn), "%s", peer.cn);
		if (c->role == ROLE_PEER_OUT)
			agent_outch_connected(a, c);
		conn_set_events(a, c);
		return;
	}
	xport_peer_name(c->fd, who, sizeof(who));
	if (c->role == ROLE_PEER_OUT)
		log_warn("%s: refused %s: %s", role_name(a, c, nm, sizeof(nm)),
		    who, why);
	else
		agent_admit_log(a, "refused a connection from %s: %s", who,
		    why);
	agent_conn_close(a, c, NULL);
}

int
agent_conn_hs_timeout(struct agent *a, int64_t now)
{
	struct conn *c;
	char who[64], nm[160];
	int64_t next = -1, left;

	if (a->nhs == 0)
		return -1;
	for (c = a->conns; c != NULL; c = c->next) {
		if (c->dead || !c->hs)
			continue;
		if (c->hs_deadline <= now && c->role == ROLE_PEER_OUT) {
			log_info("%s: not connected within %d ms; retrying",
			    role_name(a, c, nm, sizeof(nm)),
			    XPORT_HS_TIMEOUT_MS);
			agent_conn_close(a, c, NULL);
			continue;
		}
		if (c->hs_deadline <= now) {
			xport_peer_name(c->fd, who, sizeof(who));
			agent_admit_log(a, "refused a connection from %s: no "
			    "TLS handshake within %d ms", who,
			    XPORT_HS_TIMEOUT_MS);
			agent_conn_close(a, c, NULL);
			continue;
		}
		left = c->hs_deadline - now;
		if (next < 0 || left < next)
			next = left;
	}
	return (int)next;
}

int
agent_conn_tls_pending(struct agent *a)
{
	struct conn *c;
	size_t i, j = 0;
	int more = 0;

	if (a->lists_lost) {
		for (c = a->conns; c != NULL; c = c->next) {
			if (c->dead || c->hs || !(c->events & EPOLLIN) ||
			    !netconn_pending(c->nc))
				continue;
			agent_conn_event(a, c, EPOLLIN);
			if (!c->dead && (c->events & EPOLLIN) &&
			    netconn_pending(c->nc))
				more = 1;
		}
		return more;
	}
	/* Only TLS used since the last pass can hold more than epoll
	 * reports: a read that stopped at its budget or at the frame
	 * buffer's cap, a handshake that read the first request ahead. A
	 * connection touched by the events below joins the end of the
	 * array and is looked at in this pass too. */
	for (i = 0; i < a->ntlsp; i++) {
		c = a->tlsp[i];
		if (!c->dead && !c->hs && (c->events & EPOLLIN) &&
		    netconn_pending(c->nc))
			agent_conn_event(a, c, EPOLLIN);
		if (c->dead || c->hs || !netconn_pending(c->nc)) {
			c->in_tlsp = 0;
			continue;
		}
		/* Still holding bytes: looked at again next time (without
		 * EPOLLIN, when its output drains). */
		a->tlsp[j++] = c;
		if (c->events & EPOLLIN)
			more = 1;
	}
	a->ntlsp = j;
	return more;
}

void
agent_conn_event(struct agent *a, struct conn *c, uint32_t ev)
{
	int err = 0;
	socklen_t elen = sizeof(err);

	if (c->dead)
		return;
	conn_tls_used(a, c);
	if (c->connecting) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen) ==
		    -1 || err != 0) {
			agent_conn_close(a, c, strerror(err ? err : errno));
			return;
		}
		c->connecting = 0;
		if (!netconn_is_tls(c->nc)) {
			agent_outch_connected(a, c);
			conn_set_events(a, c);
			return;
		}
	}
	if (c->hs) {
		conn_handshake(a, c);
		return;
	}
	/* The client of a parked RECV hung up (libcutsnap never half-closes
	 * a connection it waits on): nobody is left to answer. */
	if (c->recv_at != 0 && (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
		agent_conn_close(a, c, "hung up with a recv parked");
		return;
	}
	if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) ||
	    (c->rd_want_w && (ev & EPOLLOUT)))
		conn_read(a, c);
	if (!c->dead && c->wr_want_r && (ev & EPOLLIN))
		agent_conn_flush(a, c);
	if (!c->dead && (ev & EPOLLOUT)) {
		agent_conn_flush(a, c);
		/* Output drained below the mark: resume buffered input. */
		if (!c->dead && !c->eof && c->inoff < c->inlen &&
		    agent_conn_pending(c) < OUT_HIGH_WATER)
			conn_input(a, c);
	}
	if (!c->dead)
		conn_set_events(a, c);
}
