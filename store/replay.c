/* replay.c - replaying a snapshot's recorded channel messages onto their
 * receivers' recorded files, shared by restore (which writes the records
 * it makes) and verify (which only reports what the replay will do).
 *
 * Invariant: one rule for both, and the agents' own (dl_credit): each
 * channel in seq order, each message whose seq is applied+1 consumed as
 * an APPLY of its credit, or as a DEAD record when the key holds text or
 * the sum would leave int64, with the channel's history chain after it.
 * So a snapshot that verifies restores, and the restored files are what
 * the live receiver would have made. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "../proto/chmsg.h"

static int
cmp_key(const uint8_t *k, size_t kl, const struct chmsg *m)
{
	int c = memcmp(k, m->key, kl < m->klen ? kl : m->klen);

	if (c != 0)
		return c;
	return kl < m->klen ? -1 : kl > m->klen;
}

static int
cmp_chmsg(const void *a, const void *b)
{
	const struct chmsg *x = a;

	return cmp_key(x->key, x->klen, b);
}

int
store_keyset_has(void *ctx, const uint8_t *key, size_t klen)
{
	const struct keyset *ks = ctx;
	size_t lo = 0, hi = ks->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((c = cmp_key(key, klen, &ks->v[mid])) == 0)
			return 1;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return 0;
}

int
store_keyset_build(struct keyset *ks, const struct snap_rows *r,
    const char *dst)
{
	size_t i;

	ks->n = 0;
	if ((ks->v = malloc((r->nmsgs + 1) * sizeof(*ks->v))) == NULL)
		return -1;
	/* An undecodable message is refused later by store_replay_msgs. */
	for (i = 0; i < r->nmsgs; i++)
		if (r->msgs[i].ok && strcmp(r->msgs[i].dst, dst) == 0 &&
		    chmsg_decode(r->msgs[i].data, r->msgs[i].len,
		    &ks->v[ks->n]) == 0)
			ks->n++;
	if (ks->n > 1)
		qsort(ks->v, ks->n, sizeof(*ks->v), cmp_chmsg);
	return 0;
}

void
store_keyset_free(struct keyset *ks)
{
	free(ks->v);
	ks->v = NULL;
	ks->n = 0;
}

/* The note for a message the replay consumes as a dead letter. */
static void
dead_note(const struct dl_record *rec, const char *dst, problem_fn note,
    void *ctx)
{
	char line[256], key[64];
	size_t i;

	for (i = 0; i < rec->klen && i < sizeof(key) - 1; i++)
		key[i] = rec->key[i] >= 0x20 && rec->key[i] < 0x7f ?
		    (char)rec->key[i] : '?';
	key[i] = '\0';
	snprintf(line, sizeof(line), "channel %s->%s: message seq %" PRIu64
	    " becomes a dead letter at %s on replay: cannot add %" PRId64
	    " to key '%s%s' (%s)", rec->peer, dst, rec->seq, dst,
	    rec->amount, key, i < rec->klen ? "..." : "",
	    dl_dead_reason_name(rec->code));
	note(ctx, line);
}

int
store_replay_msgs(struct dl_state *ds, const struct snap_rows *r,
    const char *dst, struct wbuf *out, problem_fn note, void *ctx,
    struct cs_err *e)
{
	struct dl_credit_buf buf;
	const struct row_msg *m;
	struct dl_record rec;
	size_t i;

	/* Sorted by src, then seq: each channel in seq order. */
	for (i = 0; i < r->nmsgs; i++) {
		m = &r->msgs[i];
		if (!m->ok || strcmp(m->dst, dst) != 0)
			continue;
		if (m->seq != dl_wm_get(&ds->applied, m->src) + 1)
			continue;
		if (dl_credit(ds, m->src, m->seq, m->data, m->len, &rec, &buf,
		    e) < 0)
			return cs_errctx(e, "channel %s->%s", m->src, dst);
		if (dl_state_check(ds, &rec, e) < 0)
			return cs_errctx(e, "channel %s->%s: message seq %"
			    PRIu64, m->src, dst, m->seq);
		if (out != NULL)
			dl_encode(out, &rec);
		if (dl_state_apply(ds, &rec, e) < 0)
			return -1;
		if (rec.type == DL_DEAD && note != NULL)
			dead_note(&rec, dst, note, ctx);
	}
	if (out != NULL && out->oom)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	return 0;
}
