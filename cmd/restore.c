/* restore.c - "cutsnap restore": write a snapshot back into a config's data
 * files and replay its in-flight messages exactly once. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap restore -r REPO [ID] -c CONF [--agent NAME]...\n"
    "                       [--key FILE] [--json] [-q|-v]\n"
    "       cutsnap restore -r REPO [ID] --target DIR [--key FILE] [--json]\n"
    "                       [-q|-v]\n"
    "\n"
    "Verify snapshot ID (default: the newest complete one) of REPO and, in\n"
    "the same pass, write each agent's recorded file into the data path\n"
    "CONF gives it, then replay every recorded channel message into its\n"
    "receiver exactly once. CONF's agents must be the snapshot's and must\n"
    "not be running. Each file is written to a temporary file and renamed\n"
    "into place only once the whole snapshot verified; running restore\n"
    "again (also after it was killed) gives the same files. A snapshot that\n"
    "fails verification is refused (its problems are printed as\n"
    "\"problem: ...\") and no data file is changed. So is a data path\n"
    "inside REPO, or two agents whose paths name one file (compared as\n"
    "files: \"..\", symlinks and hard links count), with exit 2. The replay\n"
    "follows the agents' dead-letter rule: a credit that cannot be applied\n"
    "(the key holds text, or the sum would leave int64) is recorded as a\n"
    "dead letter in the receiver's file, printed as \"note: ...\"; resolve\n"
    "it with cutsnap deadletter once the agents run.\n"
    "\n"
    "Every restored message carries its channel's history chain forward, so\n"
    "the restored agents' channels connect; agents from different\n"
    "histories refuse to (\"diverged\" in status). A restore that stopped\n"
    "half-way is finished by running it again.\n"
    "\n"
    "  -r, --repo REPO     the repository directory, or\n"
    "                      s3://BUCKET/PREFIX (an object store)\n"
    "  -c, --config CONF   the cluster config file to restore into\n"
    "      --agent NAME    restore only agent NAME (repeatable): each host\n"
    "                      restores its own agents; the files are those a\n"
    "                      full restore writes, with a fence: each agent\n"
    "                      restored without the rest of its cluster starts\n"
    "                      fenced (no transfer, no message sent or applied,\n"
    "                      no snapshot) until each of its channels has\n"
    "                      checked its history with its peer, so that an\n"
    "                      agent restored into a cluster that moved on\n"
    "                      cannot spend its old balance again (see status)\n"
    "      --target DIR    restore into DIR instead of CONF's data paths:\n"
    "                      DIR (created if missing) gets the snapshot's\n"
    "                      cluster as DIR/cluster.ini (its agents and\n"
    "                      channels, data NAME.data, sockets in DIR/run,\n"
    "                      no addr or tls_dir) and each agent's file with\n"
    "                      the recorded messages replayed into it, as a\n"
    "                      restore writes them: inspect them with dump, or\n"
    "                      start that cluster with start -c DIR/cluster.ini.\n"
    "                      No live agent is contacted. Refused (exit 2)\n"
    "                      when DIR already holds cluster.ini or one of\n"
    "                      the data files: nothing is overwritten. Takes\n"
    "                      no -c and no --agent\n"
    "  -k, --key FILE      verify the snapshot's HMAC-SHA256 tag under the\n"
    "                      key in FILE first (see verify --key)\n"
    "  -j, --json          {\"snapshot\":N,\"ok\":true|false,\"files\":N,\n"
    "                      \"problems\":[...],\"notes\":[...],\n"
    "                      \"error\":...}; with --target also\n"
    "                      \"target\":DIR,\"config\":DIR/cluster.ini\n"
    "  -q, --quiet         no progress line\n"
    "  -v, --verbose       a summary line on stderr at the end\n"
    "\n"
    "While it verifies and writes, a progress line (bytes done of total,\n"
    "rate, ETA, current agent) is drawn on stderr when it is a terminal.\n"
    "\n"
    "It never writes the manifest or a lock file and works on read-only\n"
    "media (a read-only mount, a chmod -R a-w copy), where it changes\n"
    "nothing at all.\n"
    "\n"
    "An encrypted repository (cutsnap init --encrypt) needs its password:\n"
    "--password-file FILE, else --password-command CMD (its output), else\n"
    "CUTSNAP_PASSWORD_FILE, CUTSNAP_PASSWORD_COMMAND or CUTSNAP_PASSWORD,\n"
    "else it is asked on the terminal; a missing or wrong one fails at\n"
    "once, in one line, before anything is written.\n"
    "\n"
    "--retry-lock DURATION: while the repository is locked, try again for\n"
    "up to DURATION (30s, 5m, 1h) before giving up.\n"
    "\n"
    "Exit status: 0 restored, 1 refused or failed, 2 bad usage, bad config,\n"
    "no such snapshot ID, or a bad repository.\n"
    "Also: 10 no such repository, 11 locked (after --retry-lock), 12 a\n"
    "wrong password (cutsnap(1) EXIT STATUS).\n";

/* Options without a short form (cmd_getopt). */
enum { OPT_AGENT = CMD_OPT_LONG, OPT_TARGET };

static const struct option opts[] = {
	{ "repo", required_argument, NULL, 'r' },
	{ "config", required_argument, NULL, 'c' },
	{ "agent", required_argument, NULL, OPT_AGENT },
	{ "key", required_argument, NULL, 'k' },
	{ "target", required_argument, NULL, OPT_TARGET },
	{ "json", no_argument, NULL, 'j' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int
print_json(uint64_t id, int files, const struct cmd_lines *p,
    const struct cmd_lines *nt, const char *err, const char *target,
    const char *conf)
{
	struct json j;

	json_init(&j, stdout);
	json_obj(&j);
	json_key(&j, "snapshot");
	if (id != 0)
		json_uint(&j, id);
	else
		json_null(&j);
	json_kbool(&j, "ok", err == NULL);
	json_kint(&j, "files", err == NULL ? files : 0);
	cmd_lines_json(&j, p);
	cmd_lines_json(&j, nt);
	json_kstr(&j, "error", err);
	if (target != NULL) {
		json_kstr(&j, "target", target);
		json_kstr(&j, "config", conf[0] != '\0' ? conf : NULL);
	}
	json_obj_end(&j);
	return json_end(&j);
}

int
cmd_restore(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, 0);
	const char *repo = NULL, *conf = NULL, *keyfile = NULL, *target = NULL;
	char tconf[PATH_MAX] = "";
	struct store *st = NULL;
	struct cfg *c = NULL;
	struct cs_err e;
	struct cmd_lines p = { "problem", "problems", 0, NULL, 0, 0 };
	struct cmd_lines nt = { "note", "notes", 0, NULL, 0, 0 };
	struct cmd_progress prog;
	const char **only = NULL, **nv;
	uint64_t id = 0, resolved = 0;
	int ch, rc, verbosity = 0, files;
	size_t i, nonly = 0;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'r':
			repo = optarg;
			break;
		case 'c':
			conf = optarg;
			break;
		case OPT_AGENT:
			if ((nv = realloc(only, (nonly + 1) *
			    sizeof(*nv))) == NULL) {
				free(only);
				return cmd_fail(EXIT_FAILED, "out of memory");
			}
			only = nv;
			only[nonly++] = optarg;
			break;
		case 'k':
			keyfile = optarg;
			break;
		case OPT_TARGET:
			target = optarg;
			break;
		case 'j':
			p.json = nt.json = 1;
			break;
		case 'q':
			verbosity = -1;
			break;
		case 'v':
			verbosity = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (argc - optind > 1) {
		rc = cmd_usage_error("unexpected argument '%s'",
		    argv[optind + 1]);
		goto out;
	}
	if (argc - optind == 1 &&
	    cmd_parse_pos(argv[optind], "snapshot id", INT64_MAX, &id) == -1) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (repo == NULL) {
		rc = cmd_usage_error("missing -r REPO");
		goto out;
	}
	if (target != NULL && (conf != NULL || nonly > 0)) {
		rc = cmd_usage_error("--target restores every agent into a "
		    "config of its own: give no -c and no --agent with it");
		goto out;
	}
	if (target != NULL && *target == '\0') {
		rc = cmd_usage_error("--target needs a directory");
		goto out;
	}
	if (target == NULL && (rc = cmd_load_config(conf, &c)) != 0)
		goto out;
	for (i = 0; i < nonly; i++) {
		if (cfg_find(c, only[i]) < 0) {
			rc = cmd_usage_error("unknown agent '%s' (not in %s)",
			    only[i], c->path);
			goto out;
		}
	}
	if ((rc = cmd_open_repo(repo, STORE_READ, keyfile, &st)) != EXIT_OK)
		goto out;
	if (cmd_lock(st, 0, &e) == -1) {
		rc = cmd_fail_err(&e);
		goto out;
	}
	if ((rc = cmd_snapshot_exists(st, id)) != EXIT_OK)
		goto out;
	if (target != NULL && (rc = cmd_restore_target(st, id, target, &id,
	    tconf, sizeof(tconf), &c)) != EXIT_OK)
		goto out;
	files = nonly > 0 ? (int)nonly : c->nagents;
	if (store_check_paths(st, c, &e) == -1) {
		if (tconf[0] != '\0')
			(void)unlink(tconf);
		rc = cmd_fail(EXIT_USAGE, "%s", e.msg);
		goto out;
	}
	cmd_progress_init(&prog, "restore", verbosity);
	store_set_progress(st, cmd_progress_fn, &prog);
	store_set_notes(st, cmd_lines_add, &nt);
	rc = store_restore_agents(st, id, c, (const char *const *)only,
	    nonly, &resolved, cmd_lines_add, &p, &e);
	cmd_progress_end(&prog);
	if (rc == 0 && (p.oom || nt.oom)) {
		rc = -1;
		snprintf(e.msg, sizeof(e.msg), "out of memory");
	}
	if (rc == -1) {
		/* Nothing restored: the config written for it goes too. */
		if (tconf[0] != '\0' && unlink(tconf) == 0)
			tconf[0] = '\0';
		if (p.json)
			print_json(resolved, 0, &p, &nt, e.msg, target, tconf);
		fflush(stdout);
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
		goto out;
	}
	rc = EXIT_OK;
	if (p.json) {
		if (print_json(resolved, files, &p, &nt, NULL, target,
		    tconf) == -1)
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	} else if (target != NULL) {
		printf("restored snapshot %llu into %s: %d data file%s, "
		    "config %s\n", (unsigned long long)resolved, target, files,
		    files == 1 ? "" : "s", tconf);
	} else {
		printf("restored snapshot %llu into %d data file%s\n",
		    (unsigned long long)resolved, files, files == 1 ? "" : "s");
	}
	cmd_key_note(st, resolved, keyfile);
out:
	cmd_lines_free(&p);
	free(only);
	cmd_lines_free(&nt);
	store_close(st);
	cfg_free(c);
	return rc;
}
