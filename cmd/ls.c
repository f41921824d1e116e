/* ls.c - "cutsnap ls": list the snapshots of a repository. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/json.h"
#include "../store/store.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap ls -r REPO [--json]\n"
    "\n"
    "List the snapshots in REPO, newest last, as an aligned table: id,\n"
    "start time (UTC), duration, status (running, complete or aborted),\n"
    "initiator, number of agents, recorded bytes, the bytes its chunks\n"
    "take in REPO (stored: compressed and, in an encrypted repository,\n"
    "sealed; chunks shared with other snapshots count in each), recorded\n"
    "in-flight messages and, when a snapshot was aborted, the reason. A\n"
    "snapshot\n"
    "whose coordinator died is listed running with the reason \"no\n"
    "coordinator\": ls only reads REPO (it works on read-only media and\n"
    "changes nothing there); the next snapshot, forget or prune marks it\n"
    "aborted.\n"
    "\n"
    "  -r, --repo REPO   the repository directory, or\n"
    "                    s3://BUCKET/PREFIX (an object store)\n"
    "  -j, --json        a JSON array of objects, with the finish time, the\n"
    "                    reason of an abort, \"stale\" (running without a\n"
    "                    coordinator), \"stored_bytes\" (what the snapshot's\n"
    "                    chunks take in REPO, compressed and sealed) and the\n"
    "                    repository's identity as well\n"
    "\n"
    "--retry-lock DURATION: while the repository is locked, try again for\n"
    "up to DURATION (30s, 5m, 1h) before giving up.\n"
    "\n"
    "Exit status: 0 success, 1 the repository could not be read, 2 bad\n"
    "usage or a bad repository (unreadable, or a schema that needs an\n"
    "upgrade).\n"
    "Also: 10 no such repository, 11 locked (after --retry-lock), 12 a\n"
    "wrong password (cutsnap(1) EXIT STATUS).\n";

static const struct option opts[] = {
	{ "repo", required_argument, NULL, 'r' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int
print_json(const struct snap_info *v, size_t n)
{
	struct json j;
	size_t i;

	json_init(&j, stdout);
	json_arr(&j);
	for (i = 0; i < n; i++) {
		json_obj(&j);
		cmd_json_snap_info(&j, &v[i]);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	return json_end(&j);
}

/* From start to finish ("-" while running or unknown): "42s", "3m05s". */
static void
fmt_duration(const struct snap_info *v, char *out, size_t outsz)
{
	int64_t a = store_parse_utc(v->started);
	int64_t b = store_parse_utc(v->finished), d;

	if (a < 0 || b < a) {
		snprintf(out, outsz, "-");
		return;
	}
	d = b - a;
	if (d >= 3600)
		snprintf(out, outsz, "%lldh%02lldm", (long long)(d / 3600),
		    (long long)(d % 3600 / 60));
	else if (d >= 60)
		snprintf(out, outsz, "%lldm%02llds", (long long)(d / 60),
		    (long long)(d % 60));
	else
		snprintf(out, outsz, "%llds", (long long)d);
}

#define NCOL 10

static void
print_table(const struct snap_info *v, size_t n)
{
	static const char *const head[NCOL] = { "ID", "STARTED", "DURATION",
	    "STATUS", "INITIATOR", "AGENTS", "BYTES", "STORED", "MSGS",
	    "REASON" };
	/* Numbers right-aligned, text left-aligned. */
	static const int right[NCOL] = { 1, 0, 1, 0, 0, 1, 1, 1, 1, 0 };
	char (*cell)[NCOL][300];
	int w[NCOL], k, last;
	size_t i;

	if ((cell = calloc(n + 1, sizeof(*cell))) == NULL) {
		cmd_warn("out of memory");
		return;
	}
	for (k = 0; k < NCOL; k++)
		snprintf(cell[0][k], sizeof(cell[0][k]), "%s", head[k]);
	for (i = 0; i < n; i++) {
		char (*r)[300] = cell[i + 1];

		snprintf(r[0], sizeof(r[0]), "%llu",
		    (unsigned long long)v[i].id);
		snprintf(r[1], sizeof(r[1]), "%s", v[i].started);
		fmt_duration(&v[i], r[2], sizeof(r[2]));
		snprintf(r[3], sizeof(r[3]), "%s", v[i].status);
		snprintf(r[4], sizeof(r[4]), "%s", v[i].initiator);
		snprintf(r[5], sizeof(r[5]), "%d", v[i].nagents);
		snprintf(r[6], sizeof(r[6]), "%llu",
		    (unsigned long long)v[i].bytes);
		snprintf(r[7], sizeof(r[7]), "%llu",
		    (unsigned long long)v[i].stored);
		snprintf(r[8], sizeof(r[8]), "%llu",
		    (unsigned long long)v[i].nmsgs);
		cs_printable(v[i].reason, strlen(v[i].reason), r[9],
		    sizeof(r[9]), 0);
	}
	/* The REASON column only when a snapshot has one. */
	last = NCOL - 1;
	for (i = 1; i <= n && cell[i][NCOL - 1][0] == '\0'; i++)
		;
	if (i > n)
		last = NCOL - 2;
	for (k = 0; k < NCOL; k++) {
		w[k] = 0;
		for (i = 0; i <= n; i++)
			if ((int)strlen(cell[i][k]) > w[k])
				w[k] = (int)strlen(cell[i][k]);
	}
	for (i = 0; i <= n; i++) {
		for (k = 0; k <= last; k++) {
			if (k == last && !right[k]) {
				/* No trailing blanks. */
				if (cell[i][k][0] != '\0')
					printf("  %s", cell[i][k]);
				continue;
			}
			printf("%s%*s", k ? "  " : "", right[k] ? w[k] : -w[k],
			    cell[i][k]);
		}
		putchar('\n');
	}
	free(cell);
}

int
cmd_ls(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, CMD_OPT_NO_OPERANDS);
	const char *repo = NULL;
	struct store *st = NULL;
	struct snap_info *v = NULL;
	struct cs_err e;
	size_t n = 0;
	int ch, json = 0, rc;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'r':
			repo = optarg;
			break;
		case 'j':
			json = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if ((rc = cmd_open_repo(repo, STORE_READ, NULL, &st)) != EXIT_OK)
		return rc;
	if (cmd_lock(st, 0, &e) == -1 ||
	    store_list(st, &v, &n, &e) == -1) {
		rc = cmd_fail_err(&e);
		goto out;
	}
	if (json) {
		if (print_json(v, n) == -1) {
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
			goto out;
		}
	} else {
		print_table(v, n);
	}
	rc = EXIT_OK;
out:
	free(v);
	store_close(st);
	return rc;
}
