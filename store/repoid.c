/* repoid.c - the repository's identity: 32 hex digits in
 * blobs/.repository-id and in the manifest's table repository, checked
 * to agree by every command, so that a manifest copied from another
 * repository is refused before prune could delete the blobs it does not
 * name. Below manifest.c and migrate.c; above db.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "store_int.h"
#include "../lib/fsutil.h"

/* blobs/.repository-id: the identity, 32 hex digits and a newline. */
#define REPO_ID_FILE ".repository-id"
#define REPO_ID_HEX 32

static int
valid_repo_id(const char *s)
{
	size_t i;

	for (i = 0; i < REPO_ID_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[REPO_ID_HEX] == '\0';
}

/* The identity blobs/ carries: 0 and id set, 1 when there is none, -1
 * with e set when it cannot be read or is malformed. */
static int
repo_id_file(struct store *st, char id[40], struct cs_err *e)
{
	char path[PATH_MAX];
	uint8_t *p = NULL;
	size_t n;
	int rc = -1;

	id[0] = '\0';
	if (snprintf(path, sizeof(path), "%s/" REPO_ID_FILE, st->blobs) >=
	    (int)sizeof(path))
		return cs_errf(e, "repository path too long: %s", st->repo);
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return 1;
	if (fs_read_file(path, 64, &p, &n, e) < 0)
		return cs_errctx(e, "repository %s", st->repo);
	while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	if (n == REPO_ID_HEX) {
		memcpy(id, p, n);
		id[n] = '\0';
	}
	if (!valid_repo_id(id)) {
		id[0] = '\0';
		cs_errf(e, "repository %s: blobs/" REPO_ID_FILE " is not a "
		    "repository identity (32 lowercase hex digits)", st->repo);
		goto out;
	}
	rc = 0;
out:
	free(p);
	return rc;
}

int
store_repo_id_ensure(struct store *st, char id[40], struct cs_err *e)
{
	char path[PATH_MAX], text[REPO_ID_HEX + 2];
	uint8_t raw[REPO_ID_HEX / 2];
	size_t i;
	int rc;

	if ((rc = repo_id_file(st, id, e)) <= 0)
		return rc;	/* adopted (a crash after writing it), or bad */
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return cs_errno(e, "repository %s: getrandom", st->repo);
	for (i = 0; i < sizeof(raw); i++)
		snprintf(id + 2 * i, 3, "%02x", raw[i]);
	snprintf(text, sizeof(text), "%s\n", id);
	if (snprintf(path, sizeof(path), "%s/" REPO_ID_FILE, st->blobs) >=
	    (int)sizeof(path))
		return cs_errf(e, "repository path too long: %s", st->repo);
	if (fs_mkdir_p(st->blobs, 0700, e) < 0 ||
	    fs_atomic_write_file(path, text, strlen(text), 0400, e) < 0)
		return cs_errctx(e, "repository %s: write its identity",
		    st->repo);
	return 0;
}

/* The manifest's identity (version 3) into st->repo_id. */
static int
manifest_id(struct store *st, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int rc = -1;

	st->repo_id[0] = '\0';
	if (store_db_prepare(st, "SELECT id FROM repository", &s, e) < 0)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) ==
	    SQLITE_TEXT)
		snprintf(st->repo_id, sizeof(st->repo_id), "%s",
		    store_col_text(s, 0));
	/* Exactly one row. */
	if (!valid_repo_id(st->repo_id) || sqlite3_step(s) != SQLITE_DONE) {
		st->repo_id[0] = '\0';
		cs_errf(e, "repository %s: the manifest's identity is missing "
		    "or malformed (table repository)", st->repo);
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

/* The manifest and blobs/ must be of one repository: a manifest copied
 * from elsewhere would make prune delete every blob it does not name. */
int
store_repo_id_check(struct store *st, struct cs_err *e)
{
	char blobs_id[40];
	int rc;

	if (st->version < 3)
		return 0;	/* read without an upgrade: no identity yet */
	if (manifest_id(st, e) < 0)
		return -1;
	/* A reader that may not look into blobs/ can read no snapshot's
	 * data either: ls then shows the manifest's identity unchecked. */
	if (st->mode == STORE_READ && access(st->blobs, X_OK) < 0 &&
	    errno == EACCES)
		return 0;
	if ((rc = repo_id_file(st, blobs_id, e)) < 0)
		return -1;
	if (rc == 1)
		return cs_errf(e, "repository %s: blobs/" REPO_ID_FILE " is "
		    "missing, but the manifest belongs to repository %s: if "
		    "blobs/ is this repository's, write that identity into it",
		    st->repo, st->repo_id);
	if (strcmp(blobs_id, st->repo_id) != 0)
		return cs_errf(e, "repository %s: manifest.db belongs to "
		    "repository %s but blobs/ to repository %s: the manifest "
		    "was copied from another repository; refusing to use it",
		    st->repo, st->repo_id, blobs_id);
	return 0;
}

int
store_repo_id_store(struct store *st, const char *id, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int rc = 0;

	if (store_db_exec(st, "DELETE FROM repository", e) < 0 ||
	    store_db_prepare(st, "INSERT INTO repository(id) VALUES (?)", &s,
	    e) < 0)
		return -1;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE)
		rc = store_db_fail(st, e, "storing the repository identity");
	sqlite3_finalize(s);
	return rc;
}
