/* agent.c - "cutsnap agent": run one agent in the foreground. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../agent/agent.h"
#include "../lib/log.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap agent -c CONF --name NAME [--log-level LEVEL]\n"
    "                     [--log FILE] [--inbox-max-bytes SIZE]\n"
    "\n"
    "Run agent NAME of the cluster in CONF in the foreground until SIGTERM,\n"
    "SIGINT or 'cutsnap stop'. It owns NAME's data file and serves clients\n"
    "and peers on run_dir/NAME.sock, or with an addr in its section on\n"
    "HOST:PORT with TCP and mutual TLS 1.3 (certificates from tls_dir, see\n"
    "cutsnap cert). Log lines go to stderr, or to FILE with --log (SIGHUP\n"
    "reopens it, for logrotate); under systemd (JOURNAL_STREAM) they go\n"
    "to the journal with their priority and no timestamp. With\n"
    "metrics_addr in CONF it serves Prometheus metrics on GET /metrics.\n"
    "Under systemd with Type=notify it says READY=1 once it accepts\n"
    "connections, WATCHDOG=1 with WatchdogSec=, STOPPING=1 as it stops.\n"
    "It refuses a\n"
    "CONF without a channel on which its data file still holds\n"
    "unacknowledged messages (exit 2): put the channel back, or run with\n"
    "the old config until the channel is drained.\n"
    "\n"
    "  -c, --config CONF      the cluster config file\n"
    "      --name NAME        the agent to run (an [agent NAME] section)\n"
    "      --log-level LEVEL  error, warn, info (default) or debug\n"
    "  -L, --log FILE         append the log to FILE, not stderr\n"
    "      --inbox-max-bytes SIZE  admit no application message while the\n"
    "                         inbox holds this many bytes (K/M/G/T; default\n"
    "                         the config's inbox_max_bytes, else 64M)\n"
    "\n"
    "Exit status: 0 after a clean stop, 1 if the agent failed, 2 bad usage\n"
    "or bad config.\n";

/* Options without a short form (cmd_getopt). */
enum { OPT_NAME = CMD_OPT_LONG, OPT_LOG_LEVEL, OPT_INBOX_MAX };

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "log", required_argument, NULL, 'L' },
	{ "inbox-max-bytes", required_argument, NULL, OPT_INBOX_MAX },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int
parse_level(const char *s, enum log_level *out)
{
	static const char *const names[] = { "error", "warn", "info",
	    "debug" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

/* Block SIGTERM and SIGINT in this process for good: from here to exit
 * they only ever reach the agent through its signalfd. agent_run blocks
 * them too, but restores the mask it found when it returns, and a stop
 * signal that arrives between that and exit would otherwise take the
 * default action and turn a clean stop into "killed by SIGTERM" (143).
 * Such a second signal is common: timeout(1), for one, sends SIGTERM to
 * its child and then again to its whole process group. Blocked signals
 * still pending at exit are discarded. Done first, before any thread
 * exists, so that no thread can take a stop signal with the default
 * action. */
static void
block_stop_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int
cmd_agent(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, CMD_OPT_NO_OPERANDS);
	const char *conf = NULL, *name = NULL, *logfile = NULL;
	uint64_t inbox_max = 0;
	enum log_level level = LOG_INFO;
	struct cfg *c = NULL;
	struct cs_err e;
	int ch, i, rc;

	block_stop_signals();
	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case OPT_NAME:
			name = optarg;
			break;
		case OPT_LOG_LEVEL:
			if (parse_level(optarg, &level) == -1)
				return cmd_usage_error("invalid log level "
				    "'%s': expected error, warn, info or debug",
				    optarg);
			break;
		case 'L':
			logfile = optarg;
			break;
		case OPT_INBOX_MAX:
			if (cfg_parse_inbox_max(optarg, &inbox_max) == -1)
				return cmd_usage_error("--inbox-max-bytes '%s': "
				    CFG_INBOX_MAX_EXPECTED, optarg);
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (name == NULL)
		return cmd_usage_error("missing --name NAME");
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	if ((i = cmd_find_agent(c, name)) == -1) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (inbox_max != 0)
		c->agents[i].inbox_max = inbox_max;
	log_init(c->agents[i].name, level);
	if (logfile != NULL && log_open_file(logfile, &e) == -1) {
		rc = cmd_fail(EXIT_USAGE, "%s", e.msg);
		goto out;
	}
	if ((rc = agent_run(c, i, &e)) < 0)
		rc = cmd_fail(cs_err_code(&e) == CS_E_USAGE ? EXIT_USAGE :
		    EXIT_FAILED, "%s: %s",
		    c->agents[i].name, e.msg);
	else
		rc = EXIT_OK;
out:
	cfg_free(c);
	return rc;
}
