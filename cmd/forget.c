/* forget.c - "cutsnap forget": drop snapshots from the manifest by a
 * retention policy; "prune" (or forget --prune) then deletes the data no
 * snapshot uses. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap forget -r REPO RULE... [--prune] [--force] [--dry-run]\n"
    "                      [--json]\n"
    "\n"
    "Remove from REPO's manifest, in one transaction, every snapshot that\n"
    "no rule keeps (the rules add up: a snapshot one of them keeps stays).\n"
    "RULE is one or more of:\n"
    "\n"
    "  -l, --keep-last N            keep the newest N complete snapshots\n"
    "      --keep-hourly N          for the last N hours that have a\n"
    "                               complete snapshot, keep the newest one\n"
    "                               of each hour\n"
    "      --keep-daily N           the same for days\n"
    "      --keep-weekly N          the same for ISO weeks (Monday-Sunday)\n"
    "      --keep-monthly N         the same for months\n"
    "      --keep-yearly N          the same for years\n"
    "  -w, --keep-within DURATION   keep every snapshot (complete or\n"
    "                               aborted) started within DURATION\n"
    "                               before now: a number and a unit s, m,\n"
    "                               h, d or w, or several (7d, 12h, 1h30m)\n"
    "\n"
    "N is a positive number or 'unlimited' (every bucket); 0 is no rule,\n"
    "except --keep-last 0, which keeps none. Hours, days, weeks, months\n"
    "and years are calendar ones in UTC, counted only where there is a\n"
    "complete snapshot; a rule that still has counts left at the oldest\n"
    "complete snapshot keeps that one too (\"oldest daily snapshot\"), as\n"
    "restic does. A running snapshot is never removed; an aborted one is\n"
    "kept only by --keep-within. Prints the snapshots kept (with the\n"
    "rules that keep each) and removed, then a summary line. The recorded\n"
    "data stays in REPO until 'cutsnap prune' or --prune. A forget that\n"
    "would leave no complete snapshot needs --force. Snapshot ids are\n"
    "never used again.\n"
    "\n"
    "  -r, --repo REPO              the repository directory, or\n"
    "                               s3://BUCKET/PREFIX (an object store)\n"
    "      --prune                  then delete the blobs no remaining\n"
    "                               snapshot refers to, as 'cutsnap prune'\n"
    "                               (a directory repository only)\n"
    "  -f, --force                  allow forgetting every complete\n"
    "                               snapshot; with --prune, also allow the\n"
    "                               prune to delete most blobs\n"
    "  -n, --dry-run                print what would be forgotten (and,\n"
    "                               with --prune, pruned), change nothing\n"
    "  -j, --json                   {\"forgotten\":[ID...],\"kept\":[ID...],\n"
    "                               \"dry_run\":BOOL,\"keep\":[SNAP...],\n"
    "                               \"remove\":[SNAP...],\"prune\":{...}}\n"
    "                               SNAP: {\"id\",\"started\",\"status\",\n"
    "                               \"reasons\":[...]}\n"
    "\n"
    "Takes the repository's exclusive lock: it refuses to run while a\n"
    "snapshot, verify, restore or prune holds the repository.\n"
    "\n"
    "--retry-lock DURATION: while the repository is locked, try again for\n"
    "up to DURATION (30s, 5m, 1h) before giving up.\n"
    "\n"
    "Exit status: 0 success, 1 the repository could not be changed,\n"
    "or it would forget every complete snapshot (or, with\n"
    "--prune, delete most blobs) without --force, 2 bad usage or a bad\n"
    "repository.\n"
    "Also: 10 no such repository, 11 locked (after --retry-lock), 12 a\n"
    "wrong password (cutsnap(1) EXIT STATUS).\n";

enum { OPT_HOURLY = 256, OPT_DAILY, OPT_WEEKLY, OPT_MONTHLY, OPT_YEARLY,
    OPT_PRUNE };

static const struct option opts[] = {
	{ "repo", required_argument, NULL, 'r' },
	{ "keep-last", required_argument, NULL, 'l' },
	{ "keep-hourly", required_argument, NULL, OPT_HOURLY },
	{ "keep-daily", required_argument, NULL, OPT_DAILY },
	{ "keep-weekly", required_argument, NULL, OPT_WEEKLY },
	{ "keep-monthly", required_argument, NULL, OPT_MONTHLY },
	{ "keep-yearly", required_argument, NULL, OPT_YEARLY },
	{ "keep-within", required_argument, NULL, 'w' },
	{ "prune", no_argument, NULL, OPT_PRUNE },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "force", no_argument, NULL, 'f' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int
cmd_parse_duration(const char *s, int64_t *out)
{
	const char *p = s;
	int64_t total = 0, v, mul;
	char *end;

	if (*p == '\0')
		goto bad;
	while (*p != '\0') {
		if (*p < '0' || *p > '9')
			goto bad;
		v = (int64_t)strtoll(p, &end, 10);
		switch (*end) {
		case 's': mul = 1; break;
		case 'm': mul = 60; break;
		case 'h': mul = 3600; break;
		case 'd': mul = 86400; break;
		case 'w': mul = 7 * 86400; break;
		default: goto bad;
		}
		if (v > INT64_MAX / mul / 2 || total > INT64_MAX / 2)
			goto bad;
		total += v * mul;
		p = end + 1;
	}
	*out = total;
	return 0;
bad:
	cmd_usage_error("invalid DURATION '%s': expected a number and a unit "
	    "s, m, h, d or w (e.g. 7d, 12h, 1h30m)", s);
	return -1;
}

/* A count rule's N: a positive number, "unlimited", or 0 (no rule; for
 * --keep-last, keep none). 0, or -1 after printing. */
static int
parse_count(const char *s, const char *what, int rule, int64_t *out)
{
	uint64_t n;

	if (strcmp(s, "unlimited") == 0) {
		*out = STORE_KEEP_ALL;
		return 0;
	}
	if (strcmp(s, "0") == 0) {
		*out = rule == STORE_KEEP_LAST ? 0 : -1;
		return 0;
	}
	if (cmd_parse_pos(s, what, INT32_MAX, &n) == -1)
		return -1;
	*out = (int64_t)n;
	return 0;
}

/* The rule of a count option, or -1. */
static int
rule_of(int ch, const char **name)
{
	static const char *const names[] = { "--keep-last", "--keep-hourly",
	    "--keep-daily", "--keep-weekly", "--keep-monthly",
	    "--keep-yearly" };
	int r = ch == 'l' ? STORE_KEEP_LAST : ch >= OPT_HOURLY &&
	    ch <= OPT_YEARLY ? STORE_KEEP_HOURLY + (ch - OPT_HOURLY) : -1;

	if (r >= 0)
		*name = names[r];
	return r;
}

static int
check_policy(const char *repo, const struct store_forget_policy *p)
{
	int r, any = p->keep_within_s >= 0, others = any;

	for (r = 0; r < STORE_KEEP_NRULES; r++) {
		any |= p->keep[r] >= 0;
		others |= r != STORE_KEEP_LAST && p->keep[r] >= 0;
	}
	if (repo == NULL)
		return cmd_usage_error("missing -r REPO");
	if (!any)
		return cmd_usage_error("give a rule: --keep-last, "
		    "--keep-hourly, --keep-daily, --keep-weekly, "
		    "--keep-monthly, --keep-yearly N or --keep-within "
		    "DURATION");
	if (p->keep[STORE_KEEP_LAST] == 0 && !others && !p->force &&
	    !p->dry_run)
		return cmd_usage_error("--keep-last 0 forgets every complete "
		    "snapshot: add --force if that is what you mean");
	return EXIT_OK;
}

int
cmd_forget(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, CMD_OPT_NO_OPERANDS);
	struct store_forget_policy p;
	struct store_forget_result res;
	const char *repo = NULL, *within = NULL, *name;
	struct store *st = NULL;
	struct cs_err e;
	int ch, r, json = 0, rc, frc;

	memset(&res, 0, sizeof(res));
	memset(&p, 0, sizeof(p));
	for (r = 0; r < STORE_KEEP_NRULES; r++)
		p.keep[r] = -1;
	p.keep_within_s = -1;
	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		if ((r = rule_of(ch, &name)) >= 0) {
			if (parse_count(optarg, name, r, &p.keep[r]) == -1)
				return EXIT_USAGE;
			continue;
		}
		switch (ch) {
		case 'r':
			repo = optarg;
			break;
		case 'w':
			if (cmd_parse_duration(optarg, &p.keep_within_s) == -1)
				return EXIT_USAGE;
			within = optarg;
			break;
		case OPT_PRUNE:
			p.prune = 1;
			break;
		case 'n':
			p.dry_run = 1;
			break;
		case 'f':
			p.force = 1;
			break;
		case 'j':
			json = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if ((rc = check_policy(repo, &p)) != EXIT_OK)
		return rc;
	/* Over s3:// repo is a local stand-in (cmd/remote.c refuses the plain
	 * spelling earlier; this catches an abbreviated --prune). */
	if (p.prune && strcmp(cmd_repo_name(repo), repo) != 0)
		return cmd_usage_error("forget --prune needs a directory "
		    "repository: over s3:// run forget, then prune");
	if ((rc = cmd_open_repo(repo, STORE_WRITE, NULL, &st)) != EXIT_OK)
		return rc;
	/* Taken here to wait for it (--retry-lock); store_forget keeps
	 * it. */
	frc = cmd_lock(st, 1, &e) < 0 ? -1 : store_forget(st, &p, &res, &e);
	rc = EXIT_OK;
	/* A prune that failed after the forget: report what was forgotten. */
	if ((frc == 0 || res.kept != NULL) &&
	    cmd_forget_report(&res, &p, within, json, frc == 0) == -1)
		rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	if (frc == -1)
		rc = cmd_fail_err(&e);
	store_forget_result_free(&res);
	store_close(st);
	return rc;
}
