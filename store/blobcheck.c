/* blobcheck.c - what each blob looked like when it was last hashed, so
 * that a snapshot never reuses a blob changed since then without hashing
 * it again (chunkstore.c).
 *
 * A blob is hashed when it is written from checked bytes and when a
 * recheck reads it back. Its look then (size, inode, ctime) and the time
 * of that check go to REPO/blobchecks.db, a SQLite file of its own beside
 * the manifest: it describes this directory's files, not the snapshots,
 * so it is never part of the manifest, its digest or its upload, and
 * verify, ls, show and restore never open it. A blob edited in place, or
 * replaced by another file, has another ctime or inode however its mtime
 * is set (touch -d cannot set a ctime), so its record no longer matches
 * and the next snapshot that would reuse it hashes it first. The blob's
 * mtime plays no part: an edit sets it to "now", which looked like a
 * fresh check to the rule before this file.
 *
 * The records are only a cache of checks: a blob without one (written by
 * an older version, or its record lost) is hashed before reuse, and a
 * record whose blob is gone (prune, quarantine) matches nothing; prune
 * drops those (store_bcheck_purge). Losing the file costs one recheck of
 * each reused blob, never a wrong reuse, so it is synced NORMAL, not
 * FULL. ctime has the kernel's timestamp granularity (a few ms on most
 * file systems): an edit within that time of the check, keeping size and
 * inode, is not seen, and the recheck age still bounds how long such a
 * blob is trusted. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_int.h"

#define BCHECK_FILE "blobchecks.db"

static int
bcheck_fail(struct store *st, struct cs_err *e, const char *what)
{
	return cs_errf(e, "repository %s: %s %s: %s; remove it and the next "
	    "snapshot hashes every blob it reuses again", st->repo, what,
	    BCHECK_FILE, st->checks ? sqlite3_errmsg(st->checks) :
	    "out of memory");
}

/* Open REPO/blobchecks.db on first use, creating it. */
static int
bcheck_open(struct store *st, struct cs_err *e)
{
	char path[PATH_MAX];

	if (st->checks != NULL)
		return 0;
	if (snprintf(path, sizeof(path), "%s/" BCHECK_FILE, st->repo) >=
	    (int)sizeof(path))
		return cs_errf(e, "repository path too long: %s", st->repo);
	if (sqlite3_open_v2(path, &st->checks, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_extended_result_codes(st->checks, 1);
	sqlite3_busy_timeout(st->checks, 10000);
	if (sqlite3_exec(st->checks, "PRAGMA journal_mode=WAL", NULL, NULL,
	    NULL) != SQLITE_OK ||
	    sqlite3_exec(st->checks, "PRAGMA synchronous=NORMAL", NULL, NULL,
	    NULL) != SQLITE_OK ||
	    sqlite3_exec(st->checks, "CREATE TABLE IF NOT EXISTS checks ("
	    "name BLOB PRIMARY KEY, size INTEGER NOT NULL, "
	    "ino INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, "
	    "checked INTEGER NOT NULL) WITHOUT ROWID", NULL, NULL, NULL) !=
	    SQLITE_OK)
		goto fail;
	return 0;
fail:
	bcheck_fail(st, e, "open");
	store_bcheck_close(st);
	return -1;
}

/* bcheck_open, then a write transaction (BEGIN IMMEDIATE: a second
 * writer waits for the first instead of failing at its commit). */
static int
bcheck_begin(struct store *st, struct cs_err *e)
{
	if (bcheck_open(st, e) < 0)
		return -1;
	if (sqlite3_exec(st->checks, "BEGIN IMMEDIATE", NULL, NULL, NULL) !=
	    SQLITE_OK)
		return bcheck_fail(st, e, "write");
	return 0;
}

void
store_bcheck_close(struct store *st)
{
	sqlite3_close_v2(st->checks);
	st->checks = NULL;
}

void
store_bcheck_look(const struct stat *sb, struct blob_look *out)
{
	out->size = (uint64_t)sb->st_size;
	out->ino = (uint64_t)sb->st_ino;
	out->ctime_ns = (int64_t)sb->st_ctim.tv_sec * 1000000000 +
	    sb->st_ctim.tv_nsec;
}

int
store_bcheck_get(struct store *st, const uint8_t name[SHA_LEN],
    const struct blob_look *now, int64_t *checked, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int step, rc = -1;

	if (bcheck_open(st, e) < 0)
		return -1;
	if (sqlite3_prepare_v2(st->checks, "SELECT size, ino, ctime_ns, "
	    "checked FROM checks WHERE name = ?1", -1, &s, NULL) != SQLITE_OK)
		return bcheck_fail(st, e, "read");
	sqlite3_bind_blob(s, 1, name, SHA_LEN, SQLITE_STATIC);
	step = sqlite3_step(s);
	if (step == SQLITE_DONE) {
		rc = 0;
	} else if (step != SQLITE_ROW) {
		bcheck_fail(st, e, "read");
	} else {
		/* Stored as signed 64-bit: compare in that form. */
		rc = sqlite3_column_int64(s, 0) == (int64_t)now->size &&
		    sqlite3_column_int64(s, 1) == (int64_t)now->ino &&
		    sqlite3_column_int64(s, 2) == now->ctime_ns;
		*checked = sqlite3_column_int64(s, 3);
	}
	sqlite3_finalize(s);
	return rc;
}

int
store_bcheck_put(struct store *st, const struct blob_seen *v, size_t n,
    int64_t checked, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	size_t i;
	int rc = -1;

	if (n == 0)
		return 0;
	if (bcheck_begin(st, e) < 0)
		return -1;
	if (sqlite3_prepare_v2(st->checks, "INSERT OR REPLACE INTO checks "
	    "(name, size, ino, ctime_ns, checked) VALUES (?1, ?2, ?3, ?4, ?5)",
	    -1, &s, NULL) != SQLITE_OK)
		goto out;
	for (i = 0; i < n; i++) {
		sqlite3_bind_blob(s, 1, v[i].name, SHA_LEN, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, (int64_t)v[i].look.size);
		sqlite3_bind_int64(s, 3, (int64_t)v[i].look.ino);
		sqlite3_bind_int64(s, 4, v[i].look.ctime_ns);
		sqlite3_bind_int64(s, 5, checked);
		if (sqlite3_step(s) != SQLITE_DONE)
			goto out;
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	s = NULL;
	if (sqlite3_exec(st->checks, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto out;
	rc = 0;
out:
	if (rc < 0) {
		bcheck_fail(st, e, "write");
		sqlite3_finalize(s);
		if (!sqlite3_get_autocommit(st->checks))
			sqlite3_exec(st->checks, "ROLLBACK", NULL, NULL, NULL);
	}
	return rc;
}

/* The names of the records whose blob is gone, in *out (malloc'ed). */
static int
bcheck_gone(struct store *st, uint8_t (**out)[SHA_LEN], size_t *n,
    struct cs_err *e)
{
	char hex[SHA_HEX_LEN], path[PATH_MAX];
	uint8_t (*v)[SHA_LEN] = NULL, (*nv)[SHA_LEN];
	sqlite3_stmt *s = NULL;
	size_t cap = 0;
	struct stat sb;
	int step, rc = -1;

	*n = 0;
	if (sqlite3_prepare_v2(st->checks, "SELECT name FROM checks WHERE "
	    "length(name) = ?1", -1, &s, NULL) != SQLITE_OK) {
		bcheck_fail(st, e, "read");
		goto out;
	}
	sqlite3_bind_int(s, 1, SHA_LEN);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		sha_hex(sqlite3_column_blob(s, 0), hex);
		if (store_blob_path(st, hex, path, sizeof(path), e) < 0)
			goto out;
		if (lstat(path, &sb) == 0 || errno != ENOENT)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			if ((nv = realloc(v, cap * SHA_LEN)) == NULL) {
				cs_errc(e, CS_E_NOMEM, "out of memory");
				goto out;
			}
			v = nv;
		}
		memcpy(v[(*n)++], sqlite3_column_blob(s, 0), SHA_LEN);
	}
	if (step != SQLITE_DONE) {
		bcheck_fail(st, e, "read");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	if (rc < 0) {
		free(v);
		v = NULL;
	}
	*out = v;
	return rc;
}

int
store_bcheck_purge(struct store *st, struct cs_err *e)
{
	uint8_t (*gone)[SHA_LEN] = NULL;
	sqlite3_stmt *d = NULL;
	char path[PATH_MAX];
	size_t i, n;
	int rc = -1;

	/* Nothing recorded yet: nothing to create just to find that. */
	if (st->checks == NULL && snprintf(path, sizeof(path),
	    "%s/" BCHECK_FILE, st->repo) < (int)sizeof(path) &&
	    access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	if (bcheck_begin(st, e) < 0)
		return -1;
	if (bcheck_gone(st, &gone, &n, e) < 0)
		goto out;
	/* Rows of another length (SHA_LEN) name no blob. */
	if (sqlite3_exec(st->checks, "DELETE FROM checks WHERE length(name) "
	    "!= 32", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->checks, "DELETE FROM checks WHERE name = ?1",
	    -1, &d, NULL) != SQLITE_OK) {
		bcheck_fail(st, e, "write");
		goto out;
	}
	for (i = 0; i < n; i++) {
		sqlite3_bind_blob(d, 1, gone[i], SHA_LEN, SQLITE_STATIC);
		if (sqlite3_step(d) != SQLITE_DONE) {
			bcheck_fail(st, e, "write");
			goto out;
		}
		sqlite3_reset(d);
	}
	if (sqlite3_exec(st->checks, "COMMIT", NULL, NULL, NULL) !=
	    SQLITE_OK) {
		bcheck_fail(st, e, "write");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(d);
	free(gone);
	if (rc < 0 && !sqlite3_get_autocommit(st->checks))
		sqlite3_exec(st->checks, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}
