/* db.c - the SQLite helper layer under every other file of the store:
 * prepared statements, transactions and columns with one error form
 * ("repository R: what: sqlite's message"), the schema version and the
 * time stamps rows carry. It calls nothing else of the store. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "store_int.h"
#include "../lib/util.h"

int
store_db_fail(struct store *st, struct cs_err *e, const char *what)
{
	return cs_errf(e, "repository %s: %s: %s", st->repo, what,
	    st->db ? sqlite3_errmsg(st->db) : "out of memory");
}

int
store_db_prepare(struct store *st, const char *sql, sqlite3_stmt **out,
    struct cs_err *e)
{
	*out = NULL;
	if (sqlite3_prepare_v2(st->db, sql, -1, out, NULL) != SQLITE_OK)
		return store_db_fail(st, e, "reading the manifest");
	return 0;
}

int
store_db_exec(struct store *st, const char *sql, struct cs_err *e)
{
	if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return store_db_fail(st, e, "manifest");
	return 0;
}

int
store_db_each(struct store *st, const char *sql, const int64_t *id,
    store_row_fn fn, void *ctx, const char *what, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int step, rc = -1;

	if (store_db_prepare(st, sql, &s, e) < 0)
		return -1;
	if (id != NULL)
		sqlite3_bind_int64(s, 1, (sqlite3_int64)*id);
	while ((step = sqlite3_step(s)) == SQLITE_ROW)
		if (fn(ctx, s, e) < 0)
			goto out;
	if (step != SQLITE_DONE)
		store_db_fail(st, e, what);
	else
		rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

int
store_db_has_table(struct store *st, const char *name, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int step;

	if (store_db_prepare(st,
	    "SELECT 1 FROM sqlite_master WHERE type = 'table' "
	    "AND name = ?1", &s, e) < 0)
		return -1;
	sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
	step = sqlite3_step(s);
	sqlite3_finalize(s);
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		return store_db_fail(st, e, "reading the manifest");
	return step == SQLITE_ROW;
}

int
store_db_begin(struct store *st, struct cs_err *e)
{
	return store_db_exec(st, "BEGIN IMMEDIATE", e);
}

int
store_db_commit(struct store *st, struct cs_err *e)
{
	return store_db_exec(st, "COMMIT", e);
}

void
store_db_rollback(struct store *st)
{
	if (!sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

const char *
store_col_text(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return t ? (const char *)t : "";
}

int
store_col_u64(sqlite3_stmt *s, int i, uint64_t *out)
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

int
store_schema_version(struct store *st, int *version, struct cs_err *e)
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

int64_t
store_parse_utc(const char *iso)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (end == NULL || *end != '\0')
		return -1;
	return (int64_t)timegm(&tm);
}

/* Test hook: CUTSNAP_FAULT=clock:2024-05-01T12:00:00Z sets the store's
 * wall clock (the times a snapshot records, the "now" of forget), so the
 * retention tests can lay out a history over hours and years. */
int64_t
store_clock(void)
{
	char v[32];
	int64_t t;

	if (cs_fault_value("clock", v, sizeof(v)) != NULL &&
	    (t = store_parse_utc(v)) >= 0)
		return t;
	return (int64_t)time(NULL);
}

void
store_now(char out[32])
{
	time_t t = (time_t)store_clock();
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, 32, "1970-01-01T00:00:00Z");
}
