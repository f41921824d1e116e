/* generation.c - noticing a manifest rolled back to an older copy of
 * itself.
 *
 * The manifest counts its write transactions in table repo_generation
 * (gen, and max_id: the highest snapshot id handed out). Each writer, after
 * its transaction commits, records that generation outside the manifest
 * twice:
 *
 * - an immutable commit object REPO/commits/GEN (20 digits, created with
 *   O_EXCL, fsynced): the generation, the highest id, a digest of the
 *   snapshot list (id, status, digest of each) and, in an encrypted
 *   repository, an HMAC under a key derived from the master key; the two
 *   before the newest are removed;
 * - a state file outside the repository, kept by the user who writes:
 *   $XDG_STATE_HOME/cutsnap/repos/ID (else ~/.local/state/...), ID the
 *   repository identity, holding the highest generation and id it wrote.
 *
 * Opening compares: a manifest whose generation is below the newest commit
 * object or the state file was rolled back (or replaced by an older copy).
 * Writers refuse, unless told to accept the loss (their
 * store_opts.accept_rollback), readers carry a warning
 * (store_rollback_warning). The object and state
 * are read before the manifest's generation, and written after the
 * manifest's commit, so a writer committing beside the open never looks
 * like a rollback. Snapshot ids are reserved past the highest id any of
 * the three knows (AUTOINCREMENT's sqlite_sequence is raised), so an id
 * is never handed out twice, even after an accepted rollback.
 *
 * With the records off (store_opts.no_gen_records: an object store's local
 * stand-in), the caller hands in what the bucket's commits and this user's
 * record say instead (store_opts.gen_floor, store/objgen.c), and the same
 * comparison runs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_int.h"
#include "../lib/fsutil.h"
#include "../crypto/mac.h"

#define COMMIT_MAGIC "cutsnap-commit-1"
#define COMMIT_MAX 1024

static const char gen_sql[] =
    "CREATE TABLE IF NOT EXISTS repo_generation("
    " id INTEGER PRIMARY KEY CHECK (id = 1),"
    " gen INTEGER NOT NULL,"
    " max_id INTEGER NOT NULL)";


const char *
store_rollback_warning(const struct store *st)
{
	return st->gen_warn[0] ? st->gen_warn : NULL;
}

/* The state file's path into out; -1 when there is no place for it (no
 * identity, no HOME, or an identity that is not one). */
static int
state_path(const char *id, char *out, size_t n)
{
	const char *x = getenv("XDG_STATE_HOME"), *h = getenv("HOME");
	int k;

	if (id[0] == '\0' || strspn(id, "0123456789abcdef") != strlen(id))
		return -1;
	if (x != NULL && x[0] == '/')
		k = snprintf(out, n, "%s/cutsnap/repos/%s", x, id);
	else if (h != NULL && h[0] == '/')
		k = snprintf(out, n, "%s/.local/state/cutsnap/repos/%s", h,
		    id);
	else
		return -1;
	return k < 0 || (size_t)k >= n ? -1 : 0;
}

/* The MAC line of a commit object's text in an encrypted repository. */
static int
commit_mac(const struct store *st, const char *text, size_t n,
    char hex[SHA_HEX_LEN], struct cs_err *e)
{
	uint8_t k[AEAD_KEY_LEN], tag[MAC_LEN];
	int rc;

	if (aead_hkdf(st->master, AEAD_KEY_LEN, "cutsnap commits 1", k, e) < 0)
		return -1;
	rc = mac_hmac_sha256(k, sizeof(k), text, n, tag, e);
	mac_cleanse(k, sizeof(k));
	if (rc == 0)
		sha_hex(tag, hex);
	return rc;
}

/* Parse commit object text: 0 and *gen, *max_id; -1 malformed (or, when
 * the key is known, carrying a MAC that does not check: *forged set). A
 * writer without the key (forget needs no password) writes none; such an
 * object is taken as it is: a forged one could only claim a newer
 * generation, a refusal whoever can write the repository can cause by
 * other means, never hide a rollback. */
static int
parse_commit(const struct store *st, char *t, uint64_t *gen, uint64_t *max_id,
    int *forged)
{
	char id[40], hex[SHA_HEX_LEN], *mac;
	unsigned long long g, m;
	struct cs_err e;

	*forged = 0;
	if (sscanf(t, COMMIT_MAGIC "\nrepository %39s\ngeneration %llu\n"
	    "max_snapshot_id %llu\n", id, &g, &m) != 3 ||
	    strcmp(id, st->repo_id) != 0)
		return -1;
	mac = strstr(t, "mac ");
	if (st->enc && st->unlocked && mac != NULL) {
		if (commit_mac(st, t, (size_t)(mac - t), hex, &e) < 0 ||
		    strncmp(mac + 4, hex, SHA_HEX_LEN - 1) != 0) {
			*forged = 1;
			return -1;
		}
	}
	*gen = g;
	*max_id = m;
	return 0;
}

/* The newest well-formed commit object: its generation and max id (0 when
 * none). A forged one (wrong MAC) is an error. */
static int
newest_commit(struct store *st, uint64_t *gen, uint64_t *max_id,
    struct cs_err *e)
{
	char dir[PATH_MAX + 16], path[PATH_MAX + 48], t[COMMIT_MAX + 1];
	unsigned long long g;
	uint64_t best = 0, cg, cm;
	uint8_t *p = NULL;
	struct dirent *d;
	size_t n;
	DIR *dp;
	int forged, rc = 0;
	char end;

	*gen = *max_id = 0;
	snprintf(dir, sizeof(dir), "%s/commits", st->repo);
	if ((dp = opendir(dir)) == NULL)
		return 0;	/* none yet, or not ours to read */
	while ((d = readdir(dp)) != NULL)
		if (strlen(d->d_name) == 20 &&
		    sscanf(d->d_name, "%20llu%c", &g, &end) == 1 && g > best)
			best = g;
	closedir(dp);
	for (; best > 0 && rc == 0; best--) {
		snprintf(path, sizeof(path), "%s/%020llu", dir,
		    (unsigned long long)best);
		if (fs_read_file(path, COMMIT_MAX, &p, &n, e) < 0)
			continue;	/* removed or torn: the one before */
		memcpy(t, p, n);
		t[n] = '\0';
		free(p);
		p = NULL;
		if (parse_commit(st, t, &cg, &cm, &forged) == 0) {
			*gen = cg;
			*max_id = cm;
			return 0;
		}
		if (forged)
			rc = cs_errf(e, "repository %s: commits/%020llu is not "
			    "authenticated by the repository key: it was "
			    "written without the key; remove it", st->repo,
			    (unsigned long long)best);
	}
	return rc;
}

/* The state file's generation and max id (0 when none). */
void
store_gen_record_read(const char *id, uint64_t *gen, uint64_t *max_id)
{
	char path[PATH_MAX];
	unsigned long long g, m;
	char t[257];
	uint8_t *p = NULL;
	struct cs_err e;
	size_t n;

	*gen = *max_id = 0;
	if (state_path(id, path, sizeof(path)) < 0 ||
	    fs_read_file(path, 256, &p, &n, &e) < 0)
		return;
	memcpy(t, p, n);
	t[n] = '\0';
	if (sscanf(t, "generation %llu\nmax_snapshot_id %llu", &g,
	    &m) == 2) {
		*gen = g;
		*max_id = m;
	}
	free(p);
}

/* The manifest's generation and max id (0 when it has none yet). */
static int
manifest_gen(struct store *st, uint64_t *gen, uint64_t *max_id,
    struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int have, step, rc = -1;

	*gen = *max_id = 0;
	if ((have = store_db_has_table(st, "repo_generation", e)) <= 0)
		return have;
	if (store_db_prepare(st, "SELECT gen, max_id FROM repo_generation "
	    "WHERE id = 1", &s, e) < 0)
		return -1;
	step = sqlite3_step(s);
	if (step == SQLITE_ROW) {
		*gen = (uint64_t)sqlite3_column_int64(s, 0);
		*max_id = (uint64_t)sqlite3_column_int64(s, 1);
		rc = 0;
	} else if (step == SQLITE_DONE)
		rc = 0;
	else
		store_db_fail(st, e, "reading the generation");
	sqlite3_finalize(s);
	return rc;
}

int
store_gen_check(struct store *st, struct cs_err *e)
{
	static const struct store_gen_floor none;
	const struct store_gen_floor *known = st->opts.gen_floor != NULL ?
	    st->opts.gen_floor : &none;
	int records = !st->opts.no_gen_records;
	uint64_t cg, cm, sg, sm, mg, mm;
	const char *where;

	if (!records && known->gen == 0 && known->max_id == 0)
		return 0;
	if (!records) {		/* what the object store knows instead */
		cg = known->gen;
		cm = known->max_id;
		sg = sm = 0;
	} else if (newest_commit(st, &cg, &cm, e) < 0) {
		return -1;
	} else {
		store_gen_record_read(st->repo_id, &sg, &sm);
	}
	if (manifest_gen(st, &mg, &mm, e) < 0)
		return -1;
	st->gen_known = cg > sg ? cg : sg;
	st->id_known = cm > sm ? cm : sm;
	if (mm > st->id_known)
		st->id_known = mm;
	if (mg >= st->gen_known)
		return 0;
	where = !records ? known->where : cg >= sg ?
	    "as its newest commit object says" :
	    "as this user's record of it says; its commit objects were "
	    "removed too";
	if (snprintf(st->gen_warn, sizeof(st->gen_warn), "repository %s: "
	    "manifest.db is at generation %" PRIu64 " but generation %" PRIu64
	    " was committed (%s): it was rolled back or replaced by an older "
	    "copy, and the snapshots after %" PRIu64 " are missing from it; "
	    "%s, or accept the loss with cutsnap snapshot --accept-rollback",
	    st->repo, mg, st->gen_known, where, mg, !records ? known->fix :
	    "put the newest manifest.db back") < 0)
		st->gen_warn[0] = '?';
	if (st->mode != STORE_READ && !st->opts.accept_rollback)
		return cs_errf(e, "%s", st->gen_warn);
	return 0;
}

int
store_gen_reserve_ids(struct store *st, struct cs_err *e)
{
	/* AUTOINCREMENT hands out max(seq, max rowid) + 1; sqlite_sequence
	 * has no key, hence an update, else an insert. */
	static const char *const sql[2] = {
		"UPDATE sqlite_sequence SET seq = ?1 WHERE name = 'snapshots' "
		"AND seq < ?1",
		"INSERT INTO sqlite_sequence(name, seq) SELECT 'snapshots', ?1 "
		"WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = "
		"'snapshots')",
	};
	sqlite3_stmt *s = NULL;
	int i;

	for (i = 0; i < 2 && st->id_known > 0; i++) {
		if (store_db_prepare(st, sql[i], &s, e) < 0)
			return -1;
		sqlite3_bind_int64(s, 1, (sqlite3_int64)st->id_known);
		if (sqlite3_step(s) != SQLITE_DONE) {
			sqlite3_finalize(s);
			return store_db_fail(st, e, "reserving snapshot ids");
		}
		sqlite3_finalize(s);
	}
	return 0;
}

/* One snapshot row's line into the list digest. */
static int
digest_row(void *ctx, sqlite3_stmt *s, struct cs_err *e)
{
	char line[160];

	snprintf(line, sizeof(line), "%lld %s %s\n",
	    (long long)sqlite3_column_int64(s, 0), store_col_text(s, 1),
	    store_col_text(s, 2));
	if (sha_update(ctx, line, strlen(line)) < 0)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	return 0;
}

/* SHA-256 over the snapshot list (id, status, digest of each), as hex. */
static int
list_digest(struct store *st, char hex[SHA_HEX_LEN], struct cs_err *e)
{
	struct sha_ctx *c;
	uint8_t sha[SHA_LEN];
	int rc = -1;

	if ((c = sha_new()) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if (store_db_each(st, "SELECT id, status, ifnull(digest, '') FROM "
	    "snapshots ORDER BY id", NULL, digest_row, c,
	    "reading the snapshots", e) < 0)
		goto out;
	if (sha_final(c, sha) < 0) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	sha_hex(sha, hex);
	rc = 0;
out:
	sha_free(c);
	return rc;
}

/* The highest snapshot id AUTOINCREMENT has handed out. */
static int
seq_now(struct store *st, uint64_t *seq, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int step;

	*seq = 0;
	if (store_db_prepare(st, "SELECT max(seq) FROM sqlite_sequence WHERE "
	    "name = 'snapshots'", &s, e) < 0)
		return -1;
	step = sqlite3_step(s);
	if (step == SQLITE_ROW)
		*seq = (uint64_t)sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return step == SQLITE_ROW ? 0 : store_db_fail(st, e,
	    "reading the snapshot ids");
}

int
store_gen_step(struct store *st, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	uint64_t mg, mm, seq;
	int rc = -1;

	if (store_db_exec(st, gen_sql, e) < 0 ||
	    manifest_gen(st, &mg, &mm, e) < 0 || seq_now(st, &seq, e) < 0 ||
	    list_digest(st, st->gen_digest, e) < 0)
		return -1;
	st->gen_pending = (mg > st->gen_known ? mg : st->gen_known) + 1;
	st->gen_pending_max = mm > st->id_known ? mm : st->id_known;
	if (seq > st->gen_pending_max)
		st->gen_pending_max = seq;
	if (store_db_prepare(st, "INSERT OR REPLACE INTO repo_generation(id, "
	    "gen, max_id) VALUES (1, ?1, ?2)", &s, e) < 0)
		return -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)st->gen_pending);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)st->gen_pending_max);
	if (sqlite3_step(s) != SQLITE_DONE)
		store_db_fail(st, e, "storing the generation");
	else
		rc = 0;
	sqlite3_finalize(s);
	if (rc < 0)
		st->gen_pending = 0;
	return rc;
}

/* commits/GEN, created exclusively and made durable. */
static int
write_commit(struct store *st, const char *dir, struct cs_err *e)
{
	char path[PATH_MAX + 48], text[COMMIT_MAX], hex[SHA_HEX_LEN];
	int fd, n, k = 0;

	n = snprintf(text, sizeof(text), COMMIT_MAGIC "\nrepository %s\n"
	    "generation %" PRIu64 "\nmax_snapshot_id %" PRIu64 "\n"
	    "snapshots %s\n", st->repo_id[0] ? st->repo_id : "-",
	    st->gen_pending, st->gen_pending_max, st->gen_digest);
	if (st->enc && st->unlocked) {
		if (commit_mac(st, text, (size_t)n, hex, e) < 0)
			return -1;
		k = snprintf(text + n, sizeof(text) - (size_t)n, "mac %s\n",
		    hex);
	}
	snprintf(path, sizeof(path), "%s/%020" PRIu64, dir, st->gen_pending);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0444)) < 0) {
		if (errno == EEXIST)	/* a writer beside us; ours is in */
			return 0;	/* the manifest all the same */
		return cs_errno(e, "repository %s: create commits/%020" PRIu64,
		    st->repo, st->gen_pending);
	}
	if (fs_write_all(fd, text, (size_t)(n + k)) < 0 || fsync(fd) < 0) {
		cs_errno(e, "repository %s: write commits/%020" PRIu64,
		    st->repo, st->gen_pending);
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	if (fs_fsync_dir(dir, e) < 0)
		return -1;
	if (st->gen_pending > 3) {	/* keep the newest three */
		snprintf(path, sizeof(path), "%s/%020" PRIu64, dir,
		    st->gen_pending - 3);
		(void)unlink(path);
	}
	return 0;
}

/* The state file, raised to a new generation. Best effort: it is the
 * second record, for a repository whose commit objects were removed with
 * its manifest; a home without room for it must not fail a snapshot. */
void
store_gen_record_raise(const char *id, uint64_t gen, uint64_t max_id)
{
	char path[PATH_MAX], dir[PATH_MAX], text[128];
	uint64_t sg, sm;
	struct cs_err e;
	int n;

	if (state_path(id, path, sizeof(path)) < 0)
		return;
	store_gen_record_read(id, &sg, &sm);
	if (sg > gen)
		return;		/* a writer beside us went further */
	fs_path_dirname(path, dir, sizeof(dir));
	n = snprintf(text, sizeof(text), "generation %" PRIu64
	    "\nmax_snapshot_id %" PRIu64 "\n", gen,
	    sm > max_id ? sm : max_id);
	if (fs_mkdir_p(dir, 0700, &e) == 0)
		(void)fs_atomic_write_file(path, text, (size_t)n, 0600, &e);
}

/* After the manifest's commit, which is the operation itself: a commit
 * record that cannot be written (a full or failing disk) only leaves the
 * tripwire one generation behind, never a false alarm (a manifest newer
 * than its newest record is what a reader expects), so it does not turn
 * a committed write into a failed one. A caller that reported failure
 * here would leave, say, a snapshot row committed as running by a
 * coordinator that then exits without marking it aborted. The miss is a
 * note (store_set_notes) where the caller takes them. */
int
store_gen_publish(struct store *st, struct cs_err *e)
{
	char dir[PATH_MAX + 16], line[CS_ERR_MAX + 64];
	struct cs_err we;

	(void)e;
	if (st->gen_pending == 0 || st->opts.no_gen_records) {
		st->gen_pending = 0;
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s/commits", st->repo);
	if (fs_mkdir_p(dir, 0700, &we) < 0 || write_commit(st, dir, &we) < 0) {
		if (st->nfn != NULL) {
			snprintf(line, sizeof(line), "generation %" PRIu64
			    " committed without its commit record: %s",
			    st->gen_pending, we.msg);
			st->nfn(st->nctx, line);
		}
	} else
		store_gen_record_raise(st->repo_id, st->gen_pending,
		    st->gen_pending_max);
	st->gen_known = st->gen_pending;
	if (st->gen_pending_max > st->id_known)
		st->id_known = st->gen_pending_max;
	st->gen_pending = 0;
	return 0;
}
