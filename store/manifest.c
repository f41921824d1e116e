/* manifest.c - opening REPO/manifest.db, its schema, and the snapshot rows
 * that are written outside a commit (begin, abort) or only read (list). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"
#include "../lib/fsutil.h"
#include "../crypto/mac.h"
#include "../lib/util.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* The schema. An agent's recorded file is the concatenation of its
 * agent_chunks in idx order, each a blob named by its sha256; agents.sha256
 * is the whole file's. messages has no unique constraint on (channel, seq) on
 * purpose: a duplicated message must be storable so that verify can name
 * it. Everything hangs off snapshots, so deleting a snapshot cascades. */
static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS snapshots("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
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
    REPO_ID_TABLE_SQL
    "PRAGMA user_version = " STR(STORE_SCHEMA_VERSION) ";";

/* Repository settings (object.c): a side table written once, in the
 * transaction that creates the schema; repositories made before it have
 * none and keep raw chunks. */
static const char settings_sql[] =
    "CREATE TABLE IF NOT EXISTS repo_settings("
    " name TEXT PRIMARY KEY,"
    " value TEXT NOT NULL)";

static const char *const compress_names[] = { "none", "zstd" };

const char *
store_compress_name(int compress)
{
	if (compress < 0 || compress > STORE_COMPRESS_ZSTD)
		return "?";
	return compress_names[compress];
}

void
store_settings_default(struct store_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->compress = STORE_COMPRESS_ZSTD;
}

void
store_get_settings(const struct store *st, struct store_settings *s,
    int *have)
{
	memset(s, 0, sizeof(*s));
	s->compress = st->compress;
	s->encrypt = st->enc;
	*have = st->have_settings;
}

/* The settings of a new repository (st->init, or the defaults); an
 * encrypted one gets its master key and first key here too. */
static int
settings_write(struct store *st, struct cs_err *e)
{
	struct store_settings def;
	const struct store_settings *set = st->init;
	sqlite3_stmt *s = NULL;
	const char *vals[2][2] = {
		{ "compression", NULL },
		{ "encryption", "aes-256-gcm" },
	};
	size_t i;
	int rc = -1;

	if (set == NULL) {
		store_settings_default(&def);
		set = &def;
	}
	vals[0][1] = store_compress_name(set->compress);
	if (set->encrypt && store_crypt_create(st, set->password, set->passlen,
	    e) < 0)
		return -1;
	if (store_db_exec(st, settings_sql, e) < 0 ||
	    store_db_prepare(st, "INSERT INTO repo_settings(name, value) "
	    "VALUES (?1, ?2)", &s, e) < 0)
		goto out;
	for (i = 0; i < (set->encrypt ? 2u : 1u); i++) {
		sqlite3_reset(s);
		sqlite3_bind_text(s, 1, vals[i][0], -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, vals[i][1], -1, SQLITE_STATIC);
		if (sqlite3_step(s) != SQLITE_DONE) {
			store_db_fail(st, e, "write the repository settings");
			goto out;
		}
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

/* One repo_settings row into st. */
static int
setting_row(void *ctx, sqlite3_stmt *s, struct cs_err *e)
{
	struct store *st = ctx;
	const char *name = store_col_text(s, 0), *val = store_col_text(s, 1);
	int i, found = 0;

	if (strcmp(name, "compression") == 0) {
		for (i = 0; i <= STORE_COMPRESS_ZSTD; i++)
			if (strcmp(val, compress_names[i]) == 0) {
				st->compress = i;
				found = 1;
			}
	} else if (strcmp(name, "encryption") == 0) {
		found = strcmp(val, "aes-256-gcm") == 0;
		st->enc = 1;
	} else {
		return cs_errf(e, "repository %s: unknown setting %.40s (made "
		    "by a newer version?)", st->repo, name);
	}
	if (!found)
		return cs_errf(e, "repository %s: unknown %s %.40s", st->repo,
		    name, val);
	return 0;
}

/* Load repo_settings into st; none (an older repository) is raw chunks.
 * A setting this version does not know is an error: its objects could
 * not be read. */
static int
settings_load(struct store *st, struct cs_err *e)
{
	st->compress = STORE_COMPRESS_NONE;
	if ((st->have_settings = store_db_has_table(st, "repo_settings",
	    e)) <= 0)
		return st->have_settings;
	return store_db_each(st, "SELECT name, value FROM repo_settings", NULL,
	    setting_row, st, "reading the repository settings", e);
}

/* A new manifest: the whole schema and the identity, in one transaction. */
static int
create_schema(struct store *st, struct cs_err *e)
{
	char id[40];
	int v;

	if (store_db_begin(st, e) < 0)
		return -1;
	/* Another process may have created it while we waited for the lock. */
	if (store_schema_version(st, &v, e) < 0)
		goto fail;
	if (v == 0) {
		if (store_db_exec(st, schema_sql, e) < 0 ||
		    store_repo_id_ensure(st, id, e) < 0 ||
		    store_repo_id_store(st, id, e) < 0)
			goto fail;
		/* The identity an encrypted repository binds its keys to. */
		snprintf(st->repo_id, sizeof(st->repo_id), "%s", id);
		if (settings_write(st, e) < 0)
			goto fail;
	} else if (st->init != NULL) {
		cs_errc(e, CS_E_EXISTS, "repository %s exists already",
		    st->repo);
		goto fail;
	}
	if (store_db_commit(st, e) < 0)
		goto fail;
	return 0;
fail:
	store_db_rollback(st);
	return -1;
}

/* Bring the schema to the current version (a writer), or check that a
 * reader can read it as it is. */
static int
setup_schema(struct store *st, struct cs_err *e)
{
	int v;

	if (store_schema_version(st, &v, e) < 0)
		return -1;
	if (st->init != NULL && v != 0)
		return cs_errc(e, CS_E_EXISTS, "repository %s exists already",
		    st->repo);
	if (v == 0 && st->mode == STORE_CREATE) {
		if (create_schema(st, e) < 0)
			return -1;
		v = STORE_SCHEMA_VERSION;
	}
	if (v == 1 && st->mode == STORE_READ)
		return cs_errf(e, "repository %s: manifest schema version 1 "
		    "needs an upgrade that only a writing command (snapshot, "
		    "forget, prune) does; run one where the repository is "
		    "writable, or read it with the cutsnap that wrote it",
		    st->repo);
	if (v < 1 || v > STORE_SCHEMA_VERSION)
		return cs_errc(e, CS_E_NOREPO, "repository %s: unsupported "
		    "manifest schema "
		    "version %d (expected %d)", st->repo, v,
		    STORE_SCHEMA_VERSION);
	if (v == 1) {
		if (store_migrate_v1(st, e) < 0)
			return -1;
		v = 2;
	}
	/* Version 2 reads as it is; only a writer gives it ids that never
	 * come back and an identity. */
	if (v == 2 && st->mode != STORE_READ) {
		if (store_migrate_v2(st, e) < 0)
			return -1;
		v = STORE_SCHEMA_VERSION;
	}
	st->version = v;
	return 0;
}

/* A connection-level PRAGMA. "journal_mode=WAL" on a manifest that
 * another process is creating or converting at the same moment can fail
 * with SQLITE_BUSY without SQLite calling the busy handler (two
 * connections that both hold a shared lock and both want the exclusive
 * one: SQLite refuses one at once rather than deadlock). Snapshots
 * started together into a new repository meet exactly that, so a busy
 * PRAGMA is retried, for as long as the busy timeout would have waited. */
static int
pragma(struct store *st, const char *sql, struct cs_err *e)
{
	struct timespec nap = { 0, 0 };
	int64_t deadline = cs_now_ms() + 10000;
	int rc;

	while ((rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL)) != SQLITE_OK
	    && (rc & 0xff) == SQLITE_BUSY && cs_now_ms() < deadline) {
		/* 1, 2, 4 ... 64 ms, then 64 ms at a time. */
		nap.tv_nsec = nap.tv_nsec == 0 ? 1000000 :
		    nap.tv_nsec < 64000000 ? nap.tv_nsec * 2 : nap.tv_nsec;
		(void)nanosleep(&nap, NULL);
	}
	if (rc == SQLITE_OK)
		return 0;
	if ((rc & 0xff) == SQLITE_BUSY)
		return cs_errc(e, CS_E_LOCKED, "repository %s: manifest.db "
		    "stayed locked by "
		    "another process for 10 s: %s", st->repo,
		    sqlite3_errmsg(st->db));
	/* A failing disk is an I/O error, not a missing repository. */
	return cs_errc(e, (rc & 0xff) == SQLITE_IOERR || (rc & 0xff) ==
	    SQLITE_FULL || (rc & 0xff) == SQLITE_CANTOPEN ? CS_E_IO :
	    CS_E_NOREPO, "repository %s: manifest.db is not a usable "
	    "manifest: %s", st->repo, sqlite3_errmsg(st->db));
}

/* "scheme://..." (s3://, https://): an object store, not a directory. */
static int
is_url(const char *repo)
{
	const char *p;

	for (p = repo; (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
	    (*p >= '0' && *p <= '9') || *p == '+' || *p == '-' || *p == '.';
	    p++)
		;
	return p > repo && strncmp(p, "://", 3) == 0;
}

/* Marked or mounted read-only: no write permission bit at all (which
 * stops even root by intent), a read-only mount, or not writable by us. */
static int
marked_readonly(const char *path)
{
	struct statvfs vfs;
	struct stat sb;

	if (stat(path, &sb) < 0)
		return 0;
	return (sb.st_mode & 0222) == 0 ||
	    (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) ||
	    access(path, W_OK) < 0;
}

int
store_check_path(const char *repo, int mode, struct cs_err *e)
{
	struct stat sb;

	if (*repo == '\0')
		return cs_errf(e, "empty repository path");
	if (is_url(repo))
		return cs_errf(e, "repository %s: only s3:// object stores "
		    "are supported, and only by init, key, snapshot, ls, "
		    "check, show, verify, restore, forget, prune and load",
		    repo);
	if (stat(repo, &sb) < 0) {
		if (errno == ENOENT && mode == STORE_CREATE)
			return 0;
		if (errno == ENOENT)
			return cs_errc(e, CS_E_NOREPO, "repository %s does not "
			    "exist "
			    "(create one with cutsnap snapshot -r %s)", repo,
			    repo);
		return cs_errno(e, "repository %s", repo);
	}
	if (!S_ISDIR(sb.st_mode))
		return cs_errc(e, CS_E_NOREPO, "repository %s is not a "
		    "directory", repo);
	if (access(repo, R_OK | X_OK) < 0)
		return cs_errno(e, "repository %s cannot be read", repo);
	if (mode != STORE_READ && marked_readonly(repo))
		return cs_errf(e, "repository %s is read-only; %s writes to "
		    "it (ls, show, verify and restore only read)", repo,
		    mode == STORE_CREATE ? "a snapshot" : "this command");
	return 0;
}

/* "file:" URI of path for sqlite3_open_v2, with query: every byte that
 * is not plainly safe percent-encoded. */
static int
db_uri(const char *path, const char *query, char *out, size_t outsz)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	const unsigned char *p;
	int k;

	k = snprintf(out, outsz, path[0] == '/' ? "file://" : "file:");
	n = (size_t)k;
	for (p = (const unsigned char *)path; *p; p++) {
		if (n + 4 >= outsz)
			return -1;
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("/._-~", *p) != NULL) {
			out[n++] = (char)*p;
		} else {
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		}
	}
	k = snprintf(out + n, outsz - n, "?%s", query);
	return k < 0 || (size_t)k >= outsz - n ? -1 : 0;
}

/* A reader's connection (query_only, set by the caller). In a read-only
 * repository nobody can write, so it is opened immutable (no -shm, no
 * locks), unless manifest.db-wal still holds transactions that were never
 * merged: then they are read through the existing -shm, opened read-only.
 * (A repository its owner can write but we cannot may get a writer
 * after we opened it immutable; that is read when no snapshot runs.)
 * In a writable one it shares the WAL with writers as usual; it is opened
 * read-write only so that SQLite, when it is the last connection, removes
 * the -wal and -shm files it made, leaving the directory as it was (a
 * read-only connection would leave them behind). */
static int
open_reader(struct store *st, const char *dbpath, struct cs_err *e)
{
	char wal[PATH_MAX + 8], shm[PATH_MAX + 8], uri[3 * PATH_MAX + 64];
	const char *q = "mode=rw";
	int flags = SQLITE_OPEN_READWRITE;
	struct stat sb;

	snprintf(wal, sizeof(wal), "%s-wal", dbpath);
	snprintf(shm, sizeof(shm), "%s-shm", dbpath);
	if (marked_readonly(st->repo) || marked_readonly(dbpath)) {
		/* A -wal exists while any connection is open (or one died):
		 * go through its -shm, which copes with a live writer.
		 * Immutable only when no connection has the manifest open. */
		flags = SQLITE_OPEN_READONLY;
		st->readonly = 1;
		if (stat(wal, &sb) < 0)
			q = "mode=ro&immutable=1";
		else if (access(shm, F_OK) == 0)
			q = "mode=ro&readonly_shm=1";
		else if (sb.st_size == 0)
			q = "mode=ro&immutable=1";
		else
			return cs_errf(e, "repository %s: manifest.db-wal "
			    "holds changes not yet merged into manifest.db and "
			    "manifest.db-shm is missing, so a read-only copy "
			    "cannot read them: open it once where it is "
			    "writable", st->repo);
	}
	if (db_uri(dbpath, q, uri, sizeof(uri)) < 0)
		return cs_errf(e, "repository path too long: %s", st->repo);
	if (sqlite3_open_v2(uri, &st->db, flags | SQLITE_OPEN_URI |
	    SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK)
		return store_db_fail(st, e, "open manifest.db");
	return 0;
}

/* Open repo with options o (NULL: none); an encrypted one is unlocked
 * only when unlock is set. */
static int
open_repo(const char *repo, int mode, const struct store_opts *o,
    const struct store_settings *init, int unlock, struct store **out,
    struct cs_err *e)
{
	struct store *st = NULL;
	char dbpath[PATH_MAX];
	struct stat sb;
	int flags;

	*out = NULL;
	if (store_check_path(repo, mode, e) < 0)
		return -1;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	st->lock_fd = -1;
	st->dir_fd = -1;
	st->mode = mode;
	st->init = init;
	if (o != NULL)
		st->opts = *o;
	atomic_init(&st->nchunk_reads, 0);
	if (snprintf(st->repo, sizeof(st->repo), "%s", repo) >=
	    (int)sizeof(st->repo) ||
	    snprintf(st->blobs, sizeof(st->blobs), "%s/blobs", repo) >=
	    (int)sizeof(st->blobs) ||
	    snprintf(dbpath, sizeof(dbpath), "%s/manifest.db", repo) >=
	    (int)sizeof(dbpath)) {
		cs_errf(e, "repository path too long: %s", repo);
		goto fail;
	}
	if (mode == STORE_CREATE) {
		if (fs_mkdir_p(repo, 0700, e) < 0 || fs_mkdir_p(st->blobs, 0700,
		    e) < 0)
			goto fail;
	} else if (stat(dbpath, &sb) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			cs_errc(e, CS_E_NOREPO, "repository %s does not exist "
			    "(create one "
			    "with cutsnap snapshot -r %s)", repo, repo);
		else
			cs_errno(e, "repository %s: stat %s", repo, dbpath);
		goto fail;
	} else if (!S_ISREG(sb.st_mode)) {
		cs_errc(e, CS_E_NOREPO, "repository %s: manifest.db is not "
		    "a regular file",
		    repo);
		goto fail;
	}
	if (mode != STORE_READ && access(dbpath, F_OK) == 0 &&
	    marked_readonly(dbpath)) {
		cs_errf(e, "repository %s is read-only (its manifest.db); this "
		    "command writes to it", repo);
		goto fail;
	}
	if (mode == STORE_READ) {
		if (open_reader(st, dbpath, e) < 0)
			goto fail;
	} else {
		flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW |
		    (mode == STORE_CREATE ? SQLITE_OPEN_CREATE : 0);
		if (sqlite3_open_v2(dbpath, &st->db, flags, NULL) !=
		    SQLITE_OK) {
			store_db_fail(st, e, "open manifest.db");
			goto fail;
		}
	}
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, 10000);
	if (mode == STORE_READ) {
		/* Nothing a reader runs may write, whatever the file allows. */
		if (pragma(st, "PRAGMA query_only=ON", e) < 0 ||
		    setup_schema(st, e) < 0)
			goto fail;
	} else {
		/* journal_mode first: it is the first statement that reads
		 * the file, so it is where a non-database is noticed. Foreign
		 * keys go on after setup_schema: store_migrate_v2 rebuilds the
		 * table the others refer to. */
		if (pragma(st, "PRAGMA journal_mode=WAL", e) < 0 ||
		    pragma(st, "PRAGMA synchronous=FULL", e) < 0 ||
		    setup_schema(st, e) < 0)
			goto fail;
	}
	if (pragma(st, "PRAGMA foreign_keys=ON", e) < 0 ||
	    store_repo_id_check(st, e) < 0 ||
	    settings_load(st, e) < 0 ||
	    (unlock && store_crypt_unlock(st, e) < 0) ||
	    store_gen_check(st, e) < 0 ||
	    (mode != STORE_READ && store_reap_stale(st, e) < 0))
		goto fail;
	st->init = NULL;
	*out = st;
	return 0;
fail:
	store_close(st);
	return -1;
}

int
store_open(const char *repo, int mode, struct store **out,
    struct cs_err *e)
{
	return open_repo(repo, mode, NULL, NULL, 1, out, e);
}

int
store_open_with(const char *repo, int mode, const struct store_opts *o,
    struct store **out, struct cs_err *e)
{
	return open_repo(repo, mode, o, NULL, 1, out, e);
}

int
store_open_listing(const char *repo, struct store **out, struct cs_err *e)
{
	return open_repo(repo, STORE_READ, NULL, NULL, 0, out, e);
}

int
store_init(const char *repo, const struct store_settings *s,
    struct cs_err *e)
{
	return store_init_with(repo, s, NULL, e);
}

int
store_init_with(const char *repo, const struct store_settings *s,
    const struct store_opts *o, struct cs_err *e)
{
	struct store *st = NULL;

	if (open_repo(repo, STORE_CREATE, o, s, 1, &st, e) < 0)
		return -1;
	store_close(st);
	return 0;
}

void
store_close(struct store *st)
{
	if (st == NULL)
		return;
	/* A snapshot still running here is abandoned: the next open reaps
	 * it as aborted. */
	store_lock_release(st, 0);
	store_bcheck_close(st);
	sqlite3_close_v2(st->db);
	if (st->dir_fd >= 0)
		close(st->dir_fd);	/* drops its flock */
	mac_key_free(st->key, st->keylen);
	free(st->wrote);
	mac_cleanse(st->master, sizeof(st->master));
	mac_cleanse(st->objkey, sizeof(st->objkey));
	mac_cleanse(st->namekey, sizeof(st->namekey));
	free(st);
}

const char *
store_repo_id(const struct store *st)
{
	return st->repo_id;
}

int
store_has_snapshot(struct store *st, uint64_t id, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int step;

	if (id == 0 || id > (uint64_t)INT64_MAX)
		return 0;
	if (store_db_prepare(st, "SELECT 1 FROM snapshots WHERE id = ?", &s,
	    e) < 0)
		return -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	step = sqlite3_step(s);
	sqlite3_finalize(s);
	if (step == SQLITE_ROW)
		return 1;
	if (step == SQLITE_DONE)
		return 0;
	return store_db_fail(st, e, "reading snapshots");
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
	return store_db_has_table(st, "snapshot_uids", e);
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
	if (store_lock_acquire(st, e) < 0)
		return -1;
	if (store_db_begin(st, e) < 0)
		return -1;
	if (store_gen_reserve_ids(st, e) < 0)
		goto fail;
	if (store_db_prepare(st, "INSERT INTO snapshots(started_at, status, "
	    "initiator, config, lock) VALUES (?, 'running', ?, ?, ?)", &s,
	    e) < 0)
		goto fail;
	sqlite3_bind_text(s, 1, now, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, initiator, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, config_text, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, st->lock_name, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE) {
		store_db_fail(st, e, "creating the snapshot");
		goto fail;
	}
	sqlite3_finalize(s);
	s = NULL;
	*id = (uint64_t)sqlite3_last_insert_rowid(st->db);
	snapuid_hex(uid, hex);
	if (store_db_exec(st, uids_sql, e) < 0 ||
	    store_db_prepare(st, "INSERT INTO snapshot_uids(snapshot_id, uid) "
	    "VALUES (?, ?)", &s, e) < 0)
		goto fail;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)*id);
	sqlite3_bind_text(s, 2, hex, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE) {
		store_db_fail(st, e, "creating the snapshot");
		goto fail;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (store_gen_step(st, e) < 0 || store_db_commit(st, e) < 0)
		goto fail;
	st->lock_snap = *id;
	return store_gen_publish(st, e);
fail:
	*id = 0;
	sqlite3_finalize(s);
	store_db_rollback(st);
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
	if (store_db_begin(st, e) < 0)
		return -1;
	if (store_db_prepare(st, "UPDATE snapshots SET status = 'aborted', "
	    "finished_at = ?, reason = ? WHERE id = ? AND status = 'running'",
	    &s, e) < 0)
		goto fail;
	sqlite3_bind_text(s, 1, now, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, reason ? reason : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)id);
	if (sqlite3_step(s) != SQLITE_DONE) {
		store_db_fail(st, e, "aborting the snapshot");
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
	if (store_db_commit(st, e) < 0)
		goto fail;
	store_lock_release(st, id);
	return 0;
fail:
	sqlite3_finalize(s);
	store_db_rollback(st);
	return -1;
}

int
store_reap_stale(struct store *st, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	uint64_t ids[64];
	size_t n = 0, i;
	int rc = -1;

	if (store_db_prepare(st,
	    "SELECT id, lock FROM snapshots WHERE status = "
	    "'running' ORDER BY id", &s, e) < 0)
		return -1;
	while (n < sizeof(ids) / sizeof(ids[0]) && sqlite3_step(s) ==
	    SQLITE_ROW) {
		if (sqlite3_column_type(s, 0) != SQLITE_INTEGER)
			continue;
		if (store_lock_is_stale(st, store_col_text(s, 1)))
			ids[n++] = (uint64_t)sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	s = NULL;
	for (i = 0; i < n; i++)
		/* "not running any more" is fine: someone else reaped it. */
		(void)store_abort_snapshot(st, ids[i], "coordinator exited "
		    "before the snapshot completed (killed or interrupted)",
		    NULL);
	rc = 0;
	return rc;
}

static void
copy_col(char *dst, size_t dsz, sqlite3_stmt *s, int i)
{
	snprintf(dst, dsz, "%s", store_col_text(s, i));
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
    uidcol ", lock FROM snapshots s ORDER BY id"

/* The bytes the distinct chunk blobs of snapshot id take (a missing one
 * counts 0: verify names it). */
static int
stored_bytes(struct store *st, sqlite3_stmt *s, uint64_t id, uint64_t *out,
    struct cs_err *e)
{
	char path[PATH_MAX];
	struct cs_err le;
	struct stat sb;
	int step;

	*out = 0;
	sqlite3_reset(s);
	sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	while ((step = sqlite3_step(s)) == SQLITE_ROW)
		if (store_blob_path(st, store_col_text(s, 0), path,
		    sizeof(path), &le) == 0 && lstat(path, &sb) == 0 &&
		    S_ISREG(sb.st_mode))
			*out += (uint64_t)sb.st_size;
	if (step != SQLITE_DONE)
		return store_db_fail(st, e, "listing chunks");
	return 0;
}

int
store_list(struct store *st, struct snap_info **out, size_t *n,
    struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	struct snap_info *v = NULL, *nv, *si;
	size_t cnt = 0, cap = 0;
	struct snapuid uid;
	uint64_t u;
	size_t i;
	int rc = -1, step, uids;

	*out = NULL;
	*n = 0;
	if ((uids = have_uids(st, e)) < 0 ||
	    store_db_prepare(st,
	    uids ? LIST_SQL("(SELECT uid FROM snapshot_uids x "
	    "WHERE x.snapshot_id = s.id)") : LIST_SQL("NULL"), &s, e) < 0)
		goto out;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL) {
				cs_errc(e, CS_E_NOMEM, "out of memory");
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
		si->nmsgs = store_col_u64(s, 8, &u) == 0 ? u : 0;
		/* A tampered row is shown as no identity, never as text. */
		if (snapuid_parse(store_col_text(s, 9), &uid) == 0)
			snapuid_hex(&uid, si->uid);
		snprintf(si->repo_id, sizeof(si->repo_id), "%s", st->repo_id);
		/* A writer reaped these at open; a reader only says so. */
		if (strcmp(si->status, "running") == 0 &&
		    store_lock_is_stale(st, store_col_text(s, 10))) {
			si->stale = 1;
			snprintf(si->reason, sizeof(si->reason), "%s",
			    STALE_REASON);
		}
	}
	if (step != SQLITE_DONE) {
		store_db_fail(st, e, "listing snapshots");
		goto out;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (store_db_prepare(st,
	    "SELECT DISTINCT sha256 FROM agent_chunks WHERE "
	    "snapshot_id = ?1", &s, e) < 0)
		goto out;
	for (i = 0; i < cnt; i++)
		if (stored_bytes(st, s, v[i].id, &v[i].stored, e) < 0)
			goto out;
	*out = v;
	*n = cnt;
	v = NULL;
	rc = 0;
out:
	free(v);
	sqlite3_finalize(s);
	return rc;
}
