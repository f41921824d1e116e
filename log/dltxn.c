/* dltxn.c - a data file's TXN and KVER records (datalog.h): the codec of
 * a transaction's ops, the rules they keep and their effect on the
 * state. datalog.c calls these from its record switch. */
#include <stdint.h>
#include <string.h>

#include "datalog.h"
#include "dl_int.h"

/* A request id remembers a reply of REQ_VAL_MAX bytes: u32 n, n i64. */
#define DL_TXN_REQ_MAX_ADDS ((REQ_VAL_MAX - 4) / 8)

int
dl_txn_next(struct rbuf *rb, struct dl_txn_op *op)
{
	int64_t v;

	memset(op, 0, sizeof(*op));
	op->kind = rbuf_u8(rb);
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
	return 0;
}

int
dl_txn_apply(struct dl_state *st, const struct dl_record *r)
{
	struct dl_txn_op op;
	struct rbuf rb;
	uint32_t i;

	if (r->type == DL_KVER) {
		if (dl_tracked(st, r->key, r->klen))
			(void)kvmap_set_ver(st->kv, r->key, r->klen, r->seq);
		return 0;
	}
	rbuf_init(&rb, r->ops, r->opslen);
	for (i = 0; i < r->nops; i++) {
		(void)dl_txn_next(&rb, &op);	/* checked first */
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
