/* ls.c - "cutsnap ls": list the snapshots of a repository. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json.h"
#include "../store/store.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap ls -r REPO [--json]\n"
    "\n"
    "List the snapshots in REPO, newest last: id, start time (UTC), status\n"
    "(running, complete or aborted), initiator, number of agents, recorded\n"
    "bytes and recorded in-flight messages.\n"
    "\n"
    "  -r, --repo REPO   the repository directory\n"
    "  -j, --json        a JSON array of objects, with the finish time and\n"
    "                    the reason of an abort as well\n"
    "\n"
    "Exit status: 0 success, 1 the repository could not be read, 2 bad\n"
    "usage or a missing repository.\n";

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

static void
print_table(const struct snap_info *v, size_t n)
{
	static const char *const head[] = { "ID", "STARTED", "STATUS",
	    "INITIATOR", "AGENTS", "BYTES", "MSGS" };
	char (*cell)[7][72];
	int w[7], k;
	size_t i;

	if ((cell = calloc(n + 1, sizeof(*cell))) == NULL) {
		cmd_warn("out of memory");
		return;
	}
	for (k = 0; k < 7; k++)
		snprintf(cell[0][k], sizeof(cell[0][k]), "%s", head[k]);
	for (i = 0; i < n; i++) {
		char (*r)[72] = cell[i + 1];

		snprintf(r[0], sizeof(r[0]), "%llu",
		    (unsigned long long)v[i].id);
		snprintf(r[1], sizeof(r[1]), "%s", v[i].started);
		snprintf(r[2], sizeof(r[2]), "%s", v[i].status);
		snprintf(r[3], sizeof(r[3]), "%s", v[i].initiator);
		snprintf(r[4], sizeof(r[4]), "%d", v[i].nagents);
		snprintf(r[5], sizeof(r[5]), "%llu",
		    (unsigned long long)v[i].bytes);
		snprintf(r[6], sizeof(r[6]), "%llu",
		    (unsigned long long)v[i].nmsgs);
	}
	for (k = 0; k < 7; k++) {
		w[k] = 0;
		for (i = 0; i <= n; i++)
			if ((int)strlen(cell[i][k]) > w[k])
				w[k] = (int)strlen(cell[i][k]);
	}
	for (i = 0; i <= n; i++) {
		/* Numbers right-aligned, text left-aligned; no trailing
		 * blanks. */
		printf("%*s  %-*s  %-*s  %-*s  %*s  %*s  %*s\n", w[0],
		    cell[i][0], w[1], cell[i][1], w[2], cell[i][2], w[3],
		    cell[i][3], w[4], cell[i][4], w[5], cell[i][5], w[6],
		    cell[i][6]);
	}
	free(cell);
}

int
cmd_ls(int argc, char **argv)
{
	const char *repo = NULL;
	struct store *st = NULL;
	struct snap_info *v = NULL;
	struct cs_err e;
	size_t n = 0;
	int ch, json = 0, rc;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":r:jh", opts, NULL)) != -1) {
		switch (ch) {
		case 'r':
			repo = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			return cmd_help(usage_text);
		default:
			return cmd_bad_option(argv, ch);
		}
	}
	if (optind < argc)
		return cmd_usage_error("unexpected argument '%s'",
		    argv[optind]);
	if (repo == NULL)
		return cmd_usage_error("missing -r REPO");
	if (store_open(repo, 0, &st, &e) == -1)
		return cmd_fail(EXIT_USAGE, "%s", e.msg);
	if (store_lock(st, 0, &e) == -1 ||
	    store_list(st, &v, &n, &e) == -1) {
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
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
