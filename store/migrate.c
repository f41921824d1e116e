/* migrate.c - upgrading an older manifest in place, one version at a
 * time; only writing commands (snapshot, forget, prune) do it.
 *
 * Version 1 to 2:
 * Version 1 stored each recorded file as one blob named by the file's
 * SHA-256. That blob is a valid one-chunk file (a chunk list needs only
 * page-aligned offsets, and a single chunk starts at 0), so each agent row
 * gets one chunk row pointing at it and no blob is touched. The digest of
 * a snapshot covers its rows, now including the chunk rows: it is
 * re-sealed only if the stored one still matches the old rows, so a
 * manifest edited before the upgrade still fails verify afterwards. All
 * in one transaction: a crash leaves version 1 as it was.
 *
 * Version 2 to 3: snapshot ids become AUTOINCREMENT, so that an id
 * forgotten never names another snapshot later (ids forgotten before the
 * upgrade above the highest one left cannot be known any more), and the
 * repository gets its identity, also written into blobs/ beforehand. The
 * snapshots table is rebuilt the way SQLite documents for a change it
 * cannot ALTER: new table, copy, drop, rename, with foreign keys off so
 * that the drop cascades nowhere; one transaction. */
#include <string.h>

#include "store_int.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* Re-seal every snapshot whose digest matches its version 1 rows. */
static int
reseal(struct store *st, struct cs_err *e)
{
	sqlite3_stmt *s = NULL, *u = NULL;
	char old[SHA_HEX_LEN], now[SHA_HEX_LEN];
	int64_t id;
	int step, rc = -1;

	if (store_db_prepare(st,
	    "SELECT id, digest FROM snapshots WHERE digest IS "
	    "NOT NULL ORDER BY id", &s, e) < 0 ||
	    store_db_prepare(st, "UPDATE snapshots SET digest = ? WHERE id = ?",
	    &u, e) < 0)
		goto out;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		id = sqlite3_column_int64(s, 0);
		if (id <= 0) {
			cs_errc(e, CS_E_CORRUPT, "repository %s: manifest has "
			    "a snapshot with id %lld; ids start at 1", st->repo,
			    (long long)id);
			goto out;
		}
		if (store_digest_v(st, (uint64_t)id, 1, old, e) < 0)
			goto out;
		if (strcmp(old, store_col_text(s, 1)) != 0)
			continue;	/* already broken: leave it so */
		if (store_digest(st, (uint64_t)id, now, e) < 0)
			goto out;
		sqlite3_bind_text(u, 1, now, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(u, 2, id);
		if (sqlite3_step(u) != SQLITE_DONE) {
			store_db_fail(st, e, "migrating the manifest");
			goto out;
		}
		sqlite3_reset(u);
	}
	if (step != SQLITE_DONE) {
		store_db_fail(st, e, "migrating the manifest");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	sqlite3_finalize(u);
	return rc;
}

int
store_migrate_v1(struct store *st, struct cs_err *e)
{
	int v = -1;

	if (store_db_begin(st, e) < 0)
		return -1;
	/* Another process may have migrated it while we waited. */
	if (store_schema_version(st, &v, e) < 0)
		goto fail;
	if (v >= 2)
		return store_db_commit(st, e);
	if (v != 1) {
		cs_errf(e, "repository %s: unsupported manifest schema version "
		    "%d (expected %d)", st->repo, v, STORE_SCHEMA_VERSION);
		goto fail;
	}
	if (store_db_exec(st, CHUNKS_SCHEMA_SQL, e) < 0 ||
	    store_db_exec(st,
	    "INSERT INTO agent_chunks(snapshot_id, agent, idx, "
	    "offset, size, sha256) SELECT snapshot_id, name, 0, 0, size, "
	    "sha256 FROM agents WHERE size > 0", e) < 0 ||
	    reseal(st, e) < 0 ||
	    store_db_exec(st, "PRAGMA user_version = 2", e) < 0 ||
	    store_db_commit(st, e) < 0)
		goto fail;
	return 0;
fail:
	store_db_rollback(st);
	return -1;
}

/* The version 3 snapshots table, under a temporary name. */
#define SNAPSHOTS_V3_SQL \
    "CREATE TABLE snapshots_v3(" \
    " id INTEGER PRIMARY KEY AUTOINCREMENT," \
    " started_at TEXT NOT NULL," \
    " finished_at TEXT," \
    " status TEXT NOT NULL" \
    "  CHECK (status IN ('running','complete','aborted'))," \
    " initiator TEXT NOT NULL," \
    " config TEXT NOT NULL," \
    " reason TEXT," \
    " digest TEXT," \
    " lock TEXT);"

int
store_migrate_v2(struct store *st, struct cs_err *e)
{
	char id[40];
	int v = -1;

	if (store_db_begin(st, e) < 0)
		return -1;
	if (store_schema_version(st, &v, e) < 0)
		goto fail;
	if (v == STORE_SCHEMA_VERSION)
		return store_db_commit(st, e);	/* another process did it */
	if (v != 2) {
		cs_errf(e, "repository %s: unsupported manifest schema version "
		    "%d (expected %d)", st->repo, v, STORE_SCHEMA_VERSION);
		goto fail;
	}
	/* Under the write lock: two writers upgrading at once agree. */
	if (store_repo_id_ensure(st, id, e) < 0 ||
	    store_db_exec(st, SNAPSHOTS_V3_SQL
	    "INSERT INTO snapshots_v3(id, started_at, finished_at, status, "
	    "initiator, config, reason, digest, lock) SELECT id, started_at, "
	    "finished_at, status, initiator, config, reason, digest, lock "
	    "FROM snapshots;"
	    "DROP TABLE snapshots;"
	    "ALTER TABLE snapshots_v3 RENAME TO snapshots;"
	    REPO_ID_TABLE_SQL, e) < 0 ||
	    store_repo_id_store(st, id, e) < 0 ||
	    store_db_exec(st,
	    "PRAGMA user_version = " STR(STORE_SCHEMA_VERSION),
	    e) < 0 || store_db_commit(st, e) < 0)
		goto fail;
	return 0;
fail:
	store_db_rollback(st);
	return -1;
}
