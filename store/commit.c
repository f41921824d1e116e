/* commit.c - committing a snapshot: every row of it, its digest and its
 * status 'complete' in one SQLite transaction, or nothing at all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "../log/chunkhash.h"

/* The statements of one commit, prepared once. */
struct commit {
	struct store *st;
	sqlite3_int64 id;
	sqlite3_stmt *agent, *chunk, *wm, *chan, *msg;
};

static int
step_done(struct commit *k, sqlite3_stmt *s, const char *what,
    struct cs_err *e)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (rc != SQLITE_DONE)
		return store_db_fail(k->st, e, what);
	return 0;
}

/* SQLite integers are signed; refuse what would not round-trip. */
static int
fits(uint64_t v, const char *what, struct cs_err *e)
{
	if (v > (uint64_t)INT64_MAX)
		return cs_errf(e, "%s out of range: %llu", what,
		    (unsigned long long)v);
	return 0;
}

/* Every agent of c has exactly one report for id, and no report is for
 * anyone else. */
static int
check_reports(uint64_t id, const struct cfg *c, const struct report *reps,
    size_t nreps, struct cs_err *e)
{
	size_t i, j;

	for (i = 0; i < nreps; i++) {
		if (reps[i].snap_id != id)
			return cs_errf(e, "report of agent %s is for snapshot "
			    "%llu, not %llu", reps[i].agent,
			    (unsigned long long)reps[i].snap_id,
			    (unsigned long long)id);
		if (cfg_find(c, reps[i].agent) < 0)
			return cs_errf(e, "report from agent %s, which is not "
			    "in the config", reps[i].agent);
		for (j = 0; j < i; j++)
			if (strcmp(reps[i].agent, reps[j].agent) == 0)
				return cs_errf(e, "two reports from agent %s",
				    reps[i].agent);
	}
	for (i = 0; i < (size_t)c->nagents; i++)
		if (store_find_report(reps, nreps, c->agents[i].name) == NULL)
			return cs_errf(e, "no report from agent %s",
			    c->agents[i].name);
	return 0;
}

static int
put_wms(struct commit *k, const char *agent, const char *kind,
    const struct rep_wm *v, size_t n, struct cs_err *e)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (fits(v[i].seq, "watermark", e) < 0)
			return -1;
		sqlite3_bind_int64(k->wm, 1, k->id);
		sqlite3_bind_text(k->wm, 2, agent, -1, SQLITE_STATIC);
		sqlite3_bind_text(k->wm, 3, kind, -1, SQLITE_STATIC);
		sqlite3_bind_text(k->wm, 4, v[i].peer, -1, SQLITE_STATIC);
		sqlite3_bind_int64(k->wm, 5, (sqlite3_int64)v[i].seq);
		if (step_done(k, k->wm, "storing watermarks", e) < 0)
			return -1;
	}
	return 0;
}

/* The agent's chunk rows: chunk i is [i * chunk_size, ...) of its file. */
static int
put_chunks(struct commit *k, const char *agent, const struct report *r,
    struct cs_err *e)
{
	char hex[SHA_HEX_LEN];
	uint64_t off, n;
	size_t i;

	if (!chunk_size_valid(r->chunk_size) ||
	    r->nchunks != chunk_count(r->size, r->chunk_size))
		return cs_errf(e, "agent %s reported %zu chunks for %llu bytes",
		    agent, r->nchunks, (unsigned long long)r->size);
	for (i = 0; i < r->nchunks; i++) {
		off = (uint64_t)i * r->chunk_size;
		n = r->size - off < r->chunk_size ? r->size - off :
		    r->chunk_size;
		store_name_hex(k->st, r->chunks[i], hex);
		sqlite3_bind_int64(k->chunk, 1, k->id);
		sqlite3_bind_text(k->chunk, 2, agent, -1, SQLITE_STATIC);
		sqlite3_bind_int64(k->chunk, 3, (sqlite3_int64)i);
		sqlite3_bind_int64(k->chunk, 4, (sqlite3_int64)off);
		sqlite3_bind_int64(k->chunk, 5, (sqlite3_int64)n);
		sqlite3_bind_text(k->chunk, 6, hex, -1, SQLITE_TRANSIENT);
		if (step_done(k, k->chunk, "storing chunks", e) < 0)
			return -1;
	}
	return 0;
}

static int
put_agent(struct commit *k, const struct cfg_agent *a,
    const struct report *r, struct cs_err *e)
{
	char hex[SHA_HEX_LEN];

	if (fits(r->size, "file size", e) < 0)
		return -1;
	store_name_hex(k->st, r->sha, hex);
	sqlite3_bind_int64(k->agent, 1, k->id);
	sqlite3_bind_text(k->agent, 2, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(k->agent, 3, a->data, -1, SQLITE_STATIC);
	sqlite3_bind_int64(k->agent, 4, (sqlite3_int64)r->size);
	sqlite3_bind_text(k->agent, 5, hex, -1, SQLITE_TRANSIENT);
	if (step_done(k, k->agent, "storing agents", e) < 0 ||
	    put_chunks(k, a->name, r, e) < 0)
		return -1;
	if (put_wms(k, a->name, "sent", r->sent, r->nsent, e) < 0 ||
	    put_wms(k, a->name, "applied", r->applied, r->napplied, e) < 0)
		return -1;
	return 0;
}

/* Channel src -> dst as dst recorded it, with its messages. */
static int
put_channel(struct commit *k, const char *src, const char *dst,
    const struct rep_channel *ch, struct cs_err *e)
{
	char hex[SHA_HEX_LEN];
	uint8_t sha[SHA_LEN], name[SHA_LEN], *sealed = NULL;
	size_t i, slen;

	if (fits(ch->applied, "applied seq", e) < 0 ||
	    fits(ch->sent, "sent seq", e) < 0)
		return -1;
	sqlite3_bind_int64(k->chan, 1, k->id);
	sqlite3_bind_text(k->chan, 2, src, -1, SQLITE_STATIC);
	sqlite3_bind_text(k->chan, 3, dst, -1, SQLITE_STATIC);
	sqlite3_bind_int64(k->chan, 4, (sqlite3_int64)ch->applied);
	sqlite3_bind_int64(k->chan, 5, (sqlite3_int64)ch->sent);
	if (step_done(k, k->chan, "storing channels", e) < 0)
		return -1;
	for (i = 0; i < ch->nmsgs; i++) {
		const struct rep_msg *m = &ch->msgs[i];

		if (fits(m->seq, "message seq", e) < 0)
			return -1;
		if (m->len > INT32_MAX)
			return cs_errf(e, "message %llu on %s->%s is too large",
			    (unsigned long long)m->seq, src, dst);
		if (sha256_buf(m->data, m->len, sha) < 0)
			return cs_errf(e, "sha256 failed");
		store_name(k->st, sha, name);
		sha_hex(name, hex);
		/* Encrypted: the payload sealed, bound to its row. */
		if (k->st->enc && store_crypt_msg(k->st, 1, name, src, dst,
		    m->seq, m->data, m->len, &sealed, &slen, e) < 0)
			return -1;
		sqlite3_bind_int64(k->msg, 1, k->id);
		sqlite3_bind_text(k->msg, 2, src, -1, SQLITE_STATIC);
		sqlite3_bind_text(k->msg, 3, dst, -1, SQLITE_STATIC);
		sqlite3_bind_int64(k->msg, 4, (sqlite3_int64)m->seq);
		/* A non-NULL pointer keeps an empty message a blob. */
		if (sealed != NULL)
			sqlite3_bind_blob(k->msg, 5, sealed, (int)slen,
			    SQLITE_TRANSIENT);
		else
			sqlite3_bind_blob(k->msg, 5, m->data ?
			    (const void *)m->data : "", (int)m->len,
			    SQLITE_STATIC);
		free(sealed);
		sealed = NULL;
		sqlite3_bind_text(k->msg, 6, hex, -1, SQLITE_TRANSIENT);
		if (step_done(k, k->msg, "storing messages", e) < 0)
			return -1;
	}
	return 0;
}

/* Every channel of the topology, as recorded by its receiver; a recorded
 * channel that is not in the topology is refused. */
static int
put_channels(struct commit *k, const struct cfg *c,
    const struct report *reps, size_t nreps, struct cs_err *e)
{
	const struct report *r;
	const struct rep_channel *ch;
	int s, d;
	size_t i;

	for (d = 0; d < c->nagents; d++) {
		r = store_find_report(reps, nreps, c->agents[d].name);
		for (i = 0; i < r->nchannels; i++) {
			s = cfg_find(c, r->channels[i].src);
			if (s < 0 || !cfg_has_channel(c, s, d))
				return cs_errf(e, "agent %s recorded channel "
				    "%s->%s, which is not in the config",
				    r->agent, r->channels[i].src, r->agent);
		}
		for (s = 0; s < c->nagents; s++) {
			if (!cfg_has_channel(c, s, d))
				continue;
			ch = NULL;
			for (i = 0; i < r->nchannels && ch == NULL; i++)
				if (strcmp(r->channels[i].src,
				    c->agents[s].name) == 0)
					ch = &r->channels[i];
			if (ch == NULL)
				return cs_errf(e, "agent %s did not record "
				    "channel %s->%s", r->agent,
				    c->agents[s].name, r->agent);
			if (put_channel(k, c->agents[s].name, r->agent, ch,
			    e) < 0)
				return -1;
		}
	}
	return 0;
}

/* Inside the transaction: the snapshot exists and is running. */
static int
check_running(struct store *st, uint64_t id, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int rc = -1, step;

	if (store_db_prepare(st, "SELECT status FROM snapshots WHERE id = ?",
	    &s, e) < 0)
		return -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	step = sqlite3_step(s);
	if (step == SQLITE_DONE)
		cs_errf(e, "snapshot %llu does not exist",
		    (unsigned long long)id);
	else if (step != SQLITE_ROW)
		store_db_fail(st, e, "reading the snapshot");
	else if (strcmp(store_col_text(s, 0), "running") != 0)
		cs_errf(e, "snapshot %llu is %s, not running; it cannot be "
		    "committed", (unsigned long long)id, store_col_text(s, 0));
	else
		rc = 0;
	sqlite3_finalize(s);
	return rc;
}

static int
finish(struct store *st, uint64_t id, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	char hex[SHA_HEX_LEN], now[32];
	int rc = -1;

	if (store_digest(st, id, hex, e) < 0)
		return -1;
	store_now(now);
	if (store_db_prepare(st, "UPDATE snapshots SET status = 'complete', "
	    "finished_at = ?, digest = ? WHERE id = ? AND status = 'running'",
	    &s, e) < 0)
		return -1;
	sqlite3_bind_text(s, 1, now, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, hex, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)id);
	if (sqlite3_step(s) != SQLITE_DONE)
		store_db_fail(st, e, "completing the snapshot");
	else if (sqlite3_changes(st->db) != 1)
		cs_errf(e, "snapshot %llu changed while it was committed",
		    (unsigned long long)id);
	else if (store_auth_put(st, id, e) == 0 &&
	    store_rows_auth_upgrade(st, e) == 0)
		rc = store_rows_mac_put(st, id, e);
	sqlite3_finalize(s);
	return rc;
}

int
store_commit_snapshot(struct store *st, uint64_t id, const struct cfg *c,
    const struct report *reps, size_t nreps, struct cs_err *e)
{
	struct commit k;
	int i, rc = -1;

	memset(&k, 0, sizeof(k));
	k.st = st;
	k.id = (sqlite3_int64)id;
	if (id == 0 || id > (uint64_t)INT64_MAX)
		return cs_errf(e, "snapshot %llu does not exist",
		    (unsigned long long)id);
	if (store_need_key(st, e) < 0 ||
	    check_reports(id, c, reps, nreps, e) < 0 ||
	    store_commit_check_cut(c, reps, nreps, e) < 0)
		return -1;
	if (store_db_begin(st, e) < 0)
		return -1;
	if (check_running(st, id, e) < 0 ||
	    store_db_prepare(st,
	    "INSERT INTO agents(snapshot_id, name, data_path, "
	    "size, sha256) VALUES (?, ?, ?, ?, ?)", &k.agent, e) < 0 ||
	    store_db_prepare(st,
	    "INSERT INTO agent_chunks(snapshot_id, agent, idx, "
	    "offset, size, sha256) VALUES (?, ?, ?, ?, ?, ?)", &k.chunk,
	    e) < 0 ||
	    store_db_prepare(st,
	    "INSERT INTO watermarks(snapshot_id, agent, kind, "
	    "peer, seq) VALUES (?, ?, ?, ?, ?)", &k.wm, e) < 0 ||
	    store_db_prepare(st, "INSERT INTO channels(snapshot_id, src, dst, "
	    "applied, sent) VALUES (?, ?, ?, ?, ?)", &k.chan, e) < 0 ||
	    store_db_prepare(st,
	    "INSERT INTO messages(snapshot_id, src, dst, seq, "
	    "data, sha256) VALUES (?, ?, ?, ?, ?, ?)", &k.msg, e) < 0)
		goto out;
	for (i = 0; i < c->nagents; i++)
		if (put_agent(&k, &c->agents[i],
		    store_find_report(reps, nreps, c->agents[i].name), e) < 0)
			goto out;
	if (put_channels(&k, c, reps, nreps, e) < 0 || finish(st, id, e) < 0)
		goto out;
	sqlite3_finalize(k.agent);
	sqlite3_finalize(k.chunk);
	sqlite3_finalize(k.wm);
	sqlite3_finalize(k.chan);
	sqlite3_finalize(k.msg);
	k.agent = k.chunk = k.wm = k.chan = k.msg = NULL;
	if (store_gen_step(st, e) < 0 || store_db_commit(st, e) < 0)
		goto out;
	store_lock_release(st, id);
	rc = store_gen_publish(st, e);
out:
	sqlite3_finalize(k.agent);
	sqlite3_finalize(k.chunk);
	sqlite3_finalize(k.wm);
	sqlite3_finalize(k.chan);
	sqlite3_finalize(k.msg);
	if (rc < 0)
		store_db_rollback(st);
	return rc;
}
