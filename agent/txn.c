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
 * A key's version (GETV, TXN_EXPECT_VERSION) is the number of writes to
 * it since it was last created: 1 after the first, 0 while it is absent
 * (kvmap.h counts them, replay rebuilds them, KVER records carry them
 * through compaction, and a restored file replays to the same ones). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/log.h"
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
	uint64_t version;	/* EXPECT_VERSION */
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
	struct wbuf rec;	/* the TXN record's ops */
	struct wbuf reply;	/* {u32 nadd, nadd x i64} */
};

static const struct dl_state *
st(const struct agent *a)
{
	return datalog_state(a->dl);
}

/* Op i, a send {str peer, bytes payload} or a consume {str from, u64
 * seq}: its form checked (a channel self->peer or from->self, a payload
 * within CHMSG_APP_MAX), so that a client learns of a bad op by name.
 * Neither is carried out yet: a well-formed one is refused too. Always
 * -1 after replying BADREQ. */
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
	if (o->vlen > CHMSG_APP_MAX) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "transaction op %" PRIu32
		    ": send payload is %zu bytes, at most %u; nothing was done",
		    i, o->vlen, (unsigned)CHMSG_APP_MAX);
		return -1;
	}
	agent_conn_replyf(a, c, REPLY_BADREQ, "transaction op %" PRIu32
	    ": %s is not supported by agent %s yet; nothing was done", i, what,
	    a->name);
	return -1;
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
	if (w.oom)
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
	else
		agent_conn_reply(a, c, REPLY_CONFLICT, w.data, w.len,
		    datalog_need(a->dl));
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

/* The record's ops and the reply, in op order. 0, or -1 replied. */
static int
build(struct agent *a, struct conn *c, struct txn *t)
{
	const struct op *o;
	char num[24];
	int64_t res;
	uint32_t i;

	wbuf_put_u32(&t->reply, (uint32_t)t->nadd);
	for (i = 0; i < t->n; i++) {
		o = &t->ops[i];
		if (o->kind == TXN_PUT) {
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
	if (t->rec.oom || t->reply.oom)
		goto oom;
	return 0;
oom:
	agent_conn_replyf(a, c, REPLY_FAIL, "out of memory; nothing was done");
	return -1;
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
	agent_req_reply_ok(a, c, id, t.reply.data, t.reply.len);
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
	if (w.oom)
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
	else
		agent_conn_reply(a, c, REPLY_OK, w.data, w.len,
		    datalog_need(a->dl));
out:
	free(buf);
	wbuf_free(&w);
}
