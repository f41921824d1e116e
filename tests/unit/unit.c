/* unit.c - what every unit-test program shares (unit.h). */
#include <sys/stat.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "unit.h"

char unit_dir[256];
char unit_data[512];

/* Writers keep a record of each repository's generation under
 * XDG_STATE_HOME (store/generation.c). Unit tests make throwaway
 * repositories: point it where nothing can be created, so that the user's
 * home gets none of them (the record is best effort). */
__attribute__((constructor)) static void
unit_no_state(void)
{
	setenv("XDG_STATE_HOME", "/dev/null/cutsnap-unit-tests", 1);
}

int
unit_mkdtemp(char *out, size_t sz)
{
	const char *t = getenv("TMPDIR");
	char dir[PATH_MAX], real[PATH_MAX];

	if (t == NULL || *t == '\0' || strlen(t) > 40)
		t = "/tmp";
	if (snprintf(dir, sizeof(dir), "%s/cs-unit-XXXXXX", t) >=
	    (int)sizeof(dir) ||
	    mkdtemp(dir) == NULL || realpath(dir, real) == NULL ||
	    strlen(real) >= sz)
		return -1;
	memcpy(out, real, strlen(real) + 1);
	return 0;
}

static int
rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	return remove(p);
}

int
unit_rmtree(const char *dir)
{
	if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0)
		return 0;
	return errno == ENOENT ? 0 : -1;
}

int
unit_setup(void **state)
{
	(void)state;
	return unit_mkdtemp(unit_dir, sizeof(unit_dir));
}

int
unit_teardown(void **state)
{
	(void)state;
	return unit_rmtree(unit_dir);
}

int
unit_setup_data(void **state)
{
	if (unit_setup(state) < 0)
		return -1;
	snprintf(unit_data, sizeof(unit_data), "%s/a.data", unit_dir);
	return 0;
}

const char *
unit_path(const char *name)
{
	static char buf[4][PATH_MAX];
	static int next;
	char *p = buf[next++ % 4];

	snprintf(p, PATH_MAX, "%s/%s", unit_dir, name);
	return p;
}

void
unit_write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	if (n > 0)
		assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

void
unit_write_text(const char *path, const char *text)
{
	unit_write_file(path, text, strlen(text));
}

uint64_t
unit_file_size(const char *path)
{
	struct stat sb;

	assert_int_equal(stat(path, &sb), 0);
	return (uint64_t)sb.st_size;
}

void
unit_collect(void *ctx, const char *line)
{
	struct unit_probs *p = ctx;

	if (getenv("CUTSNAP_TEST_SHOW") != NULL)
		fprintf(stderr, "problem: %s\n", line);
	if (p->n < UNIT_PROBS_MAX)
		snprintf(p->line[p->n], sizeof(p->line[0]), "%s", line);
	p->n++;
}

int
unit_has(const struct unit_probs *p, const char *needle)
{
	int i;

	for (i = 0; i < p->n && i < UNIT_PROBS_MAX; i++)
		if (strstr(p->line[i], needle) != NULL)
			return 1;
	return 0;
}

void
unit_sql_file(const char *path, const char *stmt)
{
	sqlite3 *db;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, stmt, NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

char *
unit_sql_text(const char *path, const char *query)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	const unsigned char *t;
	char *out;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, query, -1, &s, NULL),
	    SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	t = sqlite3_column_text(s, 0);
	out = strdup(t != NULL ? (const char *)t : "(null)");
	assert_non_null(out);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return out;
}

void
unit_sql(const char *repo, const char *stmt)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/manifest.db", repo);
	unit_sql_file(path, stmt);
}

const struct snapuid *
unit_uid(void)
{
	static struct snapuid u;

	assert_int_equal(snapuid_new(&u, NULL), 0);
	return &u;
}
