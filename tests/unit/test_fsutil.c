/* test_fsutil.c - durable file helpers: atomic replace, mkdir -p, capped reads. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../lib/fsutil.h"
#include "unit.h"

static void
slurp(const char *path, char *out, size_t outsz)
{
	uint8_t *p;
	size_t n;

	assert_int_equal(fs_read_file(path, outsz - 1, &p, &n, NULL), 0);
	memcpy(out, p, n);
	out[n] = '\0';
	free(p);
}

/* How many entries of unit_dir start with prefix. */
static int
count_prefixed(const char *prefix)
{
	struct dirent *d;
	DIR *dp;
	int n = 0;

	assert_non_null(dp = opendir(unit_dir));
	while ((d = readdir(dp)) != NULL)
		if (strncmp(d->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(dp);
	return n;
}

static void
atomic_write_creates_and_replaces(void **state)
{
	char path[PATH_MAX], got[64];
	struct cs_err e;
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/f", unit_dir);
	assert_int_equal(fs_atomic_write_file(path, "first", 5, 0600, &e), 0);
	slurp(path, got, sizeof(got));
	assert_string_equal(got, "first");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(fs_atomic_write_file(path, "second!", 7, 0600, &e), 0);
	slurp(path, got, sizeof(got));
	assert_string_equal(got, "second!");
	assert_int_equal(fs_atomic_write_file(path, "", 0, 0600, &e), 0);
	slurp(path, got, sizeof(got));
	assert_string_equal(got, "");
	/* No temp file is left behind. */
	assert_int_equal(count_prefixed("f.tmp."), 0);
}

/* Temp names do not come from the pid (pids wrap, and a killed writer's
 * temp stays): a link planted at the pid's name is neither followed nor
 * in the way, and someone else's temp is left alone. */
static void
atomic_write_never_follows_a_planted_temp_link(void **state)
{
	char path[PATH_MAX], tmp[PATH_MAX + 32], victim[PATH_MAX + 8];
	char got[64];
	struct cs_err e;

	(void)state;
	snprintf(path, sizeof(path), "%s/g", unit_dir);
	snprintf(victim, sizeof(victim), "%s/victim", unit_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	assert_int_equal(fs_atomic_write_file(victim, "keep", 4, 0600, &e), 0);
	assert_int_equal(symlink(victim, tmp), 0);
	assert_int_equal(fs_atomic_write_file(path, "mine", 4, 0600, &e), 0);
	slurp(path, got, sizeof(got));
	assert_string_equal(got, "mine");
	slurp(victim, got, sizeof(got));
	assert_string_equal(got, "keep");
	assert_int_equal(count_prefixed("g.tmp."), 1);
	assert_int_equal(unlink(tmp), 0);
}

/* fs_remove_stale_temps removes PATH.tmp.* (a link itself, never what it
 * names) and nothing else. */
static void
remove_stale_temps_removes_only_its_own(void **state)
{
	char path[PATH_MAX], victim[PATH_MAX + 8], p[PATH_MAX + 32];
	char got[64];
	struct cs_err e;

	(void)state;
	snprintf(path, sizeof(path), "%s/h", unit_dir);
	snprintf(victim, sizeof(victim), "%s/victim2", unit_dir);
	assert_int_equal(fs_atomic_write_file(victim, "keep", 4, 0600, &e), 0);
	snprintf(p, sizeof(p), "%s.tmp.123", path);
	assert_int_equal(fs_atomic_write_file(p, "x", 1, 0600, &e), 0);
	snprintf(p, sizeof(p), "%s.tmp.aB3xYz", path);
	assert_int_equal(symlink(victim, p), 0);
	snprintf(p, sizeof(p), "%s/hx.tmp.1", unit_dir);
	assert_int_equal(fs_atomic_write_file(p, "x", 1, 0600, &e), 0);
	snprintf(p, sizeof(p), "%s.tmpx", path);
	assert_int_equal(fs_atomic_write_file(p, "x", 1, 0600, &e), 0);
	assert_int_equal(fs_remove_stale_temps(path, &e), 0);
	assert_int_equal(count_prefixed("h.tmp."), 0);
	assert_int_equal(count_prefixed("hx.tmp.1"), 1);
	assert_int_equal(count_prefixed("h.tmpx"), 1);
	slurp(victim, got, sizeof(got));
	assert_string_equal(got, "keep");
	/* A missing directory has nothing to clean. */
	snprintf(p, sizeof(p), "%s/none/h", unit_dir);
	assert_int_equal(fs_remove_stale_temps(p, &e), 0);
}

static void
atomic_write_into_missing_dir_fails(void **state)
{
	char path[PATH_MAX];
	struct cs_err e;

	(void)state;
	snprintf(path, sizeof(path), "%s/nope/f", unit_dir);
	assert_int_equal(fs_atomic_write_file(path, "x", 1, 0600, &e), -1);
	assert_non_null(strstr(e.msg, "No such file or directory"));
}

static void
mkdir_p_creates_nested_and_is_idempotent(void **state)
{
	char path[PATH_MAX], file[PATH_MAX + 8];
	struct cs_err e;
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/a/b//c/", unit_dir);
	assert_int_equal(fs_mkdir_p(path, 0700, &e), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(fs_mkdir_p(path, 0700, &e), 0);
	/* A component that is a file. */
	snprintf(file, sizeof(file), "%s/a/file", unit_dir);
	assert_int_equal(fs_atomic_write_file(file, "x", 1, 0600, &e), 0);
	snprintf(path, sizeof(path), "%s/a/file/d", unit_dir);
	assert_int_equal(fs_mkdir_p(path, 0700, &e), -1);
	assert_int_equal(fs_mkdir_p(file, 0700, &e), -1);
	assert_non_null(strstr(e.msg, "not a directory"));
	assert_int_equal(fs_mkdir_p("", 0700, &e), -1);
}

static void
read_file_enforces_cap(void **state)
{
	char path[PATH_MAX];
	uint8_t *big, *p;
	struct cs_err e;
	size_t n;

	(void)state;
	big = malloc(10000);
	assert_non_null(big);
	memset(big, 'z', 10000);
	snprintf(path, sizeof(path), "%s/r", unit_dir);
	assert_int_equal(fs_atomic_write_file(path, big, 10000, 0600, &e), 0);
	assert_int_equal(fs_read_file(path, 10000, &p, &n, &e), 0);
	assert_int_equal(n, 10000);
	assert_memory_equal(p, big, 10000);
	free(p);
	assert_int_equal(fs_read_file(path, 9999, &p, &n, &e), -1);
	assert_null(p);
	assert_non_null(strstr(e.msg, "larger than 9999 bytes"));
	assert_int_equal(fs_read_file(path, 0, &p, &n, &e), -1);
	/* An empty file under a zero cap is fine. */
	assert_int_equal(fs_atomic_write_file(path, "", 0, 0600, &e), 0);
	assert_int_equal(fs_read_file(path, 0, &p, &n, &e), 0);
	assert_int_equal(n, 0);
	free(p);
	snprintf(path, sizeof(path), "%s/missing", unit_dir);
	assert_int_equal(fs_read_file(path, 10, &p, &n, &e), -1);
	assert_non_null(strstr(e.msg, "No such file or directory"));
	free(big);
}

static void
pread_all_fails_at_eof(void **state)
{
	char path[PATH_MAX];
	struct cs_err e;
	uint8_t b[8];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/p", unit_dir);
	assert_int_equal(fs_atomic_write_file(path, "0123456789", 10, 0600, &e),
	    0);
	fd = open(path, O_RDONLY);
	assert_true(fd != -1);
	assert_int_equal(fs_pread_all(fd, b, 4, 6), 0);
	assert_memory_equal(b, "6789", 4);
	errno = 0;
	assert_int_equal(fs_pread_all(fd, b, 5, 6), -1);
	assert_int_equal(errno, ENODATA);
	close(fd);
}

static void
dirname_cases(void **state)
{
	char out[PATH_MAX];

	(void)state;
	fs_path_dirname("a.data", out, sizeof(out));
	assert_string_equal(out, ".");
	fs_path_dirname("/x.data", out, sizeof(out));
	assert_string_equal(out, "/");
	fs_path_dirname("/srv/cs/a.data", out, sizeof(out));
	assert_string_equal(out, "/srv/cs");
	fs_path_dirname("run//a.sock", out, sizeof(out));
	assert_string_equal(out, "run");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(atomic_write_creates_and_replaces),
		cmocka_unit_test(atomic_write_never_follows_a_planted_temp_link),
		cmocka_unit_test(remove_stale_temps_removes_only_its_own),
		cmocka_unit_test(atomic_write_into_missing_dir_fails),
		cmocka_unit_test(mkdir_p_creates_nested_and_is_idempotent),
		cmocka_unit_test(read_file_enforces_cap),
		cmocka_unit_test(pread_all_fails_at_eof),
		cmocka_unit_test(dirname_cases),
	};

	umask(022);
	return cmocka_run_group_tests(tests, unit_setup, unit_teardown);
}
