/* restore.c - "cutsnap restore": write a snapshot back into a config's data
 * files and replay its in-flight messages exactly once. */
#include <getopt.h>
#include <stdio.h>

#include "../store/store.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap restore -r REPO [ID] -c CONF [--key FILE]\n"
    "\n"
    "Verify snapshot ID (default: the newest complete one) of REPO, then\n"
    "write each agent's recorded file into the data path CONF gives it and\n"
    "replay every recorded channel message into its receiver exactly once.\n"
    "CONF's agents must be the snapshot's and must not be running. Each\n"
    "file is replaced atomically; running restore again gives the same\n"
    "files. A snapshot that fails verification is refused (its problems are\n"
    "printed as \"problem: ...\") and nothing is written.\n"
    "\n"
    "  -r, --repo REPO     the repository directory\n"
    "  -c, --config CONF   the cluster config file to restore into\n"
    "  -k, --key FILE      verify the snapshot's HMAC-SHA256 tag under the\n"
    "                      key in FILE first (see verify --key)\n"
    "\n"
    "Exit status: 0 restored, 1 refused or failed, 2 bad usage, bad config\n"
    "or a missing repository.\n";

static const struct option opts[] = {
	{ "repo", required_argument, NULL, 'r' },
	{ "config", required_argument, NULL, 'c' },
	{ "key", required_argument, NULL, 'k' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void
on_problem(void *ctx, const char *line)
{
	int *n = ctx;

	printf("problem: %s\n", line);
	(*n)++;
}

int
cmd_restore(int argc, char **argv)
{
	const char *repo = NULL, *conf = NULL, *keyfile = NULL;
	struct store *st = NULL;
	struct cfg *c = NULL;
	struct cs_err e;
	uint64_t id = 0, resolved = 0;
	int ch, nproblems = 0, rc;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":r:c:k:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'r':
			repo = optarg;
			break;
		case 'c':
			conf = optarg;
			break;
		case 'k':
			keyfile = optarg;
			break;
		case 'h':
			return cmd_help(usage_text);
		default:
			return cmd_bad_option(argv, ch);
		}
	}
	if (argc - optind > 1)
		return cmd_usage_error("unexpected argument '%s'",
		    argv[optind + 1]);
	if (argc - optind == 1 &&
	    cmd_parse_pos(argv[optind], "snapshot id", INT64_MAX, &id) == -1)
		return EXIT_USAGE;
	if (repo == NULL)
		return cmd_usage_error("missing -r REPO");
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	if (store_open(repo, 0, &st, &e) == -1) {
		rc = cmd_fail(EXIT_USAGE, "%s", e.msg);
		goto out;
	}
	if ((rc = cmd_key_set(st, keyfile)) != 0)
		goto out;
	if (store_lock(st, 0, &e) == -1 ||
	    store_restore(st, id, c, &resolved, on_problem, &nproblems,
	    &e) == -1) {
		fflush(stdout);
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
		goto out;
	}
	printf("restored snapshot %llu into %d data file%s\n",
	    (unsigned long long)resolved, c->nagents,
	    c->nagents == 1 ? "" : "s");
	cmd_key_note(st, resolved, keyfile);
	rc = EXIT_OK;
out:
	store_close(st);
	cfg_free(c);
	return rc;
}
