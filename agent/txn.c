/* txn.c - client transactions (W_REQ_TXN) and versioned gets (W_REQ_GETV).
 *
 * A transaction is checked whole before anything is written: first its
 * form (every op well formed, its limits kept), then its conditions
 * against the state before it, then its writes are computed in op order
 * (an add sees the puts, deletes and adds before it in the same
 * transaction) into one TXN record (datalog.h). Any refusal replies with
 * the op's index and a one-line reason and changes nothing; the record
 * is appended only when everything held, so a client that disconnects
 * leaves either the whole transaction or none of it. A transaction of
 * conditions only is a check: it writes nothing.
 *
 * A send (TXN_SEND) emits an application message (chmsg.h: CHMSG_APP)
 * on the channel self->peer with the next seq and the channel's chain,
 * inside the TXN record: it travels, is acknowledged and resent as a
 * transfer's credit is. A consume (TXN_CONSUME) takes a message out of
 * the inbox (inbox.c) in the same record, so a message is processed
 * exactly once with the writes its processing made.
 *
 * A key's version (GETV, TXN_EXPECT_VERSION) is the number of writes to
 * it since it was last created: 1 after the first, 0 while it is absent
 * (kvmap.h counts them, replay rebuilds them, KVER records carry them
 * through compaction, and a restored file replays to the same ones). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/log.h"
#include "../log/chain.h"
#include "../log/kvmap.h"
#include "../proto/chmsg.h"
#include "agent_int.h"

/* One parsed op of a request; pointers borrow the frame. */
struct op {
	uint8_t kind;		/* enum txn_op */
	const uint8_t *key;
	size_t klen;
	const uint8_t *val;	/* EXPECT_EQ, PUT */
	size_t vlen;
	int64_t delta;		/* ADD */
	uint64_t version;	/* EXPECT_VERSION; CONSUME: the seq */
	int peer;		/* SEND, CONSUME: the agent's index */
	uint64_t seq;		/* SEND: its seq on self->peer */
	size_t moff, mlen;	/* SEND: its message in the record's ops */
	uint8_t chain[DL_CHAIN_LEN];	/* SEND: the channel's chain after it */
};

/* A transaction being checked: its ops and what its writes make. */
struct txn {
	struct op *ops;
	uint32_t n;
	size_t nadd;
	uint32_t nwrites;	/* puts, deletes and adds */
	/* With adds: the keys written so far, each value prefixed by 'v',
	 * or "d" for a key deleted (what a later add must see). */
	struct kvmap *staged;
	uint32_t nmsg;		/* sends and consumes */
	struct wbuf rec;	/* the TXN record's ops */
	struct wbuf reply;	/* {u32 nadd, nadd x i64} */
};

static const struct dl_state *
st(const struct agent *a)
{
	return datalog_state(a->dl);
}

/* Op i, a send {str peer, bytes payload} or a consume {str from, u64
 * seq}: a channel self->peer or from->self, a payload within
 * APP_PAYLOAD_MAX. 0, or -1 after replying BADREQ. */
static int
parse_msg_op(struct agent *a, struct conn *c, struct rbuf *r, uint32_t i,
    struct op *o)
{
	const char *what = o->kind == TXN_SEND ? "send" : "consume";
	char peer[NAME_MAX_LEN + 1];
	int d;

	rbuf_str(r, peer, sizeof(peer));
	if (o->kind == TXN_SEND)
		o->val = rbuf_bytes(r, &o->vlen, WIRE_MAX_FRAME);
	else
		o->version = rbuf_u64(r);
	if (r->err || peer[0] == '\0') {
		agent_conn_replyf(a, c, REPLY_BADREQ, "malformed transaction "
		    "request: op %" PRIu32 " (%s) is %s; nothing was done", i,
		    what, r->err ? "truncated or its agent name too long" :
		    "missing its agent");
		return -1;
	}
	if ((d = cfg_find(a->c, peer)) == -1) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "transaction op %" PRIu32
		    ": %s names unknown agent %s; nothing was done", i, what,
		    peer);
		return -1;
	}
	if (o->kind == TXN_SEND ? d == a->self ||
	    !cfg_has_channel(a->c, a->self, d) : d == a->self ||
	    !cfg_has_channel(a->c, d, a->self)) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "transaction op %" PRIu32
		    ": %s: no channel %s->%s; nothing was done", i, what,
		    o->kind == TXN_SEND ? a->name : peer,
		    o->kind == TXN_SEND ? peer : a->name);
		return -1;
	}
	if (o->vlen > APP_PAYLOAD_MAX) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "transaction op %" PRIu32
		    ": send payload is %zu bytes, at most %u; nothing was done",
		    i, o->vlen, (unsigned)APP_PAYLOAD_MAX);
		return -1;
	}
	if (o->kind == TXN_CONSUME && o->version == 0) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "transaction op %" PRIu32
		    ": consume of seq 0 (seqs start at 1); nothing was done",
		    i);
		return -1;
	}
	o->peer = d;
	return 0;
}

/* Read op i's fields; 0, or -1 after replying BADREQ. */
static int
parse_op(struct agent *a, struct conn *c, struct rbuf *r, uint32_t i,
    struct op *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = rbuf_u8(r);
	switch (o->kind) {
	case TXN_EXPECT_EQ:
	case TXN_PUT:
		o->key = rbuf_bytes(r, &o->klen, WIRE_MAX_FRAME);
		o->val = rbuf_bytes(r, &o->vlen, WIRE_MAX_FRAME);
		break;
	case TXN_EXPECT_ABSENT:
	case TXN_DEL:
		o->key = rbuf_bytes(r, &o->klen, WIRE_MAX_FRAME);
		break;
	case TXN_EXPECT_VERSION:
		o->key = rbuf_bytes(r, &o->klen, WIRE_MAX_FRAME);
		o->version = rbuf_u64(r);
		break;
	case TXN_ADD:
		o->key = rbuf_bytes(r, &o->klen, WIRE_MAX_FRAME);
		o->delta = rbuf_i64(r);
		break;
	case TXN_SEND:
	case TXN_CONSUME:
		return parse_msg_op(a, c, r, i, o);
	default:
		if (r->err)
			break;
		agent_conn_replyf(a, c, REPLY_BADREQ, "transaction op %" PRIu32
		    ": unknown kind %u; nothing was done", i,
		    (unsigned)o->kind);
		return -1;
	}
	if (r->err || o->klen == 0) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "malformed transaction "
		    "request: op %" PRIu32 " is %s; nothing was done", i,
		    r->err ? "truncated" : "missing its key");
		return -1;
	}
	if (o->klen > WIRE_MAX_KEY || o->vlen > WIRE_MAX_VALUE) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "transaction op %" PRIu32
		    ": %s is %zu bytes, at most %u; nothing was done", i,
		    o->klen > WIRE_MAX_KEY ? "key" : "value",
		    o->klen > WIRE_MAX_KEY ? o->klen : o->vlen,
		    o->klen > WIRE_MAX_KEY ? WIRE_MAX_KEY : WIRE_MAX_VALUE);
		return -1;
	}
	return 0;
}

/* The key's value for a reply or a comparison: *buf is NULL when it is
 * held in memory (*v borrows the map), else malloc'ed (the caller frees).
 * 0, or -1 (out of memory, a read error) with e set. */
static int
value_of(struct agent *a, const struct kv_entry *en, const uint8_t **v,
    uint8_t **buf, struct cs_err *e)
{
	*buf = NULL;
	*v = en->val;
	if (en->val != NULL)
		return 0;
	if (datalog_read_value(a->dl, en, buf, e) == -1)
		return -1;
	*v = *buf;
	return 0;
}

/* Reply CONFLICT {u32 op index, str reason} for op i on key. */
static void
conflict(struct agent *a, struct conn *c, uint32_t i, const struct op *o,
    const char *why)
{
	char kp[80], msg[256];
	struct wbuf w;

	cs_printable(o->key, o->klen, kp, sizeof(kp),
	    CS_PRINT_ASCII | CS_PRINT_ELLIPSIS);
	snprintf(msg, sizeof(msg), "op %" PRIu32 ": %s:%s %s; nothing was "
	    "done", i, a->name, kp, why);
	wbuf_init(&w);
	wbuf_put_u32(&w, i);
	wbuf_put_str(&w, msg);
	agent_conn_reply_wbuf(a, c, REPLY_CONFLICT, &w);
	wbuf_free(&w);
}

/* Check condition op i against the state: 1 holds, 0 replied CONFLICT,
 * -1 replied FAIL. */
static int
cond_holds(struct agent *a, struct conn *c, uint32_t i, const struct op *o)
{
	const struct kv_entry *en = kvmap_entry(st(a)->kv, o->key, o->klen);
	const uint8_t *v;
	uint8_t *buf;
	struct cs_err e;
	char why[96];
	int eq;

	switch (o->kind) {
	case TXN_EXPECT_ABSENT:
		if (en == NULL)
			return 1;
		conflict(a, c, i, o, "is present");
		return 0;
	case TXN_EXPECT_VERSION:
		if ((en != NULL ? en->ver : 0) == o->version)
			return 1;
		snprintf(why, sizeof(why), "is at version %" PRIu64 ", not %"
		    PRIu64, en != NULL ? en->ver : 0, o->version);
		conflict(a, c, i, o, why);
		return 0;
	default:	/* TXN_EXPECT_EQ */
		if (en == NULL) {
			conflict(a, c, i, o, "is absent");
			return 0;
		}
		eq = en->vlen == o->vlen;
		if (eq && value_of(a, en, &v, &buf, &e) == -1) {
			agent_conn_replyf(a, c, REPLY_FAIL, "%s; nothing was "
			    "done", e.msg);
			return -1;
		}
		if (eq) {
			eq = o->vlen == 0 || memcmp(v, o->val, o->vlen) == 0;
			free(buf);
		}
		if (!eq)
			conflict(a, c, i, o, "holds another value");
		return eq;
	}
}

/* Stage a write of key (val NULL: a delete) for the adds after it. */
static int
stage(struct txn *t, const uint8_t *key, size_t klen, const uint8_t *val,
    size_t vlen)
{
	uint8_t *b;
	int rc;

	if (t->staged == NULL)
		return 0;
	if ((b = malloc(vlen + 1)) == NULL)
		return -1;
	b[0] = val != NULL ? 'v' : 'd';
	if (vlen > 0)
		memcpy(b + 1, val, vlen);
	rc = kvmap_put(t->staged, key, klen, b, val != NULL ? vlen + 1 : 1);
	free(b);
	return rc;
}

/* Op i, an add: its new value in out (decimal) and *res. 0, or -1 after
 * replying FAIL (not an integer, an overflow, out of memory). */
static int
add_value(struct agent *a, struct conn *c, struct txn *t, uint32_t i,
    const struct op *o, char out[24], int64_t *res)
{
	const uint8_t *v;
	struct cs_err e;
	char kp[80];
	int64_t cur = 0;
	size_t vl;

	cs_printable(o->key, o->klen, kp, sizeof(kp),
	    CS_PRINT_ASCII | CS_PRINT_ELLIPSIS);
	if (!kvmap_get(t->staged, o->key, o->klen, &v, &vl)) {
		if (dl_int_add(st(a), o->key, o->klen, o->delta, out, res,
		    &e) == 0)
			return 0;
		agent_conn_replyf(a, c, REPLY_FAIL, "op %" PRIu32 ": %s:%s: "
		    "%s; nothing was done", i, a->name, kp, e.msg);
		return -1;
	}
	if (v[0] == 'v' && dl_int_parse(v + 1, vl - 1, &cur) == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "op %" PRIu32 ": %s:%s: "
		    "the value this transaction gives it is not an integer; "
		    "nothing was done", i, a->name, kp);
		return -1;
	}
	if (__builtin_add_overflow(cur, o->delta, res)) {
		agent_conn_replyf(a, c, REPLY_FAIL, "op %" PRIu32 ": %s:%s: "
		    "integer overflow; nothing was done", i, a->name, kp);
		return -1;
	}
	snprintf(out, 24, "%" PRId64, *res);
	return 0;
}

/* The channel self->d as a transaction's sends leave it. */
struct chpos {
	int init;
	uint64_t seq;		/* the last seq taken */
	uint8_t chain[DL_CHAIN_LEN];	/* the chain after it */
	int known;
};

/* Send op o: its message (a fresh id, the payload) with the channel's
 * next seq and chain, appended to the record's ops. 0, or -1 replied. */
static int
build_send(struct agent *a, struct conn *c, struct txn *t, struct op *o,
    struct chpos *cp)
{
	const char *dst = a->c->agents[o->peer].name;
	uint8_t id[CHMSG_ID_LEN];
	const uint8_t *prev;
	struct wbuf msg;
	int rc = -1;

	if (!cp->init) {
		cp->init = 1;
		cp->seq = dl_wm_get(&st(a)->sent, dst);
		if ((prev = dl_wm_chain(&st(a)->sent, dst)) != NULL) {
			memcpy(cp->chain, prev, DL_CHAIN_LEN);
			cp->known = 1;
		}
	}
	wbuf_init(&msg);
	if (chmsg_new_id(id) == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "getrandom failed; "
		    "nothing was done");
		goto out;
	}
	chmsg_encode_app(&msg, id, o->val, o->vlen);
	o->seq = ++cp->seq;
	/* As a transfer does: an unknown chain (an older file) hashes from
	 * the genesis value. */
	if (msg.oom || chain_next(cp->known ? cp->chain : NULL, o->seq,
	    msg.data, msg.len, cp->chain) == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "%s; nothing was done",
		    msg.oom ? "out of memory" : "sha256 failed");
		goto out;
	}
	cp->known = 1;
	memcpy(o->chain, cp->chain, DL_CHAIN_LEN);
	wbuf_put_u8(&t->rec, DL_TXN_SEND);
	wbuf_put_str(&t->rec, dst);
	wbuf_put_u64(&t->rec, o->seq);
	o->moff = t->rec.len + 4;
	o->mlen = msg.len;
	wbuf_put_bytes(&t->rec, msg.data, msg.len);
	wbuf_put_raw(&t->rec, cp->chain, DL_CHAIN_LEN);
	rc = 0;
out:
	wbuf_free(&msg);
	return rc;
}

/* The record's ops and the reply, in op order. 0, or -1 replied. */
static int
build(struct agent *a, struct conn *c, struct txn *t)
{
	struct chpos *cp = NULL;
	struct op *o;
	char num[24];
	int64_t res;
	uint32_t i;

	if (t->nmsg > 0 && (cp = calloc((size_t)a->n, sizeof(*cp))) == NULL)
		goto oom;
	wbuf_put_u32(&t->reply, (uint32_t)t->nadd);
	for (i = 0; i < t->n; i++) {
		o = &t->ops[i];
		if (o->kind == TXN_SEND) {
			if (build_send(a, c, t, o, &cp[o->peer]) == -1) {
				free(cp);
				return -1;
			}
		} else if (o->kind == TXN_CONSUME) {
			wbuf_put_u8(&t->rec, DL_TXN_CONSUME);
			wbuf_put_str(&t->rec, a->c->agents[o->peer].name);
			wbuf_put_u64(&t->rec, o->version);
		} else if (o->kind == TXN_PUT) {
			wbuf_put_u8(&t->rec, DL_TXN_PUT);
			wbuf_put_bytes(&t->rec, o->key, o->klen);
			wbuf_put_bytes(&t->rec, o->val, o->vlen);
			if (stage(t, o->key, o->klen, o->val, o->vlen) == -1)
				goto oom;
		} else if (o->kind == TXN_DEL) {
			wbuf_put_u8(&t->rec, DL_TXN_DEL);
			wbuf_put_bytes(&t->rec, o->key, o->klen);
			if (stage(t, o->key, o->klen, NULL, 0) == -1)
				goto oom;
		} else if (o->kind == TXN_ADD) {
			if (add_value(a, c, t, i, o, num, &res) == -1)
				return -1;
			wbuf_put_u8(&t->rec, DL_TXN_ADD);
			wbuf_put_bytes(&t->rec, o->key, o->klen);
			wbuf_put_bytes(&t->rec, num, strlen(num));
			wbuf_put_i64(&t->reply, res);
			if (stage(t, o->key, o->klen, (const uint8_t *)num,
			    strlen(num)) == -1)
				goto oom;
		}
	}
	free(cp);
	cp = NULL;
	if (t->rec.oom || t->reply.oom)
		goto oom;
	return 0;
oom:
	free(cp);
	agent_conn_replyf(a, c, REPLY_FAIL, "out of memory; nothing was done");
	return -1;
}

/* A transaction with sends or consumes: the fence and the channels'
 * histories allow it, and each consume names a message in the inbox,
 * once. 0, or -1 replied. */
static int
msgs_allowed(struct agent *a, struct conn *c, const struct txn *t)
{
	const struct op *o;
	char why[256];
	uint8_t *taken;
	uint32_t i;
	long k;

	if (agent_fence_why(a, why, sizeof(why))) {
		agent_conn_replyf(a, c, REPLY_FAIL, "%s; nothing was done",
		    why);
		return -1;
	}
	for (i = 0; i < t->n; i++) {
		o = &t->ops[i];
		if (o->kind == TXN_SEND && a->out[o->peer].diverged) {
			agent_conn_replyf(a, c, REPLY_FAIL, "op %" PRIu32 ": "
			    "channel %s>%s diverged (%s); nothing was done",
			    i, a->name, a->c->agents[o->peer].name,
			    a->out[o->peer].why);
			return -1;
		}
		/* Back-pressure: the peer's inbox is full and its messages
		 * wait here, durably; refused rather than queued without
		 * bound. The peer's cap bounds what waits for it. */
		if (o->kind == TXN_SEND && agent_outch_app_bytes(a, o->peer) >
		    a->c->agents[o->peer].inbox_max) {
			agent_conn_replyf(a, c, REPLY_BUSY, "op %" PRIu32 ": "
			    "%s's inbox is full: %" PRIu64 " bytes of messages "
			    "to it wait unacknowledged, over its "
			    "inbox_max_bytes %" PRIu64 "; retry once it "
			    "consumes; nothing was done", i,
			    a->c->agents[o->peer].name,
			    agent_outch_app_bytes(a, o->peer),
			    a->c->agents[o->peer].inbox_max);
			return -1;
		}
	}
	if ((taken = calloc(st(a)->ninbox + 1, 1)) == NULL) {
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
		return -1;
	}
	for (i = 0; i < t->n; i++) {
		o = &t->ops[i];
		if (o->kind != TXN_CONSUME)
			continue;
		k = dl_inbox_find(st(a), a->c->agents[o->peer].name,
		    o->version);
		if (k == -1 || taken[k]) {
			agent_conn_replyf(a, c, k == -1 ? REPLY_NOTFOUND :
			    REPLY_BADREQ, "op %" PRIu32 ": message seq %"
			    PRIu64 " from %s is %s; nothing was done", i,
			    o->version, a->c->agents[o->peer].name, k == -1 ?
			    "not in the inbox" : "consumed twice");
			free(taken);
			return -1;
		}
		taken[k] = 1;
	}
	free(taken);
	return 0;
}

/* The record is appended: queue its messages on their channels, each
 * behind it (a failure is fatal, as for a transfer). */
static void
queue_sends(struct agent *a, const struct txn *t)
{
	const struct op *o;
	uint32_t i;

	for (i = 0; i < t->n && !a->fatal; i++) {
		o = &t->ops[i];
		if (o->kind != TXN_SEND)
			continue;
		a->sent_to[o->peer]++;
		if (agent_outch_enqueue(a, o->peer, Q_MSG, o->seq, NULL,
		    datalog_need(a->dl), t->rec.data + o->moff, o->mlen) ==
		    -1) {
			log_error("out of memory queueing message %s>%s seq %"
			    PRIu64, a->name, a->c->agents[o->peer].name,
			    o->seq);
			a->fatal = 1;
		} else
			agent_outch_set_chain(a, o->peer, o->seq, o->chain);
	}
}

/* Parse every op of the request (after id and count) into t; 0, or -1
 * replied. */
static int
parse_all(struct agent *a, struct conn *c, struct rbuf *r, struct txn *t,
    int with_id)
{
	uint32_t i, nwrites = 0;

	if ((t->ops = calloc(t->n, sizeof(*t->ops))) == NULL) {
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
		return -1;
	}
	for (i = 0; i < t->n; i++) {
		if (parse_op(a, c, r, i, &t->ops[i]) == -1)
			return -1;
		t->nadd += t->ops[i].kind == TXN_ADD;
		t->nmsg += t->ops[i].kind == TXN_SEND ||
		    t->ops[i].kind == TXN_CONSUME;
		nwrites += t->ops[i].kind >= TXN_PUT;
	}
	if (!rbuf_done(r)) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "malformed transaction "
		    "request: bytes after its %" PRIu32 " ops; nothing was "
		    "done", t->n);
		return -1;
	}
	t->nwrites = nwrites;
	/* A request id remembers its reply in REQ_VAL_MAX bytes (reqtab.h):
	 * room for the count and two results. */
	if (with_id && 4 + 8 * t->nadd > REQ_VAL_MAX) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "a transaction with a "
		    "request ID may hold at most %d adds, this one has %zu; "
		    "nothing was done", (REQ_VAL_MAX - 4) / 8, t->nadd);
		return -1;
	}
	if (t->nadd > 0 && (t->staged = kvmap_new()) == NULL) {
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
		return -1;
	}
	return 0;
}

void
agent_txn_request(struct agent *a, struct conn *c, const uint8_t *p,
    size_t n)
{
	struct dl_record rec;
	struct txn t;
	struct rbuf r;
	const uint8_t *id = NULL;
	uint64_t digest = 0;
	uint32_t i;

	memset(&t, 0, sizeof(t));
	wbuf_init(&t.rec);
	wbuf_init(&t.reply);
	if (n < REQ_ID_LEN + 4) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "malformed transaction "
		    "request (%zu bytes)", n);
		goto out;
	}
	if (!cs_all_zero(p, REQ_ID_LEN)) {
		id = p;
		digest = reqtab_digest(W_REQ_TXN, p + REQ_ID_LEN,
		    n - REQ_ID_LEN);
	}
	rbuf_init(&r, p + REQ_ID_LEN, n - REQ_ID_LEN);
	t.n = rbuf_u32(&r);
	if (t.n == 0 || t.n > DL_TXN_MAX_OPS) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "transaction of %" PRIu32
		    " ops: 1 to %u; nothing was done", t.n, DL_TXN_MAX_OPS);
		goto out;
	}
	/* A retry gets the first outcome whatever has changed since. */
	if (agent_req_seen(a, c, id, digest))
		goto out;
	if (parse_all(a, c, &r, &t, id != NULL) == -1)
		goto out;
	for (i = 0; i < t.n; i++)
		if (t.ops[i].kind < TXN_PUT && cond_holds(a, c, i,
		    &t.ops[i]) != 1)
			goto out;
	if (t.nmsg > 0 && msgs_allowed(a, c, &t) == -1)
		goto out;
	if (build(a, c, &t) == -1)
		goto out;
	/* The record outgrows the request only by the adds' decimal text. */
	if (1 + 4 + t.rec.len + REQ_ID_LEN + 8 > DL_MAX_RECORD) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "transaction too large: "
		    "its record would be %zu bytes, at most %u; nothing was "
		    "done", 1 + 4 + t.rec.len, (unsigned)DL_MAX_RECORD);
		goto out;
	}
	/* Conditions alone: a check, answered once what it read is
	 * durable, with nothing to record. */
	if (t.nwrites == 0) {
		agent_conn_reply(a, c, REPLY_OK, t.reply.data, t.reply.len,
		    datalog_need(a->dl));
		goto out;
	}
	/* Only the writes are recorded: the conditions were checked. */
	memset(&rec, 0, sizeof(rec));
	rec.type = DL_TXN;
	rec.nops = t.nwrites;
	rec.ops = t.rec.data;
	rec.opslen = t.rec.len;
	rec.req_id = id;
	rec.req_digest = digest;
	if (agent_append(a, &rec) == -1)
		goto out;
	queue_sends(a, &t);
	agent_req_reply_ok(a, c, id, t.reply.data, t.reply.len);
	/* A consume made room: what waited for it is admitted. */
	if (t.nmsg > 0)
		agent_inch_admit(a);
out:
	free(t.ops);
	kvmap_free(t.staged);
	wbuf_free(&t.rec);
	wbuf_free(&t.reply);
}

void
agent_getv_request(struct agent *a, struct conn *c, struct rbuf *r)
{
	const struct kv_entry *en;
	const uint8_t *k, *v;
	uint8_t *buf = NULL;
	struct cs_err e;
	struct wbuf w;
	size_t kl;

	wbuf_init(&w);
	k = rbuf_bytes(r, &kl, WIRE_MAX_KEY);
	if (!rbuf_done(r) || kl == 0) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "malformed getv request");
		goto out;
	}
	if ((en = kvmap_entry(st(a)->kv, k, kl)) == NULL) {
		agent_conn_reply(a, c, REPLY_NOTFOUND, NULL, 0,
		    datalog_need(a->dl));
		goto out;
	}
	if (value_of(a, en, &v, &buf, &e) == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "%s", e.msg);
		goto out;
	}
	wbuf_put_u64(&w, en->ver);
	wbuf_put_bytes(&w, v, en->vlen);
	agent_conn_reply_wbuf(a, c, REPLY_OK, &w);
out:
	free(buf);
	wbuf_free(&w);
}
