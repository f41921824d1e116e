/* test_manifest.c - the repository's manifest: open/create/reopen, schema
 * version, non-database files; begin, commit, list, abort; a refused
 * commit changes nothing; the digest catches edited and deleted rows; a
 * reader writes nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "../../proto/chmsg.h"
#include "../../store/store.h"
#include "unit.h"

struct fix {
	char dir[64];
	char repo[128];
	struct cfg *cfg;
};


static int
setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	char path[160];
	struct cs_err e;

	assert_non_null(f);
	assert_int_equal(unit_mkdtemp(f->dir, sizeof(f->dir)), 0);
	snprintf(f->repo, sizeof(f->repo), "%s/repo", f->dir);
	snprintf(path, sizeof(path), "%s/c.conf", f->dir);
	assert_int_equal(cfg_parse("[agent A]\ndata = a.data\n"
	    "[agent B]\ndata = b.data\n", path, &f->cfg, &e), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;

	cfg_free(f->cfg);
	assert_int_equal(unit_rmtree(f->dir), 0);
	free(f);
	return 0;
}

/* Reports for the seed cut: A sent 1 to B, B applied 0, seq 1 in flight.
 * Everything points at static storage; nothing to free. */
static void
seed_reports(struct report r[2], uint64_t id)
{
	static struct rep_wm a_sent = { "B", 1 };
	static struct rep_msg msg = { 1, (uint8_t *)"\x01\x00", 2 };
	static struct rep_channel a_in, b_in;
	static uint8_t chunks[2][1][32];

	memset(r, 0, 2 * sizeof(*r));
	memset(chunks[0], 0xcc, 32);
	memset(chunks[1], 0xdd, 32);
	memset(&a_in, 0, sizeof(a_in));
	memset(&b_in, 0, sizeof(b_in));
	snprintf(a_in.src, sizeof(a_in.src), "B");
	snprintf(b_in.src, sizeof(b_in.src), "A");
	b_in.sent = 1;
	b_in.nmsgs = 1;
	b_in.msgs = &msg;
	r[0].snap_id = r[1].snap_id = id;
	snprintf(r[0].agent, sizeof(r[0].agent), "A");
	snprintf(r[1].agent, sizeof(r[1].agent), "B");
	r[0].size = 100;
	r[1].size = 200;
	memset(r[0].sha, 0xaa, 32);
	memset(r[1].sha, 0xbb, 32);
	r[0].chunk_size = r[1].chunk_size = 4096;	/* one chunk each */
	r[0].nchunks = r[1].nchunks = 1;
	r[0].chunks = chunks[0];
	r[1].chunks = chunks[1];
	r[0].nsent = 1;
	r[0].sent = &a_sent;
	r[0].nchannels = 1;
	r[0].channels = &a_in;
	r[1].nchannels = 1;
	r[1].channels = &b_in;
}

static void
open_missing_repository(void **state)
{
	struct fix *f = *state;
	struct store *st = NULL;
	struct cs_err e;
	char want[512];

	snprintf(want, sizeof(want), "repository %s does not exist (create "
	    "one with cutsnap snapshot -r %s)", f->repo, f->repo);
	assert_int_equal(store_open(f->repo, 0, &st, &e), -1);
	assert_null(st);
	assert_string_equal(e.msg, want);
	/* A directory without a manifest is no repository either. */
	assert_int_equal(mkdir(f->repo, 0700), 0);
	assert_int_equal(store_open(f->repo, 0, &st, &e), -1);
	assert_string_equal(e.msg, want);
	store_close(NULL);
}

static void
create_and_reopen(void **state)
{
	struct fix *f = *state;
	struct store *st;
	struct snap_info *v;
	struct cs_err e;
	struct stat sb;
	char path[256];
	size_t n;

	assert_int_equal(store_open(f->repo, 1, &st, &e), 0);
	store_close(st);
	snprintf(path, sizeof(path), "%s/blobs", f->repo);
	assert_int_equal(stat(path, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 077, 0);
	assert_int_equal(store_open(f->repo, 0, &st, &e), 0);
	assert_int_equal(store_list(st, &v, &n, &e), 0);
	assert_int_equal(n, 0);
	free(v);
	store_close(st);
	/* create=1 on an existing repository just opens it. */
	assert_int_equal(store_open(f->repo, 1, &st, &e), 0);
	store_close(st);
}

static void
schema_version_mismatch(void **state)
{
	struct fix *f = *state;
	struct store *st;
	struct cs_err e;
	char want[512];

	assert_int_equal(store_open(f->repo, 1, &st, &e), 0);
	store_close(st);
	unit_sql(f->repo, "PRAGMA user_version = 7");
	snprintf(want, sizeof(want), "repository %s: unsupported manifest "
	    "schema version 7 (expected 3)", f->repo);
	assert_int_equal(store_open(f->repo, 0, &st, &e), -1);
	assert_string_equal(e.msg, want);
	assert_int_equal(store_open(f->repo, 1, &st, &e), -1);
	assert_string_equal(e.msg, want);
}

static void
not_a_database(void **state)
{
	struct fix *f = *state;
	struct store *st = NULL;
	struct cs_err e;
	char path[256], junk[4096];
	int fd;

	assert_int_equal(mkdir(f->repo, 0700), 0);
	snprintf(path, sizeof(path), "%s/manifest.db", f->repo);
	memset(junk, 'x', sizeof(junk));
	assert_true((fd = open(path, O_WRONLY | O_CREAT, 0600)) >= 0);
	assert_int_equal(write(fd, junk, sizeof(junk)), sizeof(junk));
	close(fd);
	assert_int_equal(store_open(f->repo, 0, &st, &e), -1);
	assert_null(st);
	assert_non_null(strstr(e.msg, "manifest.db is not a usable manifest"));
	assert_int_equal(store_open(f->repo, 1, &st, &e), -1);
	/* An empty file is an empty database: no schema, version 0. */
	assert_int_equal(truncate(path, 0), 0);
	assert_int_equal(store_open(f->repo, 0, &st, &e), -1);
	assert_non_null(strstr(e.msg, "schema version 0 (expected 3)"));
}

static void
begin_commit_list_abort(void **state)
{
	struct fix *f = *state;
	struct store *st;
	struct snap_info *v;
	struct report r[2];
	struct cs_err e;
	uint64_t id1, id2;
	size_t n;

	assert_int_equal(store_open(f->repo, 1, &st, &e), 0);
	assert_int_equal(store_begin_snapshot(st, "A", f->cfg->text,
	    unit_uid(), &id1, &e),
	    0);
	assert_int_equal(id1, 1);
	assert_int_equal(store_list(st, &v, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].status, "running");
	assert_string_equal(v[0].initiator, "A");
	assert_string_equal(v[0].finished, "");
	assert_int_equal(strlen(v[0].started), 20);
	free(v);

	seed_reports(r, id1);
	assert_int_equal(store_commit_snapshot(st, id1, f->cfg, r, 2, &e), 0);
	assert_int_equal(store_begin_snapshot(st, "B", f->cfg->text,
	    unit_uid(), &id2, &e),
	    0);
	assert_int_equal(id2, 2);
	assert_int_equal(store_abort_snapshot(st, id2, "lost agent B", &e), 0);
	/* Only a running snapshot can be aborted or committed. */
	assert_int_equal(store_abort_snapshot(st, id2, "again", &e), -1);
	assert_int_equal(store_abort_snapshot(st, id1, "late", &e), -1);
	seed_reports(r, id2);
	assert_int_equal(store_commit_snapshot(st, id2, f->cfg, r, 2, &e), -1);
	assert_string_equal(e.msg, "snapshot 2 is aborted, not running; it "
	    "cannot be committed");
	seed_reports(r, id1);
	assert_int_equal(store_commit_snapshot(st, id1, f->cfg, r, 2, &e), -1);

	assert_int_equal(store_list(st, &v, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].id, 1);
	assert_string_equal(v[0].status, "complete");
	assert_int_equal(v[0].nagents, 2);
	assert_int_equal(v[0].bytes, 300);
	assert_int_equal(v[0].nmsgs, 1);
	assert_int_not_equal(v[0].finished[0], '\0');
	assert_int_equal(v[1].id, 2);
	assert_string_equal(v[1].status, "aborted");
	assert_string_equal(v[1].reason, "lost agent B");
	assert_int_equal(v[1].nagents, 0);
	assert_int_equal(v[1].nmsgs, 0);
	free(v);
	store_close(st);
}

static void
refused_commit_changes_nothing(void **state)
{
	struct fix *f = *state;
	struct store *st;
	struct snap_info *v;
	struct report r[2];
	struct rep_channel *saved;
	struct cs_err e;
	uint64_t id;
	size_t n;

	assert_int_equal(store_open(f->repo, 1, &st, &e), 0);
	assert_int_equal(store_begin_snapshot(st, "A", f->cfg->text,
	    unit_uid(), &id, &e),
	    0);
	seed_reports(r, id);
	assert_int_equal(store_commit_snapshot(st, id, f->cfg, r, 1, &e), -1);
	assert_string_equal(e.msg, "no report from agent B");
	/* B did not record its channel from A: refused after A's rows were
	 * inserted, so the rollback must remove them. */
	saved = r[1].channels;
	r[1].nchannels = 0;
	assert_int_equal(store_commit_snapshot(st, id, f->cfg, r, 2, &e), -1);
	assert_string_equal(e.msg, "agent B did not record channel A->B");
	r[1].nchannels = 1;
	r[1].channels = saved;
	r[1].snap_id = 9;
	assert_int_equal(store_commit_snapshot(st, id, f->cfg, r, 2, &e), -1);
	r[1].snap_id = id;
	assert_int_equal(store_commit_snapshot(st, 42, f->cfg, r, 2, &e), -1);

	assert_int_equal(store_list(st, &v, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].status, "running");
	assert_int_equal(v[0].nagents, 0);
	assert_int_equal(v[0].nmsgs, 0);
	free(v);
	assert_int_equal(store_commit_snapshot(st, id, f->cfg, r, 2, &e), 0);
	store_close(st);
}

static void
verify_resolves_ids(void **state)
{
	struct fix *f = *state;
	struct store *st;
	struct unit_probs p;
	struct cs_err e;
	uint64_t id, got;
	char want[256];

	memset(&p, 0, sizeof(p));
	assert_int_equal(store_open(f->repo, 1, &st, &e), 0);
	snprintf(want, sizeof(want), "no complete snapshot in %s", f->repo);
	assert_int_equal(store_verify(st, 0, &got, unit_collect, &p, &e), -1);
	assert_string_equal(e.msg, want);
	assert_int_equal(store_verify(st, 9, &got, unit_collect, &p, &e), -1);
	assert_string_equal(e.msg, "snapshot 9 does not exist");
	assert_int_equal(store_begin_snapshot(st, "A", f->cfg->text,
	    unit_uid(), &id, &e),
	    0);
	assert_int_equal(store_abort_snapshot(st, id, "timed out", &e), 0);
	assert_int_equal(store_verify(st, id, &got, unit_collect, &p, &e), 1);
	assert_int_equal(got, id);
	assert_string_equal(p.line[0], "snapshot 1: status is aborted, not "
	    "complete");
	assert_int_equal(store_verify(st, 0, &got, unit_collect, &p, &e), -1);
	store_close(st);
}

/* Verify problems of snapshot 1 after the manifest statement stmt. */
static void
verify_after(struct fix *f, const char *stmt, struct unit_probs *p)
{
	struct store *st;
	struct cs_err e;
	uint64_t got;

	if (stmt != NULL)
		unit_sql(f->repo, stmt);
	memset(p, 0, sizeof(*p));
	assert_int_equal(store_open(f->repo, 0, &st, &e), 0);
	assert_true(store_verify(st, 1, &got, unit_collect, p, &e) >= 0);
	store_close(st);
}

static void
digest_catches_edited_and_deleted_rows(void **state)
{
	struct fix *f = *state;
	struct store *st;
	struct report r[2];
	struct unit_probs p;
	struct cs_err e;
	uint64_t id;
	const char *digest = "snapshot 1: manifest digest mismatch: rows "
	    "were edited or deleted";

	assert_int_equal(store_open(f->repo, 1, &st, &e), 0);
	assert_int_equal(store_begin_snapshot(st, "A", f->cfg->text,
	    unit_uid(), &id, &e),
	    0);
	seed_reports(r, id);
	assert_int_equal(store_commit_snapshot(st, id, f->cfg, r, 2, &e), 0);
	store_close(st);

	/* The chunks were never stored: those are problems, the rows are
	 * not. */
	verify_after(f, NULL, &p);
	assert_true(unit_has(&p, "agent A: chunk 0 (cccccccccccc): missing"));
	assert_true(unit_has(&p, "agent B: chunk 0 (dddddddddddd): missing"));
	assert_false(unit_has(&p, "digest"));
	/* The chunk rows are covered by the digest. */
	verify_after(f, "UPDATE agent_chunks SET sha256 = replace(sha256, "
	    "'c', 'e') WHERE agent = 'A'", &p);
	assert_true(unit_has(&p, digest));
	verify_after(f, "UPDATE agent_chunks SET sha256 = replace(sha256, "
	    "'e', 'c') WHERE agent = 'A'", &p);
	assert_false(unit_has(&p, "digest"));
	verify_after(f, "UPDATE watermarks SET seq = 2", &p);
	assert_true(unit_has(&p, digest));
	verify_after(f, "UPDATE watermarks SET seq = 1", &p);
	assert_false(unit_has(&p, "digest"));
	verify_after(f, "DELETE FROM channels WHERE src = 'B'", &p);
	assert_true(unit_has(&p, digest));
	/* A changed type is a changed row, too. */
	verify_after(f, "INSERT INTO channels VALUES (1, 'B', 'A', 0, 0)", &p);
	assert_false(unit_has(&p, "digest"));
	verify_after(f, "UPDATE channels SET sent = 'zero' WHERE src = 'B'", &p);
	assert_true(unit_has(&p, digest));
}

/* The names in dir, sorted, joined by spaces, into out. */
static void
names(const char *dir, char *out, size_t outsz)
{
	char cmd[256];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "ls -A %s | sort | tr '\\n' ' '", dir);
	assert_non_null(p = popen(cmd, "r"));
	n = fread(out, 1, outsz - 1, p);
	out[n] = '\0';
	pclose(p);
}

/* A reader (STORE_READ) writes nothing: no lock file, no WAL files left,
 * no upgrade; it may not take the exclusive lock; an exclusive holder
 * (forget/prune) keeps it out and it keeps them out. */
static void
reader_writes_nothing(void **state)
{
	struct fix *f = *state;
	struct store *st, *w;
	struct snap_info *v;
	struct cs_err e;
	char before[512], after[512], locks[160];
	uint64_t id;
	size_t n;

	assert_int_equal(store_open(f->repo, STORE_CREATE, &st, &e), 0);
	assert_int_equal(store_begin_snapshot(st, "A", "", unit_uid(), &id,
	    &e), 0);
	assert_int_equal(store_abort_snapshot(st, id, "test", &e), 0);
	assert_string_not_equal(store_repo_id(st), "");
	store_close(st);
	snprintf(locks, sizeof(locks), "%s/locks", f->repo);
	names(f->repo, before, sizeof(before));
	assert_int_equal(store_open(f->repo, STORE_READ, &st, &e), 0);
	assert_int_equal(store_lock(st, 0, &e), 0);
	assert_int_equal(store_lock(st, 1, &e), -1);
	assert_non_null(strstr(e.msg, "opened to read only"));
	assert_int_equal(store_list(st, &v, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].repo_id, store_repo_id(st));
	free(v);
	/* While it reads, an exclusive lock is refused. */
	assert_int_equal(store_open(f->repo, STORE_WRITE, &w, &e), 0);
	assert_int_equal(store_lock(w, 1, &e), -1);
	assert_non_null(strstr(e.msg, "is being read"));
	store_close(w);
	store_close(st);
	names(f->repo, after, sizeof(after));
	assert_string_equal(before, after);
	names(locks, after, sizeof(after));
	assert_string_equal(after, "");
	/* And an exclusive holder keeps a reader out. */
	assert_int_equal(store_open(f->repo, STORE_WRITE, &w, &e), 0);
	assert_int_equal(store_lock(w, 1, &e), 0);
	assert_int_equal(store_open(f->repo, STORE_READ, &st, &e), 0);
	assert_int_equal(store_lock(st, 0, &e), -1);
	assert_non_null(strstr(e.msg, "locked exclusively"));
	store_close(st);
	store_close(w);
}

/* Processes that create one new repository together all open it: two of
 * them turning the new manifest to WAL at the same moment makes SQLite
 * refuse one at once with "database is locked" (about 1 open in 100 at
 * eight at once), which must be waited out, not reported. 60 rounds of
 * eight creators each, every one must open the repository. */
#define RACE_ROUNDS 60
#define RACE_PROCS 8

static void
creators_race(void **state)
{
	struct fix *f = *state;
	char repo[160];
	struct store *st;
	struct cs_err e;
	pid_t pid[RACE_PROCS];
	int r, i, status, opened = 0, failed = 0;

	for (r = 0; r < RACE_ROUNDS; r++) {
		snprintf(repo, sizeof(repo), "%s/race%d", f->dir, r);
		for (i = 0; i < RACE_PROCS; i++) {
			pid[i] = fork();
			assert_true(pid[i] >= 0);
			if (pid[i] == 0) {
				if (store_open(repo, STORE_CREATE, &st, &e) < 0) {
					fprintf(stderr, "# %s\n", e.msg);
					_exit(1);
				}
				store_close(st);
				_exit(0);
			}
		}
		for (i = 0; i < RACE_PROCS; i++) {
			assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
			if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
				opened++;
			else
				failed++;
		}
		/* One repository, one identity, whoever created it. */
		assert_int_equal(store_open(repo, STORE_READ, &st, &e), 0);
		assert_int_equal(strlen(store_repo_id(st)), 32);
		store_close(st);
	}
	assert_int_equal(failed, 0);
	assert_int_equal(opened, RACE_ROUNDS * RACE_PROCS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(open_missing_repository,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(create_and_reopen, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(schema_version_mismatch, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(not_a_database, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(begin_commit_list_abort, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(refused_commit_changes_nothing,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(verify_resolves_ids, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    digest_catches_edited_and_deleted_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(reader_writes_nothing, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(creators_race, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
