/* verify.c - "cutsnap verify": check a snapshot's integrity and the
 * consistency of its cut. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/json.h"
#include "../store/store.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap verify -r REPO [ID] [--json] [--key FILE] [-q|-v]\n"
    "                      [--no-password]\n"
    "       cutsnap verify -r REPO --all [--json] [--key FILE] [-q|-v]\n"
    "\n"
    "Verify snapshot ID (default: the newest complete one) of REPO:\n"
    "integrity (manifest integrity check, every blob's size and SHA-256,\n"
    "every recorded message's SHA-256, the snapshot's own digest) and the\n"
    "consistency of the cut, derived from the recorded files: on every\n"
    "channel S->D the recorded messages must be exactly the seqs after D's\n"
    "applied seq up to S's sent seq, and agents without a channel between\n"
    "them must have nothing in flight. Print each problem on stdout as a\n"
    "line \"problem: ...\", then \"snapshot N: ok (...)\" on stdout, or\n"
    "\"cutsnap: verify: snapshot N: K problems\" on stderr. A blob whose\n"
    "bytes no longer hash to its name is moved to REPO/quarantine/, so that\n"
    "the next snapshot stores it again from the live file (on a read-only\n"
    "repository nothing is moved).\n"
    "\n"
    "Verify also runs restore's replay of the recorded messages onto the\n"
    "recorded files, in memory: a message the replay cannot consume is a\n"
    "problem; a credit it cannot apply (the key holds text, or the sum\n"
    "would leave int64) will become a dead letter at its receiver, as it\n"
    "would live. That is no problem, but a line \"note: ...\" names each.\n"
    "\n"
    "  -r, --repo REPO   the repository directory, or\n"
    "                    s3://BUCKET/PREFIX (an object store)\n"
    "  -a, --all         verify every complete snapshot, oldest first,\n"
    "                    each as alone (its problems, then its verdict);\n"
    "                    then \"cutsnap: verify: K of N snapshots failed\"\n"
    "                    on stderr and exit 1 when one fails. --json:\n"
    "                    {\"ok\":B,\"checked\":N,\"failed\":K,\n"
    "                    \"snapshots\":[{one object as below}...]}\n"
    "  -j, --json        {\"snapshot\":N,\"ok\":true|false,"
    "\"problems\":[...],\n"
    "                    \"notes\":[...],\"agents\":N,\"bytes\":N,\"msgs\":N,\n"
    "                    \"chunks\":N,\"chunks_decoded\":N,\n"
    "                    \"chunks_decoded_ahead\":N}: chunks, the\n"
    "                    chunk rows of the recorded files checked;\n"
    "                    chunks_decoded, the chunks read from their blobs\n"
    "                    (and decrypted and decompressed): each once, for\n"
    "                    its hash and the replay together;\n"
    "                    chunks_decoded_ahead, those of them a file's\n"
    "                    replay decoded itself while a task still\n"
    "                    decoded the chunk it needed\n"
    "  -k, --key FILE    also check the snapshot's HMAC-SHA256 tag under\n"
    "                    the key in FILE: a missing or wrong tag is a\n"
    "                    problem. Without it, an authenticated snapshot\n"
    "                    is verified as usual and a warning says that its\n"
    "                    tag was not checked\n"
    "      --no-password an encrypted repository, without its password:\n"
    "                    only what needs no plain byte (the manifest\n"
    "                    file, the status, the digest, the tag with\n"
    "                    --key, one sealed message per seq in flight on\n"
    "                    each channel as the rows record it, every chunk\n"
    "                    object there with a possible size and the sealed\n"
    "                    magic, the key rows' form); it says so, and\n"
    "                    --json has \"content_checked\":false and\n"
    "                    \"objects\", \"object_bytes\", \"msgs\"\n"
    "  -q, --quiet       no progress line\n"
    "  -v, --verbose     a summary line on stderr at the end\n"
    "\n"
    "While blobs are hashed a progress line (bytes done of total, rate,\n"
    "ETA, current agent) is drawn on stderr when it is a terminal.\n"
    "\n"
    "It never writes the manifest or a lock file and works on read-only\n"
    "media (a read-only mount, a chmod -R a-w copy), where it changes\n"
    "nothing at all.\n"
    "\n"
    "An encrypted repository (cutsnap init --encrypt) needs its password:\n"
    "--password-file FILE, else --password-command CMD (its output), else\n"
    "CUTSNAP_PASSWORD_FILE, CUTSNAP_PASSWORD_COMMAND or CUTSNAP_PASSWORD,\n"
    "else it is asked on the terminal; a missing or wrong one fails at\n"
    "once, in one line, before anything is written. --no-password checks\n"
    "what can be checked without it, and says what it did not check.\n"
    "\n"
    "--retry-lock DURATION: while the repository is locked, try again for\n"
    "up to DURATION (30s, 5m, 1h) before giving up.\n"
    "\n"
    "Exit status: 0 ok, 1 problems found (in any snapshot, with --all) or\n"
    "no complete snapshot, 2 bad\n"
    "usage, no such snapshot ID, or a bad repository.\n"
    "Also: 10 no such repository, 11 locked (after --retry-lock), 12 a\n"
    "wrong password (cutsnap(1) EXIT STATUS).\n";

/* Options without a short form. */
enum { OPT_NO_PASSWORD = CMD_OPT_LONG };

static const struct option opts[] = {
	{ "repo", required_argument, NULL, 'r' },
	{ "json", no_argument, NULL, 'j' },
	{ "key", required_argument, NULL, 'k' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "no-password", no_argument, NULL, OPT_NO_PASSWORD },
	{ "all", no_argument, NULL, 'a' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* verify --no-password: the checks that need no key, then what was not
 * checked. */
static int
verify_sealed(struct store *st, uint64_t id, const char *keyfile,
    struct cmd_lines *p)
{
	struct store_sealed_work w;
	struct cs_err e;
	uint64_t resolved = 0;
	int found;

	found = store_verify_sealed(st, id, &resolved, cmd_lines_add, p, &w,
	    &e);
	if (found == -1)
		return cmd_fail(EXIT_FAILED, "%s", e.msg);
	if (p->oom)
		return cmd_fail(EXIT_FAILED, "out of memory");
	if (p->json) {
		struct json j;

		cmd_json_init(&j);
		json_obj(&j);
		json_kuint(&j, "snapshot", resolved);
		json_kbool(&j, "ok", found == 0);
		json_kbool(&j, "content_checked", 0);
		json_kbool(&j, "rows_authenticity_checked", 0);
		cmd_lines_json(&j, p);
		json_kuint(&j, "objects", w.objects);
		json_kuint(&j, "object_bytes", w.bytes);
		json_kuint(&j, "msgs", w.msgs);
		json_obj_end(&j);
		if (json_end(&j) == -1)
			return cmd_fail(EXIT_FAILED, "write stdout failed");
	} else if (found == 0) {
		printf("snapshot %llu: ok without the password (%llu chunk "
		    "object%s, %llu recorded message%s; content not "
		    "checked)\n", (unsigned long long)resolved,
		    (unsigned long long)w.objects, w.objects == 1 ? "" : "s",
		    (unsigned long long)w.msgs, w.msgs == 1 ? "" : "s");
	}
	fflush(stdout);
	if (found > 0)
		cmd_warn("snapshot %llu: %d problem%s found without the "
		    "password", (unsigned long long)resolved, found,
		    found == 1 ? "" : "s");
	cmd_warn("without the password nothing sealed was opened: no "
	    "chunk's or message's bytes or hash, no record of the files, no "
	    "replay; give the password for the full check");
	cmd_warn("the rows' authenticity was not checked: only the "
	    "repository key tells rows written with it from rows edited "
	    "without it");
	if (found == 0)
		cmd_key_note(st, resolved, keyfile);
	return found ? EXIT_FAILED : EXIT_OK;
}

/* Verify snapshot id (0: the newest complete one) of st: with j, one
 * JSON object into it, else the problem lines and the verdict as text
 * (the verdict of a failed check is an error line on stderr). Returns
 * the number of problems, or -1 after printing why it could not verify. */
static int
verify_one(struct store *st, uint64_t id, int verbosity, const char *keyfile,
    struct json *j)
{
	struct cmd_lines p = { "problem", "problems", 0, NULL, 0, 0 };
	struct cmd_lines nt = { "note", "notes", 0, NULL, 0, 0 };
	struct cmd_progress prog;
	struct snap_info si;
	struct cs_err e;
	uint64_t resolved = 0, nchunks, nreads;
	int found;

	p.json = nt.json = j != NULL;
	cmd_progress_init(&prog, "verify", verbosity);
	store_set_progress(st, cmd_progress_fn, &prog);
	store_set_notes(st, cmd_lines_add, &nt);
	found = store_verify(st, id, &resolved, cmd_lines_add, &p, &e);
	cmd_progress_end(&prog);
	store_set_notes(st, NULL, NULL);
	if (found == -1) {
		cmd_warn("%s", e.msg);
		goto out;
	}
	if (p.oom || nt.oom) {
		found = cmd_fail(-1, "out of memory");
		goto out;
	}
	if (j != NULL) {
		json_obj(j);
		json_kuint(j, "snapshot", resolved);
		json_kbool(j, "ok", found == 0);
		json_kbool(j, "content_checked", 1);
		json_kbool(j, "rows_authenticity_checked",
		    store_rows_auth_checked(st));
		cmd_lines_json(j, &p);
		cmd_lines_json(j, &nt);
		if (cmd_snap_info(st, resolved, &si) == 0) {
			json_kint(j, "agents", si.nagents);
			json_kuint(j, "bytes", si.bytes);
			json_kuint(j, "msgs", si.nmsgs);
		}
		store_verify_work(st, &nchunks, &nreads);
		json_kuint(j, "chunks", nchunks);
		json_kuint(j, "chunks_decoded", nreads);
		json_kuint(j, "chunks_decoded_ahead", store_verify_ahead(st));
		json_obj_end(j);
	}
	if (found > 0) {
		/* The verdict of a failed check is the error line. */
		fflush(stdout);
		cmd_warn("snapshot %llu: %d problem%s",
		    (unsigned long long)resolved, found, found == 1 ? "" : "s");
	} else if (j == NULL) {
		if (cmd_snap_info(st, resolved, &si) == -1)
			memset(&si, 0, sizeof(si));
		printf("snapshot %llu: ok (%d agent%s, %llu in-flight "
		    "message%s", (unsigned long long)resolved, si.nagents,
		    si.nagents == 1 ? "" : "s", (unsigned long long)si.nmsgs,
		    si.nmsgs == 1 ? "" : "s");
		if (nt.n > 0)
			printf(", %zu dead letter%s on replay", nt.n,
			    nt.n == 1 ? "" : "s");
		printf(")\n");
	}
	if (found == 0)
		cmd_key_note(st, resolved, keyfile);
out:
	cmd_lines_free(&p);
	cmd_lines_free(&nt);
	return found;
}

/* verify --all: every complete snapshot, oldest first, each verified as
 * alone (one line, or one entry of "snapshots"); a snapshot that cannot
 * be verified at all counts as failed and the others go on. With json:
 * {"ok":B,"checked":N,"failed":N,"snapshots":[...]}. */
static int
verify_all(struct store *st, int json, int verbosity, const char *keyfile)
{
	struct snap_info *v = NULL;
	struct cs_err e;
	struct json j;
	size_t n = 0, i, checked = 0, failed = 0;
	int rc = EXIT_FAILED;

	if (store_list(st, &v, &n, &e) == -1)
		return cmd_fail(EXIT_FAILED, "%s", e.msg);
	if (json) {
		cmd_json_init(&j);
		json_obj(&j);
		json_key(&j, "snapshots");
		json_arr(&j);
	}
	for (i = 0; i < n; i++) {
		if (strcmp(v[i].status, "complete") != 0)
			continue;
		checked++;
		if (verify_one(st, v[i].id, verbosity, keyfile,
		    json ? &j : NULL) != 0)
			failed++;
		fflush(stdout);
	}
	if (json) {
		json_arr_end(&j);
		json_kbool(&j, "ok", checked > 0 && failed == 0);
		json_kuint(&j, "checked", checked);
		json_kuint(&j, "failed", failed);
		json_obj_end(&j);
		if (json_end(&j) == -1) {
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
			goto out;
		}
	}
	if (checked == 0)
		cmd_warn("no complete snapshot to verify");
	else if (failed > 0)
		cmd_warn("%zu of %zu snapshot%s failed", failed, checked,
		    checked == 1 ? "" : "s");
	else
		rc = EXIT_OK;
out:
	free(v);
	return rc;
}

int
cmd_verify(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, 0);
	const char *repo = NULL, *keyfile = NULL;
	struct cmd_lines p = { "problem", "problems", 0, NULL, 0, 0 };
	struct store *st = NULL;
	struct store_opts so;
	struct cs_err e;
	struct json j;
	uint64_t id = 0;
	int ch, found, rc, verbosity = 0, nopw = 0, json = 0, all = 0;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'r':
			repo = optarg;
			break;
		case 'j':
			p.json = json = 1;
			break;
		case 'a':
			all = 1;
			break;
		case 'k':
			keyfile = optarg;
			break;
		case 'q':
			verbosity = -1;
			break;
		case 'v':
			verbosity = 1;
			break;
		case OPT_NO_PASSWORD:
			nopw = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (argc - optind > 1)
		return cmd_usage_error("unexpected argument '%s'",
		    argv[optind + 1]);
	if (all && argc - optind > 0)
		return cmd_usage_error("--all verifies every snapshot: give "
		    "no ID with it");
	if (all && nopw)
		return cmd_usage_error("--all and --no-password together are "
		    "not supported: verify one snapshot at a time without the "
		    "password");
	if (argc - optind == 1 &&
	    cmd_parse_pos(argv[optind], "snapshot id", INT64_MAX, &id) == -1)
		return EXIT_USAGE;
	/* Without the password: the store opens without unlocking. */
	so = cmd_store_opts;
	if (nopw)
		so.password = NULL;
	if ((rc = cmd_open_repo_with(repo, STORE_READ, &so, keyfile, &st)) !=
	    EXIT_OK)
		return rc;
	if (nopw && !store_encrypted(st)) {
		rc = cmd_usage_error("repository %s is not encrypted: verify "
		    "checks everything without --no-password", repo);
		goto out;
	}
	if (cmd_lock(st, 0, &e) == -1) {
		rc = cmd_fail_err(&e);
		goto out;
	}
	if ((rc = cmd_snapshot_exists(st, id)) != EXIT_OK)
		goto out;
	if (nopw) {
		rc = verify_sealed(st, id, keyfile, &p);
		goto out;
	}
	if (all) {
		rc = verify_all(st, json, verbosity, keyfile);
		goto out;
	}
	if (json)
		cmd_json_init(&j);
	found = verify_one(st, id, verbosity, keyfile, json ? &j : NULL);
	if (json && found >= 0 && json_end(&j) == -1)
		found = cmd_fail(-1, "write stdout failed");
	if (found == -1) {
		rc = EXIT_FAILED;
		goto out;
	}
	rc = found ? EXIT_FAILED : EXIT_OK;
out:
	cmd_lines_free(&p);
	store_close(st);
	return rc;
}
