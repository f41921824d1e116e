/* test_objchain.c - the manifest chain of an object-store commit
 * (store/objchain.c), over a directory backend: each commit after the
 * first uploads one delta, and an index of the 16 before it when it
 * names that many; the chain a commit's text names, read back through
 * its indexes, rebuilds the newest manifest row for row; a changed
 * index, an index whose counts do not add up and malformed commit texts
 * are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/stat.h>

#include "../../store/objchain.h"
#include "../../store/store.h"
#include "unit.h"

#define STEPS 40	/* commits after the first: two indexes, 8 inline */

/* The snapshots table's rows, and its sequence, as one string. */
static char *
dump(const char *path)
{
	static const char q[] = "SELECT (SELECT group_concat(id || ':' || "
	    "status, ',') FROM (SELECT * FROM snapshots ORDER BY id)) || '|' "
	    "|| (SELECT group_concat(name || seq) FROM sqlite_sequence)";

	return unit_sql_text(path, q);
}

/* Each upload of a commit put into b, create-only, and freed. */
static void
put_all(struct store_backend *b, struct objupload *up, size_t n)
{
	struct cs_err e;
	size_t i;

	for (i = 0; i < n; i++) {
		assert_int_equal(b->ops->put(b, up[i].p->key, up[i].body,
		    up[i].len, STORE_PUT_CREATE, NULL, NULL, &e), 0);
		free(up[i].body);
	}
}

/* The base c names, fetched from the repository directory into path. */
static void
fetch_base(const struct objchain *c, const char *path)
{
	char src[512];
	struct cs_err e;

	snprintf(src, sizeof(src), "%s/%s", unit_path("repo"), c->base.key);
	remove(path);
	assert_int_equal(store_manifest_copy(src, path, &e), 0);
}

/* A repository of 1 + STEPS commits, one snapshot row each, in
 * unit_path("repo"); *c the newest commit's chain, last.db its
 * manifest. */
static struct store_backend *
build_chain(struct objchain *c)
{
	char prev[512], cur[512];
	struct objupload up[2];
	struct objchain next, none;
	struct store_backend *b;
	struct cs_err e;
	size_t nup;
	int full, k;

	/* unit_path's buffers rotate: keep these two. */
	snprintf(prev, sizeof(prev), "%s", unit_path("prev.db"));
	snprintf(cur, sizeof(cur), "%s", unit_path("last.db"));
	mkdir(unit_path("repo"), 0700);
	mkdir(unit_path("repo/manifests"), 0700);
	assert_int_equal(store_backend_dir(unit_path("repo"), &b, &e), 0);
	memset(&none, 0, sizeof(none));
	remove(cur);
	unit_sql_file(cur, "CREATE TABLE snapshots(id INTEGER PRIMARY KEY "
	    "AUTOINCREMENT, status TEXT NOT NULL);"
	    "INSERT INTO snapshots(status) VALUES ('complete');");
	assert_int_equal(objchain_next(&none, NULL, cur, 1, c, up, &nup,
	    &full, &e), 0);
	assert_true(full);
	assert_int_equal(nup, 1);
	put_all(b, up, nup);
	for (k = 2; k <= 1 + STEPS; k++) {
		remove(prev);
		if (store_manifest_copy(cur, prev, &e) < 0)
			fail_msg("%s", e.msg);
		unit_sql_file(cur, "INSERT INTO snapshots(status) VALUES ('complete');");
		assert_int_equal(objchain_next(c, prev, cur, (uint64_t)k,
		    &next, up, &nup, &full, &e), 0);
		assert_false(full);
		/* An index exactly when the commit before named 16. */
		assert_int_equal(nup, c->n == OBJCHAIN_INLINE ? 2 : 1);
		put_all(b, up, nup);
		*c = next;
	}
	return b;
}

static void
a_long_chain_reads_back_through_its_indexes(void **state)
{
	char got[512];
	struct store_backend *b;
	struct objchain c, parsed;
	struct cs_err e;
	char text[4096], *want, *have;

	(void)state;
	snprintf(got, sizeof(got), "%s", unit_path("got.db"));
	b = build_chain(&c);
	assert_int_equal(objchain_deltas(&c), STEPS);
	assert_int_equal(c.nidx, 32);
	assert_int_equal(c.n, STEPS - 32);
	assert_true(c.idx.key[0] != '\0');
	/* What a reader gets: the commit's text, parsed. */
	assert_int_equal(objchain_text(&c, text, sizeof(text)), 0);
	assert_non_null(strstr(text, "cutsnap-commit 3\n"));
	assert_int_equal(objchain_parse(text, &parsed), 0);
	assert_int_equal(objchain_deltas(&parsed), STEPS);
	assert_string_equal(objchain_state(&parsed), objchain_state(&c));
	assert_true(objchain_names(&parsed, c.idx.key));
	assert_false(objchain_names(&parsed, "manifests/x.delta"));
	fetch_base(&parsed, got);
	assert_int_equal(objchain_apply(b, &parsed, got, &e), 0);
	want = dump(unit_path("last.db"));
	have = dump(got);
	assert_string_equal(have, want);
	free(want);
	free(have);
	store_backend_close(b);
}

static void
a_changed_or_miscounted_index_is_refused(void **state)
{
	char got[512], path[512], text[4096], *p;
	struct store_backend *b;
	struct objchain c, bad;
	struct cs_err e;
	FILE *f;

	(void)state;
	snprintf(got, sizeof(got), "%s", unit_path("got.db"));
	b = build_chain(&c);
	/* One byte appended to the newest index. */
	snprintf(path, sizeof(path), "%s/%s", unit_path("repo"), c.idx.key);
	assert_non_null(f = fopen(path, "a"));
	fputc('\n', f);
	fclose(f);
	fetch_base(&c, got);
	assert_int_equal(objchain_apply(b, &c, got, &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_CORRUPT);
	assert_non_null(strstr(e.msg, c.idx.key));
	assert_non_null(strstr(e.msg, "does not match its commit"));
	store_backend_close(b);

	/* A commit that says its index names one delta more than it does. */
	b = build_chain(&c);
	assert_int_equal(objchain_text(&c, text, sizeof(text)), 0);
	assert_non_null(p = strstr(text, " 32\n"));
	memcpy(p, " 33\n", 4);
	assert_int_equal(objchain_parse(text, &bad), 0);
	fetch_base(&c, got);
	assert_int_equal(objchain_apply(b, &bad, got, &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_CORRUPT);
	assert_non_null(strstr(e.msg, "not the index of 33"));
	store_backend_close(b);
}

#define HEX32 "0123456789abcdef0123456789abcdef"
#define HEX64 HEX32 HEX32
#define HEAD(v) "cutsnap-commit " v "\nmanifest manifests/" \
    "00000000000000000001-00000000.db\nsha256 " HEX64 "\nsize 10\n"
#define DELTA(g) "delta manifests/0000000000000000000" g "-00000000.delta " \
    HEX64 " 5\n"
#define INDEX(n) "index manifests/00000000000000000009-00000000.idx " \
    HEX64 " 30 " n "\n"

static void
commit_texts(void **state)
{
	static const char *const bad[] = {
		HEAD("4"),				/* unknown version */
		HEAD("2"),				/* 2 without a delta */
		HEAD("3") DELTA("2"),			/* 3 without an index */
		HEAD("3") INDEX("5"),			/* an index, no delta */
		HEAD("3") INDEX("0") DELTA("2"),	/* an empty index */
		HEAD("2") "delta manifests/../x " HEX64 " 5\n",
		HEAD("2") "delta manifests/00-0.delta " "0123" " 5\n",
		"cutsnap-commit 1\nmanifest blobs/x\nsha256 " HEX64
		    "\nsize 1\n",
		HEAD("1") "folded 0123\n",		/* a short hash */
	};
	struct objchain c;
	char text[4096], many[4096];
	size_t i, off;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(objchain_parse(bad[i], &c), -1);
	assert_int_equal(objchain_parse(HEAD("1"), &c), 0);
	assert_int_equal(objchain_deltas(&c), 0);
	assert_string_equal(objchain_state(&c), HEX64);
	assert_int_equal(objchain_parse(HEAD("3") INDEX("16") DELTA("2"),
	    &c), 0);
	assert_int_equal(objchain_deltas(&c), 17);
	/* Written back as it was read. */
	assert_int_equal(objchain_text(&c, text, sizeof(text)), 0);
	assert_string_equal(text, HEAD("3") INDEX("16") DELTA("2"));
	/* A fold's commit: the state it folded reads back. */
	assert_int_equal(objchain_parse(HEAD("1") "folded " HEX64 "\n", &c),
	    0);
	assert_string_equal(c.folded, HEX64);
	assert_int_equal(objchain_text(&c, text, sizeof(text)), 0);
	assert_string_equal(text, HEAD("1") "folded " HEX64 "\n");
	/* An earlier release's version 2 names up to 20 deltas. */
	off = (size_t)snprintf(many, sizeof(many), "%s", HEAD("2"));
	for (i = 0; i < OBJCHAIN_LEGACY; i++)
		off += (size_t)snprintf(many + off, sizeof(many) - off, "%s",
		    DELTA("2"));
	assert_int_equal(objchain_parse(many, &c), 0);
	assert_int_equal(objchain_deltas(&c), OBJCHAIN_LEGACY);
	snprintf(many + off, sizeof(many) - off, "%s", DELTA("2"));
	assert_int_equal(objchain_parse(many, &c), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_long_chain_reads_back_through_its_indexes),
		cmocka_unit_test(a_changed_or_miscounted_index_is_refused),
		cmocka_unit_test(commit_texts),
	};

	return cmocka_run_group_tests(tests, unit_setup, unit_teardown);
}
