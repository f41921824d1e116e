/* test_mdelta.c - manifest deltas (store/mdelta.c): a delta made from
 * two manifest files turns a copy of the old one into the new one, row
 * for row, ids included; consecutive deltas applied in turn (a chain
 * read from an object store) do the same; a change a
 * delta cannot carry asks for the whole manifest; a delta applied to the
 * wrong manifest changes nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../store/store.h"
#include "unit.h"

/* A small manifest: an AUTOINCREMENT table, a child with a composite
 * key, and a table without a primary key (as repository is). */
static const char schema[] =
    "CREATE TABLE snapshots(id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " status TEXT NOT NULL);"
    "CREATE TABLE agent_chunks(snapshot_id INTEGER NOT NULL, agent TEXT"
    " NOT NULL, idx INTEGER NOT NULL, sha256 TEXT NOT NULL, data BLOB,"
    " PRIMARY KEY (snapshot_id, agent, idx));"
    "CREATE TABLE repository(id TEXT NOT NULL);"
    "INSERT INTO repository VALUES ('r1');"
    "PRAGMA user_version = 7;";

/* Every row of every table, and sqlite_sequence, as one string. */
static char *
dump(const char *path)
{
	static const char q[] = "SELECT (SELECT group_concat(id || ':' || "
	    "status, ',') FROM (SELECT * FROM snapshots ORDER BY id)) || '|' "
	    "|| (SELECT group_concat(snapshot_id || agent || idx || sha256 || "
	    "hex(coalesce(data, '')), ',') FROM (SELECT * FROM agent_chunks "
	    "ORDER BY 1, 2, 3)) || '|' || (SELECT group_concat(id) FROM "
	    "repository) || '|' || (SELECT group_concat(name || seq) FROM "
	    "sqlite_sequence)";

	return unit_sql_text(path, q);
}

/* old.db with two snapshots; base.db a copy of it. */
static void
two_snapshots(const char *old, const char *base)
{
	struct cs_err e;

	remove(old);
	unit_sql_file(old, schema);
	unit_sql_file(old, "INSERT INTO snapshots(status) VALUES ('complete'), "
	    "('complete');"
	    "INSERT INTO agent_chunks VALUES (1, 'A', 0, 'aa', x'00ff'), "
	    "(1, 'B', 0, 'bb', NULL), (2, 'A', 0, 'cc', x'01');");
	assert_int_equal(store_manifest_copy(old, base, &e), 0);
}

static void
expect_same(const char *a, const char *b)
{
	char *x = dump(a), *y = dump(b);

	assert_string_equal(x, y);
	free(x);
	free(y);
}

static void
delta_turns_old_into_new(void **state)
{
	const char *old = unit_path("old.db"), *base = unit_path("base.db");
	const char *nw = unit_path("new.db");
	struct cs_err e;
	uint8_t *d;
	size_t n;

	(void)state;
	two_snapshots(old, base);
	assert_int_equal(store_manifest_copy(old, nw, &e), 0);
	/* A snapshot added, one forgotten, a row changed; and the next id
	 * raised past a lost one, as a rolled-back repository does. */
	unit_sql_file(nw, "INSERT INTO snapshots(status) VALUES ('running');"
	    "INSERT INTO agent_chunks VALUES (3, 'A', 0, 'dd', x'0203');"
	    "DELETE FROM agent_chunks WHERE snapshot_id = 1;"
	    "DELETE FROM snapshots WHERE id = 1;"
	    "UPDATE snapshots SET status = 'complete' WHERE id = 3;"
	    "UPDATE sqlite_sequence SET seq = 9 WHERE name = 'snapshots';");
	assert_int_equal(store_mdelta_make(old, nw, &d, &n, &e), 0);
	assert_true(n > 0);
	assert_int_equal(store_mdelta_apply(base, d, n, &e), 0);
	expect_same(base, nw);
	free(d);
}

static void
consecutive_deltas_apply_in_turn(void **state)
{
	const char *old = unit_path("old.db"), *base = unit_path("base.db");
	const char *mid = unit_path("mid.db"), *nw = unit_path("new.db");
	struct cs_err e;
	uint8_t *d1, *d2;
	size_t n1, n2;

	(void)state;
	two_snapshots(old, base);
	assert_int_equal(store_manifest_copy(old, mid, &e), 0);
	unit_sql_file(mid, "INSERT INTO snapshots(status) VALUES ('complete');"
	    "INSERT INTO agent_chunks VALUES (3, 'A', 0, 'ee', NULL);");
	assert_int_equal(store_manifest_copy(mid, nw, &e), 0);
	unit_sql_file(nw, "INSERT INTO snapshots(status) VALUES ('complete');"
	    "DELETE FROM agent_chunks WHERE snapshot_id = 3;"
	    "DELETE FROM snapshots WHERE id = 3;");
	assert_int_equal(store_mdelta_make(old, mid, &d1, &n1, &e), 0);
	assert_int_equal(store_mdelta_make(mid, nw, &d2, &n2, &e), 0);
	assert_int_equal(store_mdelta_apply(base, d1, n1, &e), 0);
	assert_int_equal(store_mdelta_apply(base, d2, n2, &e), 0);
	expect_same(base, nw);
	free(d1);
	free(d2);
}

static void
what_a_delta_cannot_carry(void **state)
{
	const char *old = unit_path("old.db"), *base = unit_path("base.db");
	const char *nw = unit_path("new.db");
	struct cs_err e;
	uint8_t *d;
	size_t n;

	(void)state;
	two_snapshots(old, base);
	/* A table without a primary key changed. */
	assert_int_equal(store_manifest_copy(old, nw, &e), 0);
	unit_sql_file(nw, "UPDATE repository SET id = 'r2'");
	assert_int_equal(store_mdelta_make(old, nw, &d, &n, &e), 1);
	assert_null(d);
	/* The schema changed (a migration). */
	assert_int_equal(store_manifest_copy(old, nw, &e), 0);
	unit_sql_file(nw, "CREATE TABLE extra(k INTEGER PRIMARY KEY)");
	assert_int_equal(store_mdelta_make(old, nw, &d, &n, &e), 1);
	assert_int_equal(store_manifest_copy(old, nw, &e), 0);
	unit_sql_file(nw, "PRAGMA user_version = 8");
	assert_int_equal(store_mdelta_make(old, nw, &d, &n, &e), 1);
}

static void
delta_on_another_manifest_changes_nothing(void **state)
{
	const char *old = unit_path("old.db"), *base = unit_path("base.db");
	const char *nw = unit_path("new.db");
	struct cs_err e;
	char *before;
	uint8_t *d, junk[] = "cutsnap-delta 2\n\nxyz";
	size_t n;

	(void)state;
	two_snapshots(old, base);
	assert_int_equal(store_manifest_copy(old, nw, &e), 0);
	unit_sql_file(nw, "DELETE FROM agent_chunks WHERE snapshot_id = 2;"
	    "UPDATE snapshots SET status = 'aborted' WHERE id = 2;");
	assert_int_equal(store_mdelta_make(old, nw, &d, &n, &e), 0);
	/* base has drifted: the row the delta deletes is gone already. */
	unit_sql_file(base, "DELETE FROM agent_chunks WHERE snapshot_id = 2");
	before = dump(base);
	assert_int_equal(store_mdelta_apply(base, d, n, &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_CORRUPT);
	assert_non_null(strstr(e.msg, "does not apply"));
	{
		char *after = dump(base);

		assert_string_equal(before, after);
		free(after);
	}
	free(before);
	free(d);
	assert_int_equal(store_mdelta_apply(base, junk, sizeof(junk) - 1, &e),
	    -1);
	assert_non_null(strstr(e.msg, "not a manifest delta"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(delta_turns_old_into_new),
		cmocka_unit_test(consecutive_deltas_apply_in_turn),
		cmocka_unit_test(what_a_delta_cannot_carry),
		cmocka_unit_test(delta_on_another_manifest_changes_nothing),
	};

	return cmocka_run_group_tests(tests, unit_setup, unit_teardown);
}
