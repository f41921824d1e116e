/* snapshot.c - "cutsnap snapshot": take a consistent snapshot of a running
 * cluster into a repository. */
#include <sys/stat.h>

#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../crypto/mac.h"
#include "../lib/fsutil.h"
#include "../lib/util.h"
#include "../coordinator/coordinator.h"
#include "../store/store.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap snapshot -c CONF -r REPO [--initiator NAME] "
    "[--timeout SEC]\n"
    "                        [--key FILE] [--recheck-age DURATION] "
    "[--max-rate RATE]\n"
    "                        [--accept-rollback] [--metrics-file FILE] "
    "[--json] [-q|-v]\n"
    "\n"
    "Take a consistent snapshot (Chandy-Lamport) of the running agents of\n"
    "CONF into the repository REPO (created with the defaults of 'cutsnap\n"
    "init' if missing): every agent's data file plus the messages in\n"
    "flight on every channel. Print the new\n"
    "snapshot's id once it is committed as complete. Every agent must\n"
    "answer first: against a stopped cluster nothing is created (no\n"
    "repository, no aborted snapshot). REPO must be a writable directory\n"
    "(or not exist yet), or s3://BUCKET/PREFIX: the snapshot is built in a\n"
    "local cache, its new blobs uploaded while it copies them, and it is\n"
    "committed in the bucket last, once every upload was acknowledged\n"
    "(see README, Object storage; -v says what was uploaded).\n"
    "Snapshot ids are never used again, even after forget.\n"
    "The data file of an agent with an addr (on another host) is not read\n"
    "here: the agent sends the chunks REPO lacks over its TLS connection\n"
    "(unless the config says shared_data = yes). Into an s3:// REPO\n"
    "without encryption, such an agent uploads those chunks to the\n"
    "bucket itself, with its own AWS_* credentials;\n"
    "where it cannot, they come through here, with one warning.\n"
    "\n"
    "  -c, --config CONF       the cluster config file\n"
    "  -r, --repo REPO         the repository directory, or\n"
    "                          s3://BUCKET/PREFIX (an object store)\n"
    "  -i, --initiator NAME    the agent that starts the snapshot (default:\n"
    "                          the config's first agent)\n"
    "  -t, --timeout SEC       give up and mark the snapshot aborted once\n"
    "                          it has made no progress for SEC seconds\n"
    "                          (no report came in, no byte was copied;\n"
    "                          default 60): a long copy that moves is\n"
    "                          never cut short\n"
    "  -k, --key FILE          authenticate the snapshot: store an\n"
    "                          HMAC-SHA256 over its rows under the key in\n"
    "                          FILE (16 to 4096 bytes; never stored)\n"
    "      --recheck-age DURATION\n"
    "                          hash a chunk already in REPO again before\n"
    "                          reusing it when its last check is older\n"
    "                          than DURATION (e.g. 12h, 7d; 0: every\n"
    "                          time; default 7d), and always when its\n"
    "                          blob changed since (size, inode, ctime:\n"
    "                          REPO/blobchecks.db); a bad one is moved to\n"
    "                          REPO/quarantine/ and stored again from\n"
    "                          the live file\n"
    "  -m, --max-rate RATE     copy and hash the recorded files at most\n"
    "                          RATE bytes per second (K, M, G: powers of\n"
    "                          1024, e.g. 50M; 32K to 1024G; 0: no limit),\n"
    "                          so that the agents' requests keep their\n"
    "                          latency; default: [cluster] snapshot_max_rate\n"
    "                          of CONF, else no limit. Each snapshot has\n"
    "                          its own limit\n"
    "      --accept-rollback   take the snapshot into a repository whose\n"
    "                          manifest.db is older than its newest commit\n"
    "                          (REPO/commits/) or this user's record of it:\n"
    "                          the snapshots it lost stay lost, new ids\n"
    "                          continue past theirs\n"
    "      --metrics-file FILE\n"
    "                          write the outcome to FILE for node_exporter's\n"
    "                          textfile collector (replaced atomically,\n"
    "                          also when the snapshot fails):\n"
    "                          cutsnap_snapshot_success, _duration_seconds,\n"
    "                          _bytes, _files, _messages, _id and\n"
    "                          _timestamp_seconds, labelled repo=REPO\n"
    "  -j, --json              print {\"id\", \"status\", \"agents\", "
    "\"bytes\",\n"
    "                          \"msgs\", ...} instead of the id (schema "
    "in the\n"
    "                          README); a failure prints status "
    "\"aborted\"\n"
    "                          and \"error\" as well\n"
    "                          (several snapshots may run at once, into\n"
    "                          one repository or several: up to 8 per\n"
    "                          agent; \"chunks\" tells how many chunks this\n"
    "                          one copied and how many another snapshot\n"
    "                          copied for it meanwhile, \"extended\" how\n"
    "                          many of the copied only grew and were\n"
    "                          stored as their previous object plus the\n"
    "                          new bytes, \"rechecked\" how many stored\n"
    "                          chunks were hashed again before reuse and\n"
    "                          \"healed\" how many of those were bad and\n"
    "                          copied again, \"max_rate\" the\n"
    "                          limit it was copied under, 0 for none;\n"
    "                          an aborted one: \"removed\" {\"blobs\",\n"
    "                          \"bytes\", \"kept\", \"left_blobs\",\n"
    "                          \"left_bytes\"}, what became of the blobs\n"
    "                          it wrote)\n"
    "  -q, --quiet             no progress line\n"
    "  -v, --verbose           lines on stderr as it goes: \"snapshot ID: all\n"
    "                          N agents joined; NAME records first\" (a\n"
    "                          script can wait for it), \"snapshot ID: NAME\n"
    "                          reported (K of N)\", and a summary at the end\n"
    "\n"
    "While files are copied into REPO a progress line (bytes done of total,\n"
    "rate, ETA, current agent) is drawn on stderr when it is a terminal.\n"
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
    "A snapshot that aborts (timeout, lost agent, failed write, SIGINT or\n"
    "SIGTERM) removes the blobs it wrote that no committed snapshot\n"
    "refers to, and says how many; while another process holds REPO (a\n"
    "snapshot beside it may reuse them) it leaves them, as a killed one\n"
    "does, for 'cutsnap prune'.\n"
    "\n"
    "Exit status: 0 the snapshot is complete, 1 it failed or was aborted\n"
    "or an agent does not answer, 2 bad usage, bad config or a bad\n"
    "repository path.\n"
    "Also: 10 no such repository, 11 locked (after --retry-lock), 12 a\n"
    "wrong password (cutsnap(1) EXIT STATUS).\n";

/* Options without a short form. */
enum { OPT_ACCEPT_ROLLBACK = CMD_OPT_LONG, OPT_METRICS_FILE, OPT_RECHECK_AGE };

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "repo", required_argument, NULL, 'r' },
	{ "initiator", required_argument, NULL, 'i' },
	{ "timeout", required_argument, NULL, 't' },
	{ "key", required_argument, NULL, 'k' },
	{ "recheck-age", required_argument, NULL, OPT_RECHECK_AGE },
	{ "max-rate", required_argument, NULL, 'm' },
	{ "json", no_argument, NULL, 'j' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "accept-rollback", no_argument, NULL, OPT_ACCEPT_ROLLBACK },
	{ "metrics-file", required_argument, NULL, OPT_METRICS_FILE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static volatile sig_atomic_t got_signal;

/* -v: say when every agent has joined and as each one reports. */
static void
on_joined(void *ctx, uint64_t id, int n, const char *initiator)
{
	(void)ctx;
	fprintf(stderr, "snapshot %llu: all %d agents joined; %s records "
	    "first\n", (unsigned long long)id, n, initiator);
}

static void
on_reported(void *ctx, uint64_t id, const char *agent, int k, int n)
{
	(void)ctx;
	fprintf(stderr, "snapshot %llu: %s reported (%d of %d)\n",
	    (unsigned long long)id, agent, k, n);
}

/* The coordinator notices a stop signal between its steps and records
 * the snapshot as aborted; a step it cannot interrupt (a large file
 * copied under --max-rate) would keep it past that. Then the command
 * ends anyway, STOP_GRACE_S after the signal: the snapshot it leaves
 * 'running' without its lock is recorded as aborted (coordinator exited)
 * when the repository is next opened. */
#define STOP_GRACE_S	2

static void
on_alarm(int sig)
{
	static const char msg[] = "cutsnap: snapshot: interrupted; the "
	    "snapshot will be recorded as aborted\n";

	(void)sig;
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	_exit(EXIT_FAILED);
}

static void
on_signal(int sig)
{
	if (!got_signal)
		alarm(STOP_GRACE_S);
	got_signal = 1;
	cs_stop_sig = sig;	/* the connects and handshakes end too */
}

/* SIGINT/SIGTERM/SIGHUP interrupt the coordinator's wait (no SA_RESTART),
 * which then records the snapshot as aborted instead of dying with it
 * 'running'. */
static void
catch_signals(void)
{
	struct sigaction sa;

	cs_catch_stop_signals(on_signal);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
}

/* The snapshot's listing row as JSON, with the copy's figures and the
 * rate it was held to (cp); with err (a failure), also "error" and what
 * became of the blobs it wrote (ab: "removed"), and a snapshot that was
 * never created as id null. */
static int
print_json(const char *repo, uint64_t id, const struct coord_copy *cp,
    uint64_t max_rate, const char *err, const struct coord_copy *ab)
{
	struct snap_info si;
	struct store *st = NULL;
	struct cs_err e;
	struct json j;
	int have;

	/* The listing row needs no key: no second key derivation. */
	have = id != 0 && store_open_listing(repo, &st, &e) == 0 &&
	    cmd_snap_info(st, id, &si) == 0;
	store_close(st);
	cmd_json_init(&j);
	json_obj(&j);
	if (have) {
		cmd_json_snap_info(&j, &si);
	} else {
		json_key(&j, "id");
		if (id != 0)
			json_uint(&j, id);
		else
			json_null(&j);
		json_kstr(&j, "status", "aborted");
	}
	if (cp != NULL) {
		json_key(&j, "chunks");
		json_obj(&j);
		json_kuint(&j, "listed", cp->chunks);
		json_kuint(&j, "copied", cp->copied);
		json_kuint(&j, "shared", cp->shared);
		json_kuint(&j, "bytes", cp->bytes);
		json_kuint(&j, "extended", cp->extended);
		json_kuint(&j, "streamed_bytes", cp->streamed);
		json_kuint(&j, "agent_uploaded", cp->put);
		json_kuint(&j, "agent_uploaded_bytes", cp->put_bytes);
		json_kuint(&j, "rechecked", cp->rechecked);
		json_kuint(&j, "healed", cp->healed);
		json_kuint(&j, "max_rate", max_rate);
		json_obj_end(&j);
	}
	if (err != NULL && ab != NULL && id != 0) {
		json_key(&j, "removed");
		json_obj(&j);
		json_kuint(&j, "blobs", ab->removed);
		json_kuint(&j, "bytes", ab->removed_bytes);
		json_kuint(&j, "kept", ab->kept);
		json_kuint(&j, "left_blobs", ab->left);
		json_kuint(&j, "left_bytes", ab->left_bytes);
		json_obj_end(&j);
	}
	if (err != NULL)
		json_kstr(&j, "error", err);
	json_obj_end(&j);
	return json_end(&j);
}

/* REPO as a label value of the text format: \\, \" and \\n escaped. */
static void
label_escape(const char *s, char *out, size_t sz)
{
	size_t o = 0;

	for (; *s != '\0' && o + 3 < sz; s++) {
		if (*s == '\\' || *s == '"' || *s == '\n') {
			out[o++] = '\\';
			out[o++] = *s == '\n' ? 'n' : *s;
		} else {
			out[o++] = *s;
		}
	}
	out[o] = '\0';
}

/* --metrics-file: the snapshot's outcome in Prometheus' text format, for
 * node_exporter's textfile collector, which must never read half a file:
 * temp file, fsync, rename. ok: it completed; then id's listing row gives
 * its bytes, files (one data file per agent) and messages. */
static int
write_metrics_file(const char *path, const char *repo, uint64_t id, int ok,
    int64_t ms, struct cs_err *e)
{
	struct snap_info si;
	struct store *st = NULL;
	char text[4096], lbl[1024];
	int n;

	memset(&si, 0, sizeof(si));
	if (ok && (store_open_listing(repo, &st, e) < 0 ||
	    cmd_snap_info(st, id, &si) != 0))
		memset(&si, 0, sizeof(si));	/* the figures stay 0 */
	store_close(st);
	label_escape(repo, lbl, sizeof(lbl));
	n = snprintf(text, sizeof(text),
	    "# HELP cutsnap_snapshot_success 1 if the last snapshot completed.\n"
	    "# TYPE cutsnap_snapshot_success gauge\n"
	    "cutsnap_snapshot_success{repo=\"%s\"} %d\n"
	    "# HELP cutsnap_snapshot_duration_seconds How long it took.\n"
	    "# TYPE cutsnap_snapshot_duration_seconds gauge\n"
	    "cutsnap_snapshot_duration_seconds{repo=\"%s\"} %.3f\n"
	    "# HELP cutsnap_snapshot_bytes Bytes of data files it recorded.\n"
	    "# TYPE cutsnap_snapshot_bytes gauge\n"
	    "cutsnap_snapshot_bytes{repo=\"%s\"} %llu\n"
	    "# HELP cutsnap_snapshot_files Data files it recorded.\n"
	    "# TYPE cutsnap_snapshot_files gauge\n"
	    "cutsnap_snapshot_files{repo=\"%s\"} %d\n"
	    "# HELP cutsnap_snapshot_messages In-flight messages it recorded.\n"
	    "# TYPE cutsnap_snapshot_messages gauge\n"
	    "cutsnap_snapshot_messages{repo=\"%s\"} %llu\n"
	    "# HELP cutsnap_snapshot_id Its id in the repository (0: none).\n"
	    "# TYPE cutsnap_snapshot_id gauge\n"
	    "cutsnap_snapshot_id{repo=\"%s\"} %llu\n"
	    "# HELP cutsnap_snapshot_timestamp_seconds When it ended (Unix "
	    "time).\n"
	    "# TYPE cutsnap_snapshot_timestamp_seconds gauge\n"
	    "cutsnap_snapshot_timestamp_seconds{repo=\"%s\"} %lld\n",
	    lbl, ok, lbl, (double)ms / 1000.0, lbl,
	    (unsigned long long)si.bytes, lbl, si.nagents, lbl,
	    (unsigned long long)si.nmsgs, lbl, (unsigned long long)id, lbl,
	    (long long)time(NULL));
	if (n < 0 || (size_t)n >= sizeof(text))
		return cs_errf(e, "metrics file: repository name too long");
	return fs_atomic_write_file(path, text, (size_t)n, 0644, e);
}

/* The directory FILE goes in exists: checked before the snapshot, so a
 * typo is a usage error, not a snapshot taken without its metrics. */
static int
metrics_dir_ok(const char *path)
{
	char buf[PATH_MAX];
	struct stat sb;

	if (strlen(path) >= sizeof(buf) || path[0] == '\0')
		return 0;
	memcpy(buf, path, strlen(path) + 1);
	return stat(dirname(buf), &sb) == 0 && S_ISDIR(sb.st_mode);
}

int
cmd_snapshot(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, CMD_OPT_NO_OPERANDS);
	const char *conf = NULL;
	struct coord_opts o = { .timeout_s = 60, .interrupted = &got_signal,
	    .progress = cmd_progress_fn, .recheck_age_s = -1,
	    .store = &cmd_store_opts };
	const char *keyfile = NULL;
	uint8_t *key = NULL;
	size_t klen = 0;
	struct cmd_progress prog;
	struct coord_copy copy;
	struct cfg *c = NULL;
	struct cs_err e;
	uint64_t timeout, id = 0;
	const char *rate = NULL, *mfile = NULL;
	int64_t t0, deadline;
	int ch, init, rc, status, json = 0, verbosity = 0, wait_ms = 0;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case 'r':
			o.repo = optarg;
			break;
		case 'i':
			o.initiator = optarg;
			break;
		case 't':
			if (cmd_parse_pos(optarg, "timeout", 86400, &timeout)
			    == -1)
				return EXIT_USAGE;
			o.timeout_s = (int)timeout;
			break;
		case 'k':
			keyfile = optarg;
			break;
		case OPT_RECHECK_AGE:
			if (strcmp(optarg, "0") == 0)
				o.recheck_age_s = 0;
			else if (cmd_parse_duration(optarg,
			    &o.recheck_age_s) == -1)
				return EXIT_USAGE;
			break;
		case 'm':
			rate = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'q':
			verbosity = -1;
			break;
		case 'v':
			verbosity = 1;
			break;
		case OPT_ACCEPT_ROLLBACK:
			cmd_store_opts.accept_rollback = 1;
			break;
		case OPT_METRICS_FILE:
			mfile = optarg;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (o.repo == NULL)
		return cmd_usage_error("missing -r REPO");
	if (mfile != NULL && !metrics_dir_ok(mfile))
		return cmd_usage_error("--metrics-file %s: its directory does "
		    "not exist", mfile);
	if (store_check_path(o.repo, STORE_CREATE, &e) < 0)
		return cmd_fail(EXIT_USAGE, "%s", e.msg);
	if (keyfile != NULL) {
		if (mac_key_load(keyfile, &key, &klen, &e) < 0)
			return cmd_fail(EXIT_USAGE, "%s", e.msg);
		o.key = key;
		o.keylen = klen;
	}
	if (rate != NULL && cfg_parse_rate(rate, &o.max_rate) == -1) {
		rc = cmd_usage_error("bad --max-rate '%s': " CFG_RATE_EXPECTED,
		    rate);
		goto out;
	}
	if ((rc = cmd_load_config(conf, &c)) != 0)
		goto out;
	if (rate == NULL)
		o.max_rate = c->snapshot_max_rate;
	init = 0;
	if (o.initiator != NULL &&
	    (init = cmd_find_agent(c, o.initiator)) == -1) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (!coord_reachable(c, init)) {
		rc = cmd_fail(EXIT_USAGE, "markers from %s cannot reach every "
		    "agent over the configured channels; choose another "
		    "--initiator or add channels", c->agents[init].name);
		goto out;
	}
	catch_signals();
	cmd_progress_init(&prog, "snapshot", verbosity);
	if (verbosity > 0) {
		o.joined = on_joined;
		o.reported = on_reported;
	}
	o.progress_ctx = &prog;
	memset(&copy, 0, sizeof(copy));
	o.copy = &copy;
	t0 = cs_now_ms();
	deadline = cmd_retry_lock_deadline();
	/* A locked repository stops it before a snapshot row exists (id
	 * 0): then it may simply be tried again (--retry-lock). */
	while ((rc = coord_snapshot(c, &o, &id, &e)) < 0 && id == 0 &&
	    !got_signal && cmd_retry_lock_again(&e, deadline, &wait_ms))
		;
	cmd_progress_end(&prog);
	if (mfile != NULL) {
		struct cs_err me;

		/* A snapshot that completed stays complete (exit 0): the
		 * file is its report, not part of it. */
		if (write_metrics_file(mfile, o.repo, id, rc >= 0,
		    cs_now_ms() - t0, &me) < 0)
			cmd_warn("warning: %s", me.msg);
	}
	if (rc < 0) {
		if (json)
			print_json(o.repo, id, NULL, 0, e.msg, &copy);
		/* A repository that cannot be opened is bad input unless
		 * its kind says more (locked, wrong password). */
		status = cmd_exit_status(cs_err_code(&e));
		rc = cmd_fail(status == EXIT_FAILED && rc == COORD_BAD_REPO ?
		    EXIT_USAGE : status, "%s", e.msg);
		goto out;
	}
	rc = EXIT_OK;
	if (copy.note[0] != '\0')
		cmd_warn("warning: %s", copy.note);
	if (json) {
		if (print_json(o.repo, id, &copy, o.max_rate, NULL, NULL) ==
		    -1)
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	} else {
		printf("%llu\n", (unsigned long long)id);
	}
out:
	mac_key_free(key, klen);
	cfg_free(c);
	return rc;
}
