/* remote.c - what an object-store repository needs from a manifest file
 * that is not (or not yet) a local repository: a consistent one-file copy
 * to upload, and the blob names it refers to. The repository code under
 * store/objrepo.c moves these files; only the store reads SQLite. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

static int
open_ro(const char *path, sqlite3 **db, struct cs_err *e)
{
	if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		cs_errf(e, "open %s: %s", path, *db ? sqlite3_errmsg(*db) :
		    "out of memory");
		sqlite3_close(*db);
		*db = NULL;
		return -1;
	}
	sqlite3_extended_result_codes(*db, 1);
	sqlite3_busy_timeout(*db, 10000);
	return 0;
}

int
store_manifest_copy(const char *manifest, const char *dst, struct cs_err *e)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int rc = -1;

	if (unlink(dst) < 0 && access(dst, F_OK) == 0)
		return cs_errno(e, "remove %s", dst);
	if (open_ro(manifest, &db, e) < 0)
		return -1;
	if (sqlite3_prepare_v2(db, "VACUUM INTO ?1", -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(s, 1, dst, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_DONE) {
		cs_errf(e, "copy %s: %s", manifest, sqlite3_errmsg(db));
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	sqlite3_close(db);
	return rc;
}

int
store_manifest_blobs(const char *manifest, uint64_t id, char ***names,
    size_t *n, struct cs_err *e)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	char **v = NULL, **nv;
	size_t cnt = 0, cap = 0;
	const unsigned char *t;
	int rc = -1, r;

	*names = NULL;
	*n = 0;
	if (open_ro(manifest, &db, e) < 0)
		return -1;
	if (sqlite3_prepare_v2(db, id == STORE_BLOBS_ALL ?
	    "SELECT DISTINCT sha256 FROM agent_chunks ORDER BY sha256" :
	    id == 0 ? "SELECT DISTINCT sha256 FROM agent_chunks WHERE "
	    "snapshot_id = (SELECT max(id) FROM snapshots WHERE status = "
	    "'complete') ORDER BY sha256" :
	    "SELECT DISTINCT sha256 FROM agent_chunks WHERE snapshot_id = ?1 "
	    "ORDER BY sha256", -1, &s, NULL) != SQLITE_OK ||
	    (id != STORE_BLOBS_ALL && id != 0 &&
	    sqlite3_bind_int64(s, 1, (sqlite3_int64)id) != SQLITE_OK)) {
		cs_errf(e, "%s: %s", manifest, sqlite3_errmsg(db));
		goto out;
	}
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		t = sqlite3_column_text(s, 0);
		if (t == NULL || strlen((const char *)t) != 64 ||
		    strspn((const char *)t, "0123456789abcdef") != 64) {
			cs_errf(e, "%s: a chunk row names no blob", manifest);
			goto out;
		}
		if (cnt == cap) {
			cap = cap ? cap * 2 : 256;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL)
				goto oom;
			v = nv;
		}
		if ((v[cnt] = strdup((const char *)t)) == NULL)
			goto oom;
		cnt++;
	}
	if (r != SQLITE_DONE) {
		cs_errf(e, "%s: %s", manifest, sqlite3_errmsg(db));
		goto out;
	}
	*names = v;
	*n = cnt;
	v = NULL;
	cnt = 0;
	rc = 0;
	goto out;
oom:
	cs_errc(e, CS_E_NOMEM, "out of memory");
out:
	while (cnt > 0)
		free(v[--cnt]);
	free(v);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return rc;
}

int
store_manifest_gen(const char *manifest, uint64_t *gen, uint64_t *max_id,
    struct cs_err *e)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int r, rc = -1;

	*gen = *max_id = 0;
	if (open_ro(manifest, &db, e) < 0)
		return -1;
	r = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE "
	    "type = 'table' AND name = 'repo_generation'", -1, &s, NULL);
	if (r != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW)
		goto fail;
	r = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	s = NULL;
	if (r == 0) {
		rc = 0;
		goto out;
	}
	if (sqlite3_prepare_v2(db, "SELECT gen, max_id FROM repo_generation "
	    "WHERE id = 1", -1, &s, NULL) != SQLITE_OK)
		goto fail;
	if ((r = sqlite3_step(s)) == SQLITE_ROW) {
		*gen = (uint64_t)sqlite3_column_int64(s, 0);
		*max_id = (uint64_t)sqlite3_column_int64(s, 1);
	} else if (r != SQLITE_DONE) {
		goto fail;
	}
	rc = 0;
	goto out;
fail:
	cs_errf(e, "%s: %s", manifest, sqlite3_errmsg(db));
out:
	sqlite3_finalize(s);
	sqlite3_close(db);
	return rc;
}
