/* cmd.h - the subcommands of the cutsnap binary and the helpers they share. */
#ifndef CUTSNAP_CMD_H
#define CUTSNAP_CMD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "../api/api.h"
#include "../lib/buf.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/json.h"
#include "../log/reqtab.h"
#include "../lib/util.h"

struct store;
struct snap_info;

/* Exit statuses (README.md "Exit status", the manual's EXIT STATUS);
 * exit.c maps error kinds to them. 128 + N: killed by signal N. */
#define EXIT_OK 0
#define EXIT_FAILED 1	/* the operation or the check failed */
#define EXIT_USAGE 2	/* bad usage, bad config or unreadable input */
#define EXIT_PARTIAL 3	/* done in part (verify: some snapshots bad) */
#define EXIT_UNKNOWN 4	/* add, transfer: the reply was lost, the
			 * outcome is unknown (retry with its ID) */
#define EXIT_NOREPO 10	/* no repository there, or not a usable one */
#define EXIT_LOCKED 11	/* the repository is locked by another process */
#define EXIT_AUTH 12	/* wrong password (or no password given) */

/* exit.c. The exit status of an error kind (the one table). */
int cmd_exit_status(enum cs_errcode code);
/* Print e's line and return its kind's exit status. */
int cmd_fail_err(const struct cs_err *e);
/* The same, but a kind that would exit 1 exits fallback instead (a
 * failure to open the repository given is a usage error). */
int cmd_fail_errs(int fallback, const struct cs_err *e);
/* Keep the first failure for the JSON error object (cmd_fail and
 * cmd_usage_error call it); have_code 0: the kind follows from status.
 * status -1: a warning line, the message only if no failure comes. */
void cmd_note_failure(int status, int have_code, enum cs_errcode code,
    const char *msg);
/* retrylock.c: --retry-lock DURATION, taken out of argv by main for the
 * commands that lock the repository: -1 to go on, otherwise the exit
 * status (the usage error printed). */
int cmd_take_retry_lock(int *argc, char **argv);
/* When a retry that starts now must give up (now without the option). */
int64_t cmd_retry_lock_deadline(void);
/* After a failure e: 1 when it is a lock conflict and deadline has not
 * passed, after sleeping a little (*wait_ms, 0 at first, grows), so the
 * caller tries again; 0 to report e. */
int cmd_retry_lock_again(const struct cs_err *e, int64_t deadline,
    int *wait_ms);
/* store_lock, tried again while it conflicts, until the deadline. */
int cmd_lock(struct store *st, int exclusive, struct cs_err *e);

/* Set by main when the command line has --json: a failure is also one
 * JSON object on stdout, {"error": {"code", "message", "exit"}}, written
 * by cmd_json_error(status) unless the command wrote its own JSON there. */
extern int cmd_json_errors;
/* The version of the --json documents' formats (docs/reference.md): a
 * new member keeps it; a member removed, renamed or given another type
 * bumps it. Every command's top-level object opens with "schema": it. */
#define CMD_JSON_SCHEMA 1
/* json_init of a command's --json document on stdout (json_init_doc
 * with CMD_JSON_SCHEMA). */
void cmd_json_init(struct json *j);
void cmd_json_error(int status);
/* The same from a signal handler, for SIGINT or SIGTERM. */
void cmd_json_signal(int sig);

/* Default wait for an agent's reply to a client request. */
#define CMD_REQ_TIMEOUT_MS 30000

int cmd_agent(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_put(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_del(int argc, char **argv);
int cmd_add(int argc, char **argv);
int cmd_transfer(int argc, char **argv);
int cmd_channel(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_forget(int argc, char **argv);
int cmd_prune(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_compact(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_cert(int argc, char **argv);
int cmd_deadletter(int argc, char **argv);
int cmd_inbox(int argc, char **argv);
int cmd_check(int argc, char **argv);

/* envopts.c: with CUTSNAP_REPOSITORY / CUTSNAP_CONFIG set and command name
 * taking -r / -c without one on its command line, a new argv (kept for
 * the process's life) with "-r VALUE" / "-c VALUE" before the command's
 * words. 0, or -1 out of memory. */
int cmd_env_defaults(const char *name, int *argc, char ***argv);

/* The running subcommand's name, used in every message ("put"). Set by
 * main before dispatching. */
extern const char *cmd_name;

/* Print "cutsnap: CMD: message" on stderr. */
void cmd_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, then return status: "return cmd_fail(EXIT_FAILED, ...)". */
int cmd_fail(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "cutsnap: CMD: message (see cutsnap CMD --help)"; returns EXIT_USAGE. */
int cmd_usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* Report the option getopt_long rejected (it returned ch, '?' or ':')
 * for argv[optind - 1]; returns EXIT_USAGE. */
int cmd_bad_option(char **argv, int ch);
/* Set by main for the commands that talk to agents: they take --cert
 * NAME, which main takes out of argv and cmd_help lists. */
extern int cmd_takes_cert;
/* Print usage text on stdout, then the options main takes for the
 * command (--cert); returns EXIT_OK (for --help). */
int cmd_help(const char *text);

/* getopt.c: a command's option loop. Each entry of opts whose val is an
 * ASCII letter is also that short option; CMD_OPT_LONG and above are long
 * only ("enum { OPT_X = CMD_OPT_LONG, ... }"). Every command reads its
 * options as
 *	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, flags);
 *	while ((ch = cmd_getopt(&g, argc, argv)) != -1)
 *		switch (ch) { ... }
 *	if (g.status != -1)
 *		return g.status;
 * cmd_getopt answers --help (status EXIT_OK after printing usage), an
 * unknown option or a missing value (EXIT_USAGE after the error line)
 * and, with CMD_OPT_NO_OPERANDS, an operand after the options; status
 * -1 means go on with the operands from optind. */
#define CMD_OPT_LONG 256
#define CMD_OPT_IN_ORDER 1	/* options end at the first operand, and a
				 * later "--" is skipped (cmd_skip_late_dashes) */
#define CMD_OPT_NO_OPERANDS 2	/* the command takes no operand */
struct option;
struct cmd_getopt {
	const struct option *opts;	/* the table, ending in a NULL name */
	const char *usage;		/* --help's text */
	int flags;			/* CMD_OPT_IN_ORDER, CMD_OPT_NO_OPERANDS */
	int status;			/* after -1: -1 go on, else exit status */
	char shorts[80];		/* built from opts at the first call */
};
#define CMD_GETOPT(opts, usage, flags) { (opts), (usage), (flags), -1, "" }
int cmd_getopt(struct cmd_getopt *g, int argc, char **argv);

/* After getopt_long in order ("+"), whose options end at the first
 * operand: the first "--" after optind is moved before the operands and
 * stepped over (optind), unless getopt already stopped at one. */
void cmd_skip_late_dashes(int argc, char **argv);
/* Parse the options of a command whose only options are -c CONF and
 * --help. With in_order, parsing stops at the first argument that is not
 * an option, so later arguments may start with '-' (a negative DELTA);
 * a "--" among them is skipped as it is in any position elsewhere.
 * Returns -1 to go on with the arguments from optind, otherwise the exit
 * status to return. */
int cmd_conf_opts(int argc, char **argv, const char *usage, int in_order,
    const char **conf);

/* The options of start and stop: -c CONF, -t SEC (default 10), --help,
 * and with log_level (start) -l LEVEL, which sets cmd_agent_log_level;
 * no other argument. Returns -1 to go on, otherwise the exit status to
 * return (the error or the help printed). */
int cmd_cluster_opts(int argc, char **argv, const char *usage, int log_level,
    const char **conf, uint64_t *timeout_s);
/* Open the repository of -r REPO for a command: "missing -r REPO" when
 * repo is NULL, store_open in mode (a bad repository is a usage error),
 * then, with keyfile (--key), its key (cmd_key_set). EXIT_OK with *out to
 * store_close, or the exit status after printing the error (*out NULL). */
int cmd_open_repo(const char *repo, int mode, const char *keyfile,
    struct store **out);
/* cmd_open_repo with store options o instead of cmd_store_opts. */
struct store_opts;
int cmd_open_repo_with(const char *repo, int mode, const struct store_opts *o,
    const char *keyfile, struct store **out);
/* How the command opens its repository (store_open_with): the password
 * callback cmd_password_setup sets for the commands that read an
 * encrypted repository, and the blob sink and target store/objrepo.c sets while
 * the command it wraps runs. The program's choice, not the store's: an
 * open that wants other options (verify --no-password) passes a copy. */
extern struct store_opts cmd_store_opts;

/* Load the config at path (NULL: usage error "missing -c CONF"). Returns
 * 0, or EXIT_USAGE after printing the error. */
int cmd_load_config(const char *path, struct cfg **out);
/* Index of agent name in c, or -1 after printing
 * "unknown agent X (config has A, B)". */
int cmd_find_agent(const struct cfg *c, const char *name);
/* Strict decimal int64 (no spaces, no trailing bytes). 0, or -1 after
 * printing "invalid WHAT 'x': expected an integer". */
int cmd_parse_i64(const char *s, const char *what, int64_t *out);
/* Strict positive decimal integer up to max. 0, or -1 after printing. */
int cmd_parse_pos(const char *s, const char *what, uint64_t max,
    uint64_t *out);

/* Like api_call (api/api.h) for the ordinary client requests, turning every failure
 * into a printed error line. Returns EXIT_OK when the agent answered REPLY_OK
 * (or REPLY_NOTFOUND with notfound_ok), otherwise the exit status to use. */
int cmd_request(const struct cfg *c, int i, uint8_t type,
    const struct wbuf *req, struct api_reply *r, int notfound_ok);
/* cmd_request's second half: the exit status of agent i's reply r,
 * printing the error line when it is not OK. */
int cmd_reply_status(const struct cfg *c, int i, const struct api_reply *r,
    int notfound_ok);

/* reqid.c: add, del and transfer, whose requests carry a client request
 * id. The options: -c CONF, -t/--timeout SEC (the whole wait, retries
 * included; default CMD_REQ_TIMEOUT_MS), --request-id HEX (32 hex
 * digits; otherwise a random one), --help; with in_order, parsing stops
 * at the first argument that is not an option. -1 to go on from optind,
 * otherwise the exit status to return. */
struct cmd_req_opts {
	const char *conf;
	int timeout_ms;
	uint8_t id[REQ_ID_LEN];
};
int cmd_req_opts(int argc, char **argv, const char *usage, int in_order,
    struct cmd_req_opts *o);
/* Send request type (its fields in req, the id is appended) to agent i
 * and wait for the reply; when it is lost (the connection broke or the
 * wait ran out after the request went out), send it again with the same
 * id until o->timeout_ms has passed: the agent applies it once. The
 * exit status: that of the reply (cmd_reply_status, with notfound_ok),
 * EXIT_FAILED when nothing could be sent, EXIT_UNKNOWN when no reply came ("outcome
 * unknown: request ID ... may or may not have been applied"). */
int cmd_request_id(const struct cfg *c, int i, uint8_t type,
    struct wbuf *req, const struct cmd_req_opts *o, int notfound_ok,
    struct api_reply *r);
/* The body of get: parse "-c CONF AGENT KEY", read KEY with libcutsnap's
 * cs_get, and fail with "key 'K' not found on A" (exit 1)
 * when it is absent. Returns an exit status; on EXIT_OK *r holds the
 * reply. The caller frees *r with api_reply_free in every case. */
/* The operands "AGENT KEY" after the options: the key checked (1 to
 * WIRE_MAX_KEY bytes), conf loaded into *c, AGENT's index in *i. EXIT_OK,
 * or an exit status with the error printed (*c is then NULL). */
struct cfg;
int cmd_agent_key(int argc, char **argv, const char *conf, struct cfg **c,
    int *i, const char **key);
int cmd_key_request(int argc, char **argv, const char *usage_text,
    struct api_reply *r);
/* STATUS: only the agent's pid. 0, or -1 with e set. */
int cmd_agent_status(const struct cfg *c, int i, int timeout_ms, pid_t *pid,
    struct cs_err *e);

/* Dead letters as an agent lists them (deadletter.c). */
struct dl_dead;
struct cmd_dead_list {
	uint64_t total;		/* how many the agent has (open, or all) */
	struct dl_dead *v;	/* the first n of them, owned */
	size_t n;
};
/* Ask agent i for its open (all: every) dead letters. 0, or -1 with e
 * set (not printed). */
int cmd_dead_fetch(const struct cfg *c, int i, int all, int timeout_ms,
    struct cmd_dead_list *l, struct cs_err *e);
void cmd_dead_list_free(struct cmd_dead_list *l);
/* One dead letter of agent self: a JSON object (self NULL: no
 * "channel" member), or a text line. */
void cmd_dead_json(struct json *j, const struct dl_dead *d,
    const char *self);
void cmd_dead_text(FILE *f, const char *indent, const struct dl_dead *d,
    const char *self);


/* restore --target DIR (restore_target.c): DIR created if missing, the
 * config of snapshot id's cluster written as DIR/cluster.ini (its path in
 * conf) and loaded into *out, refused (EXIT_USAGE) when DIR already holds
 * that config or one of its data files. EXIT_OK, or the exit status after
 * printing why (conf "" then: nothing written). */
int cmd_restore_target(struct store *st, uint64_t id, const char *dir,
    uint64_t *resolved, char *conf, size_t confsz, struct cfg **out);

/* The progress line of long work on stderr. verbosity: -1 --quiet (no
 * line), 0 the line when stderr is a terminal, 1 (-v) also a summary line
 * "VERB: BYTES in SECS s (RATE/s)" at the end, terminal or not. */
struct cmd_progress {
	const char *verb;		/* "verify" */
	int verbosity;
	int on;				/* drawing the line */
	int drawn;			/* a line is on the screen */
	int64_t start_ms, last_ms;
	uint64_t done, total;
	char agent[NAME_MAX_LEN + 1];
};
void cmd_progress_init(struct cmd_progress *p, const char *verb,
    int verbosity);
/* A progress_fn (store.h) with ctx a struct cmd_progress. */
void cmd_progress_fn(void *ctx, const char *agent, uint64_t done,
    uint64_t total);
/* Erase the line; with -v print the summary. */
void cmd_progress_end(struct cmd_progress *p);
/* A span of seconds: "3d04h", "1h02m", "5m07s", "42s". */
void cmd_human_secs(int64_t s, char *out, size_t outsz);
/* "512 B", "1.5 KiB", "3.2 GiB". */
void cmd_human_bytes(uint64_t n, char *out, size_t outsz);

/* The listing row of snapshot id: 0, or -1 if it cannot be read. */
int cmd_snap_info(struct store *st, uint64_t id, struct snap_info *out);
/* EXIT_OK if id is 0 or a snapshot of st; otherwise the status to exit
 * with after printing why (EXIT_USAGE: "snapshot N does not exist"). */
int cmd_snapshot_exists(struct store *st, uint64_t id);
/* The members of a listing row (ls --json's object), inside an object. */
void cmd_json_snap_info(struct json *j, const struct snap_info *s);

/* A duration "7d", "12h", "1h30m" (units s m h d w) in seconds. 0, or -1
 * after printing a usage error. */
int cmd_parse_duration(const char *s, int64_t *out);
/* forget's report of r (forget_report.c): tables and a summary line, or
 * one JSON object; within is --keep-within's text, pruned whether the
 * prune of p ran. 0, or -1 when stdout failed. */
struct store_forget_result;
struct store_forget_policy;
int cmd_forget_report(const struct store_forget_result *r,
    const struct store_forget_policy *p, const char *within, int json,
    int pruned);

/* Start every agent of c that does not answer yet (spawned like
 * cmd_spawn_agent, logs in run_dir/NAME.log) and wait up to timeout_s
 * until all answer. pids (nagents entries, may be NULL) gets the pid of
 * each agent started here, 0 for those already running; running (the
 * same, may be NULL) the pid of each one already running. 0, or -1 with
 * e set (an agent exited early: its last log line). */
int cmd_start_cluster(const struct cfg *c, int timeout_s, pid_t *pids,
    pid_t *running, struct cs_err *e);
/* Ask every running agent of c to stop and wait up to timeout_s until each
 * has exited. 0, or -1 with e set. */
int cmd_stop_cluster(const struct cfg *c, int timeout_s, struct cs_err *e);

/* When set, spawned agents get "--log-level" and this level. */
extern const char *cmd_agent_log_level;
/* Spawn "SELF agent -c conf --name name" in its own session with stdin from
 * /dev/null and stdout/stderr appended to logpath. Returns the pid, or -1
 * with e set. */
pid_t cmd_spawn_agent(const char *conf, const char *name, const char *logpath,
    struct cs_err *e);
/* The last non-empty line of the file at path into out ("" if none). */
void cmd_last_line(const char *path, char *out, size_t outsz);

/* key.c: --key FILE of snapshot, verify and restore. cmd_key_set loads
 * the key file into st; 0, or EXIT_USAGE after printing why (unreadable,
 * too short or too long). cmd_key_note warns, when no key was given, that
 * snapshot id is authenticated and its tag was not checked. */
struct store;
int cmd_key_set(struct store *st, const char *path);

/* password.c: --password-file FILE and --password-command CMD, taken out
 * of argv by main for the commands that read an encrypted repository:
 * -1 to go on, otherwise the exit status (the usage error printed), as
 * cmd_take_retry_lock. */
extern const char *cmd_password_file;
extern const char *cmd_password_command;
int cmd_take_password_file(int *argc, char **argv);
/* Let the command's opens ask for a repository's password when it is
 * encrypted (cmd_store_opts.password). */
void cmd_password_setup(void);
/* A password into buf[0, *len): from file, else --password-command,
 * else the environment (CUTSNAP_PASSWORD_FILE, CUTSNAP_PASSWORD_COMMAND,
 * CUTSNAP_PASSWORD; CMD_PW_NEW: CUTSNAP_NEW_PASSWORD_FILE,
 * CUTSNAP_NEW_PASSWORD, no command), else the terminal
 * without echo, prompting with what (twice unless CMD_PW_CURRENT). */
#define CMD_PW_CURRENT 0	/* the password of a key that exists */
#define CMD_PW_FIRST 1		/* init --encrypt: the first key's */
#define CMD_PW_NEW 2		/* key add / passwd: another key's */
int cmd_password(int mode, const char *file, const char *what, char *buf,
    size_t sz, size_t *len, struct cs_err *e);
int cmd_keys(int argc, char **argv);

/* Repositories on an object store (remote.c, store/objrepo.c).
 * cmd_remote_wants: 1 when the command name takes a repository and argv
 * names one on an object store. cmd_remote_run: runs fn on a local
 * stand-in of that repository, moving what it needs from and to the
 * bucket; returns the exit status.
 * cmd_repo_published: a writing command's finished step (load's periodic
 * snapshots) made visible in the bucket now; 0 when the repository is not
 * on an object store, -1 with e set. */
int cmd_remote_wants(const char *name, int argc, char **argv);
int cmd_remote_run(const char *name, int (*fn)(int, char **), int argc,
    char **argv);
int cmd_repo_published(struct cs_err *e);
/* While a command runs on the stand-in dir of the repository url, error
 * lines name url instead; cmd_repo_name(repo) is what to print for a
 * repository argument. Both strings are borrowed. */
void cmd_repo_alias(const char *dir, const char *url);
const char *cmd_repo_name(const char *repo);
void cmd_key_note(struct store *st, uint64_t id, const char *path);

/* The lines a store call reports through a problem_fn: verify's and
 * restore's problems, and the notes of the replay (store_set_notes: what
 * it dead-letters). Without json each is printed at once as
 * "PREFIX: LINE" on stdout; with json they are kept for cmd_lines_json
 * ("KEY": [...]). */
struct cmd_lines {
	const char *prefix;	/* "problem", "note" */
	const char *key;	/* its JSON key: "problems", "notes" */
	int json;
	char **v;
	size_t n;		/* lines seen (kept ones with json) */
	int oom;
};
void cmd_lines_add(void *ctx, const char *line);	/* a problem_fn */
void cmd_lines_json(struct json *j, const struct cmd_lines *l);
void cmd_lines_free(struct cmd_lines *l);

#endif
