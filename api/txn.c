/* txn.c - libcutsnap's transactions (a list of operations the agent
 * applies atomically, W_REQ_TXN) and its inbox (W_REQ_RECV), encoded as
 * docs/PROTOCOL.md describes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/util.h"
#include "api_int.h"

/* W_REQ_RECV (docs/PROTOCOL.md): the oldest unconsumed message of the
 * agent's inbox, waited for up to a timeout. */
#define W_RECV		51

/* The ops staged in a transaction, and its results once committed. */
#define TXN_MAX_OPS 65536u

struct cs_txn {
	struct wbuf ops;	/* the encoded operations, in order */
	uint32_t nops;
	int bad;		/* a staging call failed: refuse to commit */
	char why[128];		/* and why */
	int64_t *added;		/* the committed adds' new values */
	uint32_t nadded;
};

struct cs_msg {
	char from[NAME_MAX_LEN + 1];
	uint64_t seq;
	uint8_t id[CS_ID_LEN];
	uint8_t *payload;	/* malloc'ed, len bytes (+ a NUL) */
	size_t len;
};

cs_txn *
cs_txn_new(void)
{
	cs_txn *t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	wbuf_init(&t->ops);
	return t;
}

void
cs_txn_free(cs_txn *t)
{
	if (t == NULL)
		return;
	wbuf_free(&t->ops);
	free(t->added);
	free(t);
}

/* Start an op of kind with key k (or no key with kl 0 and k NULL); 0 or
 * -1 with the transaction marked bad. */
static int
op_start(cs_txn *t, uint8_t kind, const void *k, size_t kl, int has_key)
{
	if (t == NULL)
		return -1;
	if (t->bad)
		return -1;
	if (t->nops >= TXN_MAX_OPS) {
		snprintf(t->why, sizeof(t->why), "a transaction holds at most "
		    "%u operations", TXN_MAX_OPS);
		t->bad = 1;
		return -1;
	}
	if (has_key && (kl == 0 || kl > WIRE_MAX_KEY || k == NULL)) {
		snprintf(t->why, sizeof(t->why), "operation %u: a key must be "
		    "1 to %u bytes long", t->nops, WIRE_MAX_KEY);
		t->bad = 1;
		return -1;
	}
	wbuf_put_u8(&t->ops, kind);
	if (has_key)
		wbuf_put_bytes(&t->ops, k, kl);
	t->nops++;
	return 0;
}

/* Close an op: -1 (transaction bad) when memory ran out. */
static int
op_end(cs_txn *t)
{
	if (t->ops.oom) {
		snprintf(t->why, sizeof(t->why), "out of memory");
		t->bad = 1;
		return -1;
	}
	return 0;
}

static int
value_ok(cs_txn *t, size_t vl)
{
	if (vl <= WIRE_MAX_VALUE)
		return 1;
	snprintf(t->why, sizeof(t->why), "operation %u: a value is at most "
	    "16 MiB", t->nops);
	t->bad = 1;
	return 0;
}

int
cs_txn_put(cs_txn *t, const void *k, size_t kl, const void *v, size_t vl)
{
	if (t == NULL || !value_ok(t, vl) || op_start(t, TXN_PUT, k, kl, 1))
		return -1;
	wbuf_put_bytes(&t->ops, v, vl);
	return op_end(t);
}

int
cs_txn_del(cs_txn *t, const void *k, size_t kl)
{
	if (op_start(t, TXN_DEL, k, kl, 1) == -1)
		return -1;
	return op_end(t);
}

int
cs_txn_add(cs_txn *t, const void *k, size_t kl, int64_t delta)
{
	if (op_start(t, TXN_ADD, k, kl, 1) == -1)
		return -1;
	wbuf_put_i64(&t->ops, delta);
	return op_end(t);
}

int
cs_txn_send(cs_txn *t, const char *peer, const void *p, size_t n)
{
	if (t == NULL || !value_ok(t, n))
		return -1;
	if (peer == NULL || peer[0] == '\0' || strlen(peer) > NAME_MAX_LEN) {
		snprintf(t->why, sizeof(t->why), "operation %u: a peer is an "
		    "agent's name, 1 to %d bytes", t->nops, NAME_MAX_LEN);
		t->bad = 1;
		return -1;
	}
	if (op_start(t, TXN_SEND, NULL, 0, 0) == -1)
		return -1;
	wbuf_put_bytes(&t->ops, peer, strlen(peer));
	wbuf_put_bytes(&t->ops, p, n);
	return op_end(t);
}

int
cs_txn_consume(cs_txn *t, const cs_msg *m)
{
	if (t == NULL)
		return -1;
	if (m == NULL) {
		snprintf(t->why, sizeof(t->why), "operation %u: no message to "
		    "consume", t->nops);
		t->bad = 1;
		return -1;
	}
	if (op_start(t, TXN_CONSUME, NULL, 0, 0) == -1)
		return -1;
	wbuf_put_bytes(&t->ops, m->from, strlen(m->from));
	wbuf_put_u64(&t->ops, m->seq);
	return op_end(t);
}

int
cs_txn_expect(cs_txn *t, const void *k, size_t kl, const void *v, size_t vl)
{
	if (v == NULL)
		return op_start(t, TXN_EXPECT_ABSENT, k, kl, 1) == -1 ? -1 :
		    op_end(t);
	if (t == NULL || !value_ok(t, vl) ||
	    op_start(t, TXN_EXPECT_EQ, k, kl, 1) == -1)
		return -1;
	wbuf_put_bytes(&t->ops, v, vl);
	return op_end(t);
}

int
cs_txn_expect_version(cs_txn *t, const void *k, size_t kl, uint64_t version)
{
	if (op_start(t, TXN_EXPECT_VERSION, k, kl, 1) == -1)
		return -1;
	wbuf_put_u64(&t->ops, version);
	return op_end(t);
}

int
cs_txn_result(const cs_txn *t, size_t i, int64_t *value)
{
	if (t == NULL || i >= t->nadded)
		return -1;
	*value = t->added[i];
	return 0;
}

/* REPLY_OK's body: {u32 n, n x i64}, the adds' new values. */
static int
commit_ok(cs_conn *c, cs_txn *t, const uint8_t *b, size_t n)
{
	struct rbuf r;
	uint32_t k, i;

	rbuf_init(&r, b, n);
	k = rbuf_u32(&r);
	if (r.err || k > t->nops || (size_t)k * 8 != n - 4)
		return api_fail(c, CS_ERROR, "agent %s: malformed transaction "
		    "reply", c->agent);
	free(t->added);
	t->added = NULL;
	t->nadded = 0;
	if (k > 0 && (t->added = calloc(k, sizeof(*t->added))) == NULL)
		return api_fail(c, CS_ERROR, "out of memory");
	for (i = 0; i < k; i++)
		t->added[i] = rbuf_i64(&r);
	t->nadded = k;
	api_ok(c, CS_OK);
	return CS_OK;
}

/* REPLY_CONFLICT's body: {u32 op_index, str reason}. */
static int
commit_conflict(cs_conn *c, const uint8_t *b, size_t n)
{
	char why[CS_ERR_MAX / 2];
	const uint8_t *s;
	struct rbuf r;
	uint32_t op;
	size_t sl;

	rbuf_init(&r, b, n);
	op = rbuf_u32(&r);
	s = rbuf_bytes(&r, &sl, 4096);
	if (!rbuf_done(&r))
		return api_fail(c, CS_ERROR, "agent %s: malformed conflict "
		    "reply", c->agent);
	cs_printable(s, sl, why, sizeof(why), 0);
	api_fail(c, CS_CONFLICT, "operation %u: %s", op, why);
	return CS_CONFLICT;
}

int
cs_commit(cs_conn *c, cs_txn *t)
{
	static const uint8_t no_id[CS_ID_LEN];
	const uint8_t *b;
	struct wbuf w;
	uint8_t code;
	size_t n;
	int rc;

	if (t == NULL)
		return api_fail(c, CS_ERROR, "no transaction");
	if (t->bad)
		return api_fail(c, CS_ERROR, "transaction not sent: %s",
		    t->why);
	wbuf_init(&w);
	wbuf_put_raw(&w, no_id, sizeof(no_id));
	wbuf_put_u32(&w, t->nops);
	wbuf_put_raw(&w, t->ops.data, t->ops.len);
	if (w.oom)
		rc = api_fail(c, CS_ERROR, "out of memory");
	else if (w.len > WIRE_MAX_FRAME - 2)
		rc = api_fail(c, CS_ERROR, "transaction of %zu bytes exceeds "
		    "the protocol's limit of %u", w.len, WIRE_MAX_FRAME - 2);
	else
		rc = api_request(c, W_REQ_TXN, w.data, w.len, &code, &b, &n);
	wbuf_free(&w);
	if (rc == -1)
		return -1;
	if (code == REPLY_OK)
		return commit_ok(c, t, b, n);
	if (code == REPLY_CONFLICT)
		return commit_conflict(c, b, n);
	if (code == REPLY_BUSY) {
		char m[CS_ERR_MAX];

		cs_printable(b, n, m, sizeof(m), 0);
		api_fail(c, CS_BUSY, "%s", m[0] ? m : "busy: retry later");
		return CS_BUSY;
	}
	return api_outcome(c, code, b, n);
}

/* n raw bytes at r's position (buf.h has no such reader), or NULL with
 * r->err set. */
static const uint8_t *
raw(struct rbuf *r, size_t n)
{
	const uint8_t *p;

	if (r->err || r->len - r->off < n) {
		r->err = 1;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

/* REPLY_OK's body: {str from, u64 seq, 16 bytes id, bytes payload}. */
static int
recv_msg(cs_conn *c, const uint8_t *b, size_t n, cs_msg **out)
{
	const uint8_t *from, *id, *p;
	size_t fl, pl;
	struct rbuf r;
	cs_msg *m;

	rbuf_init(&r, b, n);
	from = rbuf_bytes(&r, &fl, NAME_MAX_LEN);
	if ((m = calloc(1, sizeof(*m))) == NULL)
		return api_fail(c, CS_ERROR, "out of memory");
	m->seq = rbuf_u64(&r);
	id = raw(&r, CS_ID_LEN);
	p = rbuf_bytes(&r, &pl, WIRE_MAX_VALUE);
	if (!rbuf_done(&r) || fl == 0 || memchr(from, '\0', fl) != NULL) {
		free(m);
		return api_fail(c, CS_ERROR, "agent %s: malformed message in "
		    "its reply", c->agent);
	}
	if ((m->payload = malloc(pl + 1)) == NULL) {
		free(m);
		return api_fail(c, CS_ERROR, "out of memory");
	}
	memcpy(m->from, from, fl);
	memcpy(m->id, id, CS_ID_LEN);
	if (pl > 0)
		memcpy(m->payload, p, pl);
	m->payload[pl] = '\0';
	m->len = pl;
	*out = m;
	api_ok(c, CS_OK);
	return CS_OK;
}

int
cs_recv(cs_conn *c, int timeout_ms, cs_msg **m)
{
	const uint8_t *b;
	struct wbuf w;
	uint8_t code;
	size_t n;
	int rc;

	*m = NULL;
	if (timeout_ms < 0)
		timeout_ms = 0;
	wbuf_init(&w);
	wbuf_put_u32(&w, (uint32_t)timeout_ms);
	rc = w.oom ? api_fail(c, CS_ERROR, "out of memory") : 0;
	if (rc == 0 && c->owed > 0)
		rc = api_fail(c, CS_ERROR, "%u pipelined replies are still "
		    "to be read (cs_get_reply)", c->owed);
	if (rc == 0 && api_queue(c, W_RECV, w.data, w.len) == -1)
		rc = -1;
	wbuf_free(&w);
	/* The agent holds the reply up to timeout_ms: wait for that too. */
	if (rc == -1 || api_read_reply(c, c->timeout_ms < 0 ? -1 :
	    c->timeout_ms + timeout_ms, &code, &b, &n) == -1)
		return -1;
	if (code == REPLY_OK)
		return recv_msg(c, b, n, m);
	if (code == REPLY_TIMEOUT) {
		api_fail(c, CS_TIMEOUT, "no message within %d ms", timeout_ms);
		return CS_TIMEOUT;
	}
	return api_outcome(c, code, b, n);
}

void
cs_msg_free(cs_msg *m)
{
	if (m == NULL)
		return;
	free(m->payload);
	free(m);
}

const char *
cs_msg_from(const cs_msg *m)
{
	return m->from;
}

uint64_t
cs_msg_seq(const cs_msg *m)
{
	return m->seq;
}

const uint8_t *
cs_msg_id(const cs_msg *m)
{
	return m->id;
}

const void *
cs_msg_payload(const cs_msg *m, size_t *len)
{
	if (len != NULL)
		*len = m->len;
	return m->payload;
}
