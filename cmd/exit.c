/* exit.c - the one table from error kinds to exit statuses, and the JSON
 * object that reports a failed command on stdout under --json. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

/* Kind and exit status, both ways. A kind that is not listed exits 1.
 * EXISTS is a usage error: "init" on a repository that is there is bad
 * input, not a failed write. NOTFOUND is a failed check (get: exit 1). */
static const struct {
	enum cs_errcode code;
	int status;
} table[] = {
	{ CS_E_FAILED, EXIT_FAILED },
	{ CS_E_USAGE, EXIT_USAGE },
	{ CS_E_EXISTS, EXIT_USAGE },
	{ CS_E_PARTIAL, EXIT_PARTIAL },
	{ CS_E_UNKNOWN, EXIT_UNKNOWN },
	{ CS_E_NOREPO, EXIT_NOREPO },
	{ CS_E_LOCKED, EXIT_LOCKED },
	{ CS_E_AUTH, EXIT_AUTH },
};
#define NTABLE (sizeof(table) / sizeof(table[0]))

int cmd_json_errors;

/* The first failure reported (cmd_fail, cmd_usage_error, cmd_fail_err):
 * the cause; what follows it is usually its consequence. */
static struct {
	int set;
	int status;
	enum cs_errcode code;
	char msg[CS_ERR_MAX];
} first;

/* The last warning line (status -1), the message when no failure was
 * noted. */
static char last_warning[CS_ERR_MAX];

/* The kind cmd_fail_err is reporting, while it prints through cmd_fail. */
static enum cs_errcode pending;

int
cmd_exit_status(enum cs_errcode code)
{
	size_t i;

	for (i = 0; i < NTABLE; i++)
		if (table[i].code == code)
			return table[i].status;
	return EXIT_FAILED;
}

/* The kind of an exit status: the first row that gives it. */
static enum cs_errcode
status_code(int status)
{
	size_t i;

	for (i = 0; i < NTABLE; i++)
		if (table[i].status == status)
			return table[i].code;
	return CS_E_FAILED;
}

void
cmd_note_failure(int status, int have_code, enum cs_errcode code,
    const char *msg)
{
	if (status < 0) {
		if (!first.set)
			snprintf(last_warning, sizeof(last_warning), "%s", msg);
		return;
	}
	if (first.set)
		return;
	first.set = 1;
	first.status = status;
	first.code = have_code ? code : pending != 0 ? pending :
	    status_code(status);
	snprintf(first.msg, sizeof(first.msg), "%s", msg);
}

int
cmd_fail_err(const struct cs_err *e)
{
	enum cs_errcode code = cs_err_code(e);
	int status = cmd_exit_status(code);

	pending = code;
	(void)cmd_fail(status, "%s", e->msg);
	pending = 0;
	return status;
}

int
cmd_fail_errs(int fallback, const struct cs_err *e)
{
	enum cs_errcode code = cs_err_code(e);
	int status = cmd_exit_status(code);

	if (status == EXIT_FAILED)
		status = fallback;
	pending = code == CS_E_FAILED || code == CS_E_IO ? status_code(status) :
	    code;
	(void)cmd_fail(status, "%s", e->msg);
	pending = 0;
	return status;
}

void
cmd_json_init(struct json *j)
{
	json_init_doc(j, stdout, CMD_JSON_SCHEMA);
}

/* {"schema": 1, "error": {"code": "locked", "message": "...",
 * "exit": 11}} */
void
cmd_json_error(int status)
{
	struct json j;

	if (!cmd_json_errors || status == EXIT_OK || json_stdout_used())
		return;
	cmd_json_init(&j);
	json_obj(&j);
	json_key(&j, "error");
	json_obj(&j);
	json_kstr(&j, "code", cs_err_name(first.set && first.status ==
	    status ? first.code : status_code(status)));
	json_kstr(&j, "message", first.set ? first.msg : last_warning);
	json_kint(&j, "exit", status);
	json_obj_end(&j);
	json_obj_end(&j);
	(void)json_end(&j);
}

void
cmd_json_signal(int sig)
{
	/* Called from a signal handler: only write(2), prepared text. */
#define SCHEMA_STR(n) #n
#define JSON_HEAD(n) "{\"schema\":" SCHEMA_STR(n) ",\"error\":"
	static const char intr[] = JSON_HEAD(CMD_JSON_SCHEMA)
	    "{\"code\":\"interrupted\","
	    "\"message\":\"interrupted (SIGINT)\",\"exit\":130}}\n";
	static const char term[] = JSON_HEAD(CMD_JSON_SCHEMA)
	    "{\"code\":\"interrupted\","
	    "\"message\":\"interrupted (SIGTERM)\",\"exit\":143}}\n";
#undef JSON_HEAD
#undef SCHEMA_STR

	if (!cmd_json_errors || json_stdout_used())
		return;
	if (sig == SIGINT)
		(void)!write(STDOUT_FILENO, intr, sizeof(intr) - 1);
	else
		(void)!write(STDOUT_FILENO, term, sizeof(term) - 1);
}
