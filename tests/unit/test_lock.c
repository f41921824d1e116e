/* test_lock.c - the repository lock: shared locks coexist, exclusive ones
 * exclude, a conflict names the holder's host and pid, a stale lock (its
 * holder died) is removed, upgrade, and a snapshot holds a shared lock. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../store/store.h"
#include "unit.h"

struct fix {
	char dir[64];
	char repo[128];
	struct store *a, *b;
};


static int
setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct cs_err e;

	assert_non_null(f);
	assert_int_equal(unit_mkdtemp(f->dir, sizeof(f->dir)), 0);
	snprintf(f->repo, sizeof(f->repo), "%s/repo", f->dir);
	/* Two handles on one repository: flocks are per open file, so they
	 * conflict with each other like two processes. */
	assert_int_equal(store_open(f->repo, 1, &f->a, &e), 0);
	assert_int_equal(store_open(f->repo, STORE_WRITE, &f->b, &e), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;

	store_close(f->a);
	store_close(f->b);
	assert_int_equal(unit_rmtree(f->dir), 0);
	free(f);
	return 0;
}

/* The number of *.lock files in REPO/locks. */
static int
nlocks(const struct fix *f)
{
	char dir[160];
	struct dirent *d;
	DIR *dp;
	int n = 0;
	size_t len;

	snprintf(dir, sizeof(dir), "%s/locks", f->repo);
	if ((dp = opendir(dir)) == NULL)
		return 0;
	while ((d = readdir(dp)) != NULL) {
		len = strlen(d->d_name);
		if (len > 5 && strcmp(d->d_name + len - 5, ".lock") == 0)
			n++;
	}
	closedir(dp);
	return n;
}

static void
shared_locks_coexist(void **state)
{
	struct fix *f = *state;
	struct cs_err e;

	assert_int_equal(store_lock(f->a, 0, &e), 0);
	assert_int_equal(store_lock(f->b, 0, &e), 0);
	assert_int_equal(nlocks(f), 2);
	store_unlock(f->a);
	store_unlock(f->b);
	assert_int_equal(nlocks(f), 0);
}

static void
exclusive_refused_while_shared(void **state)
{
	struct fix *f = *state;
	struct cs_err e;
	char want[128];

	assert_int_equal(store_lock(f->a, 0, &e), 0);
	assert_int_equal(store_lock(f->b, 1, &e), -1);
	snprintf(want, sizeof(want), "pid=%ld mode=shared", (long)getpid());
	assert_non_null(strstr(e.msg, "is in use by host="));
	assert_non_null(strstr(e.msg, want));
	/* The refused one withdrew its file. */
	assert_int_equal(nlocks(f), 1);
	store_unlock(f->a);
	assert_int_equal(store_lock(f->b, 1, &e), 0);
	assert_int_equal(nlocks(f), 1);
}

static void
shared_refused_while_exclusive(void **state)
{
	struct fix *f = *state;
	struct cs_err e;
	char want[128];
	uint64_t id;

	assert_int_equal(store_lock(f->a, 1, &e), 0);
	assert_int_equal(store_lock(f->b, 0, &e), -1);
	snprintf(want, sizeof(want), "pid=%ld mode=exclusive", (long)getpid());
	assert_non_null(strstr(e.msg, "is locked exclusively by host="));
	assert_non_null(strstr(e.msg, want));
	/* A snapshot takes a shared lock: refused as well, and no row. */
	assert_int_equal(store_begin_snapshot(f->b, "A", "", unit_uid(), &id,
	    &e), -1);
	assert_non_null(strstr(e.msg, "locked exclusively"));
	assert_int_equal(store_lock(f->b, 1, &e), -1);
	assert_int_equal(nlocks(f), 1);
	store_unlock(f->a);
	assert_int_equal(store_lock(f->b, 0, &e), 0);
}

static void
upgrade_and_release(void **state)
{
	struct fix *f = *state;
	struct cs_err e;

	assert_int_equal(store_lock(f->a, 0, &e), 0);
	assert_int_equal(store_lock(f->a, 1, &e), 0);	/* alone: upgrades */
	assert_int_equal(nlocks(f), 1);
	assert_int_equal(store_lock(f->b, 0, &e), -1);
	store_unlock(f->a);
	store_unlock(f->a);				/* idempotent */
	assert_int_equal(store_lock(f->b, 0, &e), 0);
	/* An upgrade refused because of b keeps a's shared lock. */
	assert_int_equal(store_lock(f->a, 0, &e), 0);
	assert_int_equal(store_lock(f->a, 1, &e), -1);
	assert_int_equal(nlocks(f), 2);
	store_unlock(f->b);
	assert_int_equal(store_lock(f->b, 1, &e), -1);	/* a still shared */
}

/* A child takes an exclusive lock and dies by SIGKILL holding it. */
static void
stale_lock_of_a_dead_holder_is_removed(void **state)
{
	struct fix *f = *state;
	struct cs_err e;
	struct store *st;
	int p[2], status;
	pid_t pid;
	char c;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		if (store_open(f->repo, STORE_WRITE, &st, &e) < 0 ||
		    store_lock(st, 1, &e) < 0)
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	/* Alive: refused, naming the child. */
	assert_int_equal(store_lock(f->a, 0, &e), -1);
	{
		char want[64];

		snprintf(want, sizeof(want), "pid=%ld ", (long)pid);
		assert_non_null(strstr(e.msg, want));
	}
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(nlocks(f), 1);		/* its file is still there */
	assert_int_equal(store_lock(f->a, 1, &e), 0);
	assert_int_equal(nlocks(f), 1);		/* the stale one is gone */
}

/* A lock file without a holder (no flock at all) is stale too. */
static void
unlocked_file_is_stale(void **state)
{
	struct fix *f = *state;
	struct cs_err e;
	char path[200];
	int fd;

	assert_int_equal(store_lock(f->a, 0, &e), 0);
	store_unlock(f->a);
	snprintf(path, sizeof(path), "%s/locks/1-1.lock", f->repo);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "host=x pid=1 mode=exclusive\n", 28), 28);
	close(fd);
	assert_int_equal(store_lock(f->b, 1, &e), 0);
	assert_int_equal(access(path, F_OK), -1);
}

/* The snapshot's lock is shared: verify may run beside it, an exclusive
 * lock may not; commit or abort releases it. */
static void
running_snapshot_holds_a_shared_lock(void **state)
{
	struct fix *f = *state;
	struct cs_err e;
	uint64_t id;

	assert_int_equal(store_begin_snapshot(f->a, "A", "", unit_uid(), &id,
	    &e), 0);
	assert_int_equal(nlocks(f), 1);
	assert_int_equal(store_lock(f->b, 0, &e), 0);
	store_unlock(f->b);
	assert_int_equal(store_lock(f->b, 1, &e), -1);
	assert_int_equal(store_abort_snapshot(f->a, id, "test", &e), 0);
	assert_int_equal(nlocks(f), 0);
	assert_int_equal(store_lock(f->b, 1, &e), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(shared_locks_coexist, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(exclusive_refused_while_shared,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(shared_refused_while_exclusive,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(upgrade_and_release, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    stale_lock_of_a_dead_holder_is_removed, setup, teardown),
		cmocka_unit_test_setup_teardown(unlocked_file_is_stale, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    running_snapshot_holds_a_shared_lock, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
