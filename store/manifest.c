/* manifest.c - opening REPO/manifest.db, its schema, and the snapshot rows
 * that are written outside a commit (begin, abort) or only read (list). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "store_int.h"
#include "../common/fsutil.h"
#include "../common/mac.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* The schema. An agent's recorded file is the concatenation of its
 * agent_chunks in idx order, each a blob named by its sha256; agents.sha256
 * is the whole file's. messages has no unique constraint on (channel, seq) on
 * purpose: a duplicated message must be storable so that verify can name
 * it. Everything hangs off snapshots, so deleting a snapshot cascades. */
static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS snapshots("
    " id INTEGER PRIMARY KEY,"
    " started_at TEXT NOT NULL,"
    " finished_at TEXT,"
    " status TEXT NOT NULL"
    "  CHECK (status IN ('running','complete','aborted')),"
    " initiator TEXT NOT NULL,"
    " config TEXT NOT NULL,"
    " reason TEXT,"
    " digest TEXT,"
    " lock TEXT);"
    "CREATE TABLE IF NOT EXISTS agents("
    " snapshot_id INTEGER NOT NULL"
    "  REFERENCES snapshots(id) ON DELETE CASCADE,"
    " name TEXT NOT NULL,"
    " data_path TEXT NOT NULL,"
    " size INTEGER NOT NULL,"
    " sha256 TEXT NOT NULL,"
    " PRIMARY KEY (snapshot_id, name));"
    CHUNKS_SCHEMA_SQL
    "CREATE TABLE IF NOT EXISTS watermarks("
    " snapshot_id INTEGER NOT NULL"
    "  REFERENCES snapshots(id) ON DELETE CASCADE,"
    " agent TEXT NOT NULL,"
    " kind TEXT NOT NULL CHECK (kind IN ('sent','applied')),"
    " peer TEXT NOT NULL,"
    " seq INTEGER NOT NULL,"
    " PRIMARY KEY (snapshot_id, agent, kind, peer));"
    "CREATE TABLE IF NOT EXISTS channels("
    " snapshot_id INTEGER NOT NULL"
    "  REFERENCES snapshots(id) ON DELETE CASCADE,"
    " src TEXT NOT NULL,"
    " dst TEXT NOT NULL,"
    " applied INTEGER NOT NULL,"
    " sent INTEGER NOT NULL,"
    " PRIMARY KEY (snapshot_id, src, dst));"
    "CREATE TABLE IF NOT EXISTS messages("
    " id INTEGER PRIMARY KEY,"
    " snapshot_id INTEGER NOT NULL,"
    " src TEXT NOT NULL,"
    " dst TEXT NOT NULL,"
    " seq INTEGER NOT NULL,"
    " data BLOB NOT NULL,"
    " sha256 TEXT NOT NULL,"
    " FOREIGN KEY (snapshot_id, src, dst)"
    "  REFERENCES channels(snapshot_id, src, dst) ON DELETE CASCADE);"
    "CREATE INDEX IF NOT EXISTS messages_by_channel"
    " ON messages(snapshot_id, src, dst, seq);"
    "PRAGMA user_version = " STR(STORE_SCHEMA_VERSION) ";";

int
db_fail(struct store *st, struct cs_err *e, const char *what)
{
	return cs_errf(e, "repository %s: %s: %s", st->repo, what,
	    st->db ? sqlite3_errmsg(st->db) : "out of memory");
}

int
db_prepare(struct store *st, const char *sql, sqlite3_stmt **out,
    struct cs_err *e)
{
	*out = NULL;
	if (sqlite3_prepare_v2(st->db, sql, -1, out, NULL) != SQLITE_OK)
		return db_fail(st, e, "reading the manifest");
	return 0;
}

int
db_exec(struct store *st, const char *sql, struct cs_err *e)
{
	if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(st, e, "manifest");
	return 0;
}

int
db_begin(struct store *st, struct cs_err *e)
{
	return db_exec(st, "BEGIN IMMEDIATE", e);
}

int
db_commit(struct store *st, struct cs_err *e)
{
	return db_exec(st, "COMMIT", e);
}

void
db_rollback(struct store *st)
{
	if (!sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

void
store_now(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, 32, "1970-01-01T00:00:00Z");
}

const char *
col_text(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return t ? (const char *)t : "";
}

int
col_u64(sqlite3_stmt *s, int i, uint64_t *out)
{
	sqlite3_int64 v;

	*out = 0;
	if (sqlite3_column_type(s, i) != SQLITE_INTEGER)
		return -1;
	v = sqlite3_column_int64(s, i);
	if (v < 0)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

/* Read PRAGMA user_version; -1 when the file is not a database. */
static int
schema_version(struct store *st, int *version, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int rc = -1;

	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s,
	    NULL) != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW) {
		cs_errf(e, "repository %s: manifest.db is not a usable "
		    "manifest: %s", st->repo, sqlite3_errmsg(st->db));
		goto out;
	}
	*version = sqlite3_column_int(s, 0);
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

static int
setup_schema(struct store *st, int create, struct cs_err *e)
{
	int v;

	if (schema_version(st, &v, e) < 0)
		return -1;
	if (v == STORE_SCHEMA_VERSION)
		return 0;
	if (v == 1)
		return migrate_v1(st, e);
	if (v != 0 || !create)
		return cs_errf(e, "repository %s: unsupported manifest schema "
		    "version %d (expected %d)", st->repo, v,
		    STORE_SCHEMA_VERSION);
	if (db_begin(st, e) < 0)
		return -1;
	/* Another process may have created it while we waited for the lock. */
	if (schema_version(st, &v, e) < 0)
		goto fail;
	if (v == 0 && db_exec(st, schema_sql, e) < 0)
		goto fail;
	if (v != 0 && v != STORE_SCHEMA_VERSION) {
		cs_errf(e, "repository %s: unsupported manifest schema "
		    "version %d (expected %d)", st->repo, v,
		    STORE_SCHEMA_VERSION);
		goto fail;
	}
	if (db_commit(st, e) < 0)
		goto fail;
	return 0;
fail:
	db_rollback(st);
	return -1;
}

static int
pragma(struct store *st, const char *sql, struct cs_err *e)
{
	if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return cs_errf(e, "repository %s: manifest.db is not a usable "
		    "manifest: %s", st->repo, sqlite3_errmsg(st->db));
	return 0;
}

int
store_open(const char *repo, int create, struct store **out,
    struct cs_err *e)
{
	struct store *st = NULL;
	char dbpath[PATH_MAX];
	struct stat sb;
	int flags;

	*out = NULL;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return cs_errf(e, "out of memory");
	st->lock_fd = -1;
	if (snprintf(st->repo, sizeof(st->repo), "%s", repo) >=
	    (int)sizeof(st->repo) ||
	    snprintf(st->blobs, sizeof(st->blobs), "%s/blobs", repo) >=
	    (int)sizeof(st->blobs) ||
	    snprintf(dbpath, sizeof(dbpath), "%s/manifest.db", repo) >=
	    (int)sizeof(dbpath)) {
		cs_errf(e, "repository path too long: %s", repo);
		goto fail;
	}
	if (create) {
		if (mkdir_p(repo, 0700, e) < 0 || mkdir_p(st->blobs, 0700, e) < 0)
			goto fail;
	} else if (stat(dbpath, &sb) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			cs_errf(e, "repository %s does not exist (create one "
			    "with cutsnap snapshot -r %s)", repo, repo);
		else
			cs_errno(e, "repository %s: stat %s", repo, dbpath);
		goto fail;
	} else if (!S_ISREG(sb.st_mode)) {
		cs_errf(e, "repository %s: manifest.db is not a regular file",
		    repo);
		goto fail;
	}
	flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW |
	    (create ? SQLITE_OPEN_CREATE : 0);
	if (sqlite3_open_v2(dbpath, &st->db, flags, NULL) != SQLITE_OK) {
		db_fail(st, e, "open manifest.db");
		goto fail;
	}
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, 10000);
	/* journal_mode first: it is the first statement that reads the
	 * file, so it is where a non-database is noticed. */
	if (pragma(st, "PRAGMA journal_mode=WAL", e) < 0 ||
	    pragma(st, "PRAGMA foreign_keys=ON", e) < 0 ||
	    pragma(st, "PRAGMA synchronous=FULL", e) < 0 ||
	    setup_schema(st, create, e) < 0 ||
	    store_reap_stale(st, e) < 0)
		goto fail;
	*out = st;
	return 0;
fail:
	store_close(st);
	return -1;
}

void
store_close(struct store *st)
{
	if (st == NULL)
		return;
	/* A snapshot still running here is abandoned: the next open reaps
	 * it as aborted. */
	lock_release(st, 0);
	sqlite3_close_v2(st->db);
	mac_key_free(st->key, st->keylen);
	free(st);
}

/* Snapshot identities (snapuid.h): a side table, so that repositories
 * written before them keep their schema; readers look for it first. */
static const char uids_sql[] =
    "CREATE TABLE IF NOT EXISTS snapshot_uids("
    " snapshot_id INTEGER PRIMARY KEY"
    "  REFERENCES snapshots(id) ON DELETE CASCADE,"
    " uid TEXT NOT NULL UNIQUE)";

/* 1 if the manifest has table snapshot_uids, 0 if not, -1 on error. */
static int
have_uids(struct store *st, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int step;

	if (db_prepare(st, "SELECT 1 FROM sqlite_master WHERE type = 'table' "
	    "AND name = 'snapshot_uids'", &s, e) < 0)
		return -1;
	step = sqlite3_step(s);
	sqlite3_finalize(s);
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		return db_fail(st, e, "reading the manifest");
	return step == SQLITE_ROW;
}

int
store_begin_snapshot(struct store *st, const char *initiator,
    const char *config_text, const struct snapuid *uid, uint64_t *id,
    struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	char now[32], hex[SNAPUID_HEX_LEN];

	*id = 0;
	store_now(now);
	/* The lock exists before the row does, so a reaper never sees this
	 * snapshot running without a live lock. */
	if (lock_acquire(st, e) < 0)
		return -1;
	if (db_begin(st, e) < 0)
		return -1;
	if (db_prepare(st, "INSERT INTO snapshots(started_at, status, "
	    "initiator, config, lock) VALUES (?, 'running', ?, ?, ?)", &s,
	    e) < 0)
		goto fail;
	sqlite3_bind_text(s, 1, now, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, initiator, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, config_text, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, st->lock_name, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE) {
		db_fail(st, e, "creating the snapshot");
		goto fail;
	}
	sqlite3_finalize(s);
	s = NULL;
	*id = (uint64_t)sqlite3_last_insert_rowid(st->db);
	snapuid_hex(uid, hex);
	if (db_exec(st, uids_sql, e) < 0 ||
	    db_prepare(st, "INSERT INTO snapshot_uids(snapshot_id, uid) "
	    "VALUES (?, ?)", &s, e) < 0)
		goto fail;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)*id);
	sqlite3_bind_text(s, 2, hex, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE) {
		db_fail(st, e, "creating the snapshot");
		goto fail;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (db_commit(st, e) < 0)
		goto fail;
	st->lock_snap = *id;
	return 0;
fail:
	*id = 0;
	sqlite3_finalize(s);
	db_rollback(st);
	return -1;
}

int
store_abort_snapshot(struct store *st, uint64_t id, const char *reason,
    struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	char now[32];
	int changed;

	store_now(now);
	if (db_begin(st, e) < 0)
		return -1;
	if (db_prepare(st, "UPDATE snapshots SET status = 'aborted', "
	    "finished_at = ?, reason = ? WHERE id = ? AND status = 'running'",
	    &s, e) < 0)
		goto fail;
	sqlite3_bind_text(s, 1, now, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, reason ? reason : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)id);
	if (sqlite3_step(s) != SQLITE_DONE) {
		db_fail(st, e, "aborting the snapshot");
		goto fail;
	}
	changed = sqlite3_changes(st->db);
	sqlite3_finalize(s);
	s = NULL;
	if (changed == 0) {
		cs_errf(e, "snapshot %llu is not running; it was not aborted",
		    (unsigned long long)id);
		goto fail;
	}
	if (db_commit(st, e) < 0)
		goto fail;
	lock_release(st, id);
	return 0;
fail:
	sqlite3_finalize(s);
	db_rollback(st);
	return -1;
}

static void
copy_col(char *dst, size_t dsz, sqlite3_stmt *s, int i)
{
	snprintf(dst, dsz, "%s", col_text(s, i));
}

/* total() is a float, and a tampered size may be anything. */
static uint64_t
total_u64(double d)
{
	if (!(d > 0))
		return 0;
	if (d >= 18446744073709551615.0)
		return UINT64_MAX;
	return (uint64_t)d;
}

/* Every snapshot with its totals; uidcol: its identity's column. */
#define LIST_SQL(uidcol) "SELECT id, started_at, finished_at, status, " \
    "initiator, reason," \
    " (SELECT count(*) FROM agents a WHERE a.snapshot_id = s.id)," \
    " (SELECT total(size) FROM agents a WHERE a.snapshot_id = s.id)," \
    " (SELECT count(*) FROM messages m WHERE m.snapshot_id = s.id), " \
    uidcol " FROM snapshots s ORDER BY id"

int
store_list(struct store *st, struct snap_info **out, size_t *n,
    struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	struct snap_info *v = NULL, *nv, *si;
	size_t cnt = 0, cap = 0;
	struct snapuid uid;
	uint64_t u;
	int rc = -1, step, uids;

	*out = NULL;
	*n = 0;
	if ((uids = have_uids(st, e)) < 0 ||
	    db_prepare(st, uids ? LIST_SQL("(SELECT uid FROM snapshot_uids x "
	    "WHERE x.snapshot_id = s.id)") : LIST_SQL("NULL"), &s, e) < 0)
		goto out;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL) {
				cs_errf(e, "out of memory");
				goto out;
			}
			v = nv;
		}
		si = &v[cnt++];
		memset(si, 0, sizeof(*si));
		si->id = (uint64_t)sqlite3_column_int64(s, 0);
		copy_col(si->started, sizeof(si->started), s, 1);
		copy_col(si->finished, sizeof(si->finished), s, 2);
		copy_col(si->status, sizeof(si->status), s, 3);
		copy_col(si->initiator, sizeof(si->initiator), s, 4);
		copy_col(si->reason, sizeof(si->reason), s, 5);
		si->nagents = sqlite3_column_int(s, 6);
		si->bytes = total_u64(sqlite3_column_double(s, 7));
		si->nmsgs = col_u64(s, 8, &u) == 0 ? u : 0;
		/* A tampered row is shown as no identity, never as text. */
		if (snapuid_parse(col_text(s, 9), &uid) == 0)
			snapuid_hex(&uid, si->uid);
	}
	if (step != SQLITE_DONE) {
		db_fail(st, e, "listing snapshots");
		goto out;
	}
	*out = v;
	*n = cnt;
	v = NULL;
	rc = 0;
out:
	free(v);
	sqlite3_finalize(s);
	return rc;
}
