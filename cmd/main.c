/* main.c - the cutsnap binary: find the subcommand and run it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../crypto/cryptomem.h"
#include "../net/wire.h"
#include "../net/xport.h"
#include "../store/store.h"
#include "cmd.h"

/* The release; the formats it reads and writes are versioned on their
 * own (shown by --version too). */
#ifndef CUTSNAP_VERSION
#define CUTSNAP_VERSION "0.1.0"
#endif

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "agent", cmd_agent, "run one agent in the foreground" },
	{ "start", cmd_start, "start every agent in the background" },
	{ "stop", cmd_stop, "stop every agent gracefully" },
	{ "status", cmd_status, "show which agents answer" },
	{ "check", cmd_check, "one health check for monitoring" },
	{ "put", cmd_put, "set a key on an agent" },
	{ "get", cmd_get, "print a key's value" },
	{ "del", cmd_del, "delete a key" },
	{ "add", cmd_add, "add an integer to a key's value" },
	{ "transfer", cmd_transfer, "move an amount between two agents" },
	{ "channel", cmd_channel, "hold or release a channel (drills)" },
	{ "deadletter", cmd_deadletter, "list, retry or refund dead letters" },
	{ "inbox", cmd_inbox, "list an agent's unconsumed messages" },
	{ "dump", cmd_dump, "print a data file's keys and watermarks" },
	{ "init", cmd_init, "create a repository with its settings" },
	{ "key", cmd_keys, "an encrypted repository's keys" },
	{ "snapshot", cmd_snapshot, "take a consistent snapshot" },
	{ "ls", cmd_ls, "list the snapshots of a repository" },
	{ "show", cmd_show, "a snapshot's cut in detail, with --sum KEY" },
	{ "verify", cmd_verify, "check a snapshot's integrity and its cut" },
	{ "forget", cmd_forget, "drop snapshots by a retention policy" },
	{ "prune", cmd_prune, "delete data no snapshot refers to" },
	{ "restore", cmd_restore, "restore a snapshot into the data files" },
	{ "compact", cmd_compact, "rewrite data files to their live state" },
	{ "load", cmd_load, "run random transfers, check conservation" },
	{ "cert", cmd_cert, "create the cluster's TLS certificates" },
	{ "demo", cmd_demo, "the bank example, end to end" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void
usage(FILE *f)
{
	size_t i;

	fputs("usage: cutsnap COMMAND [OPTIONS] [ARGS]\n\ncommands:\n", f);
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-9s %s\n", commands[i].name,
		    commands[i].summary);
	fputs("\nRun 'cutsnap COMMAND --help' for a command's usage; "
	    "'cutsnap --version' (-V)\nprints the version (--json: with the JSON schema's).\n"
	    "Exit status: 0 success, 1 failed, 2 bad usage or config, "
	    "3 partial,\n4 outcome unknown, 10 no repository, 11 locked, "
	    "12 wrong password,\n130/143 interrupted (see cutsnap(1) EXIT "
	    "STATUS).\n"
	    "CUTSNAP_REPOSITORY and CUTSNAP_CONFIG stand for -r REPO and "
	    "-c CONF when\nthose are not given.\n", f);
}

/* Text output is buffered: a failed write (a full disk, /dev/full, a
 * closed pipe) often shows only when stdout is flushed at exit. A command
 * that succeeded but whose output was lost fails with one line; one that
 * failed already said why. */
static int
finish(int rc)
{
	int err;

	errno = 0;
	err = fflush(stdout) != 0 || ferror(stdout);
	if (err && rc == EXIT_OK)
		return cmd_fail(EXIT_FAILED, "write stdout failed%s%s",
		    errno ? ": " : "", errno ? strerror(errno) : "");
	cmd_json_error(rc);
	return rc;
}

/* SIGTERM, SIGINT: a command ends at once, saying so in one line, with
 * 128 + the signal as its status (what a shell reports for a process
 * killed by it). Those that must clean up first (snapshot, load, demo)
 * install handlers of their own; an agent blocks both. */
static void
on_stop(int sig)
{
	static const char pre[] = "cutsnap: ";
	const char *what = sig == SIGINT ? ": interrupted (SIGINT)\n" :
	    ": interrupted (SIGTERM)\n";

	(void)!write(STDERR_FILENO, pre, sizeof(pre) - 1);
	(void)!write(STDERR_FILENO, cmd_name, strlen(cmd_name));
	(void)!write(STDERR_FILENO, what, strlen(what));
	cmd_json_signal(sig);
	_exit(128 + sig);
}

/* Catch sig with on_stop, unless it is ignored (a shell starts a
 * background job with SIGINT ignored: keep it so). */
static void
catch_stop(int sig)
{
	struct sigaction sa, old;

	if (sigaction(sig, NULL, &old) == -1 || old.sa_handler == SIG_IGN)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(sig, &sa, NULL);
}

/* The commands that read an encrypted repository's contents: they take
 * --password-file FILE and ask for the password when it is encrypted. */
static const char *const reads_repo[] = { "init", "key", "snapshot",
    "show", "verify", "restore", "load", NULL };
/* The commands that connect to agents as a client: they take --cert
 * NAME (the others refuse it as an unknown option). */
static const char *const presents_cert[] = { "start", "stop", "status",
    "check", "put", "get", "del", "add", "transfer", "channel",
    "deadletter", "inbox", "snapshot", "compact", "load", NULL };
/* The commands that lock the repository: they take --retry-lock. */
static const char *const locks_repo[] = { "key", "snapshot", "ls", "show",
    "verify", "restore", "forget", "prune", NULL };

/* 1 when name is in list (NULL-terminated). */
static int
listed(const char *const *list, const char *name)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, name) == 0)
			return 1;
	return 0;
}

/* 1 when argv[i] is the value of the option before it ("-c CONF"): any
 * word after a "-x" or "--xx" without '=' counts, which is lenient only
 * for flags. */
static int
opt_value(char **argv, int i)
{
	const char *p = argv[i - 1];

	return i > 1 && p[0] == '-' && p[1] != '\0' && strchr(p, '=') == NULL;
}

/* 1 when --json is among the options (before a "--"): failures are then
 * reported as a JSON object on stdout too (cmd_json_error). */
static int
wants_json(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--json") == 0)
			return 1;
	return 0;
}

/* Take --cert NAME (or --cert=NAME) out of argv, among the options before
 * the first positional argument (a value such as put's may be "--cert"):
 * the client certificate the command presents to agents (xport.h). 0, or
 * -1 when NAME is missing. */
static int
take_cert(int *argc, char **argv)
{
	int i, j;

	for (i = 1; i < *argc && strcmp(argv[i], "--") != 0; i++) {
		if (argv[i][0] != '-' && !opt_value(argv, i))
			break;
		if (strncmp(argv[i], "--cert=", 7) == 0) {
			xport_client_cert_set(argv[i] + 7);
			j = 1;
		} else if (strcmp(argv[i], "--cert") == 0) {
			if (i + 1 >= *argc)
				return -1;
			xport_client_cert_set(argv[i + 1]);
			j = 2;
		} else {
			continue;
		}
		memmove(&argv[i], &argv[i + j],
		    (size_t)(*argc - i - j + 1) * sizeof(*argv));
		*argc -= j;
		i--;
	}
	return 0;
}

/* Run command c on its words (argv[0] its name). */
static int
run(const struct command *c, int argc, char **argv)
{
	int rc;

	cmd_name = c->name;
	cmd_json_errors = wants_json(argc, argv);
	catch_stop(SIGTERM);
	catch_stop(SIGINT);
	if (cmd_env_defaults(c->name, &argc, &argv) < 0)
		return finish(cmd_fail(EXIT_FAILED, "out of memory"));
	cmd_takes_cert = listed(presents_cert, c->name);
	if (cmd_takes_cert && take_cert(&argc, argv) < 0)
		return finish(cmd_usage_error("--cert needs NAME"));
	if (listed(locks_repo, c->name) &&
	    (rc = cmd_take_retry_lock(&argc, argv)) >= 0)
		return finish(rc);
	if (listed(reads_repo, c->name)) {
		if ((rc = cmd_take_password_file(&argc, argv)) >= 0)
			return finish(rc);
		cmd_password_setup();
	}
	if (cmd_remote_wants(c->name, argc, argv))
		return finish(cmd_remote_run(c->name, c->fn, argc, argv));
	return finish(c->fn(argc, argv));
}

/* {"schema": 1, "version": "...", "protocol": 3, "manifest": 5}: what a
 * script checks before it reads this build's other documents. */
static void
print_version_json(void)
{
	struct json j;

	cmd_json_init(&j);
	json_obj(&j);
	json_kstr(&j, "version", CUTSNAP_VERSION);
	json_kint(&j, "protocol", WIRE_VERSION);
	json_kint(&j, "manifest", STORE_SCHEMA_VERSION);
	json_obj_end(&j);
	(void)json_end(&j);
}

int
main(int argc, char **argv)
{
	const char *name;
	size_t i;

	/* First: OpenSSL takes its allocator at its first allocation. */
	(void)cryptomem_init();
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	name = argv[1];
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 ||
	    strcmp(name, "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0 ||
	    strcmp(name, "version") == 0) {
		if (argc > 2 && strcmp(argv[2], "--json") == 0)
			print_version_json();
		else
			printf("cutsnap %s (wire protocol %d, manifest schema "
			    "%d)\n", CUTSNAP_VERSION, WIRE_VERSION,
			    STORE_SCHEMA_VERSION);
		if (fflush(stdout) == EOF || ferror(stdout)) {
			fprintf(stderr, "cutsnap: write stdout failed\n");
			return EXIT_FAILED;
		}
		return EXIT_OK;
	}
	for (i = 0; i < NCOMMANDS; i++) {
		if (strcmp(name, commands[i].name) == 0)
			return run(&commands[i], argc - 1, argv + 1);
	}
	fprintf(stderr, "cutsnap: unknown command '%s' (see cutsnap --help)\n",
	    name);
	return EXIT_USAGE;
}
