/* mdelta.c - a manifest's change as an object of its own, so that a
 * commit to an object store uploads what the command changed, not the
 * whole manifest with every snapshot's rows (store/objrepo.c keeps the
 * chain of a full manifest and the deltas after it).
 *
 * A delta is
 *
 *   "cutsnap-delta 1\n"
 *   "seq NAME VALUE\n" ...   sqlite_sequence after the change
 *   "\n"
 *   a changeset (SQLite's session extension) from the old manifest's
 *   rows to the new one's
 *
 * sqlite_sequence has no primary key, so a changeset does not carry it;
 * the lines do, as the ids AUTOINCREMENT hands out must never go back
 * (a rolled-back repository continues past the lost ids). A change a
 * changeset cannot carry (the schema, a table without a primary key)
 * makes store_mdelta_make answer 1: the caller uploads the whole
 * manifest instead. */
#define SQLITE_ENABLE_SESSION 1
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define MDELTA_MAGIC "cutsnap-delta 1\n"
#define MDELTA_SEQ_MAX 16	/* rows of sqlite_sequence carried */

static int
db_fail(sqlite3 *db, const char *what, struct cs_err *e)
{
	return cs_errf(e, "%s: %s", what, db ? sqlite3_errmsg(db) :
	    "out of memory");
}

static int
open_db(const char *path, int flags, sqlite3 **db, struct cs_err *e)
{
	if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
		db_fail(*db, path, e);
		sqlite3_close(*db);
		*db = NULL;
		return -1;
	}
	sqlite3_extended_result_codes(*db, 1);
	return 0;
}

/* The first column of the one-row query sql, as text into out (""
 * for NULL); -1 with e set. */
static int
query_text(sqlite3 *db, const char *sql, char **out, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	const unsigned char *t;
	int rc = -1;

	*out = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_ROW) {
		db_fail(db, "read the manifest's schema", e);
		goto out;
	}
	t = sqlite3_column_text(s, 0);
	if ((*out = strdup(t != NULL ? (const char *)t : "")) == NULL)
		cs_errc(e, CS_E_NOMEM, "out of memory");
	else
		rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

/* 1 when the two manifests' schemas (tables, indexes, user_version)
 * differ, 0 when not, -1 on failure. */
static int
schema_differs(sqlite3 *db, struct cs_err *e)
{
	static const char *const q[2][2] = {
		{ "SELECT group_concat(type || ' ' || name || ' ' || "
		    "coalesce(sql, ''), ';') FROM (SELECT * FROM "
		    "main.sqlite_master ORDER BY type, name)",
		  "SELECT group_concat(type || ' ' || name || ' ' || "
		    "coalesce(sql, ''), ';') FROM (SELECT * FROM "
		    "old.sqlite_master ORDER BY type, name)" },
		{ "PRAGMA main.user_version", "PRAGMA old.user_version" },
	};
	char *a, *b;
	int i, d = 0;

	for (i = 0; i < 2 && !d; i++) {
		if (query_text(db, q[i][0], &a, e) < 0)
			return -1;
		if (query_text(db, q[i][1], &b, e) < 0) {
			free(a);
			return -1;
		}
		d = strcmp(a, b) != 0;
		free(a);
		free(b);
	}
	return d;
}

/* Whether table t has a primary key (1) or not (0); -1 on failure. */
static int
has_pk(sqlite3 *db, const char *t, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int rc = -1;

	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM "
	    "pragma_table_info(?1) WHERE pk > 0", -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(s, 1, t, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_ROW)
		db_fail(db, "read the manifest's schema", e);
	else
		rc = sqlite3_column_int(s, 0) > 0;
	sqlite3_finalize(s);
	return rc;
}

/* Whether table t (no primary key) has other rows in main than in old:
 * 1, 0, or -1. Names come from sqlite_master, quoted. */
static int
rows_differ(sqlite3 *db, const char *t, struct cs_err *e)
{
	char *sql, *n;
	int rc;

	sql = sqlite3_mprintf("SELECT (SELECT count(*) FROM (SELECT * FROM "
	    "main.\"%w\" EXCEPT SELECT * FROM old.\"%w\")) + (SELECT count(*) "
	    "FROM (SELECT * FROM old.\"%w\" EXCEPT SELECT * FROM "
	    "main.\"%w\"))", t, t, t, t);
	if (sql == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	rc = query_text(db, sql, &n, e);
	sqlite3_free(sql);
	if (rc < 0)
		return -1;
	rc = strcmp(n, "0") != 0;
	free(n);
	return rc;
}

/* The changeset that turns old's rows into main's, table by table;
 * 1 when a table without a primary key changed. */
static int
diff_tables(sqlite3 *db, sqlite3_session *ss, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	char *err = NULL;
	const char *t;
	int r, rc = -1, pk, step;

	if (sqlite3_prepare_v2(db, "SELECT name FROM main.sqlite_master WHERE "
	    "type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name", -1,
	    &s, NULL) != SQLITE_OK)
		return db_fail(db, "list the manifest's tables", e);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		t = (const char *)sqlite3_column_text(s, 0);
		if ((pk = has_pk(db, t, e)) < 0)
			goto out;
		if (!pk) {
			if ((r = rows_differ(db, t, e)) != 0) {
				rc = r;
				goto out;
			}
			continue;
		}
		if (sqlite3session_attach(ss, t) != SQLITE_OK ||
		    sqlite3session_diff(ss, "old", t, &err) != SQLITE_OK) {
			cs_errf(e, "diff of table %s: %s", t, err ? err :
			    sqlite3_errmsg(db));
			goto out;
		}
	}
	if (step != SQLITE_DONE) {
		db_fail(db, "list the manifest's tables", e);
		goto out;
	}
	rc = 0;
out:
	sqlite3_free(err);
	sqlite3_finalize(s);
	return rc;
}

/* The seq lines of db's sqlite_sequence (none when it has no such
 * table) appended to the header in buf[0, *len) of cap bytes. */
static int
seq_lines(sqlite3 *db, char *buf, size_t cap, size_t *len, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int step, n = 0, k;

	if (sqlite3_prepare_v2(db, "SELECT name, seq FROM main.sqlite_sequence "
	    "ORDER BY name", -1, &s, NULL) != SQLITE_OK)
		return 0;	/* no AUTOINCREMENT table */
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		const unsigned char *name = sqlite3_column_text(s, 0);

		if (name == NULL || strpbrk((const char *)name, " \n") != NULL ||
		    ++n > MDELTA_SEQ_MAX)
			break;
		k = snprintf(buf + *len, cap - *len, "seq %s %lld\n", name,
		    (long long)sqlite3_column_int64(s, 1));
		if (k < 0 || (size_t)k >= cap - *len)
			break;
		*len += (size_t)k;
	}
	sqlite3_finalize(s);
	if (step != SQLITE_DONE)
		return cs_errf(e, "read sqlite_sequence: malformed or too many "
		    "rows");
	return 0;
}

int
store_mdelta_make(const char *oldm, const char *newm, uint8_t **out,
    size_t *n, struct cs_err *e)
{
	char hdr[64 * (MDELTA_SEQ_MAX + 1)], *att = NULL;
	sqlite3 *db = NULL;
	sqlite3_session *ss = NULL;
	void *cs = NULL;
	int ncs = 0, r, rc = -1;
	size_t hl;

	*out = NULL;
	*n = 0;
	if (open_db(newm, SQLITE_OPEN_READWRITE, &db, e) < 0)
		return -1;
	if ((att = sqlite3_mprintf("ATTACH %Q AS old", oldm)) == NULL ||
	    sqlite3_exec(db, att, NULL, NULL, NULL) != SQLITE_OK) {
		db_fail(db, oldm, e);
		goto out;
	}
	if ((r = schema_differs(db, e)) != 0) {
		rc = r;
		goto out;
	}
	if (sqlite3session_create(db, "main", &ss) != SQLITE_OK) {
		db_fail(db, "start a session", e);
		goto out;
	}
	if ((r = diff_tables(db, ss, e)) != 0) {
		rc = r;
		goto out;
	}
	if (sqlite3session_changeset(ss, &ncs, &cs) != SQLITE_OK) {
		db_fail(db, "make the changeset", e);
		goto out;
	}
	hl = strlen(MDELTA_MAGIC);
	memcpy(hdr, MDELTA_MAGIC, hl);
	if (seq_lines(db, hdr, sizeof(hdr) - 1, &hl, e) < 0)
		goto out;
	hdr[hl++] = '\n';
	if ((*out = malloc(hl + (size_t)ncs + 1)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	memcpy(*out, hdr, hl);
	if (ncs > 0)
		memcpy(*out + hl, cs, (size_t)ncs);
	*n = hl + (size_t)ncs;
	rc = 0;
out:
	sqlite3_free(att);
	sqlite3_free(cs);
	if (ss != NULL)
		sqlite3session_delete(ss);
	sqlite3_close(db);
	return rc;
}

/* The header of delta d: where its changeset starts (*cs) and its seq
 * lines (at d + strlen(magic), up to the blank line). -1 when it is not
 * a delta. */
static int
split(const uint8_t *d, size_t n, size_t *cs, struct cs_err *e)
{
	size_t m = strlen(MDELTA_MAGIC), i;

	if (n < m + 1 || memcmp(d, MDELTA_MAGIC, m) != 0)
		return cs_errc(e, CS_E_CORRUPT, "not a manifest delta");
	for (i = m; i < n; i++)
		if (d[i] == '\n' && d[i - 1] == '\n') {
			*cs = i + 1;
			return 0;
		}
	return cs_errc(e, CS_E_CORRUPT, "manifest delta without its header's "
	    "end");
}

/* Raises sqlite_sequence to the header's values: ids never go back. */
static int
apply_seq(sqlite3 *db, const uint8_t *d, size_t end, struct cs_err *e)
{
	char line[160], name[128];
	long long v;
	size_t i = strlen(MDELTA_MAGIC), j;
	char *sql;
	int rc;

	while (i + 1 < end) {
		for (j = i; j < end && d[j] != '\n'; j++)
			;
		if (j - i >= sizeof(line) || j == end)
			return cs_errc(e, CS_E_CORRUPT, "manifest delta: bad "
			    "header line");
		memcpy(line, d + i, j - i);
		line[j - i] = '\0';
		i = j + 1;
		if (sscanf(line, "seq %127s %lld", name, &v) != 2)
			return cs_errc(e, CS_E_CORRUPT, "manifest delta: bad "
			    "header line");
		sql = sqlite3_mprintf("UPDATE sqlite_sequence SET seq = %lld "
		    "WHERE name = %Q AND seq < %lld; INSERT INTO "
		    "sqlite_sequence(name, seq) SELECT %Q, %lld WHERE NOT "
		    "EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = %Q)",
		    v, name, v, name, v, name);
		if (sql == NULL)
			return cs_errc(e, CS_E_NOMEM, "out of memory");
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
		sqlite3_free(sql);
		if (rc != SQLITE_OK)
			return db_fail(db, "raise sqlite_sequence", e);
	}
	return 0;
}

/* Any conflict means the manifest is not the one the delta was made
 * from: stop, change nothing. */
static int
on_conflict(void *ctx, int why, sqlite3_changeset_iter *it)
{
	(void)ctx;
	(void)why;
	(void)it;
	return SQLITE_CHANGESET_ABORT;
}

int
store_mdelta_apply(const char *manifest, const uint8_t *d, size_t n,
    struct cs_err *e)
{
	sqlite3 *db = NULL;
	size_t cs = 0;
	int rc = -1, r;

	if (split(d, n, &cs, e) < 0)
		return -1;
	if (n - cs > (size_t)INT32_MAX)
		return cs_errc(e, CS_E_CORRUPT, "manifest delta too large");
	if (open_db(manifest, SQLITE_OPEN_READWRITE, &db, e) < 0)
		return -1;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		db_fail(db, manifest, e);
		goto out;
	}
	r = n > cs ? sqlite3changeset_apply(db, (int)(n - cs),
	    (void *)(d + cs), NULL, on_conflict, NULL) : SQLITE_OK;
	if (r != SQLITE_OK) {
		cs_errc(e, CS_E_CORRUPT, "manifest delta does not apply to its "
		    "base (%s)", sqlite3_errstr(r));
		goto rollback;
	}
	if (apply_seq(db, d, cs, e) < 0)
		goto rollback;
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		db_fail(db, manifest, e);
		goto rollback;
	}
	rc = 0;
	goto out;
rollback:
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
	sqlite3_close(db);
	return rc;
}
