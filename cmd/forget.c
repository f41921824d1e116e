/* forget.c - "cutsnap forget": drop snapshots from the manifest by a
 * retention policy; "prune" then deletes the data no snapshot uses. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap forget -r REPO --keep-last N [--keep-within DURATION]\n"
    "                      [--force] [--dry-run] [--json]\n"
    "       cutsnap forget -r REPO --keep-within DURATION [--force] "
    "[--dry-run]\n"
    "                      [--json]\n"
    "\n"
    "Remove from REPO's manifest, in one transaction, every snapshot that\n"
    "no rule keeps: --keep-last keeps the newest N complete snapshots,\n"
    "--keep-within keeps every snapshot (complete or aborted) started\n"
    "within DURATION before now. A running snapshot is never removed; an\n"
    "aborted one is kept only by --keep-within. The recorded data stays in\n"
    "REPO until 'cutsnap prune'. Prints \"forgot snapshot N (STATUS,\n"
    "started T)\" per snapshot, then a summary line. A forget that would\n"
    "leave no complete snapshot (--keep-last 0, or a --keep-within that\n"
    "keeps none) needs --force. Snapshot ids are never used again.\n"
    "\n"
    "  -r, --repo REPO              the repository directory, or\n"
    "                               s3://BUCKET/PREFIX (an object store)\n"
    "  -l, --keep-last N            keep the newest N complete snapshots\n"
    "  -w, --keep-within DURATION   keep snapshots started within DURATION:\n"
    "                               a number and a unit s, m, h, d or w,\n"
    "                               or several (7d, 12h, 1h30m)\n"
    "  -f, --force                  allow forgetting every complete\n"
    "                               snapshot\n"
    "  -n, --dry-run                print what would be forgotten, change\n"
    "                               nothing\n"
    "  -j, --json                   {\"forgotten\":[ID...],\"kept\":[ID...],\n"
    "                               \"dry_run\":BOOL}\n"
    "\n"
    "Takes the repository's exclusive lock: it refuses to run while a\n"
    "snapshot, verify, restore or prune holds the repository.\n"
    "\n"
    "Exit status: 0 success, 1 the repository is locked or could not be\n"
    "changed or it would forget every complete snapshot without --force,\n"
    "2 bad usage or a bad repository.\n";

static const struct option opts[] = {
	{ "repo", required_argument, NULL, 'r' },
	{ "keep-last", required_argument, NULL, 'l' },
	{ "keep-within", required_argument, NULL, 'w' },
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

static int
print_json(const struct store_forget_result *r, int dry_run)
{
	struct json j;
	size_t i;

	json_init(&j, stdout);
	json_obj(&j);
	json_key(&j, "forgotten");
	json_arr(&j);
	for (i = 0; i < r->nforgotten; i++)
		json_uint(&j, r->forgotten[i]);
	json_arr_end(&j);
	json_key(&j, "kept");
	json_arr(&j);
	for (i = 0; i < r->nkept; i++)
		json_uint(&j, r->kept[i]);
	json_arr_end(&j);
	json_kbool(&j, "dry_run", dry_run);
	json_obj_end(&j);
	return json_end(&j);
}

int
cmd_forget(int argc, char **argv)
{
	struct store_forget_policy p = { -1, -1, 0, 0 };
	struct store_forget_result res;
	struct snap_info *v = NULL;
	const char *repo = NULL;
	struct store *st = NULL;
	struct cs_err e;
	uint64_t n;
	size_t nv = 0, i, k;
	int ch, json = 0, rc;

	memset(&res, 0, sizeof(res));
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":r:l:w:nfjh", opts, NULL)) != -1) {
		switch (ch) {
		case 'r':
			repo = optarg;
			break;
		case 'l':
			if (strcmp(optarg, "0") == 0)
				n = 0;
			else if (cmd_parse_pos(optarg, "--keep-last",
			    INT32_MAX, &n) == -1)
				return EXIT_USAGE;
			p.keep_last = (int64_t)n;
			break;
		case 'w':
			if (cmd_parse_duration(optarg, &p.keep_within_s) == -1)
				return EXIT_USAGE;
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
	if (p.keep_last < 0 && p.keep_within_s < 0)
		return cmd_usage_error("give a rule: --keep-last N and/or "
		    "--keep-within DURATION");
	if (p.keep_last == 0 && p.keep_within_s < 0 && !p.force &&
	    !p.dry_run)
		return cmd_usage_error("--keep-last 0 forgets every complete "
		    "snapshot: add --force if that is what you mean");
	if ((rc = cmd_open_repo(repo, STORE_WRITE, NULL, &st)) != EXIT_OK)
		return rc;
	/* The listing before the change, to name what goes. */
	if (store_list(st, &v, &nv, &e) == -1 ||
	    store_forget(st, &p, &res, &e) == -1) {
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
		goto out;
	}
	rc = EXIT_OK;
	if (json) {
		if (print_json(&res, p.dry_run) == -1)
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	} else {
		for (i = 0; i < res.nforgotten; i++) {
			for (k = 0; k < nv && v[k].id != res.forgotten[i]; k++)
				;
			printf("%s snapshot %" PRIu64 " (%s, started %s)\n",
			    p.dry_run ? "would forget" : "forgot",
			    res.forgotten[i], k < nv ? v[k].status : "?",
			    k < nv ? v[k].started : "?");
		}
		printf("%s %zu snapshot%s, kept %zu%s\n",
		    p.dry_run ? "would forget" : "forgot", res.nforgotten,
		    res.nforgotten == 1 ? "" : "s", res.nkept,
		    res.nforgotten > 0 && !p.dry_run ? "; run 'cutsnap prune' "
		    "to delete their data" : "");
	}
out:
	free(v);
	store_forget_result_free(&res);
	store_close(st);
	return rc;
}
