/* prune.c - "cutsnap prune": delete the blobs no snapshot refers to. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>

#include "../store/store.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap prune -r REPO [--force] [--dry-run] [--json]\n"
    "       cutsnap prune -r s3://BUCKET/PREFIX [--grace DURATION] [--force]\n"
    "                     [--dry-run] [--json]\n"
    "\n"
    "Delete every blob in REPO that no snapshot in the manifest refers to\n"
    "any more (after 'cutsnap forget', or left by an aborted snapshot), and\n"
    "temp files left by killed snapshots. Blobs are deleted only after the\n"
    "manifest stopped naming them, so an interrupted prune leaves a\n"
    "repository in which every snapshot still verifies; run it again to\n"
    "finish. Prints \"pruned N blobs (SIZE), kept K\". A prune that would\n"
    "delete more than half of the blobs, or any blob while the manifest\n"
    "refers to none, deletes nothing and fails unless --force is given:\n"
    "that is what a manifest from another repository would do. A manifest\n"
    "and blobs/ of different repositories (their identities differ) are\n"
    "refused whatever the options.\n"
    "\n"
    "  -r, --repo REPO   the repository directory, or\n"
    "                    s3://BUCKET/PREFIX (an object store)\n"
    "  -f, --force       delete even most (or all) of the blobs\n"
    "  -n, --dry-run     count what would be deleted, delete nothing\n"
    "  -j, --json        {\"deleted\":N,\"bytes\":N,\"kept\":N,"
    "\"referenced\":N,\n"
    "                    \"temps\":N,\"dry_run\":BOOL}\n"
    "\n"
    "Takes the repository's exclusive lock: it refuses to run while a\n"
    "snapshot, verify, restore or forget holds the repository.\n"
    "\n"
    "In an object store it holds the writer lease and deletes only blobs\n"
    "older than --grace DURATION (default 1h; 0 for all), then commits and\n"
    "manifests that newer commits replaced, also after the grace period.\n"
    "\n"
    "--retry-lock DURATION: while the repository is locked, try again for\n"
    "up to DURATION (30s, 5m, 1h) before giving up.\n"
    "\n"
    "Exit status: 0 success, 1 a file could not be deleted\n"
    "or it would delete most blobs without --force, 2 bad usage\n"
    "or a bad repository.\n"
    "Also: 10 no such repository, 11 locked (after --retry-lock), 12 a\n"
    "wrong password (cutsnap(1) EXIT STATUS).\n";

static const struct option opts[] = {
	{ "repo", required_argument, NULL, 'r' },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "force", no_argument, NULL, 'f' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int
cmd_prune(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, CMD_OPT_NO_OPERANDS);
	struct store_prune_result r;
	const char *repo = NULL;
	struct store *st = NULL;
	struct cs_err e;
	struct json j;
	char size[32];
	int ch, json = 0, dry_run = 0, force = 0, rc;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'r':
			repo = optarg;
			break;
		case 'n':
			dry_run = 1;
			break;
		case 'f':
			force = 1;
			break;
		case 'j':
			json = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if ((rc = cmd_open_repo(repo, STORE_WRITE, NULL, &st)) != EXIT_OK)
		return rc;
	/* The lock first, to wait for it (--retry-lock). */
	if (cmd_lock(st, 1, &e) == -1 ||
	    store_prune(st, dry_run, force, &r, &e) == -1) {
		rc = cmd_fail_err(&e);
		goto out;
	}
	rc = EXIT_OK;
	if (json) {
		json_init(&j, stdout);
		json_obj(&j);
		json_kuint(&j, "deleted", r.deleted);
		json_kuint(&j, "bytes", r.bytes);
		json_kuint(&j, "kept", r.kept);
		json_kuint(&j, "referenced", r.referenced);
		json_kuint(&j, "temps", r.temps);
		json_kbool(&j, "dry_run", dry_run);
		json_obj_end(&j);
		if (json_end(&j) == -1)
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	} else {
		cmd_human_bytes(r.bytes, size, sizeof(size));
		printf("%s %" PRIu64 " blob%s (%s), kept %" PRIu64 "%s\n",
		    dry_run ? "would prune" : "pruned", r.deleted,
		    r.deleted == 1 ? "" : "s", size, r.kept,
		    r.temps ? ", and removed leftover temp files" : "");
	}
out:
	store_close(st);
	return rc;
}
