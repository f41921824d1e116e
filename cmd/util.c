/* util.c - helpers shared by the subcommands: messages, config, parsing,
 * requests to agents, JSON strings. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../api/api.h"
#include "../proto/agstat.h"
#include "../lib/buf.h"
#include "../net/client.h"
#include "../lib/config.h"
#include "../lib/util.h"
#include "../net/wire.h"
#include "../net/xport.h"
#include "cmd.h"
#include "../store/store.h"

const char *cmd_name = "cutsnap";
const char *cmd_agent_log_level;

/* The local stand-in of an object-store repository and the URL users
 * gave (remote.c, store/objrepo.c): messages name the URL. */
static const char *alias_dir, *alias_url;

void
cmd_repo_alias(const char *dir, const char *url)
{
	alias_dir = dir;
	alias_url = url;
}

const char *
cmd_repo_name(const char *repo)
{
	return alias_dir != NULL && strcmp(repo, alias_dir) == 0 ? alias_url :
	    repo;
}

/* msg with the stand-in directory named as the user gave it, into out. */
static void
alias_line(const char *msg, char *out, size_t outsz)
{
	const char *p = msg, *q;
	size_t n, off = 0;

	out[0] = '\0';
	if (alias_dir != NULL && (n = strlen(alias_dir)) > 0)
		while ((q = strstr(p, alias_dir)) != NULL && off < outsz) {
			off += (size_t)snprintf(out + off, outsz - off,
			    "%.*s%s", (int)(q - p), p, alias_url);
			p = q + n;
		}
	if (off < outsz)
		snprintf(out + off, outsz - off, "%s", p);
}

/* Print the line; a failure's (status >= 0) is also kept for the JSON
 * error object. */
static void
vwarn_line(int status, const char *suffix, const char *fmt, va_list ap)
{
	char msg[2048], line[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	alias_line(msg, line, sizeof(line));
	fprintf(stderr, "cutsnap: %s: %s%s\n", cmd_name, line, suffix);
	/* A warning may be the only line of a failure that returns its
	 * status itself: kept too, in case no failure follows. */
	cmd_note_failure(status, 0, CS_E_FAILED, line);
}

void
cmd_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn_line(-1, "", fmt, ap);
	va_end(ap);
}

int
cmd_fail(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn_line(status, "", fmt, ap);
	va_end(ap);
	return status;
}

int
cmd_usage_error(const char *fmt, ...)
{
	char suffix[96];
	va_list ap;

	snprintf(suffix, sizeof(suffix), " (see cutsnap %s --help)", cmd_name);
	va_start(ap, fmt);
	vwarn_line(EXIT_USAGE, suffix, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

int
cmd_bad_option(char **argv, int ch)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";

	if (ch == ':')
		return cmd_usage_error("option '%s' needs a value", arg);
	if (optopt != 0 && strncmp(arg, "--", 2) != 0)
		return cmd_usage_error("unknown option '-%c'", optopt);
	return cmd_usage_error("unknown option '%s'", arg);
}

int cmd_takes_cert;

int
cmd_help(const char *text)
{
	fputs(text, stdout);
	/* Listed here once rather than in each command's text. */
	if (cmd_takes_cert)
		fputs("\n--cert NAME: present the client certificate NAME "
		    "(NAME.crt and NAME.key\nin tls_dir, or a path) to "
		    "agents that listen on TCP with TLS.\n", stdout);
	return EXIT_OK;
}

/* In order, options end at the first operand: "put A -- -k v" would keep
 * its "--" as an operand. Unless getopt already stopped at a "--", the
 * first "--" after optind ends the options as well and is skipped, so
 * that a key or value starting with '-' can follow it; a value that is
 * "--" itself follows an earlier "--". */
void
cmd_skip_late_dashes(int argc, char **argv)
{
	char *dashes;
	int i;

	if (optind > 1 && strcmp(argv[optind - 1], "--") == 0)
		return;
	for (i = optind; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			break;
	if (i == argc)
		return;
	/* Move it before the operands and step over it. */
	dashes = argv[i];
	for (; i > optind; i--)
		argv[i] = argv[i - 1];
	argv[optind++] = dashes;
}

int
cmd_conf_opts(int argc, char **argv, const char *usage, int in_order,
    const char **conf)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cmd_getopt g = CMD_GETOPT(opts, usage,
	    in_order ? CMD_OPT_IN_ORDER : 0);

	*conf = NULL;
	while (cmd_getopt(&g, argc, argv) == 'c')
		*conf = optarg;
	return g.status;
}

int
cmd_load_config(const char *path, struct cfg **out)
{
	struct cs_err e;

	*out = NULL;
	if (path == NULL)
		return cmd_usage_error("missing -c CONF");
	if (cfg_load(path, out, &e) == -1) {
		*out = NULL;
		return cmd_fail(EXIT_USAGE, "%s", e.msg);
	}
	return 0;
}

int
cmd_find_agent(const struct cfg *c, const char *name)
{
	char list[1024];
	size_t off = 0, n;
	int i;

	if ((i = cfg_find(c, name)) >= 0)
		return i;
	list[0] = '\0';
	for (i = 0; i < c->nagents; i++) {
		n = strlen(c->agents[i].name);
		if (off + n + 8 > sizeof(list)) {
			memcpy(list + off, ", ...", 6);	/* too many to name */
			break;
		}
		if (i > 0) {
			memcpy(list + off, ", ", 2);
			off += 2;
		}
		memcpy(list + off, c->agents[i].name, n + 1);
		off += n;
	}
	(void)cmd_fail(EXIT_USAGE, "unknown agent %s (config has %s)",
	    name, list);
	return -1;
}

int
cmd_parse_i64(const char *s, const char *what, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	if (*s == '\0' || !(*s == '-' || *s == '+' || (*s >= '0' && *s <= '9')))
		goto bad;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s)
		goto bad;
	*out = v;
	return 0;
bad:
	if (errno == ERANGE)
		(void)cmd_fail(EXIT_USAGE, "invalid %s '%s': out of range "
		    "for a 64-bit integer", what, s);
	else
		(void)cmd_fail(EXIT_USAGE, "invalid %s '%s': expected an "
		    "integer", what, s);
	return -1;
}

int
cmd_parse_pos(const char *s, const char *what, uint64_t max, uint64_t *out)
{
	const char *p;
	uint64_t v = 0;

	if (*s == '\0')
		goto bad;
	for (p = s; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		if (v > (max - (uint64_t)(*p - '0')) / 10) {
			(void)cmd_fail(EXIT_USAGE, "invalid %s '%s': at most %" PRIu64, what, s,
			    max);
			return -1;
		}
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v == 0)
		goto bad;
	*out = v;
	return 0;
bad:
	(void)cmd_fail(EXIT_USAGE, "invalid %s '%s': expected a positive "
	    "integer", what, s);
	return -1;
}

int
cmd_request(const struct cfg *c, int i, uint8_t type, const struct wbuf *req,
    struct api_reply *r, int notfound_ok)
{
	struct cs_err e;

	if (api_call(c, i, type, req, r, CMD_REQ_TIMEOUT_MS, &e) == -1)
		return cmd_fail(EXIT_FAILED, "%s", e.msg);
	return cmd_reply_status(c, i, r, notfound_ok);
}

int
cmd_reply_status(const struct cfg *c, int i, const struct api_reply *r,
    int notfound_ok)
{
	char msg[CS_ERR_MAX];

	switch (r->code) {
	case REPLY_OK:
		return EXIT_OK;
	case REPLY_NOTFOUND:
		if (notfound_ok)
			return EXIT_OK;
		return cmd_fail(EXIT_FAILED, "not found on %s",
		    c->agents[i].name);
	case REPLY_FAIL:
	case REPLY_BADREQ:
	case REPLY_CONFLICT:
	case REPLY_DENIED:
		/* The agent's message says what failed; the user named the
		 * agent on the command line. */
		cs_printable(r->body, r->blen, msg, sizeof(msg), 0);
		if (msg[0] == '\0')
			return cmd_fail(EXIT_FAILED, "agent %s: request failed",
			    c->agents[i].name);
		return cmd_fail(EXIT_FAILED, "%s", msg);
	default:
		return cmd_fail(EXIT_FAILED, "agent %s: unexpected reply "
		    "code %u", c->agents[i].name, r->code);
	}
}

int
cmd_agent_status(const struct cfg *c, int i, int timeout_ms, pid_t *pid,
    struct cs_err *e)
{
	struct agstat st;

	if (api_agent_stat(c, i, timeout_ms, &st, e) == -1)
		return -1;
	*pid = (pid_t)st.pid;
	agstat_free(&st);
	return 0;
}

pid_t
cmd_spawn_agent(const char *conf, const char *name, const char *logpath,
    struct cs_err *e)
{
	int logfd, nullfd;
	pid_t pid;

	logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
	if (logfd == -1)
		return cs_errno(e, "open %s", logpath);
	if ((nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1) {
		cs_errno(e, "open /dev/null");
		close(logfd);
		return -1;
	}
	fflush(NULL);
	if ((pid = fork()) == -1) {
		cs_errno(e, "fork");
		goto out;
	}
	if (pid == 0) {
		char *const args[] = { "cutsnap", "agent", "-c", (char *)conf,
		    "--name", (char *)name, cmd_agent_log_level ? "--log-level" :
		    NULL, (char *)cmd_agent_log_level, NULL };

		setsid();
		if (dup2(nullfd, 0) == -1 || dup2(logfd, 1) == -1 ||
		    dup2(logfd, 2) == -1)
			_exit(127);
		execv("/proc/self/exe", args);
		dprintf(2, "cutsnap: start: exec /proc/self/exe: %s\n",
		    strerror(errno));
		_exit(127);
	}
out:
	close(logfd);
	close(nullfd);
	return pid;
}

void
cmd_last_line(const char *path, char *out, size_t outsz)
{
	char buf[4096];
	ssize_t n;
	off_t size;
	int fd;
	char *end, *start;

	out[0] = '\0';
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > (off_t)sizeof(buf) - 1)
		size -= (off_t)sizeof(buf) - 1;
	else
		size = 0;
	n = pread(fd, buf, sizeof(buf) - 1, size);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	end = buf + n;
	while (end > buf && (end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	start = end;
	while (start > buf && start[-1] != '\n')
		start--;
	cs_printable(start, strlen(start), out, outsz, 0);
}

int
cmd_agent_key(int argc, char **argv, const char *conf, struct cfg **c,
    int *i, const char **key)
{
	int rc;

	*c = NULL;
	if (argc - optind != 2)
		return cmd_usage_error("expected AGENT KEY, got %d argument%s",
		    argc - optind, argc - optind == 1 ? "" : "s");
	*key = argv[optind + 1];
	if (**key == '\0' || strlen(*key) > WIRE_MAX_KEY)
		return cmd_usage_error("a key must be 1 to %u bytes long",
		    WIRE_MAX_KEY);
	if ((rc = cmd_load_config(conf, c)) != 0)
		return rc;
	if ((*i = cmd_find_agent(*c, argv[optind])) == -1) {
		cfg_free(*c);
		*c = NULL;
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int
cmd_key_request(int argc, char **argv, const char *usage_text,
    struct api_reply *r)
{
	const char *conf, *key;
	struct cfg *c = NULL;
	struct cs_err e;
	cs_conn *conn = NULL;
	void *v;
	int i, rc;

	if ((rc = cmd_conf_opts(argc, argv, usage_text, 0, &conf)) != -1)
		return rc;
	if ((rc = cmd_agent_key(argc, argv, conf, &c, &i, &key)) != EXIT_OK)
		return rc;
	if ((conn = api_open_cfg(c, i, CMD_REQ_TIMEOUT_MS, &e, NULL)) ==
	    NULL) {
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
		goto out;
	}
	switch (cs_get(conn, key, strlen(key), &v, &r->blen)) {
	case CS_OK:
		r->code = REPLY_OK;
		r->body = v;
		rc = EXIT_OK;
		break;
	case CS_NOTFOUND:
		rc = cmd_fail(EXIT_FAILED, "key '%s' not found on %s", key,
		    c->agents[i].name);
		break;
	default:
		rc = cmd_fail(EXIT_FAILED, "%s", cs_errmsg(conn));
		break;
	}
out:
	cs_close(conn);
	cfg_free(c);
	return rc;
}

/* start's --log-level has no short form (-l is forget's --keep-last). */
enum { OPT_LOG_LEVEL = CMD_OPT_LONG };

int
cmd_cluster_opts(int argc, char **argv, const char *usage, int log_level,
    const char **conf, uint64_t *timeout_s)
{
	static const struct option opts[] = {	/* stop */
		{ "config", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct option opts_l[] = {	/* start */
		{ "config", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
		{ NULL, 0, NULL, 0 },
	};
	struct cmd_getopt g = CMD_GETOPT(log_level ? opts_l : opts, usage,
	    CMD_OPT_NO_OPERANDS);
	int ch;

	*conf = NULL;
	*timeout_s = 10;
	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			*conf = optarg;
			break;
		case 't':
			if (cmd_parse_pos(optarg, "timeout", 86400, timeout_s)
			    == -1)
				return EXIT_USAGE;
			break;
		case OPT_LOG_LEVEL:
			if (strcmp(optarg, "error") != 0 &&
			    strcmp(optarg, "warn") != 0 &&
			    strcmp(optarg, "info") != 0 &&
			    strcmp(optarg, "debug") != 0)
				return cmd_usage_error("invalid log level '%s': "
				    "expected error, warn, info or debug",
				    optarg);
			cmd_agent_log_level = optarg;
			break;
		}
	}
	return g.status;
}

struct store_opts cmd_store_opts;

int
cmd_open_repo(const char *repo, int mode, const char *keyfile,
    struct store **out)
{
	return cmd_open_repo_with(repo, mode, &cmd_store_opts, keyfile, out);
}

int
cmd_open_repo_with(const char *repo, int mode, const struct store_opts *o,
    const char *keyfile, struct store **out)
{
	struct cs_err e;
	int rc;

	*out = NULL;
	if (repo == NULL)
		return cmd_usage_error("missing -r REPO");
	if (store_open_with(repo, mode, o, out, &e) == -1) {
		*out = NULL;
		return cmd_fail_errs(EXIT_USAGE, &e);
	}
	if (store_rollback_warning(*out) != NULL)
		cmd_warn("warning: %s", store_rollback_warning(*out));
	if (keyfile != NULL && (rc = cmd_key_set(*out, keyfile)) != 0) {
		store_close(*out);
		*out = NULL;
		return rc;
	}
	return EXIT_OK;
}

void
cmd_lines_add(void *ctx, const char *line)
{
	struct cmd_lines *l = ctx;
	char **nv;

	if (!l->json) {
		printf("%s: %s\n", l->prefix, line);
		l->n++;
		return;
	}
	if ((nv = realloc(l->v, (l->n + 1) * sizeof(*nv))) == NULL) {
		l->oom = 1;
		return;
	}
	l->v = nv;
	if ((nv[l->n] = strdup(line)) == NULL) {
		l->oom = 1;
		return;
	}
	l->n++;
}

void
cmd_lines_json(struct json *j, const struct cmd_lines *l)
{
	size_t i;

	json_key(j, l->key);
	json_arr(j);
	for (i = 0; l->json && i < l->n; i++)
		json_str(j, l->v[i]);
	json_arr_end(j);
}

void
cmd_lines_free(struct cmd_lines *l)
{
	size_t i;

	for (i = 0; l->json && i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void
cmd_human_secs(int64_t s, char *out, size_t outsz)
{
	if (s >= 86400)
		snprintf(out, outsz, "%lldd%02lldh", (long long)(s / 86400),
		    (long long)(s % 86400 / 3600));
	else if (s >= 3600)
		snprintf(out, outsz, "%lldh%02lldm", (long long)(s / 3600),
		    (long long)(s % 3600 / 60));
	else if (s >= 60)
		snprintf(out, outsz, "%lldm%02llds", (long long)(s / 60),
		    (long long)(s % 60));
	else
		snprintf(out, outsz, "%llds", (long long)s);
}
