/* snapshot.c - "cutsnap snapshot": take a consistent snapshot of a running
 * cluster into a repository. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../common/mac.h"
#include "../coordinator/coordinator.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap snapshot -c CONF -r REPO [--initiator NAME] "
    "[--timeout SEC]\n"
    "                        [--key FILE]\n"
    "\n"
    "Take a consistent snapshot (Chandy-Lamport) of the running agents of\n"
    "CONF into the repository REPO (created if missing): every agent's data\n"
    "file plus the messages in flight on every channel. Print the new\n"
    "snapshot's id once it is committed as complete.\n"
    "\n"
    "  -c, --config CONF       the cluster config file\n"
    "  -r, --repo REPO         the repository directory\n"
    "  -i, --initiator NAME    the agent that starts the snapshot (default:\n"
    "                          the config's first agent)\n"
    "  -t, --timeout SEC       give up and mark the snapshot aborted after\n"
    "                          SEC seconds (default 60)\n"
    "  -k, --key FILE          authenticate the snapshot: store an\n"
    "                          HMAC-SHA256 over its rows under the key in\n"
    "                          FILE (16 to 4096 bytes; never stored)\n"
    "\n"
    "Exit status: 0 the snapshot is complete, 1 it failed or was aborted,\n"
    "2 bad usage or bad config.\n";

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "repo", required_argument, NULL, 'r' },
	{ "initiator", required_argument, NULL, 'i' },
	{ "timeout", required_argument, NULL, 't' },
	{ "key", required_argument, NULL, 'k' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static volatile sig_atomic_t got_signal;

static void
on_signal(int sig)
{
	(void)sig;
	got_signal = 1;
}

/* SIGINT/SIGTERM/SIGHUP interrupt the coordinator's wait (no SA_RESTART),
 * which then records the snapshot as aborted instead of dying with it
 * 'running'. */
static void
catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int
cmd_snapshot(int argc, char **argv)
{
	const char *conf = NULL;
	struct coord_opts o = { NULL, NULL, 60, &got_signal, NULL, 0 };
	const char *keyfile = NULL;
	uint8_t *key = NULL;
	size_t klen = 0;
	struct cfg *c = NULL;
	struct cs_err e;
	char msg[CS_ERR_MAX + 64];
	uint64_t timeout, id = 0;
	int ch, init, rc;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":c:r:i:t:k:h", opts, NULL)) != -1) {
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
		case 'h':
			return cmd_help(usage_text);
		default:
			return cmd_bad_option(argv, ch);
		}
	}
	if (optind < argc)
		return cmd_usage_error("unexpected argument '%s'",
		    argv[optind]);
	if (o.repo == NULL)
		return cmd_usage_error("missing -r REPO");
	if (keyfile != NULL) {
		if (mac_key_load(keyfile, &key, &klen, &e) < 0)
			return cmd_fail(EXIT_USAGE, "%s", e.msg);
		o.key = key;
		o.keylen = klen;
	}
	if ((rc = cmd_load_config(conf, &c)) != 0)
		goto out;
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
	if (coord_snapshot(c, &o, &id, &e) == -1) {
		cmd_snapshot_error(id, e.msg, msg, sizeof(msg));
		rc = cmd_fail(EXIT_FAILED, "%s", msg);
		goto out;
	}
	printf("%llu\n", (unsigned long long)id);
	rc = EXIT_OK;
out:
	mac_key_free(key, klen);
	cfg_free(c);
	return rc;
}
