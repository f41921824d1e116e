/* outch.c - outgoing channels self->dst: ordered queues of messages and
 * markers, connect/reconnect with backoff, HELLO/WELCOME, the history
 * check, resend, ACK.
 *
 * Queue q[qh, qt): q[qh, qh+w) were written on the current (or last)
 * connection; the rest wait. Written messages stay until acknowledged,
 * written markers until the next WELCOME, which drops those of snapshots
 * no longer in progress here and writes the others again, in their place
 * (the receiver ignores a marker it already has). */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../log/chain.h"
#include "../lib/log.h"
#include "../proto/chmsg.h"
#include "../net/xport.h"
#include "agent_int.h"

static const char *
dname(const struct agent *a, int d)
{
	return a->c->agents[d].name;
}

static void
qent_free(struct qent *q)
{
	free(q->payload);
	q->payload = NULL;
}

/* Append e (its payload now owned by the queue) at the window's tail. */
static int
win_push(struct outch *o, const struct qent *e)
{
	struct qent *nq;
	size_t ncap;

	if (o->qt == o->qcap) {
		if (o->qh > 0 && o->qh >= o->qcap / 2) {
			memmove(o->q, o->q + o->qh,
			    (o->qt - o->qh) * sizeof(*nq));
			o->qt -= o->qh;
			o->qh = 0;
		} else {
			ncap = o->qcap ? o->qcap * 2 : 64;
			if ((nq = realloc(o->q, ncap * sizeof(*nq))) == NULL)
				return -1;
			o->q = nq;
			o->qcap = ncap;
		}
	}
	o->q[o->qt++] = *e;
	return 0;
}

/* Move the markers that wait behind the file part and go before message
 * seq (those after a message < seq) into the window, in order. */
static int
fm_flush(struct outch *o, uint64_t seq)
{
	size_t i = 0;
	int rc = 0;

	while (i < o->nfm && o->fm[i].seq < seq) {
		if (win_push(o, &o->fm[i]) == -1) {
			rc = -1;
			break;
		}
		i++;
	}
	if (i > 0) {
		memmove(o->fm, o->fm + i, (o->nfm - i) * sizeof(*o->fm));
		o->nfm -= i;
	}
	return rc;
}

/* The peer has applied up to k: nothing of the file part up to k is
 * needed any more (after a restart the receiver may be ahead of the
 * acknowledgements the log noted). */
static int
file_acked(struct outch *o, uint64_t k)
{
	if (o->f_lo == 0 || o->f_lo > k)
		return 0;
	if (k < o->f_hi) {
		o->f_lo = k + 1;
		return fm_flush(o, o->f_lo);
	}
	o->f_lo = o->f_hi = 0;
	return fm_flush(o, UINT64_MAX);
}

static void
set_chain(struct qent *e, const uint8_t *chain)
{
	e->chain_known = chain != NULL;
	if (chain != NULL)
		memcpy(e->chain, chain, DL_CHAIN_LEN);
}

/* The chain after message seq to d when seq is the last one sent (the
 * SEND just appended), else NULL. */
static const uint8_t *
sent_chain(const struct agent *a, int d, uint64_t seq)
{
	const struct dl_state *st = datalog_state(a->dl);

	if (dl_wm_get(&st->sent, dname(a, d)) != seq)
		return NULL;
	return dl_wm_chain(&st->sent, dname(a, d));
}

/* The chain at seq k of the channel to d, for the ACK record of k: the
 * window's copy, else what the log holds (read back from the file for a
 * seq no longer in memory). 1 with out set, 0 unknown. */
static int
acked_chain(struct agent *a, int d, uint64_t k, uint8_t out[DL_CHAIN_LEN])
{
	const struct outch *o = &a->out[d];
	const uint8_t *c = NULL;
	size_t i;

	for (i = o->qh; i < o->qt; i++) {
		if (o->q[i].kind == Q_MSG && o->q[i].seq == k) {
			if (!o->q[i].chain_known)
				return 0;
			memcpy(out, o->q[i].chain, DL_CHAIN_LEN);
			return 1;
		}
	}
	if (!chain_sent_at(datalog_state(a->dl), dname(a, d), k, &c) ||
	    c == NULL)
		return 0;
	memcpy(out, c, DL_CHAIN_LEN);
	return 1;
}

/* Note application message seq of len bytes as unacknowledged on o. */
static int
app_push(struct outch *o, uint64_t seq, size_t len)
{
	struct app_unacked *n;
	size_t ncap;

	if (o->apt == o->apcap) {
		if (o->aph > 0) {
			memmove(o->ap, o->ap + o->aph,
			    (o->apt - o->aph) * sizeof(*o->ap));
			o->apt -= o->aph;
			o->aph = 0;
		} else {
			ncap = o->apcap ? o->apcap * 2 : 16;
			if ((n = realloc(o->ap, ncap * sizeof(*n))) == NULL)
				return -1;
			o->ap = n;
			o->apcap = ncap;
		}
	}
	o->ap[o->apt].seq = seq;
	o->ap[o->apt++].len = len;
	o->app_bytes += len;
	return 0;
}

/* Acknowledged up to k: those application messages are the peer's. */
static void
app_acked(struct outch *o, uint64_t k)
{
	while (o->aph < o->apt && o->ap[o->aph].seq <= k)
		o->app_bytes -= o->ap[o->aph++].len;
	if (o->aph == o->apt)
		o->aph = o->apt = 0;
}

/* datalog_read_sends at start: the backlog's application messages. */
static int
app_scan(void *ctx, uint64_t seq, const uint8_t *msg, size_t len,
    const uint8_t *chain)
{
	(void)chain;
	if (len == 0 || msg[0] != CHMSG_APP)
		return 0;
	return app_push(ctx, seq, len);
}

/* Something waits on o: an entry not written yet, or a written message
 * not acknowledged (a written marker waits for nothing). Scanned from
 * the tail, where a message almost always is. */
static int
outch_waiting(const struct outch *o)
{
	size_t i;

	if (o->qt - o->qh > o->w || o->f_lo != 0 || o->nfm != 0)
		return 1;
	for (i = o->qt; i > o->qh; i--)
		if (o->q[i - 1].kind == Q_MSG)
			return 1;
	return 0;
}

/* A message whose SEND record is the one appended last (its offset starts
 * the file part when the window is full), or a marker. */
int
agent_outch_enqueue(struct agent *a, int dst, enum qkind kind, uint64_t seq,
    const struct snapuid *snap, uint64_t off, const uint8_t *payload,
    size_t len)
{
	struct outch *o = &a->out[dst];
	struct qent e, *nm;
	size_t ncap;

	if (!outch_waiting(o))
		o->stall_ms = cs_now_ms();
	if (kind == Q_MSG && len > 0 && payload[0] == CHMSG_APP &&
	    app_push(o, seq, len) == -1)
		return -1;
	memset(&e, 0, sizeof(e));
	e.kind = kind;
	e.seq = seq;
	if (snap != NULL)
		e.snap = *snap;
	e.off = off;
	if (kind == Q_MSG &&
	    (o->f_lo != 0 || o->qt - o->qh >= OUT_WINDOW)) {
		/* The backlog stays in the file: memory does not grow
		 * with it. */
		if (o->f_lo == 0) {
			o->f_lo = seq;
			o->f_off = datalog_last_off(a->dl);
		}
		o->f_hi = seq;
		return 0;
	}
	if (kind == Q_MARKER && o->f_lo != 0) {
		if (o->nfm == o->capfm) {
			ncap = o->capfm ? o->capfm * 2 : 8;
			if ((nm = realloc(o->fm, ncap * sizeof(*nm))) == NULL)
				return -1;
			o->fm = nm;
			o->capfm = ncap;
		}
		o->fm[o->nfm++] = e;
		return 0;
	}
	if (kind == Q_MSG) {
		if ((e.payload = malloc(len ? len : 1)) == NULL)
			return -1;
		if (len > 0)
			memcpy(e.payload, payload, len);
		e.len = len;
		set_chain(&e, sent_chain(a, dst, seq));
	}
	if (win_push(o, &e) == -1) {
		free(e.payload);
		return -1;
	}
	return 0;
}

void
agent_outch_set_chain(struct agent *a, int dst, uint64_t seq,
    const uint8_t chain[DL_CHAIN_LEN])
{
	struct outch *o = &a->out[dst];
	size_t i;

	for (i = o->qt; i > o->qh; i--)
		if (o->q[i - 1].kind == Q_MSG && o->q[i - 1].seq == seq) {
			set_chain(&o->q[i - 1], chain);
			return;
		}
}

struct fill {
	struct agent *a;
	int d;
	size_t room;		/* entries the window may still take */
};

/* One SEND read back from the file: the next message of the file part. */
static int
fill_one(void *ctx, uint64_t seq, const uint8_t *msg, size_t len,
    const uint8_t *chain)
{
	struct fill *f = ctx;
	struct outch *o = &f->a->out[f->d];
	struct qent e;

	if (seq != o->f_lo) {
		log_error("channel %s>%s: the data file has seq %llu where "
		    "%llu was expected", f->a->name, dname(f->a, f->d),
		    (unsigned long long)seq, (unsigned long long)o->f_lo);
		return -1;
	}
	if (fm_flush(o, seq) == -1)
		return -1;
	memset(&e, 0, sizeof(e));
	e.kind = Q_MSG;
	e.seq = seq;
	e.len = len;
	if ((e.payload = malloc(len ? len : 1)) == NULL)
		return -1;
	if (len > 0)
		memcpy(e.payload, msg, len);
	set_chain(&e, chain);
	if (win_push(o, &e) == -1) {
		free(e.payload);
		return -1;
	}
	if (seq == o->f_hi) {
		o->f_lo = o->f_hi = 0;
		return fm_flush(o, UINT64_MAX) == -1 ? -1 : 1;
	}
	o->f_lo = seq + 1;
	return --f->room == 0;
}

/* Read the next messages of the file part into the window: when it is at
 * most half full, or (force) whenever it has room. Only durable records
 * are read, so what comes back may leave at once. A read error or a
 * damaged record is fatal for the agent: its file cannot be trusted. */
static void
outch_fill(struct agent *a, int d, int force)
{
	struct outch *o = &a->out[d];
	size_t have = o->qt - o->qh;
	struct fill f;
	struct cs_err e;

	if (o->f_lo == 0 || have >= OUT_WINDOW ||
	    (!force && have > OUT_WINDOW / 2))
		return;
	f.a = a;
	f.d = d;
	f.room = OUT_WINDOW - have;
	if (datalog_read_sends(a->dl, dname(a, d), &o->f_off, o->f_lo,
	    fill_one, &f, &e) == -1) {
		log_error("channel %s>%s: reading unacknowledged messages "
		    "back: %s; exiting", a->name, dname(a, d), e.msg);
		a->fatal = 1;
	}
}

int
agent_outch_init(struct agent *a, struct cs_err *e)
{
	const struct dl_state *st = datalog_state(a->dl);
	const struct wm *s;
	uint64_t acked, off;
	size_t i;
	int d;

	if ((a->out = calloc((size_t)a->n, sizeof(*a->out))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	/* The per-peer counts of /metrics (metrics.c), one block. */
	if ((a->sent_to = calloc((size_t)a->n * 3, sizeof(uint64_t))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	a->applied_from = a->sent_to + a->n;
	a->acked_by = a->sent_to + 2 * a->n;
	for (d = 0; d < a->n; d++) {
		if (d == a->self || !cfg_has_channel(a->c, a->self, d))
			continue;
		a->out[d].configured = 1;
		a->out[d].backoff_ms = BACKOFF_MIN_MS;
		a->out[d].retry_at = 1;	/* connect at once */
		a->out[d].stall_ms = cs_now_ms();
	}
	/* Unacknowledged sends of the log, already durable: the whole
	 * backlog starts as the file part and is read in as it is sent. */
	for (i = 0; i < st->sent.n; i++) {
		s = &st->sent.v[i];
		acked = dl_wm_get(&st->acked, s->peer);
		if (s->seq <= acked)
			continue;
		if ((d = cfg_find(a->c, s->peer)) == -1 ||
		    !a->out[d].configured) {
			log_warn("data file has unacknowledged messages to %s, "
			    "which is not a channel of this config: kept, "
			    "not sent", s->peer);
			continue;
		}
		a->out[d].f_lo = acked + 1;
		a->out[d].f_hi = s->seq;
		a->out[d].f_off = dl_wm_get(&st->sendoff, s->peer);
		if (a->out[d].f_off < DL_HEADER_LEN)
			a->out[d].f_off = DL_HEADER_LEN;	/* scan it all */
		log_info("channel %s>%s: %llu unacknowledged messages to "
		    "resend", a->name, dname(a, d),
		    (unsigned long long)(s->seq - acked));
		/* Their application bytes count against the peer's cap. */
		off = a->out[d].f_off;
		if (datalog_read_sends(a->dl, s->peer, &off, acked + 1,
		    app_scan, &a->out[d], e) == -1)
			return -1;
	}
	return 0;
}

void
agent_outch_free(struct agent *a)
{
	size_t i;
	int d;

	free(a->sent_to);
	a->sent_to = a->applied_from = a->acked_by = NULL;
	if (a->out == NULL)
		return;
	for (d = 0; d < a->n; d++) {
		for (i = a->out[d].qh; i < a->out[d].qt; i++)
			qent_free(&a->out[d].q[i]);
		free(a->out[d].q);
		free(a->out[d].fm);
		free(a->out[d].ap);
	}
	free(a->out);
	a->out = NULL;
}

size_t
agent_outch_queued(const struct agent *a, int dst)
{
	const struct outch *o = &a->out[dst];

	return o->qt - o->qh - o->w + o->nfm +
	    (o->f_lo ? (size_t)(o->f_hi - o->f_lo + 1) : 0);
}

size_t
agent_outch_unacked(const struct agent *a, int dst)
{
	const struct outch *o = &a->out[dst];
	size_t i, n = 0;

	for (i = o->qh; i < o->qh + o->w; i++)
		n += o->q[i].kind == Q_MSG;
	return n;
}

uint64_t
agent_outch_app_bytes(const struct agent *a, int dst)
{
	return a->out[dst].app_bytes;
}

uint64_t
agent_outch_stalled_ms(const struct agent *a, int dst)
{
	const struct outch *o = &a->out[dst];
	int64_t d = cs_now_ms() - o->stall_ms;

	if (!outch_waiting(o) || d < 0)
		return 0;
	return (uint64_t)d;
}

static void
schedule_retry(struct agent *a, struct outch *o)
{
	o->retry_at = cs_now_ms() + o->backoff_ms;
	o->backoff_ms *= 2;
	if (o->backoff_ms > BACKOFF_MAX_MS)
		o->backoff_ms = BACKOFF_MAX_MS;
	(void)a;
}

static void
outch_connect(struct agent *a, int d)
{
	struct outch *o = &a->out[d];
	const char *path = a->c->agents[d].sock;
	int tls = a->c->agents[d].addr[0] != '\0';
	struct sockaddr_un sun;
	struct cs_err e;
	int fd, rc, inprog = 0;

	o->retry_at = 0;
	/* An agent with an addr: TCP, then the TLS handshake (conn.c)
	 * checks that the certificate is d's before HELLO is sent. */
	if (tls) {
		if ((fd = xport_tcp_connect(a->c->agents[d].addr, 1, &inprog,
		    &e)) == -1) {
			log_debug("channel %s>%s: %s", a->name, dname(a, d),
			    e.msg);
			schedule_retry(a, o);
			return;
		}
		goto conn;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strnlen(path, sizeof(sun.sun_path) - 1));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		log_warn("channel %s>%s: socket: %s", a->name, dname(a, d),
		    strerror(errno));
		schedule_retry(a, o);
		return;
	}
	while ((rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun))) ==
	    -1 && errno == EINTR)
		;
	if (rc == -1 && errno == EINPROGRESS)
		inprog = 1;
	else if (rc == -1) {
		log_debug("channel %s>%s: connect: %s", a->name, dname(a, d),
		    strerror(errno));
		close(fd);
		schedule_retry(a, o);
		return;
	}
conn:
	if ((o->conn = agent_conn_new(a, fd, ROLE_PEER_OUT, inprog)) == NULL) {
		schedule_retry(a, o);
		return;
	}
	o->conn->peer = d;
	if (tls)
		(void)agent_conn_tls(a, o->conn,
		    0);	/* on failure closed: retried */
	else if (!inprog)
		agent_outch_connected(a, o->conn);
}

/* Peer d just connected to us, so it is listening again: if our channel
 * to it is down and waiting out its backoff (up to BACKOFF_MAX_MS after a
 * restart of d), connect now instead. A snapshot taken right after a
 * restart would otherwise wait for that backoff, its markers queued. */
void
agent_outch_peer_alive(struct agent *a, int d)
{
	struct outch *o = &a->out[d];

	if (!o->configured || o->conn != NULL || o->retry_at == 0)
		return;
	o->backoff_ms = BACKOFF_MIN_MS;
	o->retry_at = cs_now_ms();
}

void
agent_outch_connected(struct agent *a, struct conn *c)
{
	struct wbuf w;

	wbuf_init(&w);
	wbuf_put_str(&w, a->name);
	agent_conn_send(a, c, W_PEER_HELLO, w.data, w.len, 0);
	wbuf_free(&w);
}

void
agent_outch_closed(struct agent *a, struct conn *c)
{
	struct outch *o = &a->out[c->peer];

	if (o->conn != c)
		return;
	o->conn = NULL;
	o->refused = 0;
	if (o->up || !o->logged_down)
		log_info("channel %s>%s down", a->name, dname(a, c->peer));
	o->logged_down = 1;
	o->up = 0;
	schedule_retry(a, o);
}

/* A written marker to write again on a new connection: its snapshot is
 * still in progress here, so the receiver may be waiting for it. */
static int
marker_live(const struct agent *a, const struct qent *q)
{
	size_t i;

	for (i = 0; i < SNAP_MAX; i++)
		if (a->snaps[i].phase != SNAP_NONE &&
		    snapuid_eq(&a->snaps[i].id, &q->snap))
			return 1;
	return 0;
}

/* Remove acknowledged messages (seq <= upto) and, when all (a WELCOME on a
 * new connection), the written markers of snapshots no longer in progress;
 * keeps the order of the rest. After a WELCOME nothing left counts as
 * written: what the old connection carried but the peer did not apply,
 * messages and live markers, must be written again. */
static void
outch_drop(const struct agent *a, struct outch *o, uint64_t upto, int all)
{
	size_t i, j = o->qh, w = 0;
	struct qent *q;

	for (i = o->qh; i < o->qt; i++) {
		q = &o->q[i];
		if ((q->kind == Q_MSG && q->seq <= upto) ||
		    (all && q->kind == Q_MARKER && i < o->qh + o->w &&
		    !marker_live(a, q))) {
			qent_free(q);
			continue;
		}
		if (!all && i < o->qh + o->w)
			w++;
		o->q[j++] = *q;
	}
	o->qt = j;
	o->w = w;
	if (o->qh == o->qt)
		o->qh = o->qt = o->w = 0;
}

/* Pop the written entries at the head that are done with: messages up
 * to k (acknowledged) and markers (never resent). */
static void
pop_written(struct outch *o, uint64_t k)
{
	struct qent *q;

	while (o->w > 0) {
		q = &o->q[o->qh];
		if (q->kind == Q_MSG && q->seq > k)
			break;
		qent_free(q);
		o->qh++;
		o->w--;
	}
	if (o->qh == o->qt)
		o->qh = o->qt = o->w = 0;
}

/* The peer has durably applied up to k: forget those messages and note
 * it in the log (a hint for recovery; never waited for). */
static int
outch_acked(struct agent *a, int d, uint64_t k, int welcome)
{
	const struct dl_state *st = datalog_state(a->dl);
	struct outch *o = &a->out[d];
	uint8_t chain[DL_CHAIN_LEN];
	struct dl_record rec;
	int known = 0;

	if (k > dl_wm_get(&st->sent, dname(a, d))) {
		log_error("channel %s>%s: peer claims seq %llu applied but "
		    "only %llu were sent; closing it (restored from another "
		    "history?)", a->name, dname(a, d), (unsigned long long)k,
		    (unsigned long long)dl_wm_get(&st->sent, dname(a, d)));
		return -1;
	}
	/* Before the acknowledged messages leave the window. */
	if (k > dl_wm_get(&st->acked, dname(a, d)))
		known = acked_chain(a, d, k, chain);
	if (welcome) {
		outch_drop(a, o, k, 1);
		/* A new connection: what the old one carried may be lost;
		 * resend every remaining message, in order. */
		o->w = 0;
	}
	else {
		/* Acks are cumulative and the queue is in seq order except
		 * inside a reversed window: popping from the head is
		 * enough. */
		pop_written(o, k);
	}
	app_acked(o, k);
	if (file_acked(o, k) == -1) {
		log_error("out of memory queueing markers on channel %s>%s",
		    a->name, dname(a, d));
		a->fatal = 1;
		return -1;
	}
	if (k > dl_wm_get(&st->acked, dname(a, d))) {
		a->acked_by[d] += k - dl_wm_get(&st->acked, dname(a, d));
		o->stall_ms = cs_now_ms();
		memset(&rec, 0, sizeof(rec));
		rec.type = DL_ACK;
		rec.peer = dname(a, d);
		rec.seq = k;
		rec.chain = known ? chain : NULL;
		if (agent_append(a, &rec) == -1)
			return -1;
	}
	return 0;
}

/* The history check on a WELCOME (chain.h): the peer applied k with chain
 * (NULL: it has none yet); told says the peer reads a VERDICT (its
 * WELCOME carried a chain). 0 to go on, -1 when refused: the connection
 * stays open and idle, so the verdict is not repeated in a loop, and is
 * made again only on a new connection (after either end restarts). */
static int
outch_check(struct agent *a, struct conn *c, uint64_t k,
    const uint8_t *chain, int told)
{
	struct outch *o = &a->out[c->peer];
	enum chain_verdict v;
	struct wbuf w;
	char why[sizeof(o->why)];
	int ok;

	v = chain_check(datalog_state(a->dl), dname(a, c->peer), k, chain, why,
	    sizeof(why));
	ok = chain_accepts(v);
	if (told) {
		wbuf_init(&w);
		wbuf_put_u8(&w, (uint8_t)ok);
		wbuf_put_str(&w, why);
		agent_conn_send(a, c, W_PEER_VERDICT, w.data, w.len, 0);
		wbuf_free(&w);
	}
	if (!ok) {
		if (!o->diverged || strcmp(o->why, why) != 0)
			log_error("channel %s>%s diverged: %s; its two ends "
			    "come from different histories, so nothing is "
			    "sent on it and transfers over it fail: finish "
			    "the restore (run it again) or restore every "
			    "agent from one snapshot", a->name,
			    dname(a, c->peer), why);
		o->diverged = 1;
		o->refused = 1;
		o->fence_ok = 0;
		snprintf(o->why, sizeof(o->why), "%s", why);
		agent_conn_flush(a, c);
		return -1;
	}
	if (o->diverged)
		log_info("channel %s>%s: both ends share one history again "
		    "(%s)", a->name, dname(a, c->peer), why);
	else if (v == CHAIN_UNCHECKED)
		log_info("channel %s>%s: %s", a->name, dname(a, c->peer), why);
	o->diverged = 0;
	o->why[0] = '\0';
	o->fence_ok = 1;
	agent_fence_check(a);
	return 0;
}

/* A W_REPLY on a channel is the peer's refusal of our protocol version
 * (version.c): logged once until the channel next comes up, then the
 * connection closes and is retried at the backoff's pace, so that the
 * channel resumes once both ends speak one protocol. 1 if it was that. */
static int
version_refused(struct agent *a, struct conn *c, const uint8_t *p, size_t n)
{
	struct outch *o = &a->out[c->peer];
	char msg[256];
	const uint8_t *b;
	struct rbuf r;
	size_t blen;

	rbuf_init(&r, p, n);
	if (rbuf_u8(&r) != REPLY_VERSION)
		return 0;
	b = rbuf_bytes(&r, &blen, sizeof(msg));
	if (!rbuf_done(&r))
		return 0;
	cs_printable(b, blen, msg, sizeof(msg), 0);
	if (!o->vrefused)
		log_warn("channel %s>%s refused by %s: %s; retrying until both "
		    "speak one protocol", a->name, dname(a, c->peer),
		    dname(a, c->peer), msg);
	o->vrefused = 1;
	agent_conn_close(a, c, NULL);
	return 1;
}

void
agent_outch_frame(struct agent *a, struct conn *c, uint8_t type,
    const uint8_t *p, size_t n)
{
	struct outch *o = &a->out[c->peer];
	const uint8_t *chain = NULL;
	struct rbuf r;
	uint64_t k;
	int told = 0, known = 0;

	if (type == W_REPLY && version_refused(a, c, p, n))
		return;
	rbuf_init(&r, p, n);
	k = rbuf_u64(&r);
	if (type == W_PEER_WELCOME && !r.err &&
	    r.len - r.off == 1 + DL_CHAIN_LEN) {
		told = 1;
		known = rbuf_u8(&r);
		chain = r.p + r.off;
		r.off = r.len;
	}
	if (o->refused) {
		log_debug("channel %s>%s: frame type %u on a refused "
		    "connection ignored", a->name, dname(a, c->peer), type);
		return;
	}
	if (!rbuf_done(&r) || (type != W_PEER_WELCOME && type != W_PEER_ACK) ||
	    (type == W_PEER_ACK && !o->up) || known > 1 ||
	    (type == W_PEER_WELCOME && o->up)) {
		log_warn("channel %s>%s: unexpected or malformed frame type "
		    "%u; closing it", a->name, dname(a, c->peer), type);
		agent_conn_close(a, c, NULL);
		return;
	}
	if (type == W_PEER_WELCOME &&
	    outch_check(a, c, k, known ? chain : NULL, told) == -1)
		return;
	if (outch_acked(a, c->peer, k, type == W_PEER_WELCOME) == -1) {
		agent_conn_close(a, c, NULL);
		return;
	}
	if (type == W_PEER_WELCOME) {
		o->up = 1;
		o->logged_down = 0;
		o->vrefused = 0;
		o->backoff_ms = BACKOFF_MIN_MS;
		log_info("channel %s>%s up (peer applied %llu, %zu queued)",
		    a->name, dname(a, c->peer), (unsigned long long)k,
		    o->qt - o->qh);
	}
	agent_outch_pump(a, c->peer);
}

/* Test hook: CUTSNAP_FAULT=break-channel-at-marker makes the agent drop
 * the connection of the first channel it writes a marker on, before the
 * marker leaves (once per process): a channel broken mid-snapshot. */
static int
fault_break_at_marker(void)
{
	static int used;

	if (used || !cs_fault_on("break-channel-at-marker"))
		return 0;
	used = 1;
	return 1;
}

/* The unwritten entry at the head is due for a reversed window? */
static int
rev_due(const struct outch *o, const struct qent *q)
{
	return o->rev_upto != 0 && !q->arranged &&
	    (q->kind == Q_MARKER || q->seq <= o->rev_upto);
}

/* release --reverse, one window at a time: the next up to REV_WINDOW
 * unwritten entries that are due (messages up to rev_upto, markers) are
 * reversed, then the markers among them moved to the front (in that
 * reversed order). Markers first is what makes the drill safe: a message
 * sent after a marker must never overtake it, or the receiver would apply
 * a post-cut message inside its recorded state. Windows, because the
 * receiver holds back every message that arrives before its turn: one
 * window at a time it holds fewer than REV_WINDOW (< HOLD_CAP), whatever
 * the queue's length, since each window's messages follow all of the
 * previous window's. 0, or -1 (out of memory, nothing changed). */
static int
outch_arrange(struct agent *a, int d)
{
	struct outch *o = &a->out[d];
	size_t lo, hi, i, k = 0;
	struct qent *tmp;
	int last = 0;

	outch_fill(a, d, 1);
	lo = o->qh + o->w;
	for (hi = lo; hi < o->qt && hi - lo < REV_WINDOW &&
	    rev_due(o, &o->q[hi]); hi++)
		last |= o->q[hi].kind == Q_MSG && o->q[hi].seq == o->rev_upto;
	if ((tmp = malloc((hi - lo) * sizeof(*tmp))) == NULL)
		return -1;
	for (i = hi; i > lo; i--)
		if (o->q[i - 1].kind == Q_MARKER)
			tmp[k++] = o->q[i - 1];
	for (i = hi; i > lo; i--)
		if (o->q[i - 1].kind == Q_MSG)
			tmp[k++] = o->q[i - 1];
	for (i = 0; i < k; i++)
		tmp[i].arranged = 1;
	memcpy(o->q + lo, tmp, (hi - lo) * sizeof(*tmp));
	free(tmp);
	if (last)
		o->rev_upto = 0;	/* the last reversed window */
	return 0;
}

/* Write the queue's head entries that may leave now, reading the backlog
 * in from the data file as the window drains. */
void
agent_outch_pump(struct agent *a, int d)
{
	struct outch *o = &a->out[d];
	uint64_t synced = datalog_synced(a->dl);
	struct qent *q;
	struct wbuf w;

	if (o->conn == NULL || o->conn->dead || !o->up || o->held ||
	    agent_fenced(a))
		return;
	outch_fill(a, d, 0);
	wbuf_init(&w);
	while (agent_conn_pending(o->conn) < CH_PUMP_LIMIT && !a->fatal) {
		if (o->qh + o->w == o->qt)
			outch_fill(a, d, 1);
		if (o->qh + o->w == o->qt)
			break;
		q = &o->q[o->qh + o->w];
		if (rev_due(o, q)) {
			if (outch_arrange(a, d) == -1) {
				log_error("out of memory reversing channel "
				    "%s>%s", a->name, dname(a, d));
				break;
			}
			q = &o->q[o->qh + o->w];
		}
		if (q->off > synced)
			break;
		wbuf_reset(&w);
		if (q->kind == Q_MSG) {
			wbuf_put_u64(&w, q->seq);
			wbuf_put_bytes(&w, q->payload, q->len);
		} else {
			char hex[SNAPUID_HEX_LEN];

			snapuid_put(&w, &q->snap);
			wbuf_put_u64(&w, q->seq);
			snapuid_hex(&q->snap, hex);
			log_debug("channel %s>%s: marker for snapshot %.*s "
			    "(s=%llu) written", a->name, dname(a, d),
			    SNAPUID_SHORT, hex, (unsigned long long)q->seq);
		}
		if (w.oom) {
			log_error("out of memory writing channel %s>%s",
			    a->name, dname(a, d));
			break;
		}
		agent_conn_send(a, o->conn, q->kind == Q_MSG ? W_PEER_MSG :
		    W_PEER_MARKER, w.data, w.len, 0);
		if (o->conn == NULL || o->conn->dead)
			break;
		o->w++;
		if (q->kind == Q_MARKER && fault_break_at_marker()) {
			agent_conn_close(a, o->conn, "channel broken by "
			    "CUTSNAP_FAULT after a marker");
			break;
		}
		/* A written marker at the head is done with at once (never
		 * resent): an idle channel keeps none. */
		pop_written(o, 0);
	}
	wbuf_free(&w);
	if (o->conn != NULL)
		agent_conn_flush(a, o->conn);
}

/* The overtaking drill: the first message queued after each unwritten
 * marker moves to just before it, so a message sent after the sender
 * recorded reaches the receiver before the marker: what a transport that
 * reorders does, and what the commit's cut check must catch. */
static void
outch_overtake(struct outch *o)
{
	size_t i, j;
	struct qent m;

	for (i = o->qh + o->w; i < o->qt; i++) {
		if (o->q[i].kind != Q_MARKER)
			continue;
		for (j = i + 1; j < o->qt && o->q[j].kind != Q_MSG; j++)
			;
		if (j == o->qt)
			break;
		m = o->q[j];
		memmove(&o->q[i + 1], &o->q[i], (j - i) * sizeof(m));
		o->q[i] = m;
		i = j;
	}
}

int
agent_outch_hold(struct agent *a, int dst, int hold, int mode)
{
	struct outch *o = &a->out[dst];

	if (!hold && mode == RELEASE_OVERTAKE) {
		/* The drill works on the entries in memory: bring in what
		 * the window can hold first. */
		outch_fill(a, dst, 1);
		outch_overtake(o);
	}
	o->held = hold;
	if (!hold) {
		/* Reverse what is queued now; later sends go in order. */
		o->rev_upto = 0;
		if (mode == RELEASE_REVERSE && agent_outch_queued(a, dst) > 0)
			o->rev_upto = dl_wm_get(&datalog_state(a->dl)->sent,
			    dname(a, dst));
		agent_outch_pump(a, dst);
	}
	return 0;
}

void
agent_outch_timers(struct agent *a, int64_t now)
{
	int d;

	for (d = 0; d < a->n; d++)
		if (a->out[d].configured && a->out[d].conn == NULL &&
		    a->out[d].retry_at != 0 && a->out[d].retry_at <= now)
			outch_connect(a, d);
}

int
agent_outch_timeout(struct agent *a, int64_t now)
{
	int64_t best = -1, t;
	int d;

	for (d = 0; d < a->n; d++) {
		if (!a->out[d].configured || a->out[d].conn != NULL ||
		    a->out[d].retry_at == 0)
			continue;
		t = a->out[d].retry_at - now;
		if (t < 0)
			t = 0;
		if (best == -1 || t < best)
			best = t;
	}
	return (int)best;
}
