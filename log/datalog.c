/* datalog.c - the records of a data file: their codec, the state they
 * build (values, watermarks and chains, sends, dead letters), the rules a
 * record must keep, and replay from a memory image or an open file (the
 * engine dlfile.c's recovery uses, dl_int.h). No file is written here:
 * the live file, its recovery and appends, is dlfile.c. */
/*
 * Recovery follows datalog.h. One refinement: a record whose length runs
 * to or past EOF is not taken for a torn write when its fields end earlier
 * and a checksummed record starts right there; that is a damaged length in
 * the middle of the file, reported and not cut off.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chainhash.h"
#include "../proto/chmsg.h"
#include "chunkhash.h"
#include "crcblk.h"
#include "datalog.h"
#include "dl_int.h"
#include "../lib/fsutil.h"
#include "../lib/util.h"
#include "../crypto/sha.h"

#define DL_MAGIC "CUTSNAPL"
#define DL_VERSION 2
#define DL_VERSION_MIN 1	/* oldest version read */
/* A channel message: a credit (chmsg.h: "op | key | amount ...") or an
 * application message (a TXN's SEND op, then KEPT and INBOX records);
 * this cap keeps every valid record below DL_MAX_RECORD. */
#define DL_MAX_MSG CHMSG_APP_ENC_MAX
/* The request field of PUT and SEND: id and digest (datalog.h). */
#define DL_REQ_FIELD_LEN (REQ_ID_LEN + 8)
/* A record's checksum: CRC-32 with the gzip/zlib polynomial (what zlib's
 * crc32() computes), through crcblk_bytes (ISA-L); replay (verify,
 * recovery) checks every byte of the log with it. */
uint32_t
dl_rec_crc(const uint8_t *p, size_t n)
{
	return crcblk_bytes(0, p, n);
}

uint32_t
dl_rec_crc_more(uint32_t crc, const uint8_t *p, size_t n)
{
	return crcblk_bytes(crc, p, n);
}

/* --- watermarks and state ------------------------------------------------ */

/* Same rule as cfg_valid_name; kept here so that offline tools replaying a
 * blob need not link the config module. */
static int
valid_name(const char *s)
{
	size_t n;

	if (s == NULL)
		return 0;
	for (n = 0; s[n] != '\0'; n++) {
		if (n >= NAME_MAX_LEN)
			return 0;
		if (!((s[n] >= 'a' && s[n] <= 'z') ||
		    (s[n] >= 'A' && s[n] <= 'Z') ||
		    (s[n] >= '0' && s[n] <= '9') ||
		    s[n] == '_' || s[n] == '.' || s[n] == '-'))
			return 0;
	}
	return n > 0;
}

uint64_t
dl_wm_get(const struct wm_set *s, const char *peer)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->v[i].peer, peer) == 0)
			return s->v[i].seq;
	return 0;
}

int
dl_valid_name(const char *s)
{
	return valid_name(s);
}

/* Room for one more watermark. 0 / -1. */
static int
wm_reserve(struct wm_set *s)
{
	struct wm *v;
	size_t ncap;

	if (s->n < s->cap)
		return 0;
	ncap = s->cap ? s->cap * 2 : 8;
	if ((v = realloc(s->v, ncap * sizeof(*v))) == NULL)
		return -1;
	s->v = v;
	s->cap = ncap;
	return 0;
}

/* The entry of peer, added (seq 0, genesis chain) if absent; NULL when
 * out of memory or the name is too long. */
static struct wm *
wm_slot(struct wm_set *s, const char *peer)
{
	struct wm *w;
	size_t i;

	if (strlen(peer) > NAME_MAX_LEN)
		return NULL;
	for (i = 0; i < s->n; i++)
		if (strcmp(s->v[i].peer, peer) == 0)
			return &s->v[i];
	if (wm_reserve(s) == -1)
		return NULL;
	w = &s->v[s->n++];
	memset(w, 0, sizeof(*w));
	memcpy(w->peer, peer, strlen(peer) + 1);
	w->chain_known = 1;
	return w;
}

int
dl_wm_put(struct wm_set *s, const char *peer, uint64_t seq)
{
	struct wm *w;

	if ((w = wm_slot(s, peer)) == NULL)
		return -1;
	w->seq = seq;
	return 0;
}

/* Set seq and the chain at seq (NULL: unknown). 0 / -1. */
static int
dl_wm_put_chain(struct wm_set *s, const char *peer, uint64_t seq,
    const uint8_t *chain)
{
	struct wm *w;

	if ((w = wm_slot(s, peer)) == NULL)
		return -1;
	w->seq = seq;
	w->chain_known = chain != NULL;
	if (chain != NULL)
		memcpy(w->chain, chain, DL_CHAIN_LEN);
	else
		memset(w->chain, 0, DL_CHAIN_LEN);
	return 0;
}

const uint8_t *
dl_wm_chain(const struct wm_set *s, const char *peer)
{
	static const uint8_t genesis[DL_CHAIN_LEN];
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->v[i].peer, peer) == 0)
			return s->v[i].chain_known ? s->v[i].chain : NULL;
	return genesis;
}

int
dl_state_init(struct dl_state *st, int keep_all_sends)
{
	memset(st, 0, sizeof(*st));
	st->keep_all_sends = keep_all_sends;
	if ((st->kv = kvmap_new()) == NULL)
		return -1;
	return 0;
}

void
dl_state_free(struct dl_state *st)
{
	size_t i;

	if (st == NULL)
		return;
	kvmap_free(st->kv);
	free(st->sent.v);
	free(st->applied.v);
	free(st->acked.v);
	free(st->sendoff.v);
	for (i = 0; i < st->nsends; i++)
		free(st->sends[i].msg);
	free(st->sends);
	for (i = 0; i < st->ndead; i++) {
		free(st->dead[i].key);
		free(st->dead[i].from);
	}
	free(st->dead);
	dl_inbox_free(st);
	reqtab_free(&st->reqs);
	memset(st, 0, sizeof(*st));
}

const struct dl_dead *
dl_dead_find(const struct dl_state *st, const char *src, uint64_t seq)
{
	size_t i;

	for (i = st->ndead; i-- > 0;)
		if (st->dead[i].seq == seq && strcmp(st->dead[i].peer, src) == 0)
			return &st->dead[i];
	return NULL;
}

const char *
dl_dead_reason_name(int reason)
{
	switch (reason) {
	case DL_DEAD_NOT_INT:
		return "not an integer";
	case DL_DEAD_OVERFLOW:
		return "integer overflow";
	default:
		return "unknown";
	}
}

const char *
dl_resolve_name(int how)
{
	switch (how) {
	case 0:
		return "open";
	case DL_RESOLVE_RETRY:
		return "retried";
	case DL_RESOLVE_REFUND:
		return "refunded";
	default:
		return "unknown";
	}
}

/* dl_state_check for DEAD and RESOLVE (the peer is already checked). */
static int
check_dead(const struct dl_state *st, const struct dl_record *r,
    struct cs_err *e)
{
	const struct dl_dead *d;
	uint64_t cur;

	if (r->klen > WIRE_MAX_KEY || r->flen > WIRE_MAX_KEY)
		return cs_errf(e, "key of %zu bytes exceeds %u",
		    r->klen > r->flen ? r->klen : r->flen, WIRE_MAX_KEY);
	if (r->type == DL_DEAD) {
		if (r->code != DL_DEAD_NOT_INT && r->code != DL_DEAD_OVERFLOW)
			return cs_errf(e, "dead letter with unknown reason %d",
			    r->code);
		cur = dl_wm_get(&st->applied, r->peer);
		if (cur == UINT64_MAX || r->seq != cur + 1)
			return cs_errf(e, "dead letter seq %" PRIu64 " from %s, "
			    "expected %" PRIu64, r->seq, r->peer, cur + 1);
		return 0;
	}
	if ((d = dl_dead_find(st, r->peer, r->seq)) == NULL)
		return cs_errf(e, "no dead letter %s seq %" PRIu64 " to "
		    "resolve", r->peer, r->seq);
	if (d->resolved)
		return cs_errf(e, "dead letter %s seq %" PRIu64 " is already "
		    "%s", r->peer, r->seq, dl_resolve_name(d->resolved));
	if (r->code == DL_RESOLVE_RETRY) {
		if (r->klen != d->klen || (r->klen > 0 &&
		    memcmp(r->key, d->key, r->klen) != 0))
			return cs_errf(e, "retry of dead letter %s seq %" PRIu64
			    " names another key", r->peer, r->seq);
		if (r->vlen > WIRE_MAX_VALUE)
			return cs_errf(e, "value of %zu bytes exceeds %u",
			    r->vlen, WIRE_MAX_VALUE);
		return 0;
	}
	if (r->code != DL_RESOLVE_REFUND)
		return cs_errf(e, "dead letter resolved in unknown way %d",
		    r->code);
	if (r->msglen > DL_MAX_MSG)
		return cs_errf(e, "message of %zu bytes exceeds %u", r->msglen,
		    DL_MAX_MSG);
	cur = dl_wm_get(&st->sent, r->peer);
	if (cur == UINT64_MAX || r->sseq != cur + 1)
		return cs_errf(e, "refund seq %" PRIu64 " to %s, expected %"
		    PRIu64, r->sseq, r->peer, cur + 1);
	return 0;
}

/* The watermark set a WM record of kind k sets, or NULL. */
static struct wm_set *
wm_kind_set(struct dl_state *st, int k)
{
	switch (k) {
	case DL_WM_SENT:
		return &st->sent;
	case DL_WM_APPLIED:
		return &st->applied;
	case DL_WM_ACKED:
		return &st->acked;
	default:
		return NULL;
	}
}

/* A dead letter carried over by a compaction (LETTER). */
static int
letter_check(const struct dl_state *st, const struct dl_record *r,
    struct cs_err *e)
{
	if (r->code != DL_DEAD_NOT_INT && r->code != DL_DEAD_OVERFLOW)
		return cs_errf(e, "dead letter with unknown reason %d",
		    r->code);
	if (r->how != 0 && r->how != DL_RESOLVE_RETRY &&
	    r->how != DL_RESOLVE_REFUND)
		return cs_errf(e, "dead letter resolved in unknown way %d",
		    r->how);
	if (r->flen > WIRE_MAX_KEY)
		return cs_errf(e, "key of %zu bytes exceeds %u", r->flen,
		    WIRE_MAX_KEY);
	if (r->seq == 0 || r->seq > dl_wm_get(&st->applied, r->peer) ||
	    dl_dead_find(st, r->peer, r->seq) != NULL)
		return cs_errf(e, "dead letter %s seq %" PRIu64 " not "
		    "applied or listed twice", r->peer, r->seq);
	return 0;
}

/* The entries of a REQS record: each checked, and added to t when it is
 * not NULL (room reserved by the caller). 0, or -1 with e set. */
static int
reqs_walk(const struct dl_record *r, struct reqtab *t, struct cs_err *e)
{
	const uint8_t *id, *v;
	struct rbuf rb;
	uint64_t digest;
	uint32_t i;
	size_t vl;

	rbuf_init(&rb, r->reqs, r->reqslen);
	for (i = 0; i < r->nreqs; i++) {
		id = rb.len - rb.off >= REQ_ID_LEN && !rb.err ?
		    rb.p + rb.off : NULL;
		rb.off += id != NULL ? REQ_ID_LEN : 0;
		digest = rbuf_u64(&rb);
		v = rbuf_bytes(&rb, &vl, REQ_VAL_MAX);
		if (id == NULL || rb.err)
			return cs_errf(e, "malformed request id entry %u", i);
		if (t != NULL)
			(void)reqtab_add(t, id, digest, v, vl);
	}
	if (!rbuf_done(&rb))
		return cs_errf(e, "request id record holds more than its "
		    "%u entries", r->nreqs);
	return 0;
}

/* The rules of a rewritten file's base section (datalog.h): GEN comes
 * first, WM and KEPT only inside the section, each WM once. */
static int
base_check(const struct dl_state *st, const struct dl_record *r,
    struct cs_err *e)
{
	const struct wm_set *ws;

	switch (r->type) {
	case DL_GEN:
		if (st->records != 0 || r->seq == 0 || r->gen_id == NULL)
			return cs_errf(e, "generation record not first in "
			    "the file");
		return 0;
	case DL_WM:
	case DL_KEPT:
	case DL_LETTER:
	case DL_REQS:
	case DL_HELD:
		if (!st->base_open)
			return cs_errf(e, "base record outside the base "
			    "section");
		if (r->type == DL_KEPT || r->type == DL_HELD)
			return 0;
		if (r->type == DL_REQS)
			return reqs_walk(r, NULL, e);
		if (r->type == DL_LETTER)
			return letter_check(st, r, e);
		ws = wm_kind_set((struct dl_state *)st, r->wm_kind);
		if (ws == NULL)
			return cs_errf(e, "unknown watermark kind %u",
			    (unsigned)r->wm_kind);
		if (dl_wm_get(ws, r->peer) != 0 || r->seq == 0)
			return cs_errf(e, "watermark of %s set twice or to 0",
			    r->peer);
		if (r->wm_kind == DL_WM_ACKED &&
		    r->seq > dl_wm_get(&st->sent, r->peer))
			return cs_errf(e, "acked seq %" PRIu64 " of %s beyond "
			    "sent seq %" PRIu64, r->seq, r->peer,
			    dl_wm_get(&st->sent, r->peer));
		return 0;
	default:
		return 0;
	}
}

int
dl_state_check(const struct dl_state *st, const struct dl_record *r,
    struct cs_err *e)
{
	uint64_t cur;

	switch (r->type) {
	case DL_PUT:
	case DL_DEL:
		break;
	case DL_SEND:
	case DL_APPLY:
	case DL_ACK:
	case DL_DEAD:
	case DL_RESOLVE:
	case DL_WM:
	case DL_KEPT:
	case DL_LETTER:
		if (!valid_name(r->peer))
			return cs_errf(e, "invalid peer name");
		break;
	case DL_INBOX:
	case DL_HELD:
		if (!valid_name(r->peer))
			return cs_errf(e, "invalid peer name");
		if (dl_inbox_check(st, r, e) == -1)
			return -1;
		break;
	case DL_GEN:
	case DL_REQS:
		break;
	case DL_TXN:
	case DL_KVER:
		if (dl_txn_check(st, r, e) == -1)
			return -1;
		break;
	case DL_FENCE:
		if (r->code > 1)
			return cs_errf(e, "fence record with state %u",
			    (unsigned)r->code);
		break;
	default:
		return cs_errf(e, "unknown record type %d", (int)r->type);
	}
	if (r->req_id != NULL && r->vlen > REQ_VAL_MAX)
		return cs_errf(e, "value of %zu bytes with a request id "
		    "(at most %d)", r->vlen, REQ_VAL_MAX);
	if (r->type == DL_DEAD || r->type == DL_RESOLVE)
		return check_dead(st, r, e);
	if (base_check(st, r, e) == -1)
		return -1;
	if (r->type != DL_ACK && r->klen > WIRE_MAX_KEY)
		return cs_errf(e, "key of %zu bytes exceeds %u", r->klen,
		    WIRE_MAX_KEY);
	if ((r->type == DL_PUT || r->type == DL_SEND || r->type == DL_APPLY) &&
	    r->vlen > WIRE_MAX_VALUE)
		return cs_errf(e, "value of %zu bytes exceeds %u", r->vlen,
		    WIRE_MAX_VALUE);
	switch (r->type) {
	case DL_SEND:
	case DL_KEPT:
		if (r->msglen > DL_MAX_MSG)
			return cs_errf(e, "message of %zu bytes exceeds %u",
			    r->msglen, DL_MAX_MSG);
		cur = dl_wm_get(&st->sent, r->peer);
		if (cur == UINT64_MAX || r->seq != cur + 1)
			return cs_errf(e, "send seq %" PRIu64 " to %s, expected %"
			    PRIu64, r->seq, r->peer, cur + 1);
		break;
	case DL_APPLY:
		cur = dl_wm_get(&st->applied, r->peer);
		if (cur == UINT64_MAX || r->seq != cur + 1)
			return cs_errf(e, "apply seq %" PRIu64 " from %s, "
			    "expected %" PRIu64, r->seq, r->peer, cur + 1);
		break;
	case DL_ACK:
		cur = dl_wm_get(&st->sent, r->peer);
		if (r->seq > cur)
			return cs_errf(e, "ack seq %" PRIu64 " from %s beyond "
			    "sent seq %" PRIu64, r->seq, r->peer, cur);
		break;
	default:
		break;
	}
	return 0;
}

int
dl_tracked(const struct dl_state *st, const uint8_t *key, size_t klen)
{
	return st->kv != NULL &&
	    (st->keep == NULL || st->keep(st->keep_ctx, key, klen));
}

/* Does the state keep r's key and value? */
static int
tracked(const struct dl_state *st, const struct dl_record *r)
{
	return dl_tracked(st, r->key, r->klen);
}

/* Drop the sends to dst with seq <= ack, keeping log order. */
static void
drop_acked(struct dl_state *st, const char *dst, uint64_t ack)
{
	size_t i, k = 0;

	for (i = 0; i < st->nsends; i++) {
		if (st->sends[i].seq <= ack &&
		    strcmp(st->sends[i].peer, dst) == 0) {
			free(st->sends[i].msg);
			continue;
		}
		st->sends[k++] = st->sends[i];
	}
	st->nsends = k;
}

/* Whether send_from keeps the SEND seq to dst (see dl_state). */
static int
keep_send(const struct wm_set *from, const char *dst, uint64_t seq)
{
	uint64_t lo = dl_wm_get(from, dst);

	return lo != 0 && seq >= lo;
}

/* A message sent on self->peer (a SEND, or a RESOLVE's refund), and for
 * a SEND its key's new value: everything that can fail is allocated
 * before anything changes. */
static int
apply_send(struct dl_state *st, const struct dl_record *r, uint64_t seq)
{
	struct dl_send *v, *s;
	uint8_t *msg = NULL;
	size_t ncap;
	int rc = -1;

	if (st->no_sends) {
		if (wm_reserve(&st->sent) == -1 ||
		    wm_reserve(&st->sendoff) == -1 || (r->type == DL_SEND &&
		    tracked(st, r) &&
		    kvmap_put(st->kv, r->key, r->klen, r->val, r->vlen) == -1))
			goto out;
		if (seq == dl_wm_get(&st->acked, r->peer) + 1)
			(void)dl_wm_put(&st->sendoff, r->peer, st->rec_off);
		(void)dl_wm_put_chain(&st->sent, r->peer, seq, r->chain);
		rc = 0;
		goto out;
	}
	if (st->send_from != NULL && !keep_send(st->send_from, r->peer, seq)) {
		if (wm_reserve(&st->sent) == -1 || (r->type == DL_SEND &&
		    tracked(st, r) &&
		    kvmap_put(st->kv, r->key, r->klen, r->val, r->vlen) == -1))
			goto out;
		(void)dl_wm_put_chain(&st->sent, r->peer, seq, r->chain);
		rc = 0;
		goto out;
	}
	if (st->nsends == st->capsends) {
		ncap = st->capsends ? st->capsends * 2 : 16;
		if ((v = realloc(st->sends, ncap * sizeof(*v))) == NULL)
			goto out;
		st->sends = v;
		st->capsends = ncap;
	}
	if ((msg = malloc(r->msglen + 1)) == NULL)
		goto out;
	if (r->msglen > 0)
		memcpy(msg, r->msg, r->msglen);
	if (wm_reserve(&st->sent) == -1)
		goto out;
	if (r->type == DL_SEND && tracked(st, r) &&
	    kvmap_put(st->kv, r->key, r->klen, r->val, r->vlen) == -1)
		goto out;
	/* Cannot fail now: the peer is valid and there is room. */
	(void)dl_wm_put_chain(&st->sent, r->peer, seq, r->chain);
	s = &st->sends[st->nsends++];
	memcpy(s->peer, r->peer, strlen(r->peer) + 1);
	s->seq = seq;
	s->msg = msg;
	s->len = r->msglen;
	s->chain_known = r->chain != NULL;
	memset(s->chain, 0, sizeof(s->chain));
	if (r->chain != NULL)
		memcpy(s->chain, r->chain, DL_CHAIN_LEN);
	msg = NULL;
	rc = 0;
out:
	free(msg);
	return rc;
}

int
dl_apply_send(struct dl_state *st, const struct dl_record *r, uint64_t seq)
{
	return apply_send(st, r, seq);
}

/* The chain at seq k of the channel to dst, for an ACK of k: the sent
 * chain, or the chain of the kept SEND k; NULL when unknown. */
static const uint8_t *
chain_for_ack(const struct dl_state *st, const char *dst, uint64_t k)
{
	size_t i;

	if (k == dl_wm_get(&st->sent, dst))
		return dl_wm_chain(&st->sent, dst);
	for (i = 0; i < st->nsends; i++)
		if (st->sends[i].seq == k && strcmp(st->sends[i].peer, dst) == 0)
			return st->sends[i].chain_known ? st->sends[i].chain :
			    NULL;
	return NULL;
}

/* The one place where an incoming channel's applied seq advances, with
 * its history chain (a record type that consumes a message in another
 * way must come through here too). -1 when out of memory. */
static int
advance_applied(struct dl_state *st, const char *src, uint64_t seq,
    const uint8_t *chain)
{
	return dl_wm_put_chain(&st->applied, src, seq, chain);
}

static uint8_t *
dup_bytes(const uint8_t *p, size_t n)
{
	uint8_t *d = malloc(n ? n : 1);

	if (d != NULL && n > 0)
		memcpy(d, p, n);
	return d;
}

/* DEAD: consume seq from the peer and keep the dead letter; LETTER: keep
 * the dead letter a compaction carried over, with its resolution. */
static int
apply_dead(struct dl_state *st, const struct dl_record *r)
{
	struct dl_dead *v, *d;
	uint8_t *key = NULL, *from = NULL;
	size_t ncap;
	int rc = -1;

	if (st->ndead == st->capdead) {
		ncap = st->capdead ? st->capdead * 2 : 8;
		if ((v = realloc(st->dead, ncap * sizeof(*v))) == NULL)
			goto out;
		st->dead = v;
		st->capdead = ncap;
	}
	if ((key = dup_bytes(r->key, r->klen)) == NULL ||
	    (r->flen > 0 && (from = dup_bytes(r->from, r->flen)) == NULL) ||
	    wm_reserve(&st->applied) == -1)
		goto out;
	/* Cannot fail now: the peer is valid and there is room. */
	if (r->type == DL_DEAD)
		(void)advance_applied(st, r->peer, r->seq, r->chain);
	d = &st->dead[st->ndead++];
	memset(d, 0, sizeof(*d));
	memcpy(d->peer, r->peer, strlen(r->peer) + 1);
	d->seq = r->seq;
	d->reason = r->code;
	d->amount = r->amount;
	d->key = key;
	d->klen = r->klen;
	d->from = from;
	d->flen = r->flen;
	key = from = NULL;
	if (r->type == DL_LETTER) {
		d->resolved = r->how;
		d->refund_seq = r->sseq;
	}
	if (!d->resolved)
		st->nopen++;
	rc = 0;
out:
	free(key);
	free(from);
	return rc;
}

/* RESOLVE: its effect (the credit, or the refund's send), then mark the
 * dead letter resolved, which cannot fail. */
static int
apply_resolve(struct dl_state *st, const struct dl_record *r)
{
	struct dl_dead *d = (struct dl_dead *)dl_dead_find(st, r->peer,
	    r->seq);

	assert(d != NULL && !d->resolved);
	if (r->code == DL_RESOLVE_RETRY) {
		if (tracked(st, r) &&
		    kvmap_put(st->kv, r->key, r->klen, r->val, r->vlen) == -1)
			return -1;
	} else {
		if (apply_send(st, r, r->sseq) == -1)
			return -1;
		d->refund_seq = r->sseq;
	}
	d->resolved = r->code;
	st->nopen--;
	return 0;
}

/* Remember a TXN's request id with its reply (built from its ADDs, at
 * most REQ_VAL_MAX bytes: dl_txn_check). Room was reserved. */
static int
req_add_txn(struct dl_state *st, const struct dl_record *r)
{
	uint8_t b[REQ_VAL_MAX];
	struct wbuf w;
	int rc = -1;

	wbuf_init(&w);
	if (dl_txn_reply(r, &w) == 0 && w.len <= sizeof(b)) {
		memcpy(b, w.data, w.len);
		rc = reqtab_add(&st->reqs, r->req_id, r->req_digest, b, w.len);
	}
	wbuf_free(&w);
	return rc;
}

int
dl_state_apply(struct dl_state *st, const struct dl_record *r,
    struct cs_err *e)
{
	uint8_t ack_chain[DL_CHAIN_LEN];
	const uint8_t *ac;
	int rc = -1;

	if (dl_state_check(st, r, e) == -1)
		goto out;
	/* Room first: once the record's effect is in, its id must go in. */
	if (st->track_reqs && reqtab_reserve(&st->reqs, r->type == DL_REQS ?
	    r->nreqs : r->req_id != NULL) == -1)
		goto oom;
	switch (r->type) {
	case DL_PUT:
		if (!tracked(st, r))
			break;
		/* The value's bytes follow the record header, the type byte,
		 * the key and two u32 length prefixes (dl_encode). */
		if (st->by_ref && r->vlen > DL_INLINE_MAX) {
			if (kvmap_put_ref(st->kv, r->key, r->klen, st->rec_off +
			    DL_REC_HDR_LEN + 1 + 4 + r->klen + 4, r->vlen) == -1)
				goto oom;
		} else if (kvmap_put(st->kv, r->key, r->klen, r->val,
		    r->vlen) == -1)
			goto oom;
		break;
	case DL_DEL:
		if (st->kv != NULL)
			(void)kvmap_del(st->kv, r->key, r->klen);
		break;
	case DL_SEND:
		if (apply_send(st, r, r->seq) == -1)
			goto oom;
		break;
	case DL_DEAD:
		if (apply_dead(st, r) == -1)
			goto oom;
		break;
	case DL_RESOLVE:
		if (apply_resolve(st, r) == -1)
			goto oom;
		break;
	case DL_APPLY:
		if (wm_reserve(&st->applied) == -1 || (tracked(st, r) &&
		    kvmap_put(st->kv, r->key, r->klen, r->val, r->vlen) == -1))
			goto oom;
		(void)advance_applied(st, r->peer, r->seq, r->chain);
		break;
	case DL_INBOX:
		if (wm_reserve(&st->applied) == -1 || dl_inbox_add(st, r->peer,
		    r->seq, r->msg, r->msglen) == -1)
			goto oom;
		(void)advance_applied(st, r->peer, r->seq, r->chain);
		break;
	case DL_HELD:
		if (dl_inbox_add(st, r->peer, r->seq, r->msg, r->msglen) == -1)
			goto oom;
		break;
	case DL_ACK:
		/* An older ACK than the one already recorded is harmless: acks
		 * are cumulative, so it says nothing new. */
		if (r->seq <= dl_wm_get(&st->acked, r->peer))
			break;
		/* The record's own chain, else a kept SEND's. A copy: the
		 * sent entry's chain may move with the set. */
		if ((ac = r->chain) != NULL ||
		    (ac = chain_for_ack(st, r->peer, r->seq)) != NULL)
			memcpy(ack_chain, ac, sizeof(ack_chain));
		if (dl_wm_put_chain(&st->acked, r->peer, r->seq,
		    ac != NULL ? ack_chain : NULL) == -1)
			goto oom;
		if (!st->keep_all_sends && !st->no_sends)
			drop_acked(st, r->peer, r->seq);
		break;
	case DL_GEN:
		st->gen = r->seq;
		memcpy(st->gen_id, r->gen_id, DL_GEN_ID_LEN);
		st->gen_prev = r->gen_prev;
		st->gen_time = r->gen_time;
		break;
	case DL_WM:
		if (dl_wm_put_chain(wm_kind_set(st, r->wm_kind), r->peer,
		    r->seq, r->chain) == -1)
			goto oom;
		break;
	case DL_KEPT:
		if (apply_send(st, r, r->seq) == -1)
			goto oom;
		break;
	case DL_LETTER:
		if (apply_dead(st, r) == -1)
			goto oom;
		break;
	case DL_FENCE:
		st->fenced = r->code;
		st->fence_snap = r->code ? r->seq : 0;
		break;
	case DL_REQS:
		if (st->track_reqs)
			(void)reqs_walk(r, &st->reqs, NULL);
		break;
	case DL_TXN:
	case DL_KVER:
		if (dl_txn_apply(st, r) == -1)
			goto oom;
		break;
	}
	if (st->track_reqs && r->req_id != NULL && r->type == DL_TXN)
		(void)req_add_txn(st, r);
	else if (st->track_reqs && r->req_id != NULL)
		(void)reqtab_add(&st->reqs, r->req_id, r->req_digest, r->val,
		    r->vlen);
	st->base_open = r->type == DL_GEN || (st->base_open &&
	    (r->type == DL_WM || r->type == DL_KEPT || r->type == DL_LETTER ||
	    r->type == DL_REQS || r->type == DL_HELD));
	st->records++;
	rc = 0;
	goto out;
oom:
	cs_errc(e, CS_E_NOMEM, "out of memory");
out:
	return rc;
}

/* --- integers -------------------------------------------------------------- */

/* Strict decimal int64: optional '-', then 1..19 digits, nothing else. */
static int
parse_i64(const uint8_t *p, size_t n, int64_t *out)
{
	int64_t v = 0;
	size_t i = 0;
	int neg = 0;

	if (n == 0 || n > 20)
		return -1;
	if (p[0] == '-') {
		neg = 1;
		i = 1;
	}
	if (i == n)
		return -1;
	/* Accumulate negatively: -INT64_MIN does not fit. */
	for (; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_sub_overflow(v, p[i] - '0', &v))
			return -1;
	}
	if (!neg) {
		if (v == INT64_MIN)
			return -1;
		v = -v;
	}
	*out = v;
	return 0;
}

int
dl_int_parse(const uint8_t *p, size_t n, int64_t *out)
{
	return parse_i64(p, n, out);
}

/* v in decimal into out (at least 21 bytes), NUL-terminated, as "%" PRId64
 * prints it; returns its length. Every transfer formats two balances:
 * snprintf's format parsing cost more than the digits. */
static size_t
fmt_i64(char *out, int64_t v)
{
	char tmp[20];
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	size_t n = 0, i = 0;

	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		out[i++] = '-';
	while (n > 0)
		out[i++] = tmp[--n];
	out[i] = '\0';
	return i;
}

/* A printable rendering of a key for error messages, cut at 60 bytes. */
static void
key_label(const void *key, size_t klen, char out[64])
{
	const uint8_t *k = key;
	size_t i;

	for (i = 0; i < klen && i < 60; i++)
		out[i] = (k[i] >= 0x20 && k[i] < 0x7f) ? (char)k[i] : '?';
	out[i] = '\0';
	if (i < klen)
		memcpy(out + 57, "...", 4);
}

int
dl_int_add(const struct dl_state *st, const void *key, size_t klen,
    int64_t delta, char out[24], int64_t *result, struct cs_err *e)
{
	const uint8_t *val;
	char label[64];
	int64_t cur = 0, sum;
	size_t vlen;

	if (kvmap_get(st->kv, key, klen, &val, &vlen) &&
	    parse_i64(val, vlen, &cur) == -1) {
		key_label(key, klen, label);
		return cs_errf(e, "value of key '%s' is not an integer", label);
	}
	if (__builtin_add_overflow(cur, delta, &sum)) {
		key_label(key, klen, label);
		return cs_errf(e, "integer overflow: %" PRId64 " + %" PRId64
		    " (key '%s')", cur, delta, label);
	}
	fmt_i64(out, sum);
	if (result != NULL)
		*result = sum;
	return 0;
}

/* dl_credit for an application message: an INBOX record. */
static int
app_msg(const struct dl_state *st, const char *src, uint64_t seq,
    const uint8_t *msg, size_t n, struct dl_record *out,
    struct dl_credit_buf *buf, struct cs_err *e)
{
	struct chmsg_app m;
	int known;

	if (chmsg_decode_app(msg, n, &m) == -1)
		return cs_errf(e, "seq %" PRIu64 " from %s is not a valid "
		    "application message", seq, src);
	if (chain_after(dl_wm_chain(&st->applied, src), seq, msg, n, buf->chain,
	    &known) == -1)
		return cs_errf(e, "sha256 failed");
	memset(out, 0, sizeof(*out));
	out->type = DL_INBOX;
	out->peer = src;
	out->seq = seq;
	out->msg = msg;
	out->msglen = n;
	out->chain = known ? buf->chain : NULL;
	return 0;
}

int
dl_credit(const struct dl_state *st, const char *src, uint64_t seq,
    const uint8_t *msg, size_t n, struct dl_record *out,
    struct dl_credit_buf *buf, struct cs_err *e)
{
	const uint8_t *val;
	struct chmsg m;
	int64_t cur = 0, sum;
	size_t vlen;
	int known;

	if (chmsg_op(msg, n) == CHMSG_APP)
		return app_msg(st, src, seq, msg, n, out, buf, e);
	if (chmsg_decode(msg, n, &m) == -1)
		return cs_errf(e, "seq %" PRIu64 " from %s is not a valid "
		    "channel message", seq, src);
	if (chain_after(dl_wm_chain(&st->applied, src), seq, msg, n, buf->chain,
	    &known) == -1)
		return cs_errf(e, "sha256 failed");
	memset(out, 0, sizeof(*out));
	out->peer = src;
	out->seq = seq;
	out->key = m.key;
	out->klen = m.klen;
	out->chain = known ? buf->chain : NULL;
	if (kvmap_get(st->kv, m.key, m.klen, &val, &vlen) &&
	    (val == NULL || parse_i64(val, vlen, &cur) == -1)) {
		/* A value kept by reference is longer than any integer. */
		out->code = DL_DEAD_NOT_INT;
	} else if (__builtin_add_overflow(cur, m.amount, &sum)) {
		out->code = DL_DEAD_OVERFLOW;
	} else {
		out->type = DL_APPLY;
		out->val = (const uint8_t *)buf->val;
		out->vlen = fmt_i64(buf->val, sum);
		return 0;
	}
	out->type = DL_DEAD;
	out->amount = m.amount;
	out->from = m.from;
	out->flen = m.flen;
	return 0;
}

/* --- encoding and replay -------------------------------------------------- */

/* The optional request field of PUT, DEL and SEND. */
static void
put_req(struct wbuf *out, const struct dl_record *r)
{
	if (r->req_id == NULL)
		return;
	wbuf_put_raw(out, r->req_id, REQ_ID_LEN);
	wbuf_put_u64(out, r->req_digest);
}

void
dl_encode_reqs(struct wbuf *out, const struct reqtab *t, size_t i, size_t n)
{
	struct wbuf ents;
	struct dl_record r;
	const struct reqent *en;
	size_t k;

	wbuf_init(&ents);
	for (k = i; k < i + n; k++) {
		en = reqtab_at(t, k);
		wbuf_put_raw(&ents, en->id, REQ_ID_LEN);
		wbuf_put_u64(&ents, en->digest);
		wbuf_put_bytes(&ents, en->val, en->vlen);
	}
	memset(&r, 0, sizeof(r));
	r.type = DL_REQS;
	r.nreqs = (uint32_t)n;
	r.reqs = ents.data;
	r.reqslen = ents.len;
	if (ents.oom)
		out->oom = 1;
	else
		dl_encode(out, &r);
	wbuf_free(&ents);
}

void
dl_encode(struct wbuf *out, const struct dl_record *r)
{
	size_t start = out->len, len;
	uint8_t *p;

	wbuf_put_u32(out, 0);		/* len and crc, filled in below */
	wbuf_put_u32(out, 0);
	wbuf_put_u8(out, (uint8_t)r->type);
	switch (r->type) {
	case DL_PUT:
		wbuf_put_bytes(out, r->key, r->klen);
		wbuf_put_bytes(out, r->val, r->vlen);
		put_req(out, r);
		break;
	case DL_DEL:
		wbuf_put_bytes(out, r->key, r->klen);
		put_req(out, r);
		break;
	case DL_TXN:
		wbuf_put_u32(out, r->nops);
		wbuf_put_raw(out, r->ops, r->opslen);
		put_req(out, r);
		break;
	case DL_KVER:
		wbuf_put_bytes(out, r->key, r->klen);
		wbuf_put_u64(out, r->seq);
		break;
	case DL_SEND:
		wbuf_put_str(out, r->peer);
		wbuf_put_u64(out, r->seq);
		wbuf_put_bytes(out, r->key, r->klen);
		wbuf_put_bytes(out, r->val, r->vlen);
		wbuf_put_bytes(out, r->msg, r->msglen);
		if (r->chain != NULL)
			wbuf_put_raw(out, r->chain, DL_CHAIN_LEN);
		put_req(out, r);
		break;
	case DL_APPLY:
		wbuf_put_str(out, r->peer);
		wbuf_put_u64(out, r->seq);
		wbuf_put_bytes(out, r->key, r->klen);
		wbuf_put_bytes(out, r->val, r->vlen);
		if (r->chain != NULL)
			wbuf_put_raw(out, r->chain, DL_CHAIN_LEN);
		break;
	case DL_ACK:
		wbuf_put_str(out, r->peer);
		wbuf_put_u64(out, r->seq);
		if (r->chain != NULL)
			wbuf_put_raw(out, r->chain, DL_CHAIN_LEN);
		break;
	case DL_DEAD:
		wbuf_put_str(out, r->peer);
		wbuf_put_u64(out, r->seq);
		wbuf_put_u8(out, r->code);
		wbuf_put_bytes(out, r->key, r->klen);
		wbuf_put_i64(out, r->amount);
		wbuf_put_bytes(out, r->from, r->flen);
		if (r->chain != NULL)
			wbuf_put_raw(out, r->chain, DL_CHAIN_LEN);
		break;
	case DL_RESOLVE:
		wbuf_put_str(out, r->peer);
		wbuf_put_u64(out, r->seq);
		wbuf_put_u8(out, r->code);
		if (r->code == DL_RESOLVE_RETRY) {
			wbuf_put_bytes(out, r->key, r->klen);
			wbuf_put_bytes(out, r->val, r->vlen);
		} else {
			wbuf_put_u64(out, r->sseq);
			wbuf_put_bytes(out, r->msg, r->msglen);
			if (r->chain != NULL)
				wbuf_put_raw(out, r->chain, DL_CHAIN_LEN);
		}
		break;
	case DL_GEN:
		wbuf_put_u64(out, r->seq);
		wbuf_put_raw(out, r->gen_id, DL_GEN_ID_LEN);
		wbuf_put_u64(out, r->gen_prev);
		wbuf_put_u64(out, r->gen_time);
		break;
	case DL_WM:
		wbuf_put_u8(out, r->wm_kind);
		wbuf_put_str(out, r->peer);
		wbuf_put_u64(out, r->seq);
		if (r->chain != NULL)
			wbuf_put_raw(out, r->chain, DL_CHAIN_LEN);
		break;
	case DL_KEPT:
		wbuf_put_str(out, r->peer);
		wbuf_put_u64(out, r->seq);
		wbuf_put_bytes(out, r->msg, r->msglen);
		if (r->chain != NULL)
			wbuf_put_raw(out, r->chain, DL_CHAIN_LEN);
		break;
	case DL_LETTER:
		wbuf_put_str(out, r->peer);
		wbuf_put_u64(out, r->seq);
		wbuf_put_u8(out, r->code);
		wbuf_put_u8(out, r->how);
		wbuf_put_i64(out, r->amount);
		wbuf_put_bytes(out, r->key, r->klen);
		wbuf_put_bytes(out, r->from, r->flen);
		wbuf_put_u64(out, r->sseq);
		break;
	case DL_FENCE:
		wbuf_put_u8(out, r->code);
		wbuf_put_u64(out, r->seq);
		break;
	case DL_REQS:
		wbuf_put_u32(out, r->nreqs);
		wbuf_put_raw(out, r->reqs, r->reqslen);
		break;
	case DL_INBOX:
	case DL_HELD:
		wbuf_put_str(out, r->peer);
		wbuf_put_u64(out, r->seq);
		wbuf_put_bytes(out, r->msg, r->msglen);
		if (r->type == DL_INBOX && r->chain != NULL)
			wbuf_put_raw(out, r->chain, DL_CHAIN_LEN);
		break;
	}
	if (out->oom)
		return;
	p = out->data + start;
	len = out->len - start - DL_REC_HDR_LEN;
	assert(len <= DL_MAX_RECORD);
	buf_le32_put(p, (uint32_t)len);
	buf_le32_put(p + 4, dl_rec_crc(p + DL_REC_HDR_LEN, len));
}

void
dl_encode_put_head(struct wbuf *out, const struct dl_record *r)
{
	size_t start = out->len, len;
	uint8_t *p;

	assert(r->type == DL_PUT);
	wbuf_put_u32(out, 0);		/* len and crc, filled in below */
	wbuf_put_u32(out, 0);
	wbuf_put_u8(out, (uint8_t)r->type);
	wbuf_put_bytes(out, r->key, r->klen);
	if (r->vlen > UINT32_MAX)
		out->oom = 1;
	wbuf_put_u32(out, (uint32_t)r->vlen);
	if (out->oom)
		return;
	p = out->data + start;
	len = out->len - start - DL_REC_HDR_LEN;
	assert(len + r->vlen <= DL_MAX_RECORD);
	buf_le32_put(p, (uint32_t)(len + r->vlen));
	buf_le32_put(p + 4, dl_rec_crc(p + DL_REC_HDR_LEN, len));
}

uint32_t
dl_put_head_crc(const uint8_t *key, size_t klen, size_t vlen)
{
	uint8_t b[5];
	uint32_t crc;

	b[0] = DL_PUT;
	buf_le32_put(b + 1, (uint32_t)klen);
	crc = dl_rec_crc(b, sizeof(b));
	crc = dl_rec_crc_more(crc, key, klen);
	buf_le32_put(b, (uint32_t)vlen);
	return dl_rec_crc_more(crc, b, 4);
}

/* n raw bytes at the reader's position, or NULL (and rb->err). */
static const uint8_t *
raw_field(struct rbuf *rb, size_t n)
{
	const uint8_t *p;

	if (rb->err || rb->len - rb->off < n) {
		rb->err = 1;
		return NULL;
	}
	p = rb->p + rb->off;
	rb->off += n;
	return p;
}

/* Read the fields of a record (type byte first) into r; strings point
 * into the buffer or into peer. Leaves errors in rb->err. */
static void
read_fields(struct rbuf *rb, struct dl_record *r, char peer[NAME_MAX_LEN + 1])
{
	memset(r, 0, sizeof(*r));
	peer[0] = '\0';
	r->type = rbuf_u8(rb);
	switch (r->type) {
	case DL_PUT:
		r->key = rbuf_bytes(rb, &r->klen, WIRE_MAX_KEY);
		r->val = rbuf_bytes(rb, &r->vlen, WIRE_MAX_VALUE);
		break;
	case DL_DEL:
		r->key = rbuf_bytes(rb, &r->klen, WIRE_MAX_KEY);
		break;
	case DL_SEND:
		rbuf_str(rb, peer, NAME_MAX_LEN + 1);
		r->seq = rbuf_u64(rb);
		r->key = rbuf_bytes(rb, &r->klen, WIRE_MAX_KEY);
		r->val = rbuf_bytes(rb, &r->vlen, WIRE_MAX_VALUE);
		r->msg = rbuf_bytes(rb, &r->msglen, DL_MAX_MSG);
		break;
	case DL_APPLY:
		rbuf_str(rb, peer, NAME_MAX_LEN + 1);
		r->seq = rbuf_u64(rb);
		r->key = rbuf_bytes(rb, &r->klen, WIRE_MAX_KEY);
		r->val = rbuf_bytes(rb, &r->vlen, WIRE_MAX_VALUE);
		break;
	case DL_ACK:
		rbuf_str(rb, peer, NAME_MAX_LEN + 1);
		r->seq = rbuf_u64(rb);
		break;
	case DL_DEAD:
		rbuf_str(rb, peer, NAME_MAX_LEN + 1);
		r->seq = rbuf_u64(rb);
		r->code = rbuf_u8(rb);
		r->key = rbuf_bytes(rb, &r->klen, WIRE_MAX_KEY);
		r->amount = rbuf_i64(rb);
		r->from = rbuf_bytes(rb, &r->flen, WIRE_MAX_KEY);
		break;
	case DL_RESOLVE:
		rbuf_str(rb, peer, NAME_MAX_LEN + 1);
		r->seq = rbuf_u64(rb);
		r->code = rbuf_u8(rb);
		if (r->code == DL_RESOLVE_RETRY) {
			r->key = rbuf_bytes(rb, &r->klen, WIRE_MAX_KEY);
			r->val = rbuf_bytes(rb, &r->vlen, WIRE_MAX_VALUE);
		} else {
			r->sseq = rbuf_u64(rb);
			r->msg = rbuf_bytes(rb, &r->msglen, DL_MAX_MSG);
		}
		break;
	case DL_GEN:
		r->seq = rbuf_u64(rb);
		r->gen_id = raw_field(rb, DL_GEN_ID_LEN);
		r->gen_prev = rbuf_u64(rb);
		r->gen_time = rbuf_u64(rb);
		break;
	case DL_WM:
		r->wm_kind = rbuf_u8(rb);
		rbuf_str(rb, peer, NAME_MAX_LEN + 1);
		r->seq = rbuf_u64(rb);
		break;
	case DL_KEPT:
		rbuf_str(rb, peer, NAME_MAX_LEN + 1);
		r->seq = rbuf_u64(rb);
		r->msg = rbuf_bytes(rb, &r->msglen, DL_MAX_MSG);
		break;
	case DL_LETTER:
		rbuf_str(rb, peer, NAME_MAX_LEN + 1);
		r->seq = rbuf_u64(rb);
		r->code = rbuf_u8(rb);
		r->how = rbuf_u8(rb);
		r->amount = rbuf_i64(rb);
		r->key = rbuf_bytes(rb, &r->klen, WIRE_MAX_KEY);
		r->from = rbuf_bytes(rb, &r->flen, WIRE_MAX_KEY);
		r->sseq = rbuf_u64(rb);
		break;
	case DL_FENCE:
		r->code = rbuf_u8(rb);
		r->seq = rbuf_u64(rb);
		break;
	case DL_TXN:
		r->nops = rbuf_u32(rb);
		r->ops = rb->p + rb->off;
		r->opslen = dl_txn_skip(rb, r->nops);
		break;
	case DL_KVER:
		r->key = rbuf_bytes(rb, &r->klen, WIRE_MAX_KEY);
		r->seq = rbuf_u64(rb);
		break;
	case DL_REQS:
		r->nreqs = rbuf_u32(rb);
		r->reqs = rb->p + rb->off;
		r->reqslen = rb->len - rb->off;
		rb->off = rb->len;	/* reqs_walk checks the entries */
		break;
	case DL_INBOX:
	case DL_HELD:
		rbuf_str(rb, peer, NAME_MAX_LEN + 1);
		r->seq = rbuf_u64(rb);
		r->msg = rbuf_bytes(rb, &r->msglen, DL_MAX_MSG);
		break;
	default:
		rb->err = 1;
		return;
	}
	if (r->type != DL_PUT && r->type != DL_DEL && r->type != DL_GEN &&
	    r->type != DL_FENCE && r->type != DL_TXN && r->type != DL_KVER)
		r->peer = peer;
	/* The optional trailing chain of SEND and APPLY (older files have
	 * none), ACK, DEAD and a REFUND, WM and KEPT (none: unknown):
	 * exactly DL_CHAIN_LEN bytes left; anything else is left for the
	 * caller's trailing-bytes check. */
	if ((r->type == DL_SEND || r->type == DL_APPLY || r->type == DL_ACK ||
	    r->type == DL_DEAD || r->type == DL_WM || r->type == DL_KEPT ||
	    r->type == DL_INBOX ||
	    (r->type == DL_RESOLVE && r->code == DL_RESOLVE_REFUND)) &&
	    !rb->err && (rb->len - rb->off == DL_CHAIN_LEN ||
	    (r->type == DL_SEND && rb->len - rb->off == DL_CHAIN_LEN +
	    DL_REQ_FIELD_LEN))) {
		r->chain = rb->p + rb->off;
		rb->off += DL_CHAIN_LEN;
	}
	/* Then the optional request field of PUT, DEL, SEND and TXN. */
	if ((r->type == DL_PUT || r->type == DL_DEL || r->type == DL_SEND ||
	    r->type == DL_TXN) &&
	    !rb->err &&
	    rb->len - rb->off == DL_REQ_FIELD_LEN) {
		r->req_id = rb->p + rb->off;
		rb->off += REQ_ID_LEN;
		r->req_digest = rbuf_u64(rb);
	}
}

static int
known_type(unsigned t)
{
	return (t >= DL_PUT && t <= DL_FENCE) || t == DL_REQS ||
	    t == DL_TXN || t == DL_KVER || t == DL_INBOX || t == DL_HELD;
}

/* Decode type+payload p[0, n) into r. 0, or -1 with a reason in e. */
int
dl_decode(const uint8_t *p, size_t n, struct dl_record *r,
    char peer[NAME_MAX_LEN + 1], struct cs_err *e)
{
	struct rbuf rb;

	rbuf_init(&rb, p, n);
	read_fields(&rb, r, peer);
	if (n == 0 || !known_type(p[0]))
		return cs_errf(e, "unknown record type %u", n ? p[0] : 0u);
	if (!rbuf_done(&rb))
		return cs_errf(e, "malformed payload (%s)",
		    rb.err ? "truncated or oversized field" : "trailing bytes");
	return 0;
}

/* 1 if buf[off, len) holds a whole record with a valid checksum. */
static int
valid_record_at(const uint8_t *buf, size_t len, size_t off)
{
	size_t rlen;

	if (off > len || len - off < DL_REC_HDR_LEN)
		return 0;
	rlen = buf_le32_get(buf + off);
	if (rlen == 0 || rlen > DL_MAX_RECORD ||
	    rlen > len - off - DL_REC_HDR_LEN)
		return 0;
	return dl_rec_crc(buf + off + DL_REC_HDR_LEN, rlen) ==
	    buf_le32_get(buf + off + 4);
}

/*
 * The record at off claims to run to or past EOF: a torn final write, or
 * a damaged length field in the middle of the file? A torn record is a
 * prefix of a correct one, so its own fields cannot all be read before
 * EOF. If they can, and a checksummed record starts right where they end,
 * the length field is wrong and later records exist: corruption.
 */
static int
length_is_damaged(const uint8_t *buf, size_t len, size_t off)
{
	char peer[NAME_MAX_LEN + 1];
	struct dl_record r;
	struct rbuf rb;
	size_t next;

	rbuf_init(&rb, buf + off + DL_REC_HDR_LEN, len - off - DL_REC_HDR_LEN);
	read_fields(&rb, &r, peer);
	if (rb.err || rb.off == buf_le32_get(buf + off))
		return 0;
	next = off + DL_REC_HDR_LEN + rb.off;
	return valid_record_at(buf, len, next);
}

void
dl_header(uint8_t hdr[DL_HEADER_LEN])
{
	memcpy(hdr, DL_MAGIC, 8);
	buf_le32_put(hdr + 8, DL_VERSION);
	buf_le32_put(hdr + 12, 0);
}

/* A file shorter than its header: torn iff it is a prefix of a header we
 * would have written (or zeros), i.e. the creating write was cut short. */
static int
torn_header(const uint8_t *buf, size_t len)
{
	uint8_t hdr[DL_HEADER_LEN];
	uint32_t v;

	if (cs_all_zero(buf, len))
		return 1;
	memcpy(hdr, DL_MAGIC, 8);
	buf_le32_put(hdr + 12, 0);
	for (v = DL_VERSION_MIN; v <= DL_VERSION; v++) {
		buf_le32_put(hdr + 8, v);
		if (memcmp(buf, hdr, len) == 0)
			return 1;
	}
	return 0;
}

/* n bytes at off (off + n <= len): a pointer valid until the next call, or
 * NULL with errno set (a read error, or the file shrank). */
const uint8_t *
dl_src_at(struct dl_src *s, size_t off, size_t n)
{
	const uint8_t *p;
	uint8_t *w;
	size_t want, got = 0;
	ssize_t k;

	assert(off <= s->len && n <= s->len - off);
	if (s->buf != NULL)
		return s->buf + off;
	if (s->view != NULL && (p = s->view(s->rctx, off, n)) != NULL)
		return p;
	if (off >= s->woff && n <= s->wlen && off - s->woff <= s->wlen - n)
		return s->win + (off - s->woff);
	/* A window that had to grow for a record larger than DL_SRC_WINDOW
	 * is read whole from then on: with a read of DL_SRC_WINDOW, every
	 * record a little larger (a 1 MiB value and its header) was read
	 * twice, header window first, then the record again. */
	want = n > DL_SRC_WINDOW ? n : DL_SRC_WINDOW;
	if (want < s->wcap)
		want = s->wcap;
	if (want > s->len - off)
		want = s->len - off;
	if (want > s->wcap) {
		if ((w = realloc(s->win, want)) == NULL)
			return NULL;
		s->win = w;
		s->wcap = want;
	}
	if (s->read != NULL) {
		if (s->read(s->rctx, off, want, s->win) == -1) {
			s->wlen = 0;
			return NULL;
		}
		got = want;
	}
	while (got < want) {
		k = pread(s->fd, s->win + got, want - got, (off_t)(off + got));
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			s->wlen = 0;
			return NULL;
		}
		got += (size_t)k;
	}
	s->woff = off;
	s->wlen = want;
	return s->win;
}

/* 1 if [off, len) is all zeros, 0 if not, -1 on a read error. */
static int
src_zero_tail(struct dl_src *s, size_t off)
{
	const uint8_t *p;
	size_t n;

	while (off < s->len) {
		n = s->len - off < DL_SRC_WINDOW ? s->len - off : DL_SRC_WINDOW;
		if ((p = dl_src_at(s, off, n)) == NULL)
			return -1;
		if (!cs_all_zero(p, n))
			return 0;
		off += n;
	}
	return 1;
}

/* Feed accepted bytes to the running hash and chunk digests, if any. */
static int
src_hash(struct dl_src *s, const uint8_t *p, size_t n)
{
	if (s->sha != NULL && sha_update(s->sha, p, n) == -1)
		return -1;
	if (s->chunks != NULL && chunkhash_update(s->chunks, p, n) == -1)
		return -1;
	return 0;
}

/* The head of a PUT's payload p[0, n) (the payload is rlen bytes, n of
 * them here, at least its type, key and value length unless it is
 * shorter): r with the key and the value's length, the value unread (its
 * bytes must end the record exactly). NULL, or what is malformed. */
static const char *
put_head(const uint8_t *p, size_t n, size_t rlen, struct dl_record *r)
{
	struct rbuf rb;

	memset(r, 0, sizeof(*r));
	rbuf_init(&rb, p, n);
	r->type = rbuf_u8(&rb);
	r->key = rbuf_bytes(&rb, &r->klen, WIRE_MAX_KEY);
	r->vlen = rbuf_u32(&rb);
	if (rb.err || r->vlen > WIRE_MAX_VALUE || r->vlen > rlen - rb.off)
		return "truncated or oversized field";
	if (r->vlen < rlen - rb.off)
		return "trailing bytes";
	return NULL;
}

/* Apply the PUT at off whose head put_head decoded into r (bad: what it
 * found malformed, or NULL), its value's bytes left where they are. 0,
 * or -1 with e set. */
static int
apply_put_head(size_t off, const char *bad, const struct dl_record *r,
    const char *what, struct dl_state *st, struct cs_err *e)
{
	struct cs_err why;

	if (bad != NULL)
		return cs_errf(e, "%s: corrupt record at offset %zu (invalid "
		    "record: malformed payload (%s))", what, off, bad);
	if (dl_state_check(st, r, &why) == -1)
		return cs_errf(e, "%s: corrupt record at offset %zu (invalid "
		    "record: %s)", what, off, why.msg);
	st->rec_off = off;
	if (dl_state_apply(st, r, &why) == -1)
		return cs_errf(e, "%s: record at offset %zu: %s", what, off,
		    why.msg);
	return 0;
}

/* The most of a PUT's payload put_head needs: type, key, value length. */
#define PUT_HEAD_MAX (1 + 4 + WIRE_MAX_KEY + 4)
/* Records from this size up are worth asking the reader's checksum. */
#define DL_CRC_ASK_MIN (64u << 10)

/* A PUT record of rlen bytes after its header at off, whose checksum the
 * reader tells (s->crc) without this replay reading the payload: only
 * its head is read, and applied when the state does not keep its value.
 * 1 done; 0 when the reader cannot tell, the checksum does not match,
 * the record is not a PUT or its value is kept (the caller then reads it
 * whole, and tells a torn tail from damage as ever); -1 with e set. */
static int
replay_put_by_crc(struct dl_src *s, size_t off, size_t rlen, uint32_t crc,
    const char *what, struct dl_state *st, struct cs_err *e)
{
	const uint8_t *p;
	struct dl_record r;
	const char *bad;
	size_t n = rlen < PUT_HEAD_MAX ? rlen : PUT_HEAD_MAX;
	uint32_t sum;

	if (s->crc(s->rctx, off + DL_REC_HDR_LEN, rlen, &sum) == -1 ||
	    sum != crc)
		return 0;
	if ((p = dl_src_at(s, off + DL_REC_HDR_LEN, n)) == NULL)
		return cs_errno(e, "read %s", what);
	if (p[0] != DL_PUT)
		return 0;
	bad = put_head(p, n, rlen, &r);
	if (bad == NULL && tracked(st, &r))
		return 0;	/* its value is needed: read it */
	return apply_put_head(off, bad, &r, what, st, e) == -1 ? -1 : 1;
}

/* A PUT record of rlen bytes after its header at off, larger than the
 * window, replayed into st (whose values are held by reference) without
 * ever holding it whole: its checksum computed a window at a time, its
 * head (type, key, value length) decoded and applied, then its bytes fed
 * to the hashes a window at a time (read again, from the page cache).
 * 1 done; 0 when the record is not such a PUT, or its checksum does not
 * match (the caller then takes it whole, to tell a torn tail from
 * damage); -1 with e set. */
static int
replay_large_put(struct dl_src *s, size_t off, size_t rlen, uint32_t crc,
    const char *what, struct dl_state *st, struct cs_err *e)
{
	const uint8_t *p;
	struct dl_record r;
	const char *bad;
	size_t pos, n, end = off + DL_REC_HDR_LEN + rlen;
	uint32_t sum = 0;

	for (pos = off + DL_REC_HDR_LEN; pos < end; pos += n) {
		n = end - pos < DL_SRC_WINDOW ? end - pos : DL_SRC_WINDOW;
		if ((p = dl_src_at(s, pos, n)) == NULL)
			return cs_errno(e, "read %s", what);
		if (pos == off + DL_REC_HDR_LEN && p[0] != DL_PUT)
			return 0;
		sum = dl_rec_crc_more(sum, p, n);
	}
	if (sum != crc)
		return 0;
	n = rlen < DL_SRC_WINDOW ? rlen : DL_SRC_WINDOW;
	if ((p = dl_src_at(s, off + DL_REC_HDR_LEN, n)) == NULL)
		return cs_errno(e, "read %s", what);
	/* The fields as read_fields reads a PUT, the value's bytes left in
	 * the file: they must end the record exactly. */
	bad = put_head(p, n, rlen, &r);
	if (apply_put_head(off, bad, &r, what, st, e) == -1)
		return -1;
	if (s->sha == NULL && s->chunks == NULL)
		return 1;	/* nothing to feed: not read again */
	for (pos = off; pos < end; pos += n) {
		n = end - pos < DL_SRC_WINDOW ? end - pos : DL_SRC_WINDOW;
		if ((p = dl_src_at(s, pos, n)) == NULL)
			return cs_errno(e, "read %s", what);
		if (src_hash(s, p, n) == -1)
			return cs_errf(e, "sha256 failed");
	}
	return 1;
}

int
dl_replay_src(struct dl_src *s, const char *what, int allow_torn,
    struct dl_state *st, size_t *valid_len, struct cs_err *e)
{
	char peer[NAME_MAX_LEN + 1];
	const uint8_t *p;
	struct dl_record r;
	struct cs_err why;
	size_t len = s->len, off, rem, rlen = 0;
	uint32_t crc;
	int rc = -1, z;

	if (s->start > 0) {
		off = s->start;
		goto records;
	}
	if (len == 0) {
		cs_errf(e, "%s: empty file", what);
		goto out;
	}
	if (len < DL_HEADER_LEN) {
		if ((p = dl_src_at(s, 0, len)) == NULL)
			goto rerr;
		if (allow_torn && torn_header(p, len)) {
			off = 0;
			goto torn;
		}
		cs_errf(e, "%s: not a cutsnap data file", what);
		goto out;
	}
	if ((p = dl_src_at(s, 0, DL_HEADER_LEN)) == NULL)
		goto rerr;
	if (memcmp(p, DL_MAGIC, 8) != 0 || buf_le32_get(p + 12) != 0) {
		cs_errf(e, "%s: not a cutsnap data file", what);
		goto out;
	}
	if (buf_le32_get(p + 8) < DL_VERSION_MIN ||
	    buf_le32_get(p + 8) > DL_VERSION) {
		cs_errf(e, "%s: unsupported version %" PRIu32
		    " (this build reads versions %d to %d)", what,
		    buf_le32_get(p + 8), DL_VERSION_MIN, DL_VERSION);
		goto out;
	}
	if (src_hash(s, p, DL_HEADER_LEN) == -1)
		goto sha;
	off = DL_HEADER_LEN;
records:
	for (; off < len; off += DL_REC_HDR_LEN + rlen) {
		rem = len - off;
		if (rem < DL_REC_HDR_LEN)
			goto torn;
		if ((p = dl_src_at(s, off, DL_REC_HDR_LEN)) == NULL)
			goto rerr;
		/* Zeros where a record should start: the file was extended
		 * but the data never reached the disk. */
		if (cs_all_zero(p, DL_REC_HDR_LEN)) {
			if ((z = src_zero_tail(s, off)) == -1)
				goto rerr;
			if (z)
				goto torn;
			if ((p = dl_src_at(s, off, DL_REC_HDR_LEN)) == NULL)
				goto rerr;
		}
		rlen = buf_le32_get(p);
		crc = buf_le32_get(p + 4);
		if (rlen == 0 || rlen > DL_MAX_RECORD) {
			cs_errf(e, "%s: corrupt record at offset %zu (bad length)",
			    what, off);
			goto out;
		}
		/* An incomplete final record is the write a crash cut short
		 * (unless its length field is what is broken). The tail is
		 * shorter than one record, so it fits the window. */
		if (rlen > rem - DL_REC_HDR_LEN) {
			if ((p = dl_src_at(s, off, rem)) == NULL)
				goto rerr;
			if (!length_is_damaged(p, rem, 0))
				goto torn;
			cs_errf(e, "%s: corrupt record at offset %zu (bad length)",
			    what, off);
			goto out;
		}
		/* A large value held by reference (an agent's file): never
		 * the whole record in memory. */
		if (s->buf == NULL && st->by_ref && rlen > DL_SRC_WINDOW) {
			if ((z = replay_large_put(s, off, rlen, crc, what, st,
			    e)) == -1)
				goto out;
			if (z == 1)
				continue;
		}
		if (s->crc != NULL && s->sha == NULL && s->chunks == NULL &&
		    rlen >= DL_CRC_ASK_MIN) {
			if ((z = replay_put_by_crc(s, off, rlen, crc, what, st,
			    e)) == -1)
				goto out;
			if (z == 1)
				continue;
		}
		if ((p = dl_src_at(s, off, DL_REC_HDR_LEN + rlen)) == NULL)
			goto rerr;
		if (dl_rec_crc(p + DL_REC_HDR_LEN, rlen) != crc) {
			if (rlen == rem - DL_REC_HDR_LEN &&
			    !length_is_damaged(p, rem, 0))
				goto torn;
			cs_errf(e, "%s: corrupt record at offset %zu (checksum "
			    "mismatch)", what, off);
			goto out;
		}
		if (dl_decode(p + DL_REC_HDR_LEN, rlen, &r, peer,
		    &why) == -1 || dl_state_check(st, &r, &why) == -1) {
			cs_errf(e, "%s: corrupt record at offset %zu (invalid "
			    "record: %s)", what, off, why.msg);
			goto out;
		}
		st->rec_off = off;
		if (dl_state_apply(st, &r, &why) == -1) {
			cs_errf(e, "%s: record at offset %zu: %s", what, off,
			    why.msg);
			goto out;
		}
		if (src_hash(s, p, DL_REC_HDR_LEN + rlen) == -1)
			goto sha;
	}
	if (valid_len != NULL)
		*valid_len = len;
	rc = 0;
	goto out;
torn:
	if (!allow_torn) {
		cs_errf(e, "%s: incomplete record at offset %zu (torn write; "
		    "the file was cut short)", what, off);
		goto out;
	}
	if (valid_len != NULL)
		*valid_len = off;
	rc = 0;
	goto out;
rerr:
	cs_errno(e, "read %s", what);
	goto out;
sha:
	cs_errf(e, "sha256 failed");
out:
	return rc;
}

int
dl_replay(const uint8_t *buf, size_t len, const char *what,
    int allow_torn, struct dl_state *st, size_t *valid_len,
    struct cs_err *e)
{
	struct dl_src s;

	memset(&s, 0, sizeof(s));
	s.buf = buf;
	s.fd = -1;
	s.len = len;
	return dl_replay_src(&s, what, allow_torn, st, valid_len, e);
}
