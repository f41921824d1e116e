/* verify_sealed.c - verify without the password: what an encrypted
 * repository lets anyone check without opening a sealed byte.
 *
 * The manifest file (integrity_check, foreign keys), the snapshot's
 * status and its digest (over the rows as stored, sealed columns
 * included), the snapshot's HMAC tag when a --key is given, the shape of
 * the cut as the rows record it (on each channel exactly one recorded
 * message per seq after the applied seq up to the sent one, each long
 * enough to be sealed), every chunk object the recorded files need (there,
 * a regular file, as long as its chunk can make it, starting with the
 * sealed magic) and the key rows' form. Not checked, because each needs
 * the plain bytes: any chunk's or message's content and hash, the files'
 * records and the replay, the applied seqs the files hold, the key rows'
 * MACs. The caller says so. */
#include <stdio.h>
#include <string.h>

#include "store_int.h"
#include "../crypto/aead.h"

static void
check_status_and_digest(struct vrun *v)
{
	sqlite3_stmt *s = NULL;
	struct cs_err e;

	if (store_db_prepare(v->st, "SELECT status, digest FROM snapshots "
	    "WHERE id = ?1", &s, &e) < 0) {
		store_vproblem(v, "%s", e.msg);
		return;
	}
	sqlite3_bind_int64(s, 1, (sqlite3_int64)v->id);
	if (sqlite3_step(s) != SQLITE_ROW) {
		store_vproblem(v, "its row cannot be read: %s",
		    sqlite3_errmsg(v->st->db));
		goto out;
	}
	(void)store_verify_status(v, store_col_text(s, 0));
	store_verify_digest(v, store_col_text(s, 1));
out:
	sqlite3_finalize(s);
}

/* Each channel's recorded messages: one per seq in (applied, sent], none
 * outside, each at least a seal's overhead long. */
static void
check_channels(struct vrun *v, uint64_t *nmsgs)
{
	sqlite3_stmt *s = NULL;
	struct cs_err e;
	int64_t applied, sent, n, distinct, outside, shortn;
	int step;

	if (store_db_prepare(v->st,
	    "SELECT c.src, c.dst, c.applied, c.sent, COUNT(m.id), "
	    "COUNT(DISTINCT m.seq), "
	    "COALESCE(SUM(m.seq <= c.applied OR m.seq > c.sent), 0), "
	    "COALESCE(SUM(length(m.data) < ?2), 0) "
	    "FROM channels c LEFT JOIN messages m "
	    "ON m.snapshot_id = c.snapshot_id AND m.src = c.src AND "
	    "m.dst = c.dst WHERE c.snapshot_id = ?1 GROUP BY c.src, c.dst "
	    "ORDER BY c.src, c.dst", &s, &e) < 0) {
		store_vproblem(v, "%s", e.msg);
		return;
	}
	sqlite3_bind_int64(s, 1, (sqlite3_int64)v->id);
	sqlite3_bind_int64(s, 2, v->st->enc ? AEAD_OVERHEAD : 0);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		applied = sqlite3_column_int64(s, 2);
		sent = sqlite3_column_int64(s, 3);
		n = sqlite3_column_int64(s, 4);
		distinct = sqlite3_column_int64(s, 5);
		outside = sqlite3_column_int64(s, 6);
		shortn = sqlite3_column_int64(s, 7);
		*nmsgs += (uint64_t)n;
		if (applied > sent)
			store_vproblem(v, "channel %s->%s: applied seq %lld "
			    "is past the sent seq %lld", store_col_text(s, 0),
			    store_col_text(s, 1), (long long)applied,
			    (long long)sent);
		else if (outside > 0 || distinct != n || n != sent - applied)
			store_vproblem(v, "channel %s->%s: %lld recorded "
			    "message%s (%lld distinct seqs, %lld outside the "
			    "cut) where seqs %lld to %lld were in flight",
			    store_col_text(s, 0), store_col_text(s, 1),
			    (long long)n, n == 1 ? "" : "s",
			    (long long)distinct, (long long)outside,
			    (long long)applied + 1, (long long)sent);
		if (shortn > 0)
			store_vproblem(v, "channel %s->%s: %lld recorded "
			    "message%s too short to be sealed",
			    store_col_text(s, 0), store_col_text(s, 1),
			    (long long)shortn, shortn == 1 ? "" : "s");
	}
	if (step != SQLITE_DONE)
		store_vproblem(v, "reading the channels: %s",
		    sqlite3_errmsg(v->st->db));
	sqlite3_finalize(s);
}

/* Every distinct chunk object the recorded files need. */
static void
check_objects(struct vrun *v, uint64_t *nobjs, uint64_t *bytes)
{
	sqlite3_stmt *s = NULL;
	struct cs_err e;
	uint64_t size;
	int step;

	if (store_db_prepare(v->st, "SELECT sha256, MAX(size) FROM "
	    "agent_chunks WHERE snapshot_id = ?1 GROUP BY sha256 "
	    "ORDER BY sha256", &s, &e) < 0) {
		store_vproblem(v, "%s", e.msg);
		return;
	}
	sqlite3_bind_int64(s, 1, (sqlite3_int64)v->id);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		(*nobjs)++;
		if (store_obj_check_shape(v->st, store_col_text(s, 0),
		    (uint64_t)sqlite3_column_int64(s, 1), &size, &e) < 0) {
			store_vproblem(v, "blob %s: %s", store_col_text(s, 0),
			    e.msg);
			continue;
		}
		*bytes += size;
	}
	if (step != SQLITE_DONE)
		store_vproblem(v, "reading the chunk rows: %s",
		    sqlite3_errmsg(v->st->db));
	sqlite3_finalize(s);
}

static void
bad_key(void *ctx, int64_t id)
{
	store_vproblem(ctx, "key %lld is malformed: it cannot open the "
	    "repository", (long long)id);
}

int
store_verify_sealed(struct store *st, uint64_t id, uint64_t *resolved,
    problem_fn fn, void *ctx, struct store_sealed_work *w, struct cs_err *e)
{
	struct vrun v;

	memset(w, 0, sizeof(*w));
	*resolved = 0;
	if (store_snap_resolve(st, id, resolved, e) < 0)
		return -1;
	memset(&v, 0, sizeof(v));
	v.st = st;
	v.id = *resolved;
	v.fn = fn;
	v.ctx = ctx;
	store_verify_db(&v);
	check_status_and_digest(&v);
	store_auth_check(&v);
	check_channels(&v, &w->msgs);
	check_objects(&v, &w->objects, &w->bytes);
	if (store_crypt_check_key_forms(st, bad_key, &v, e) < 0)
		store_vproblem(&v, "reading the keys: %s", e->msg);
	return v.nproblems;
}
