/* unit.h - what every unit-test program shares (unit.c, linked into each).
 *
 * Temporary files live in one directory per program or per fixture,
 * $TMPDIR/cs-unit-XXXXXX (/tmp when TMPDIR is unset, empty or longer
 * than 40 bytes, as in the e2e tests: the name stays under 56 bytes, so
 * socket paths stay under 108 and fixtures keep small buffers), created
 * with mkdtemp and removed with nftw, never with a shell. The file
 * helpers fail the current test through cmocka. The report fixtures
 * collect the problem lines of verify-like callbacks and hand out fresh
 * snapshot identities.
 *
 * Include after <cmocka.h> (and its prerequisites). */
#ifndef CUTSNAP_UNIT_H
#define CUTSNAP_UNIT_H

#include <stddef.h>
#include <stdint.h>

#include "../../proto/snapuid.h"

/* --- temporary directories ---------------------------------------------- */

/* The program's directory (realpath'd), made by unit_setup. */
extern char unit_dir[256];

/* cmocka group setup / teardown: make unit_dir, remove it with all it
 * holds. */
int unit_setup(void **state);
int unit_teardown(void **state);
/* "unit_dir/name", in one of a few rotating static buffers. */
const char *unit_path(const char *name);
/* For the programs around one data file: unit_setup, then unit_data is
 * "unit_dir/a.data" (not created). */
extern char unit_data[512];
int unit_setup_data(void **state);

/* A new directory for one fixture, its realpath in out (-1 when that
 * needs more than sz bytes; 64 is enough unless a symlink lengthens the
 * path). 0 / -1. */
int unit_mkdtemp(char *out, size_t sz);
/* Remove dir and everything under it (nftw, depth first, no symlink
 * followed). 0 / -1; a missing dir is 0. */
int unit_rmtree(const char *dir);

/* --- files (a failure fails the test) ----------------------------------- */

void unit_write_file(const char *path, const void *p, size_t n);
void unit_write_text(const char *path, const char *text);
uint64_t unit_file_size(const char *path);

/* --- report fixtures ---------------------------------------------------- */

/* The problem lines given to a callback (void *ctx, const char *line):
 * the first UNIT_PROBS_MAX kept, all counted. CUTSNAP_TEST_SHOW=1 also
 * prints each one on stderr. */
#define UNIT_PROBS_MAX 32
struct unit_probs {
	int n;
	char line[UNIT_PROBS_MAX][512];
};
void unit_collect(void *ctx, const char *line);
/* 1 if a kept line contains needle. */
int unit_has(const struct unit_probs *p, const char *needle);
/* Run one SQL statement (or several) on REPO/manifest.db, behind the
 * store's back: the tests' way to damage or age a manifest. */
void unit_sql(const char *repo, const char *stmt);
/* The same on the database file path. */
void unit_sql_file(const char *path, const char *stmt);
/* The text of the first column of the first row query gives on the
 * database file path ("(null)" for NULL), malloc'd. */
char *unit_sql_text(const char *path, const char *query);
/* A fresh snapshot identity (static storage, overwritten by the next
 * call), as store_begin_snapshot wants one. */
const struct snapuid *unit_uid(void);

#endif
