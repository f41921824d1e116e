/* dltxn.c - a data file's TXN and KVER records (datalog.h): the codec of
 * a transaction's ops, the rules they keep and their effect on the
 * state. datalog.c calls these from its record switch. */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datalog.h"
#include "dl_int.h"
#include "../proto/chmsg.h"

/* A request id remembers a reply of REQ_VAL_MAX bytes: u32 n, n i64. */
#define DL_TXN_REQ_MAX_ADDS ((REQ_VAL_MAX - 4) / 8)

int
dl_txn_next(struct rbuf *rb, struct dl_txn_op *op)
{
	struct chmsg_app m;
	int64_t v;

	memset(op, 0, sizeof(*op));
	op->kind = rbuf_u8(rb);
	if (op->kind == DL_TXN_SEND || op->kind == DL_TXN_CONSUME) {
		rbuf_str(rb, op->peer, sizeof(op->peer));
		op->seq = rbuf_u64(rb);
		if (op->kind == DL_TXN_SEND) {
			op->val = rbuf_bytes(rb, &op->vlen, CHMSG_APP_ENC_MAX);
			if (!rb->err && rb->len - rb->off < DL_CHAIN_LEN)
				rb->err = 1;
			if (!rb->err) {
				op->chain = rb->p + rb->off;
				rb->off += DL_CHAIN_LEN;
			}
		}
		if (rb->err || op->seq == 0 || !dl_valid_name(op->peer))
			return -1;
		return op->kind == DL_TXN_SEND &&
		    chmsg_decode_app(op->val, op->vlen, &m) == -1 ? -1 : 0;
	}
	op->key = rbuf_bytes(rb, &op->klen, WIRE_MAX_KEY);
	if (op->kind == DL_TXN_PUT || op->kind == DL_TXN_ADD)
		op->val = rbuf_bytes(rb, &op->vlen, WIRE_MAX_VALUE);
	else if (op->kind != DL_TXN_DEL)
		rb->err = 1;
	if (rb->err || op->klen == 0)
		return -1;
	if (op->kind == DL_TXN_ADD && dl_int_parse(op->val, op->vlen, &v) == -1)
		return -1;
	return 0;
}

/* Walk r's ops: 0 when all r->nops are well formed and fill r->ops
 * exactly; *nadd counts the ADDs. */
static int
walk(const struct dl_record *r, size_t *nadd)
{
	struct dl_txn_op op;
	struct rbuf rb;
	uint32_t i;

	*nadd = 0;
	if (r->nops == 0 || r->nops > DL_TXN_MAX_OPS)
		return -1;
	rbuf_init(&rb, r->ops, r->opslen);
	for (i = 0; i < r->nops; i++) {
		if (dl_txn_next(&rb, &op) == -1)
			return -1;
		*nadd += op.kind == DL_TXN_ADD;
	}
	return rbuf_done(&rb) ? 0 : -1;
}

size_t
dl_txn_skip(struct rbuf *rb, uint32_t nops)
{
	struct dl_txn_op op;
	size_t start = rb->off;
	uint32_t i;

	for (i = 0; i < nops && !rb->err; i++)
		if (dl_txn_next(rb, &op) == -1)
			rb->err = 1;
	return rb->off - start;
}

int
dl_txn_reply(const struct dl_record *r, struct wbuf *out)
{
	struct dl_txn_op op;
	struct rbuf rb;
	size_t nadd;
	int64_t v;
	uint32_t i;

	if (walk(r, &nadd) == -1)
		return -1;
	wbuf_put_u32(out, (uint32_t)nadd);
	rbuf_init(&rb, r->ops, r->opslen);
	for (i = 0; i < r->nops; i++) {
		(void)dl_txn_next(&rb, &op);
		if (op.kind != DL_TXN_ADD)
			continue;
		(void)dl_int_parse(op.val, op.vlen, &v);
		wbuf_put_i64(out, v);
	}
	return out->oom ? -1 : 0;
}

struct taken {
	const char *peer;	/* borrows the op's copy, kept in ops[] */
	uint64_t seq;
};

static int
cmp_taken(const void *a, const void *b)
{
	const struct taken *x = a, *y = b;
	int c = strcmp(x->peer, y->peer);

	if (c != 0)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The rules of a TXN's SEND and CONSUME ops: each SEND the next seq on
 * its channel (after the record's earlier SENDs), each CONSUME a message
 * in the inbox, none twice. */
static int
msg_check(const struct dl_state *st, const struct dl_record *r,
    struct cs_err *e)
{
	struct wm_set next;	/* the seq each channel's next SEND takes */
	struct dl_txn_op *ops = NULL, op;
	struct taken *tk = NULL;
	struct rbuf rb;
	size_t nt = 0, ntk = 0, i;
	uint64_t want;
	int rc = -1;

	memset(&next, 0, sizeof(next));
	rbuf_init(&rb, r->ops, r->opslen);
	for (i = 0; i < r->nops; i++) {
		(void)dl_txn_next(&rb, &op);	/* walked first */
		if (op.kind == DL_TXN_CONSUME)
			nt++;
		if (op.kind != DL_TXN_SEND)
			continue;
		want = dl_wm_get(&next, op.peer);
		if (want == 0)
			want = dl_wm_get(&st->sent, op.peer) + 1;
		if (want == 0 || op.seq != want) {
			cs_errf(e, "transaction sends seq %" PRIu64 " to %s, "
			    "expected %" PRIu64, op.seq, op.peer, want);
			goto out;
		}
		if (dl_wm_put(&next, op.peer, want + 1) == -1)
			goto oom;
	}
	if (nt == 0) {
		rc = 0;
		goto out;
	}
	if ((ops = malloc(nt * sizeof(*ops))) == NULL ||
	    (tk = malloc(nt * sizeof(*tk))) == NULL)
		goto oom;
	rbuf_init(&rb, r->ops, r->opslen);
	for (i = 0; i < r->nops; i++) {
		(void)dl_txn_next(&rb, &op);
		if (op.kind != DL_TXN_CONSUME)
			continue;
		ops[ntk] = op;	/* tk[] points at its peer: a stable copy */
		if (dl_inbox_find(st, ops[ntk].peer, ops[ntk].seq) == -1) {
			cs_errf(e, "transaction consumes message seq %" PRIu64
			    " from %s, which is not in the inbox",
			    ops[ntk].seq, ops[ntk].peer);
			goto out;
		}
		tk[ntk].peer = ops[ntk].peer;
		tk[ntk].seq = ops[ntk].seq;
		ntk++;
	}
	qsort(tk, ntk, sizeof(*tk), cmp_taken);
	for (i = 1; i < ntk; i++)
		if (cmp_taken(&tk[i - 1], &tk[i]) == 0) {
			cs_errf(e, "transaction consumes message seq %" PRIu64
			    " from %s twice", tk[i].seq, tk[i].peer);
			goto out;
		}
	rc = 0;
	goto out;
oom:
	cs_errc(e, CS_E_NOMEM, "out of memory");
out:
	free(next.v);
	free(ops);
	free(tk);
	return rc;
}

int
dl_txn_check(const struct dl_state *st, const struct dl_record *r,
    struct cs_err *e)
{
	size_t nadd;

	if (r->type == DL_KVER) {
		if (r->klen == 0 || r->klen > WIRE_MAX_KEY || r->seq == 0)
			return cs_errf(e, "malformed key version record");
		if (dl_tracked(st, r->key, r->klen) &&
		    kvmap_entry(st->kv, r->key, r->klen) == NULL)
			return cs_errf(e, "version of a key that is not held");
		return 0;
	}
	if (walk(r, &nadd) == -1)
		return cs_errf(e, "malformed transaction record");
	if (r->req_id != NULL && nadd > DL_TXN_REQ_MAX_ADDS)
		return cs_errf(e, "transaction with a request id and %zu adds "
		    "(at most %d)", nadd, DL_TXN_REQ_MAX_ADDS);
	return msg_check(st, r, e);
}

int
dl_txn_apply(struct dl_state *st, const struct dl_record *r)
{
	struct dl_txn_op op;
	struct dl_record sr;
	struct rbuf rb;
	uint32_t i;
	long k;

	if (r->type == DL_KVER) {
		if (dl_tracked(st, r->key, r->klen))
			(void)kvmap_set_ver(st->kv, r->key, r->klen, r->seq);
		return 0;
	}
	rbuf_init(&rb, r->ops, r->opslen);
	for (i = 0; i < r->nops; i++) {
		(void)dl_txn_next(&rb, &op);	/* checked first */
		if (op.kind == DL_TXN_SEND) {
			/* Emitted as a SEND's message is, without a key. */
			memset(&sr, 0, sizeof(sr));
			sr.type = DL_KEPT;
			sr.peer = op.peer;
			sr.msg = op.val;
			sr.msglen = op.vlen;
			sr.chain = op.chain;
			if (dl_apply_send(st, &sr, op.seq) == -1)
				return -1;
			continue;
		}
		if (op.kind == DL_TXN_CONSUME) {
			if ((k = dl_inbox_find(st, op.peer, op.seq)) != -1)
				dl_inbox_remove(st, (size_t)k);
			continue;
		}
		if (!dl_tracked(st, op.key, op.klen))
			continue;
		if (op.kind == DL_TXN_DEL) {
			(void)kvmap_del(st->kv, op.key, op.klen);
			continue;
		}
		/* A large value stays in the file, as a PUT's does: it lies
		 * after the record header, the type byte, the u32 count and
		 * the ops before it. */
		if (st->by_ref && op.vlen > DL_INLINE_MAX) {
			if (kvmap_put_ref(st->kv, op.key, op.klen, st->rec_off +
			    DL_REC_HDR_LEN + 1 + 4 + (size_t)(op.val - r->ops),
			    op.vlen) == -1)
				return -1;
		} else if (kvmap_put(st->kv, op.key, op.klen, op.val,
		    op.vlen) == -1)
			return -1;
	}
	return 0;
}
