/* test_backend_dir.c - the directory backend (store/backend_dir.c): a
 * create-only put never replaces, an IFMATCH put replaces only the
 * version it names and is atomic against other writers of any thread or
 * process, reads are capped, absent objects are NOTFOUND with nothing
 * left behind, a listing is sorted, filtered by prefix and shows no
 * temp file, deletes are idempotent, bad keys are refused. */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../store/backend.h"
#include "unit.h"

struct fix {
	char dir[256];		/* the backend's directory (mkdtemp) */
	struct store_backend *b;
};

static int
fix_setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct cs_err e;

	assert_non_null(f);
	assert_int_equal(unit_mkdtemp(f->dir, sizeof(f->dir)), 0);
	assert_int_equal(store_backend_dir(f->dir, &f->b, &e), 0);
	assert_int_equal(f->b->parallel, 4);
	*state = f;
	return 0;
}

static int
fix_teardown(void **state)
{
	struct fix *f = *state;

	store_backend_close(f->b);
	assert_int_equal(unit_rmtree(f->dir), 0);
	free(f);
	return 0;
}

static int
put(struct fix *f, const char *key, const char *text,
    enum store_put_cond cond, const char *tag_in, char *tag_out,
    struct cs_err *e)
{
	return f->b->ops->put(f->b, key, text, strlen(text), cond, tag_in,
	    tag_out, e);
}

/* key's content, which must be there (heap). */
static char *
get(struct fix *f, const char *key, char *tag)
{
	struct cs_err e;
	char *data;
	size_t len;

	assert_int_equal(f->b->ops->read(f->b, key, 1 << 20, &data, &len, tag,
	    &e), 0);
	assert_int_equal(strlen(data), len);
	return data;
}

static void
assert_content(struct fix *f, const char *key, const char *want)
{
	char *data = get(f, key, NULL);

	assert_string_equal(data, want);
	free(data);
}

/* How many names in dir begin with prefix. */
static int
count_names(const char *dir, const char *prefix)
{
	struct dirent *de;
	DIR *dp;
	int n = 0;

	assert_non_null(dp = opendir(dir));
	while ((de = readdir(dp)) != NULL)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(dp);
	return n;
}

static void
create_only_twice_keeps_the_first(void **state)
{
	struct fix *f = *state;
	struct cs_err e;
	char tag[STORE_TAG_MAX], rtag[STORE_TAG_MAX];

	assert_int_equal(put(f, "lease", "one", STORE_PUT_CREATE, NULL, tag,
	    &e), 0);
	assert_int_equal(put(f, "lease", "two", STORE_PUT_CREATE, NULL, NULL,
	    &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_EXISTS);
	assert_non_null(strstr(e.msg, "/lease: exists already"));
	free(get(f, "lease", rtag));
	assert_string_equal(tag, rtag);
	assert_content(f, "lease", "one");
	assert_int_equal(count_names(f->dir, ".tmp-"), 0);
}

static void
any_replaces(void **state)
{
	struct fix *f = *state;
	struct cs_err e;
	char t1[STORE_TAG_MAX], t2[STORE_TAG_MAX], dir[512];

	assert_int_equal(put(f, "a/b/c", "x", STORE_PUT_ANY, NULL, t1, &e), 0);
	assert_int_equal(put(f, "a/b/c", "yy", STORE_PUT_ANY, NULL, t2, &e),
	    0);
	assert_string_not_equal(t1, t2);
	assert_content(f, "a/b/c", "yy");
	snprintf(dir, sizeof(dir), "%s/a/b", f->dir);
	assert_int_equal(count_names(dir, ".tmp-"), 0);
}

static void
ifmatch_replaces_only_the_version_named(void **state)
{
	struct fix *f = *state;
	struct cs_err e;
	char t1[STORE_TAG_MAX], t2[STORE_TAG_MAX], rt[STORE_TAG_MAX];
	size_t len;
	char *data;

	assert_int_equal(put(f, "counter", "1", STORE_PUT_CREATE, NULL, t1,
	    &e), 0);
	assert_int_equal(put(f, "counter", "2", STORE_PUT_IFMATCH, t1, t2,
	    &e), 0);
	assert_string_not_equal(t1, t2);
	free(get(f, "counter", rt));
	assert_string_equal(rt, t2);
	/* The stale tag is refused, and nothing changes. */
	assert_int_equal(put(f, "counter", "3", STORE_PUT_IFMATCH, t1, NULL,
	    &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_EXISTS);
	assert_content(f, "counter", "2");
	/* No version to replace: refused, and nothing is created. */
	assert_int_equal(put(f, "absent", "1", STORE_PUT_IFMATCH, t2, NULL,
	    &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_EXISTS);
	assert_int_equal(f->b->ops->read(f->b, "absent", 16, &data, &len,
	    NULL, &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_NOTFOUND);
	assert_null(data);
	assert_int_equal(count_names(f->dir, ".tmp-"), 0);
}

/* Same-size versions written back to back all have tags of their own,
 * so no stale tag matches a later version, although ext4 hands a
 * replaced object's inode number to the next one. (A kernel with
 * fine-grained file times passes this even without put's own mtime;
 * one with the coarse clock's needs it.) */
static void
quick_same_size_versions_have_distinct_tags(void **state)
{
	enum { N = 64 };
	struct fix *f = *state;
	char tags[N][STORE_TAG_MAX], text[16];
	struct cs_err e;
	int i, j;

	assert_int_equal(put(f, "v", "00", STORE_PUT_ANY, NULL, tags[0], &e),
	    0);
	for (i = 1; i < N; i++) {
		snprintf(text, sizeof(text), "%02d", i);
		assert_int_equal(put(f, "v", text, STORE_PUT_IFMATCH,
		    tags[i - 1], tags[i], &e), 0);
	}
	for (i = 0; i < N; i++)
		for (j = i + 1; j < N; j++)
			assert_string_not_equal(tags[i], tags[j]);
	for (i = 0; i < N - 1; i += 7) {
		assert_int_equal(put(f, "v", "xx", STORE_PUT_IFMATCH, tags[i],
		    NULL, &e), -1);
		assert_int_equal(cs_err_code(&e), CS_E_EXISTS);
	}
	snprintf(text, sizeof(text), "%02d", N - 1);
	assert_content(f, "v", text);
}

static void
read_over_cap_is_corrupt(void **state)
{
	struct fix *f = *state;
	char buf[101], *data;
	struct cs_err e;
	size_t len;

	memset(buf, 'q', 100);
	buf[100] = '\0';
	assert_int_equal(put(f, "big", buf, STORE_PUT_ANY, NULL, NULL, &e), 0);
	assert_int_equal(f->b->ops->read(f->b, "big", 99, &data, &len, NULL,
	    &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_CORRUPT);
	assert_null(data);
	assert_int_equal(f->b->ops->read(f->b, "big", 100, &data, &len, NULL,
	    &e), 0);
	assert_int_equal(len, 100);
	assert_string_equal(data, buf);
	free(data);
}

static void
absent_is_notfound_and_leaves_no_file(void **state)
{
	struct fix *f = *state;
	char out[512], *data;
	struct cs_err e;
	uint64_t gets, bytes;
	size_t len;

	snprintf(out, sizeof(out), "%s/copy", f->dir);
	assert_int_equal(f->b->ops->read(f->b, "nope", 16, &data, &len, NULL,
	    &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_NOTFOUND);
	assert_int_equal(f->b->ops->get_file(f->b, "nope", out, &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_NOTFOUND);
	assert_int_equal(access(out, F_OK), -1);
	assert_int_equal(count_names(f->dir, "copy"), 0);

	/* A present one is copied whole and counted as get counts. */
	assert_int_equal(put(f, "k/obj", "hello", STORE_PUT_ANY, NULL, NULL,
	    &e), 0);
	gets = atomic_load(&f->b->gets);
	bytes = atomic_load(&f->b->bytes);
	assert_int_equal(f->b->ops->get_file(f->b, "k/obj", out, &e), 0);
	assert_int_equal(unit_file_size(out), 5);
	assert_int_equal(atomic_load(&f->b->gets), gets + 1);
	assert_int_equal(atomic_load(&f->b->bytes), bytes + 5);
	assert_int_equal(count_names(f->dir, "copy"), 1);
	assert_content(f, "k/obj", "hello");
	assert_int_equal(atomic_load(&f->b->gets), gets + 2);
	assert_int_equal(atomic_load(&f->b->bytes), bytes + 10);
}

static void
assert_list(struct fix *f, const char *prefix, const char **want, size_t n)
{
	struct store_obj *objs;
	struct cs_err e;
	size_t i, got;

	assert_int_equal(f->b->ops->list(f->b, prefix, &objs, &got, &e), 0);
	assert_int_equal(got, n);
	for (i = 0; i < n; i++) {
		assert_string_equal(objs[i].key, want[i]);
		assert_int_equal(objs[i].size, strlen(want[i]));
		assert_true(objs[i].mtime > 1600000000);
	}
	if (n == 0)
		assert_null(objs);
	store_objs_free(objs, got);
}

static void
list_is_sorted_filtered_and_shows_no_temp(void **state)
{
	static const char *keys[] = { "lease", "commits/0002", "blobs/cd/11",
	    "blobs/ab/ff01", "commits/0001", "blobs/ab/0001", "blobsx" };
	static const char *all[] = { "blobs/ab/0001", "blobs/ab/ff01",
	    "blobs/cd/11", "blobsx", "commits/0001", "commits/0002",
	    "lease" };
	static const char *blobs[] = { "blobs/ab/0001", "blobs/ab/ff01",
	    "blobs/cd/11" };
	static const char *commits[] = { "commits/0001", "commits/0002" };
	struct fix *f = *state;
	struct store_obj *objs;
	struct cs_err e;
	size_t i, n;
	char path[512];

	/* Each object holds its own key, so its size is the key's length. */
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_int_equal(put(f, keys[i], keys[i], STORE_PUT_CREATE,
		    NULL, NULL, &e), 0);
	/* A writer killed mid-put leaves its temp file: never listed. */
	snprintf(path, sizeof(path), "%s/blobs/ab/.tmp-abc123", f->dir);
	unit_write_text(path, "partial");
	snprintf(path, sizeof(path), "%s/.tmp-x", f->dir);
	unit_write_text(path, "partial");
	snprintf(path, sizeof(path), "%s/.backend-lock", f->dir);
	assert_int_equal(access(path, F_OK), 0);
	assert_list(f, "", all, 7);
	assert_list(f, "blobs/", blobs, 3);
	assert_list(f, "blobs/ab/", blobs, 2);
	assert_list(f, "commits/", commits, 2);
	assert_list(f, "missing/", NULL, 0);
	assert_list(f, "lease/", NULL, 0);
	assert_int_equal(f->b->ops->list(f->b, "blobs", &objs, &n, &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_USAGE);
	assert_int_equal(f->b->ops->list(f->b, "../", &objs, &n, &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_USAGE);
}

static void
delete_twice_is_no_error(void **state)
{
	struct fix *f = *state;
	struct cs_err e;
	char *data;
	size_t len;

	assert_int_equal(put(f, "x/y", "1", STORE_PUT_ANY, NULL, NULL, &e), 0);
	assert_int_equal(f->b->ops->del(f->b, "x/y", &e), 0);
	assert_int_equal(f->b->ops->read(f->b, "x/y", 16, &data, &len, NULL,
	    &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_NOTFOUND);
	assert_int_equal(f->b->ops->del(f->b, "x/y", &e), 0);
	assert_int_equal(f->b->ops->del(f->b, "never", &e), 0);
}

static void
bad_keys_are_refused(void **state)
{
	static const char *bad[] = { "", "/abs", "..", "a/../b", "a/..",
	    "a..b", "a//b", "./a", "a/./b", "a/.", "a/", ".tmp-1",
	    "a/.tmp-x", ".backend-lock" };
	struct fix *f = *state;
	char out[512], *data;
	struct cs_err e;
	size_t i, len;

	snprintf(out, sizeof(out), "%s/copy", f->dir);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(put(f, bad[i], "1", STORE_PUT_ANY, NULL, NULL,
		    &e), -1);
		assert_int_equal(cs_err_code(&e), CS_E_USAGE);
		assert_int_equal(f->b->ops->read(f->b, bad[i], 16, &data, &len,
		    NULL, &e), -1);
		assert_int_equal(cs_err_code(&e), CS_E_USAGE);
		assert_int_equal(f->b->ops->get_file(f->b, bad[i], out, &e),
		    -1);
		assert_int_equal(cs_err_code(&e), CS_E_USAGE);
		assert_int_equal(f->b->ops->del(f->b, bad[i], &e), -1);
		assert_int_equal(cs_err_code(&e), CS_E_USAGE);
	}
	/* An IFMATCH with no tag is a caller's mistake too. */
	assert_int_equal(put(f, "k", "1", STORE_PUT_IFMATCH, NULL, NULL, &e),
	    -1);
	assert_int_equal(cs_err_code(&e), CS_E_USAGE);
	assert_int_equal(count_names(f->dir, ""), 2);	/* "." and ".." */
}

/* Processes racing to create the same keys: exactly one wins each. */
static void
racing_creates_have_one_winner_per_key(void **state)
{
	enum { PROCS = 3, KEYS = 40 };
	struct fix *f = *state;
	_Atomic int *wins;
	struct cs_err e;
	char key[32], text[32], dir[512];
	pid_t pid[PROCS];
	int i, k, status, total = 0;

	wins = mmap(NULL, sizeof(*wins) * KEYS, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(wins != MAP_FAILED);
	for (k = 0; k < KEYS; k++)
		atomic_init(&wins[k], 0);
	for (i = 0; i < PROCS; i++) {
		assert_true((pid[i] = fork()) >= 0);
		if (pid[i] > 0)
			continue;
		snprintf(text, sizeof(text), "proc %d", i);
		for (k = 0; k < KEYS; k++) {
			snprintf(key, sizeof(key), "locks/k%02d", k);
			if (put(f, key, text, STORE_PUT_CREATE, NULL, NULL,
			    &e) == 0)
				atomic_fetch_add(&wins[k], 1);
			else if (cs_err_code(&e) != CS_E_EXISTS)
				_exit(1);
		}
		_exit(0);
	}
	for (i = 0; i < PROCS; i++) {
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	for (k = 0; k < KEYS; k++) {
		char *data;

		assert_int_equal(atomic_load(&wins[k]), 1);
		total += atomic_load(&wins[k]);
		snprintf(key, sizeof(key), "locks/k%02d", k);
		data = get(f, key, NULL);
		assert_true(strncmp(data, "proc ", 5) == 0);
		free(data);
	}
	assert_int_equal(total, KEYS);
	munmap(wins, sizeof(*wins) * KEYS);
	snprintf(dir, sizeof(dir), "%s/locks", f->dir);
	assert_int_equal(count_names(dir, ".tmp-"), 0);
}

struct incr {
	struct fix *f;
	int n;			/* increments to make */
	int retries;		/* refusals seen (another's write won) */
	int failed;		/* an unexpected error */
};

/* n read-modify-write increments of "counter", each retried until its
 * IFMATCH is accepted. */
static void *
incr_thread(void *arg)
{
	struct incr *in = arg;
	struct store_backend *b = in->f->b;
	char tag[STORE_TAG_MAX], text[32], *data;
	struct cs_err e;
	size_t len;
	int i;

	for (i = 0; i < in->n; ) {
		if (b->ops->read(b, "counter", 32, &data, &len, tag, &e) < 0) {
			in->failed = 1;
			return NULL;
		}
		snprintf(text, sizeof(text), "%ld", strtol(data, NULL, 10) + 1);
		free(data);
		if (b->ops->put(b, "counter", text, strlen(text),
		    STORE_PUT_IFMATCH, tag, NULL, &e) == 0)
			i++;
		else if (cs_err_code(&e) == CS_E_EXISTS)
			in->retries++;
		else {
			in->failed = 1;
			return NULL;
		}
	}
	return NULL;
}

/* Two threads increment one counter through IFMATCH: no increment is
 * lost (one would be if compare and rename were not one step). */
static void
ifmatch_increments_lose_nothing(void **state)
{
	enum { THREADS = 2, N = 100 };
	struct fix *f = *state;
	struct incr in[THREADS];
	pthread_t t[THREADS];
	struct cs_err e;
	char *data;
	int i;

	assert_int_equal(put(f, "counter", "0", STORE_PUT_CREATE, NULL, NULL,
	    &e), 0);
	for (i = 0; i < THREADS; i++) {
		in[i] = (struct incr){ .f = f, .n = N };
		assert_int_equal(pthread_create(&t[i], NULL, incr_thread,
		    &in[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(in[i].failed, 0);
	}
	data = get(f, "counter", NULL);
	assert_int_equal(strtol(data, NULL, 10), THREADS * N);
	free(data);
	if (getenv("CUTSNAP_TEST_SHOW") != NULL)
		fprintf(stderr, "counter: %d increments, %d refused\n",
		    THREADS * N, in[0].retries + in[1].retries);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fix_setup, fix_teardown)
	const struct CMUnitTest tests[] = {
		T(create_only_twice_keeps_the_first),
		T(any_replaces),
		T(ifmatch_replaces_only_the_version_named),
		T(quick_same_size_versions_have_distinct_tags),
		T(read_over_cap_is_corrupt),
		T(absent_is_notfound_and_leaves_no_file),
		T(list_is_sorted_filtered_and_shows_no_temp),
		T(delete_twice_is_no_error),
		T(bad_keys_are_refused),
		T(racing_creates_have_one_winner_per_key),
		T(ifmatch_increments_lose_nothing),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
