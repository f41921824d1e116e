/* inch.c - incoming channels src->self: WELCOME with the history chain,
 * the sender's verdict on it, apply in seq order with a hold-back ring for
 * early messages, drop duplicates, ack once durable; back-pressure when
 * the inbox is full.
 *
 * Back-pressure: an application message that finds the inbox at or over
 * inbox_max_bytes is not applied; it waits in the hold-back ring with
 * everything behind it on its channel (seq order), unacknowledged, so the
 * sender keeps it durably and stops taking sends once its unacknowledged
 * bytes pass the cap (txn.c). The channel is still read: a marker behind
 * waiting messages arrives, and their arrival closes the channel's
 * recording (snapshot.c), so snapshots complete while the inbox is full.
 * The ring holds at most what the sender has written and not had
 * acknowledged: its window (OUT_WINDOW messages), within the cap in
 * application bytes plus one message. A consume makes room and
 * agent_inch_admit applies what waited; if the connection dropped
 * meanwhile, the sender resends it. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../log/chain.h"
#include "../proto/chmsg.h"
#include "../log/datalog.h"
#include "../lib/log.h"
#include "agent_int.h"

/* A credit or an application message (its payload at most
 * APP_PAYLOAD_MAX). */
#define MSG_MAX (1u + CHMSG_ID_LEN + 4u + APP_PAYLOAD_MAX)
#define VERDICT_MAX 512			/* the reason in a VERDICT */

static const char *
sname(const struct agent *a, int s)
{
	return a->c->agents[s].name;
}

int
agent_inch_init(struct agent *a)
{
	int s;

	if ((a->in = calloc((size_t)a->n, sizeof(*a->in))) == NULL)
		return -1;
	for (s = 0; s < a->n; s++) {
		if (s != a->self && cfg_has_channel(a->c, s, a->self))
			a->in[s].configured = 1;
		/* Test hook: CUTSNAP_FAULT=withhold-acks owes every ACK for
		 * good; only the WELCOME of a new connection tells the
		 * sender what is applied. */
		a->in[s].withhold = cs_fault_on("withhold-acks");
	}
	return 0;
}

static void
inch_drop_held(struct inch *ic)
{
	size_t i;

	if (ic->ring == NULL)
		return;
	for (i = 0; i < HOLD_CAP; i++)
		free(ic->ring[i].p);
	free(ic->ring);
	ic->ring = NULL;
	ic->nheld = 0;
}

void
agent_inch_free(struct agent *a)
{
	int s;

	if (a->in == NULL)
		return;
	for (s = 0; s < a->n; s++)
		inch_drop_held(&a->in[s]);
	free(a->in);
	a->in = NULL;
}

void
agent_inch_hello(struct agent *a, struct conn *c, const uint8_t *p, size_t n)
{
	char src[NAME_MAX_LEN + 1];
	static const uint8_t none[DL_CHAIN_LEN];
	const uint8_t *chain;
	struct rbuf r;
	struct wbuf w;
	int s;

	rbuf_init(&r, p, n);
	rbuf_str(&r, src, sizeof(src));
	if (!rbuf_done(&r)) {
		log_warn("malformed HELLO; closing the connection");
		agent_conn_close(a, c, NULL);
		return;
	}
	/* Over TLS the HELLO must name the agent of the certificate. */
	if (netconn_is_tls(c->nc) && strcmp(src, c->cn) != 0) {
		log_warn("refused a HELLO as %s from the certificate of %s: "
		    "a CN that is not the agent it claims to be", src, c->cn);
		agent_conn_close(a, c, NULL);
		return;
	}
	s = cfg_find(a->c, src);
	if (s == -1 || !a->in[s].configured) {
		log_warn("HELLO from %s: no channel %s>%s in the config; "
		    "closing it", src, src, a->name);
		agent_conn_close(a, c, NULL);
		return;
	}
	if (a->in[s].conn != NULL) {
		log_info("channel %s>%s: peer reconnected; dropping the old "
		    "connection", src, a->name);
		agent_conn_close(a, a->in[s].conn, NULL);
	}
	c->role = ROLE_PEER_IN;
	c->peer = s;
	a->in[s].conn = c;
	/* The WELCOME below tells the sender what is applied. */
	a->in[s].acked = dl_wm_get(&datalog_state(a->dl)->applied, src);
	a->in[s].ack_at = 0;
	log_info("channel %s>%s up", src, a->name);
	agent_outch_peer_alive(a, s);
	/* Announce only what is durable: the sender resends from here, once
	 * it holds the same history chain at that seq. */
	chain = dl_wm_chain(&datalog_state(a->dl)->applied, src);
	wbuf_init(&w);
	wbuf_put_u64(&w, dl_wm_get(&datalog_state(a->dl)->applied, src));
	wbuf_put_u8(&w, chain != NULL);
	wbuf_put_raw(&w, chain != NULL ? chain : none, DL_CHAIN_LEN);
	agent_conn_send(a, c, W_PEER_WELCOME, w.data, w.len,
	    datalog_need(a->dl));
	wbuf_free(&w);
}

void
agent_inch_closed(struct agent *a, struct conn *c)
{
	struct inch *ic = &a->in[c->peer];

	if (ic->conn != c)
		return;
	ic->conn = NULL;
	ic->ack_at = 0;	/* the next WELCOME acknowledges them */
	/* Unacknowledged, so the sender still has them and resends. */
	inch_drop_held(ic);
	log_info("channel %s>%s down", sname(a, c->peer), a->name);
}

/* Consume message seq (== applied+1): apply its credit, or record it as a
 * dead letter when the credit cannot be applied (dl_credit), in one
 * record either way, so the channel keeps flowing. -1 closes the
 * connection: only a malformed message (a protocol problem, never
 * silently lost) or a failed append. */
static int
inch_apply(struct agent *a, int s, uint64_t seq, const uint8_t *p, size_t n)
{
	struct dl_credit_buf buf;
	struct dl_record rec;
	struct cs_err e;
	char kp[80];

	if (dl_credit(datalog_state(a->dl), sname(a, s), seq, p, n, &rec, &buf,
	    &e) == -1) {
		log_error("channel %s>%s: %s; closing the channel",
		    sname(a, s), a->name, e.msg);
		return -1;
	}
	if (agent_append(a, &rec) == -1)
		return -1;
	a->applied_from[s]++;
	if (rec.type == DL_DEAD) {
		a->ct.dead++;
		cs_printable(rec.key, rec.klen, kp, sizeof(kp),
		    CS_PRINT_ASCII | CS_PRINT_ELLIPSIS);
		log_warn("channel %s>%s: seq %llu: dead letter: cannot add "
		    "%lld to %s (%s); resolve it with cutsnap deadletter",
		    sname(a, s), a->name, (unsigned long long)seq,
		    (long long)rec.amount, kp, dl_dead_reason_name(rec.code));
	}
	if (agent_snap_applied(a, s, seq, p, n) == -1) {
		log_error("out of memory recording channel %s>%s",
		    sname(a, s), a->name);
		a->fatal = 1;
		return -1;
	}
	return 0;
}

static int
inch_hold(struct inch *ic, uint64_t seq, const uint8_t *p, size_t n)
{
	struct held *h;

	if (ic->ring == NULL &&
	    (ic->ring = calloc(HOLD_CAP, sizeof(*ic->ring))) == NULL)
		return -1;
	h = &ic->ring[seq % HOLD_CAP];
	if (h->seq == seq)
		return 0;	/* a duplicate of a held one */
	if ((h->p = malloc(n ? n : 1)) == NULL)
		return -1;
	memcpy(h->p, p, n);
	h->n = n;
	h->seq = seq;
	ic->nheld++;
	return 0;
}

int
agent_inbox_full(const struct agent *a)
{
	return datalog_state(a->dl)->inbox_bytes >=
	    a->c->agents[a->self].inbox_max;
}

/* Message p[0, n) may not be applied now: an application message while
 * the inbox is full. It then waits in the ring, unacknowledged, and so
 * does everything behind it (seq order); the sender keeps it durably and
 * its TXNs get REPLY_BUSY once its unacknowledged bytes pass the cap. */
static int
inch_must_wait(struct agent *a, int s, uint64_t seq, const uint8_t *p,
    size_t n)
{
	struct inch *ic = &a->in[s];

	if (n == 0 || p[0] != CHMSG_APP || !agent_inbox_full(a))
		return 0;
	if (!ic->full)
		log_info("channel %s>%s: inbox full (%" PRIu64 " of %" PRIu64
		    " bytes): seq %" PRIu64 " and what follows wait, "
		    "unacknowledged, until the application consumes",
		    sname(a, s), a->name, datalog_state(a->dl)->inbox_bytes,
		    a->c->agents[a->self].inbox_max, seq);
	ic->full = 1;
	return 1;
}

/* Apply the held messages next in seq order, until a gap or one that
 * must wait for room in the inbox. -1 after closing ic's connection. */
static int
inch_drain(struct agent *a, int s)
{
	struct inch *ic = &a->in[s];
	uint64_t seq;
	struct held *h;
	int rc;

	while (ic->nheld > 0) {
		seq = dl_wm_get(&datalog_state(a->dl)->applied, sname(a, s)) + 1;
		h = &ic->ring[seq % HOLD_CAP];
		if (h->seq != seq || inch_must_wait(a, s, seq, h->p, h->n))
			break;
		rc = inch_apply(a, s, seq, h->p, h->n);
		free(h->p);
		h->p = NULL;
		h->seq = 0;
		ic->nheld--;
		if (rc == -1) {
			if (ic->conn != NULL)
				agent_conn_close(a, ic->conn, NULL);
			return -1;
		}
	}
	return 0;
}

static void
inch_msg(struct agent *a, struct conn *c, uint64_t seq, const uint8_t *p,
    size_t n)
{
	struct inch *ic = &a->in[c->peer];
	const char *src = sname(a, c->peer);
	uint64_t applied = dl_wm_get(&datalog_state(a->dl)->applied, src);

	c->ack_due = 1;
	if (seq <= applied)
		return;		/* a resend of an applied one: ack again */
	if (seq - applied > HOLD_CAP) {
		log_error("channel %s>%s: seq %llu is more than %u ahead of "
		    "applied %llu; closing it", src, a->name,
		    (unsigned long long)seq, HOLD_CAP,
		    (unsigned long long)applied);
		agent_conn_close(a, c, NULL);
		return;
	}
	if (seq > applied + 1 || inch_must_wait(a, c->peer, seq, p, n)) {
		if (inch_hold(ic, seq, p, n) == -1) {
			log_error("out of memory holding back a message");
			agent_conn_close(a, c, NULL);
			return;
		}
		/* Arrived, so a snapshot's recording of this channel
		 * counts it, applied or not (snapshot.c). */
		if (agent_snap_arrived(a, c->peer) == -1) {
			log_error("out of memory recording channel %s>%s",
			    src, a->name);
			a->fatal = 1;
		}
		return;
	}
	if (inch_apply(a, c->peer, seq, p, n) == -1) {
		agent_conn_close(a, c, NULL);
		return;
	}
	/* Drain what waited for this one. */
	(void)inch_drain(a, c->peer);
}

void
agent_inch_admit(struct agent *a)
{
	struct inch *ic;
	int s;

	for (s = 0; s < a->n && !agent_inbox_full(a); s++) {
		ic = &a->in[s];
		if (!ic->full)
			continue;
		ic->full = 0;
		log_info("channel %s>%s: room in the inbox again; admitting "
		    "what waited", sname(a, s), a->name);
		if (inch_drain(a, s) == -1 || ic->conn == NULL ||
		    ic->withhold)
			continue;
		/* Acknowledge what was admitted, as after a batch. */
		if (ic->ack_at == 0)
			ic->ack_at = cs_now_ms() + ACK_DELAY_MS;
	}
}

/* The sender's answer to our WELCOME: does it hold our history? */
static void
inch_verdict(struct agent *a, struct conn *c, const uint8_t *p, size_t n)
{
	struct inch *ic = &a->in[c->peer];
	const uint8_t *why;
	char text[VERDICT_MAX + 1];
	struct rbuf r;
	size_t wlen = 0;
	uint8_t ok;

	rbuf_init(&r, p, n);
	ok = rbuf_u8(&r);
	why = rbuf_bytes(&r, &wlen, VERDICT_MAX);
	if (!rbuf_done(&r) || ok > 1) {
		log_warn("channel %s>%s: malformed VERDICT; closing it",
		    sname(a, c->peer), a->name);
		agent_conn_close(a, c, NULL);
		return;
	}
	cs_printable(why, wlen, text, sizeof(text),
	    CS_PRINT_ASCII | CS_PRINT_ELLIPSIS);
	if (!ok && !ic->diverged)
		log_error("channel %s>%s diverged: the sender refused this "
		    "end's history (%s): finish the restore (run it again) "
		    "or restore every agent from one snapshot",
		    sname(a, c->peer), a->name, text);
	else if (ok && ic->diverged)
		log_info("channel %s>%s: both ends share one history again",
		    sname(a, c->peer), a->name);
	ic->diverged = !ok;
	ic->fence_ok = ok;
	agent_fence_check(a);
}

void
agent_inch_frame(struct agent *a, struct conn *c, uint8_t type,
    const uint8_t *p, size_t n)
{
	const uint8_t *body = NULL;
	struct snapuid id;
	struct rbuf r;
	uint64_t x = 0, y = 0;
	size_t blen = 0;

	if (type == W_PEER_VERDICT) {
		inch_verdict(a, c, p, n);
		return;
	}
	rbuf_init(&r, p, n);
	if (type == W_PEER_MSG) {
		x = rbuf_u64(&r);
		body = rbuf_bytes(&r, &blen, MSG_MAX);
	} else {
		snapuid_get(&r, &id);
		y = rbuf_u64(&r);
	}
	if ((type != W_PEER_MSG && type != W_PEER_MARKER) || !rbuf_done(&r) ||
	    (type == W_PEER_MSG ? x == 0 : snapuid_is_zero(&id))) {
		log_warn("channel %s>%s: unexpected or malformed frame type "
		    "%u; closing it", sname(a, c->peer), a->name, type);
		agent_conn_close(a, c, NULL);
		return;
	}
	/* Fenced (fence.c): unapplied and unacknowledged, so the sender
	 * keeps them and resends once the fence is lifted. */
	if (agent_fenced(a))
		log_debug("channel %s>%s: fenced; frame type %u ignored",
		    sname(a, c->peer), a->name, type);
	else if (type == W_PEER_MSG)
		inch_msg(a, c, x, body, blen);
	else
		agent_snap_marker(a, c->peer, &id, y);
}

/* One cumulative ACK of what is applied from s, sent once the APPLY
 * records are durable (released by the next commit). */
static void
inch_ack(struct agent *a, int s)
{
	struct inch *ic = &a->in[s];
	struct wbuf w;

	ic->ack_at = 0;
	if (ic->conn == NULL || ic->conn->dead)
		return;
	ic->acked = dl_wm_get(&datalog_state(a->dl)->applied, sname(a, s));
	a->ct.acks_sent++;
	wbuf_init(&w);
	wbuf_put_u64(&w, ic->acked);
	agent_conn_send(a, ic->conn, W_PEER_ACK, w.data, w.len,
	    datalog_need(a->dl));
	wbuf_free(&w);
}

/* After a batch of frames: an ACK is owed. It waits up to ACK_DELAY_MS
 * for later batches (one ACK record for them all, not one per batch),
 * unless ACK_EVERY messages are owed already. A resend of applied
 * messages is acknowledged the same way: the sender drops them then. */
void
agent_inch_batch_done(struct agent *a, struct conn *c)
{
	struct inch *ic = &a->in[c->peer];

	if (!c->ack_due || c->dead)
		return;
	c->ack_due = 0;
	if (ic->withhold)
		return;
	if (dl_wm_get(&datalog_state(a->dl)->applied, sname(a, c->peer)) -
	    ic->acked >= ACK_EVERY)
		inch_ack(a, c->peer);
	else if (ic->ack_at == 0)
		ic->ack_at = cs_now_ms() + ACK_DELAY_MS;
}

void
agent_inch_timers(struct agent *a, int64_t now, int all)
{
	int s;

	for (s = 0; s < a->n; s++)
		if (a->in[s].ack_at != 0 && (all || a->in[s].ack_at <= now))
			inch_ack(a, s);
}

int
agent_inch_timeout(struct agent *a, int64_t now)
{
	int64_t best = -1, t;
	int s;

	for (s = 0; s < a->n; s++) {
		if (a->in[s].ack_at == 0)
			continue;
		t = a->in[s].ack_at - now;
		if (t < 0)
			t = 0;
		if (best == -1 || t < best)
			best = t;
	}
	return (int)best;
}
