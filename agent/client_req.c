/* client_req.c - client requests: put/get/del/add/transfer (txn.c:
 * transactions and versioned gets), channel
 * hold/release, status, stop, and the snapshot frames of a coordinator.
 *
 * Every reply is queued with the log offset it depends on: a write waits
 * for its own record, a read for the log end at the time it was asked
 * (read-your-durable-writes: never show a value that a crash could undo).
 *
 * add, del and transfer may end in a client request id (reqtab.h): the
 * record that applies the request carries it, and a request whose id the
 * data file's state remembers is answered with the first outcome,
 * applying nothing; an id reused for a different request is refused
 * (BADREQ). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../log/chain.h"
#include "../proto/chmsg.h"
#include "../log/kvmap.h"
#include "../lib/log.h"
#include "agent_int.h"

static const struct dl_state *
st(const struct agent *a)
{
	return datalog_state(a->dl);
}

static void
badreq(struct agent *a, struct conn *c, const char *what)
{
	agent_conn_replyf(a, c, REPLY_BADREQ, "malformed %s request", what);
}

/* The agent index of a channel peer named by a request, or -1 after
 * replying REPLY_BADREQ. */
static int
req_dst(struct agent *a, struct conn *c, const char *dst)
{
	int d = cfg_find(a->c, dst);

	if (d == -1) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "unknown agent %s", dst);
		return -1;
	}
	if (d == a->self || !cfg_has_channel(a->c, a->self, d)) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "no channel %s->%s",
		    a->name, dst);
		return -1;
	}
	return d;
}

/* The optional trailing request id of add, del and transfer into *id
 * (NULL when absent), its digest (the frame's type and payload before the
 * id) into *digest. Leaves the reader done, or with err set when what
 * follows the fields is not an id. */
static void
req_id_get(struct rbuf *r, uint8_t type, const uint8_t **id,
    uint64_t *digest)
{
	*id = NULL;
	*digest = 0;
	if (r->err || r->off == r->len)
		return;
	if (r->len - r->off != REQ_ID_LEN) {
		r->err = 1;
		return;
	}
	*id = r->p + r->off;
	*digest = reqtab_digest(type, r->p, r->off);
	r->off = r->len;
}

/* The OK reply of an add, del or transfer, body val[0, vlen), once its
 * record (or, for a retry, the log end) is durable. Test hook:
 * CUTSNAP_FAULT=drop-reply:N leaves the first N such replies of requests
 * with an id unsent (the connection stays open), as if lost on the way. */
void
agent_req_reply_ok(struct agent *a, struct conn *c, const uint8_t *id,
    const void *val, size_t vlen)
{
	if (id != NULL && a->drop_replies > 0) {
		a->drop_replies--;
		log_info("reply to a request with an ID dropped (test hook)");
		return;
	}
	agent_conn_reply(a, c, REPLY_OK, val, vlen, datalog_need(a->dl));
}

/* Answer a request whose id was seen: with the first outcome (the same
 * request), or refuse it (another one). 1 answered, 0 a new id. */
int
agent_req_seen(struct agent *a, struct conn *c, const uint8_t *id,
    uint64_t digest)
{
	const struct reqent *en;
	char hex[2 * REQ_ID_LEN + 1];
	size_t i;

	if (id == NULL || (en = reqtab_find(&st(a)->reqs, id)) == NULL)
		return 0;
	if (en->digest != digest) {
		for (i = 0; i < REQ_ID_LEN; i++)
			snprintf(hex + 2 * i, 3, "%02x", id[i]);
		agent_conn_replyf(a, c, REPLY_BADREQ, "request ID %s was "
		    "already used on agent %s for a different request; "
		    "nothing was done (give each request its own ID)", hex,
		    a->name);
		return 1;
	}
	log_debug("request answered again from its ID, nothing applied");
	agent_req_reply_ok(a, c, id, en->val, en->vlen);
	return 1;
}

static void
req_put(struct agent *a, struct conn *c, struct rbuf *r)
{
	struct dl_record rec;
	const uint8_t *k, *v;
	size_t kl, vl;

	k = rbuf_bytes(r, &kl, WIRE_MAX_FRAME);
	v = rbuf_bytes(r, &vl, WIRE_MAX_FRAME);
	if (!rbuf_done(r) || kl == 0) {
		badreq(a, c, "put");
		return;
	}
	if (kl > WIRE_MAX_KEY || vl > WIRE_MAX_VALUE) {
		agent_conn_replyf(a, c, REPLY_BADREQ,
		    "%s is %zu bytes, at most %u",
		    kl > WIRE_MAX_KEY ? "key" : "value",
		    kl > WIRE_MAX_KEY ? kl : vl,
		    kl > WIRE_MAX_KEY ? WIRE_MAX_KEY : WIRE_MAX_VALUE);
		return;
	}
	memset(&rec, 0, sizeof(rec));
	rec.type = DL_PUT;
	rec.key = k;
	rec.klen = kl;
	rec.val = v;
	rec.vlen = vl;
	if (agent_append(a, &rec) == -1)
		return;
	agent_conn_reply(a, c, REPLY_OK, NULL, 0, datalog_need(a->dl));
}

/* A large value stays in the data file; it is read back (pread, through
 * the page cache) only for the reply, straight into the reply buffer. */
static void
req_get(struct agent *a, struct conn *c, struct rbuf *r)
{
	const struct kv_entry *ent;
	const uint8_t *k;
	size_t kl;

	k = rbuf_bytes(r, &kl, WIRE_MAX_KEY);
	if (!rbuf_done(r) || kl == 0) {
		badreq(a, c, "get");
		return;
	}
	if ((ent = kvmap_entry(st(a)->kv, k, kl)) == NULL) {
		agent_conn_reply(a, c, REPLY_NOTFOUND, NULL, 0,
		    datalog_need(a->dl));
		return;
	}
	if (ent->val != NULL) {
		agent_conn_reply(a, c, REPLY_OK, ent->val, ent->vlen,
		    datalog_need(a->dl));
		return;
	}
	agent_conn_reply_value(a, c, ent, datalog_need(a->dl));
}

static void
req_del(struct agent *a, struct conn *c, struct rbuf *r)
{
	struct dl_record rec;
	const uint8_t *k, *v, *id;
	uint64_t digest;
	size_t kl, vl;

	k = rbuf_bytes(r, &kl, WIRE_MAX_KEY);
	req_id_get(r, W_REQ_DEL, &id, &digest);
	if (!rbuf_done(r) || kl == 0) {
		badreq(a, c, "del");
		return;
	}
	if (agent_req_seen(a, c, id, digest))
		return;
	if (!kvmap_get(st(a)->kv, k, kl, &v, &vl)) {
		agent_conn_reply(a, c, REPLY_NOTFOUND, NULL, 0,
		    datalog_need(a->dl));
		return;
	}
	memset(&rec, 0, sizeof(rec));
	rec.type = DL_DEL;
	rec.key = k;
	rec.klen = kl;
	rec.req_id = id;
	rec.req_digest = digest;
	if (agent_append(a, &rec) == -1)
		return;
	agent_req_reply_ok(a, c, id, NULL, 0);
}

static void
req_add(struct agent *a, struct conn *c, struct rbuf *r)
{
	struct dl_record rec;
	struct cs_err e;
	const uint8_t *k, *id;
	char out[24], kp[80];
	int64_t delta, res;
	uint64_t digest;
	size_t kl;

	k = rbuf_bytes(r, &kl, WIRE_MAX_KEY);
	delta = rbuf_i64(r);
	req_id_get(r, W_REQ_ADD, &id, &digest);
	if (!rbuf_done(r) || kl == 0) {
		badreq(a, c, "add");
		return;
	}
	if (agent_req_seen(a, c, id, digest))
		return;
	if (dl_int_add(st(a), k, kl, delta, out, &res, &e) == -1) {
		cs_printable(k, kl, kp, sizeof(kp),
		    CS_PRINT_ASCII | CS_PRINT_ELLIPSIS);
		agent_conn_replyf(a, c, REPLY_FAIL, "%s:%s: %s", a->name, kp,
		    e.msg);
		return;
	}
	memset(&rec, 0, sizeof(rec));
	rec.type = DL_PUT;
	rec.key = k;
	rec.klen = kl;
	rec.val = (const uint8_t *)out;
	rec.vlen = strlen(out);
	rec.req_id = id;
	rec.req_digest = digest;
	if (agent_append(a, &rec) == -1)
		return;
	agent_req_reply_ok(a, c, id, out, strlen(out));
}

/* Debit srckey and emit "add n to dstkey" on self->dst, in one SEND
 * record: the debit and the message are durable together or not at all. */
static void
req_transfer(struct agent *a, struct conn *c, struct rbuf *r)
{
	const uint8_t *sk, *dk, *rid;
	char dst[NAME_MAX_LEN + 1], cur[24], nv[24], kp[80], why[768];
	uint8_t id[CHMSG_ID_LEN], chain[DL_CHAIN_LEN];
	struct dl_record rec;
	struct wbuf msg;
	struct cs_err e;
	int64_t n, have, left;
	size_t skl, dkl;
	uint64_t seq, digest;
	int d;

	sk = rbuf_bytes(r, &skl, WIRE_MAX_KEY);
	rbuf_str(r, dst, sizeof(dst));
	dk = rbuf_bytes(r, &dkl, WIRE_MAX_KEY);
	n = rbuf_i64(r);
	req_id_get(r, W_REQ_TRANSFER, &rid, &digest);
	if (!rbuf_done(r) || skl == 0 || dkl == 0) {
		badreq(a, c, "transfer");
		return;
	}
	/* A retry gets the first outcome whatever has changed since. */
	if (agent_req_seen(a, c, rid, digest))
		return;
	if (n <= 0) {
		agent_conn_replyf(a, c, REPLY_BADREQ,
		    "transfer amount must be > 0, "
		    "not %lld", (long long)n);
		return;
	}
	if ((d = req_dst(a, c, dst)) == -1)
		return;
	if (agent_fence_why(a, why, sizeof(why))) {
		agent_conn_replyf(a, c, REPLY_FAIL, "%s; nothing was "
		    "transferred", why);
		return;
	}
	if (a->out[d].diverged) {
		agent_conn_replyf(a, c, REPLY_FAIL,
		    "channel %s>%s diverged (%s); "
		    "nothing was transferred: its two ends come from different "
		    "histories, so finish the restore (run it again) or "
		    "restore every agent from one snapshot", a->name, dst,
		    a->out[d].why);
		return;
	}
	/* One lookup for the common case: the debit itself. Only when it
	 * fails or goes below 0 is the balance read again, for the error
	 * (as n > 0, have - n overflows only when have < n). */
	if (dl_int_add(st(a), sk, skl, -n, nv, &left, &e) == -1 || left < 0) {
		cs_printable(sk, skl, kp, sizeof(kp),
		    CS_PRINT_ASCII | CS_PRINT_ELLIPSIS);
		if (dl_int_add(st(a), sk, skl, 0, cur, &have, &e) == -1)
			agent_conn_replyf(a, c, REPLY_FAIL, "%s:%s: %s",
			    a->name, kp, e.msg);
		else
			/* A code of its own, so that a client (the load
			 * generator) tells it from a failure without
			 * reading the words. */
			agent_conn_replyf(a, c, REPLY_CONFLICT,
			    "insufficient funds: %s:%s is %lld, "
			    "transfer needs %lld", a->name, kp,
			    (long long)have, (long long)n);
		return;
	}
	wbuf_init(&msg);
	if (chmsg_new_id(id) == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "getrandom failed");
		goto out;
	}
	chmsg_encode_from(&msg, dk, dkl, n, id, sk, skl);
	if (msg.oom) {
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
		goto out;
	}
	seq = dl_wm_get(&st(a)->sent, a->c->agents[d].name) + 1;
	if (chain_next(dl_wm_chain(&st(a)->sent, a->c->agents[d].name), seq,
	    msg.data, msg.len, chain) == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "sha256 failed");
		goto out;
	}
	memset(&rec, 0, sizeof(rec));
	rec.type = DL_SEND;
	rec.peer = a->c->agents[d].name;
	rec.seq = seq;
	rec.key = sk;
	rec.klen = skl;
	rec.val = (const uint8_t *)nv;
	rec.vlen = strlen(nv);
	rec.msg = msg.data;
	rec.msglen = msg.len;
	rec.chain = chain;
	rec.req_id = rid;
	rec.req_digest = digest;
	if (agent_append_send(a, d, &rec, seq, msg.data, msg.len) == -1)
		goto out;
	a->ct.transfers++;
	agent_req_reply_ok(a, c, rid, nv, strlen(nv));
out:
	wbuf_free(&msg);
}

static void
req_hold(struct agent *a, struct conn *c, struct rbuf *r, int hold)
{
	char dst[NAME_MAX_LEN + 1];
	int d, mode = RELEASE_FIFO;

	rbuf_str(r, dst, sizeof(dst));
	if (!hold)
		mode = rbuf_u8(r);
	if (!rbuf_done(r) || mode > RELEASE_OVERTAKE) {
		badreq(a, c, hold ? "hold" : "release");
		return;
	}
	if ((d = req_dst(a, c, dst)) == -1)
		return;
	if (agent_outch_hold(a, d, hold, mode) == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
		return;
	}
	log_info("channel %s>%s %s", a->name, dst,
	    hold ? "held" : mode == RELEASE_REVERSE ?
	    "released in reverse order" : mode == RELEASE_OVERTAKE ?
	    "released, a message overtaking each marker" : "released");
	agent_conn_reply(a, c, REPLY_OK, NULL, 0, 0);
}

static void
req_snap(struct agent *a, struct conn *c, uint8_t type, struct rbuf *r)
{
	struct snapuid id;
	uint64_t label = 0;
	uint32_t timeout_s = 0;
	uint8_t committed = 0;
	uint64_t off = 0;
	uint32_t len = 0;
	char why[256];

	snapuid_get(r, &id);
	if (type == W_SNAP_FETCH) {
		off = rbuf_u64(r);
		len = rbuf_u32(r);
	}
	if (type == W_SNAP_DONE)
		committed = rbuf_u8(r);
	if (type == W_SNAP_JOIN && !rbuf_done(r))
		timeout_s = rbuf_u32(r);
	if (type == W_SNAP_JOIN && !rbuf_done(r))
		label = rbuf_u64(r);
	if (!rbuf_done(r)) {
		if (type == W_SNAP_JOIN)
			badreq(a, c, "snapshot join");
		else
			agent_conn_close(a, c, "malformed snapshot frame");
		return;
	}
	/* Markers could not cross a diverged channel: refuse at once rather
	 * than let the snapshot run into its timeout. */
	if (type == W_SNAP_JOIN && agent_fence_why(a, why, sizeof(why)))
		agent_conn_replyf(a, c, REPLY_FAIL, "%s; no snapshot until "
		    "the fence is lifted", why);
	else if (type == W_SNAP_JOIN && agent_diverged(a, why, sizeof(why)))
		agent_conn_replyf(a, c, REPLY_FAIL,
		    "%s; no snapshot until both "
		    "ends share one history", why);
	else if (type == W_SNAP_JOIN)
		agent_snap_join(a, c, &id, timeout_s, label);
	else if (type == W_SNAP_START)
		agent_snap_start(a, &id);
	else if (type == W_SNAP_FETCH)
		agent_snap_fetch(a, c, &id, off, len);
	else if (type == W_SNAP_ALIVE)
		agent_snap_alive(a, c, &id);
	else
		agent_snap_done(a, &id, committed);
}

/* 1 when c's certificate may make a request of type; else it is
 * answered REPLY_DENIED, the first refusal of a connection logged. */
static int
req_allowed(struct agent *a, struct conn *c, uint8_t type)
{
	const char *what = cs_role_req_name(type);

	if (cs_role_may(c->crole, type))
		return 1;
	if (!c->denied && c->crole != CS_ROLE_NONE)
		log_warn("client '%s': role %s may not %s; refused", c->cn,
		    cs_role_name(c->crole), what);
	c->denied = 1;
	if (c->crole == CS_ROLE_NONE)
		agent_conn_replyf(a, c, REPLY_DENIED, "agent %s: certificate "
		    "'%s' is an agent's: it may not send client requests",
		    a->name, c->cn);
	else
		agent_conn_replyf(a, c, REPLY_DENIED, "agent %s: role %s may "
		    "not %s (certificate '%s')", a->name,
		    cs_role_name(c->crole), what, c->cn);
	return 0;
}

void
agent_client_frame(struct agent *a, struct conn *c, uint8_t type,
    const uint8_t *p, size_t n)
{
	struct rbuf r;

	if (!req_allowed(a, c, type))
		return;
	rbuf_init(&r, p, n);
	if (type == W_REQ_PUT || type == W_REQ_DEL || type == W_REQ_ADD ||
	    type == W_REQ_TRANSFER || type == W_REQ_DEAD_RESOLVE ||
	    type == W_REQ_TXN)
		a->writes++;
	switch (type) {
	case W_HELLO:
		agent_hello(a, c, &r);
		break;
	case W_REQ_STATUS:
		if (!rbuf_done(&r))
			badreq(a, c, "status");
		else
			agent_status_reply(a, c);
		break;
	case W_REQ_PUT:
		req_put(a, c, &r);
		break;
	case W_REQ_GET:
		req_get(a, c, &r);
		break;
	case W_REQ_DEL:
		req_del(a, c, &r);
		break;
	case W_REQ_ADD:
		req_add(a, c, &r);
		break;
	case W_REQ_TRANSFER:
		req_transfer(a, c, &r);
		break;
	case W_REQ_TXN:
		agent_txn_request(a, c, p, n);
		break;
	case W_REQ_GETV:
		agent_getv_request(a, c, &r);
		break;
	case W_REQ_RECV:
		agent_recv_request(a, c, &r);
		break;
	case W_REQ_INBOX:
		if (!rbuf_done(&r))
			badreq(a, c, "inbox");
		else
			agent_inbox_list(a, c);
		break;
	case W_REQ_HOLD:
	case W_REQ_RELEASE:
		req_hold(a, c, &r, type == W_REQ_HOLD);
		break;
	case W_REQ_DEAD_LIST:
		agent_dead_list_reply(a, c, &r);
		break;
	case W_REQ_DEAD_RESOLVE:
		agent_dead_resolve(a, c, &r);
		break;
	case W_REQ_COMPACT:
		if (!rbuf_done(&r))
			badreq(a, c, "compact");
		else
			agent_compact_request(a, c);
		break;
	case W_REQ_STOP:
		log_info("stop requested");
		agent_conn_reply(a, c, REPLY_OK, NULL, 0, datalog_need(a->dl));
		a->stop = 1;
		break;
	case W_SNAP_JOIN:
	case W_SNAP_START:
	case W_SNAP_DONE:
	case W_SNAP_FETCH:
	case W_SNAP_ALIVE:
		req_snap(a, c, type, &r);
		break;
	case W_SNAP_UPLOAD:
		agent_snap_upload(a, c, &r);
		break;
	default:
		log_warn("client fd %d: unexpected frame type %u; closing it",
		    c->fd, type);
		agent_conn_close(a, c, NULL);
		break;
	}
}
