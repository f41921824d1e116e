/* deadletter.c - an operator's requests on dead letters: list them, and
 * resolve one by retrying its credit into its key or refunding it to the
 * sender over the reverse channel. A resolution is one RESOLVE record
 * that both marks the dead letter resolved and carries its effect (the
 * key's new value, or the refund's send), so it happens exactly once:
 * a kill before the record is durable leaves it open, and the reply is
 * sent only once it is durable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../log/chain.h"
#include "../proto/chmsg.h"
#include "../lib/log.h"
#include "agent_int.h"

static const struct dl_state *
st(const struct agent *a)
{
	return datalog_state(a->dl);
}

void
agent_dead_list_reply(struct agent *a, struct conn *c, struct rbuf *r)
{
	const struct dl_state *s = st(a);
	const struct dl_dead *d;
	struct wbuf w;
	uint32_t n = 0;
	size_t i, at;
	uint8_t all;

	all = rbuf_u8(r);
	if (!rbuf_done(r) || all > 1) {
		agent_conn_replyf(a, c, REPLY_BADREQ,
		    "malformed dead letter list "
		    "request");
		return;
	}
	wbuf_init(&w);
	wbuf_put_u32(&w, (uint32_t)(all ? s->ndead : s->nopen));
	at = w.len;
	wbuf_put_u32(&w, 0);		/* n, filled in below */
	for (i = 0; i < s->ndead && n < DEAD_LIST_MAX; i++) {
		d = &s->dead[i];
		if (d->resolved && !all)
			continue;
		wbuf_put_str(&w, d->peer);
		wbuf_put_u64(&w, d->seq);
		wbuf_put_u8(&w, (uint8_t)d->reason);
		wbuf_put_u8(&w, (uint8_t)d->resolved);
		wbuf_put_i64(&w, d->amount);
		wbuf_put_bytes(&w, d->key, d->klen);
		wbuf_put_bytes(&w, d->from, d->flen);
		wbuf_put_u64(&w, d->refund_seq);
		n++;
	}
	if (w.oom) {
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
		goto out;
	}
	buf_le32_put(w.data + at, n);
	agent_conn_reply(a, c, REPLY_OK, w.data, w.len, datalog_need(a->dl));
out:
	wbuf_free(&w);
}

/* Apply the dead letter's credit to its key now, if it can be. */
static void
retry(struct agent *a, struct conn *c, const struct dl_dead *d)
{
	struct dl_record rec;
	struct cs_err e;
	char nv[24], kp[80];

	cs_printable(d->key, d->klen, kp, sizeof(kp),
	    CS_PRINT_ASCII | CS_PRINT_ELLIPSIS);
	if (dl_int_add(st(a), d->key, d->klen, d->amount, nv, NULL,
	    &e) == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL,
		    "cannot retry dead letter %s->%s "
		    "seq %llu into %s:%s: %s; it stays a dead letter (fix the "
		    "key, or refund it)", d->peer, a->name,
		    (unsigned long long)d->seq, a->name, kp, e.msg);
		return;
	}
	memset(&rec, 0, sizeof(rec));
	rec.type = DL_RESOLVE;
	rec.peer = d->peer;
	rec.seq = d->seq;
	rec.code = DL_RESOLVE_RETRY;
	rec.key = d->key;
	rec.klen = d->klen;
	rec.val = (const uint8_t *)nv;
	rec.vlen = strlen(nv);
	if (agent_append(a, &rec) == -1)
		return;
	log_info("dead letter %s>%s seq %llu retried: %s:%s = %s", rec.peer,
	    a->name, (unsigned long long)rec.seq, a->name, kp, nv);
	agent_conn_reply(a, c, REPLY_OK, nv, strlen(nv), datalog_need(a->dl));
}

/* Send the credit back to the sending key over self->src. */
static void
refund(struct agent *a, struct conn *c, const struct dl_dead *d)
{
	char src[NAME_MAX_LEN + 1], why[768];
	uint8_t id[CHMSG_ID_LEN], chain[DL_CHAIN_LEN];
	struct dl_record rec;
	struct wbuf msg, body;
	uint64_t sseq;
	int s;

	s = cfg_find(a->c, d->peer);
	if (s == -1 || !a->out[s].configured) {
		agent_conn_replyf(a, c, REPLY_FAIL,
		    "cannot refund dead letter %s->%s "
		    "seq %llu: there is no channel %s->%s back to the sender; "
		    "retry it instead", d->peer, a->name,
		    (unsigned long long)d->seq, a->name, d->peer);
		return;
	}
	if (agent_fence_why(a, why, sizeof(why))) {
		agent_conn_replyf(a, c, REPLY_FAIL, "cannot refund dead "
		    "letter %s->%s seq %llu: %s", d->peer, a->name,
		    (unsigned long long)d->seq, why);
		return;
	}
	if (a->out[s].diverged) {
		agent_conn_replyf(a, c, REPLY_FAIL,
		    "cannot refund dead letter %s->%s "
		    "seq %llu: channel %s->%s diverged (%s); it stays a dead "
		    "letter until the restore is finished", d->peer, a->name,
		    (unsigned long long)d->seq, a->name, d->peer,
		    a->out[s].why);
		return;
	}
	if (d->flen == 0) {
		agent_conn_replyf(a, c, REPLY_FAIL,
		    "cannot refund dead letter %s->%s "
		    "seq %llu: its message does not name the sending key "
		    "(sent by an older version); retry it instead", d->peer,
		    a->name, (unsigned long long)d->seq);
		return;
	}
	wbuf_init(&msg);
	wbuf_init(&body);
	if (chmsg_new_id(id) == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "getrandom failed");
		goto out;
	}
	/* The refund names this dead letter's key as its own sending key:
	 * should it become a dead letter at the sender, it can come back. */
	chmsg_encode_from(&msg, d->from, d->flen, d->amount, id, d->key,
	    d->klen);
	if (msg.oom) {
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
		goto out;
	}
	snprintf(src, sizeof(src), "%s", d->peer);
	sseq = dl_wm_get(&st(a)->sent, src) + 1;
	if (chain_next(dl_wm_chain(&st(a)->sent, src), sseq, msg.data, msg.len,
	    chain) == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "sha256 failed");
		goto out;
	}
	memset(&rec, 0, sizeof(rec));
	rec.type = DL_RESOLVE;
	rec.peer = src;
	rec.seq = d->seq;
	rec.code = DL_RESOLVE_REFUND;
	rec.sseq = sseq;
	rec.msg = msg.data;
	rec.msglen = msg.len;
	rec.chain = chain;
	if (agent_append_send(a, s, &rec, sseq, msg.data, msg.len) == -1)
		goto out;
	log_info("dead letter %s>%s seq %llu refunded as message %s>%s seq "
	    "%llu", src, a->name, (unsigned long long)rec.seq, a->name, src,
	    (unsigned long long)sseq);
	wbuf_put_u64(&body, sseq);
	agent_conn_reply(a, c, REPLY_OK, body.data, body.len,
	    datalog_need(a->dl));
out:
	wbuf_free(&msg);
	wbuf_free(&body);
}

void
agent_dead_resolve(struct agent *a, struct conn *c, struct rbuf *r)
{
	char src[NAME_MAX_LEN + 1];
	const struct dl_dead *d;
	uint64_t seq;
	uint8_t how;

	rbuf_str(r, src, sizeof(src));
	seq = rbuf_u64(r);
	how = rbuf_u8(r);
	if (!rbuf_done(r) || (how != DL_RESOLVE_RETRY &&
	    how != DL_RESOLVE_REFUND)) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "malformed dead letter "
		    "request");
		return;
	}
	if ((d = dl_dead_find(st(a), src, seq)) == NULL) {
		agent_conn_replyf(a, c, REPLY_FAIL,
		    "agent %s has no dead letter "
		    "%s->%s seq %llu", a->name, src, a->name,
		    (unsigned long long)seq);
		return;
	}
	if (d->resolved) {
		agent_conn_replyf(a, c, REPLY_FAIL,
		    "dead letter %s->%s seq %llu is "
		    "already %s", src, a->name, (unsigned long long)seq,
		    dl_resolve_name(d->resolved));
		return;
	}
	if (how == DL_RESOLVE_RETRY)
		retry(a, c, d);
	else
		refund(a, c, d);
}
