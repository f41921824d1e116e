/* inbox.c - W_REQ_RECV: a client reads the oldest application message of
 * this agent's inbox (datalog.h: INBOX records fill it, a TXN's CONSUME
 * empties it); W_REQ_INBOX lists the inbox.
 *
 * A request with a timeout and an empty inbox is parked on its
 * connection (conn.recv_at), never waited for in the loop: the
 * connection's input pauses meanwhile, so that replies on it keep their
 * requests' order, and the loop answers it (agent_recv_timers) once a
 * message is in the inbox or the deadline passed. A reply waits for the
 * log to be durable, so no client sees a message the file could lose. */
#include <inttypes.h>
#include <string.h>

#include "../lib/log.h"
#include "../proto/chmsg.h"
#include "agent_int.h"

/* REPLY_OK with the inbox's oldest message; 0, or -1 when it is empty. */
static int
recv_reply(struct agent *a, struct conn *c)
{
	const struct dl_state *st = datalog_state(a->dl);
	const struct dl_inmsg *m;
	struct chmsg_app app;
	struct wbuf w;

	if (st->ninbox == 0)
		return -1;
	m = &st->inbox[0];
	/* Checked when its record was read or written. */
	if (chmsg_decode_app(m->msg, m->len, &app) == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "inbox message seq %"
		    PRIu64 " from %s is malformed", m->seq, m->peer);
		return 0;
	}
	wbuf_init(&w);
	wbuf_put_str(&w, m->peer);
	wbuf_put_u64(&w, m->seq);
	wbuf_put_raw(&w, app.id, CHMSG_ID_LEN);
	wbuf_put_bytes(&w, app.payload, app.plen);
	agent_conn_reply_wbuf(a, c, REPLY_OK, &w);
	wbuf_free(&w);
	return 0;
}

void
agent_recv_request(struct agent *a, struct conn *c, struct rbuf *r)
{
	uint32_t ms = rbuf_u32(r);

	if (!rbuf_done(r)) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "malformed recv request");
		return;
	}
	if (recv_reply(a, c) == 0)
		return;
	if (ms == 0) {
		agent_conn_reply(a, c, REPLY_TIMEOUT, NULL, 0,
		    datalog_need(a->dl));
		return;
	}
	c->recv_at = cs_now_ms() + ms;
	a->nrecv++;
}

/* Unpark c after its reply, and go on with what it sent meanwhile. */
static void
unpark(struct agent *a, struct conn *c)
{
	c->recv_at = 0;
	a->nrecv--;
	agent_conn_resume(a, c);
}

void
agent_recv_timers(struct agent *a, int64_t now)
{
	struct conn *c;

	if (a->nrecv == 0)
		return;
	for (c = a->conns; c != NULL && a->nrecv > 0; c = c->next) {
		if (c->dead || c->recv_at == 0)
			continue;
		if (recv_reply(a, c) == 0)
			unpark(a, c);
		else if (c->recv_at <= now) {
			agent_conn_reply(a, c, REPLY_TIMEOUT, NULL, 0,
			    datalog_need(a->dl));
			unpark(a, c);
		}
	}
}

int
agent_recv_timeout(struct agent *a, int64_t now)
{
	int64_t best = -1, t;
	struct conn *c;

	if (a->nrecv == 0)
		return -1;
	if (datalog_state(a->dl)->ninbox > 0)
		return 0;
	for (c = a->conns; c != NULL; c = c->next) {
		if (c->dead || c->recv_at == 0)
			continue;
		t = c->recv_at - now;
		if (t < 0)
			t = 0;
		if (best == -1 || t < best)
			best = t;
	}
	return best > INT32_MAX ? INT32_MAX : (int)best;
}

void
agent_recv_closed(struct agent *a, struct conn *c)
{
	if (c->recv_at == 0)
		return;
	c->recv_at = 0;
	a->nrecv--;
}

void
agent_inbox_list(struct agent *a, struct conn *c)
{
	const struct dl_state *st = datalog_state(a->dl);
	const struct dl_inmsg *m;
	struct chmsg_app app;
	uint64_t bytes = 0;
	struct wbuf w;
	size_t i, n;

	n = st->ninbox < INBOX_LIST_MAX ? st->ninbox : INBOX_LIST_MAX;
	for (i = 0; i < st->ninbox; i++)
		if (chmsg_decode_app(st->inbox[i].msg, st->inbox[i].len,
		    &app) == 0)
			bytes += app.plen;
	wbuf_init(&w);
	wbuf_put_u64(&w, bytes);
	wbuf_put_u32(&w, (uint32_t)st->ninbox);
	wbuf_put_u32(&w, (uint32_t)n);
	for (i = 0; i < n; i++) {
		m = &st->inbox[i];
		/* Checked when its record was read or written. */
		if (chmsg_decode_app(m->msg, m->len, &app) == -1) {
			wbuf_free(&w);
			agent_conn_replyf(a, c, REPLY_FAIL, "inbox message "
			    "seq %" PRIu64 " from %s is malformed", m->seq,
			    m->peer);
			return;
		}
		wbuf_put_str(&w, m->peer);
		wbuf_put_u64(&w, m->seq);
		wbuf_put_raw(&w, app.id, CHMSG_ID_LEN);
		wbuf_put_u32(&w, (uint32_t)app.plen);
	}
	agent_conn_reply_wbuf(a, c, REPLY_OK, &w);
	wbuf_free(&w);
}
