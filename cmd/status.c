/* status.c - "cutsnap status": which agents answer, with their pid. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../common/json.h"
#include "cmd.h"

#define STATUS_TIMEOUT_MS 3000

static const char usage_text[] =
    "usage: cutsnap status -c CONF [--json]\n"
    "\n"
    "Print a line per agent of CONF: \"NAME  up  pid=PID  DETAIL\" when it\n"
    "answers, \"NAME  down  (REASON)\" when it does not.\n"
    "\n"
    "  -c, --config CONF   the cluster config file\n"
    "  -j, --json          a JSON array of objects {\"agent\", \"up\",\n"
    "                      \"pid\", \"detail\"}\n"
    "\n"
    "Exit status: 0 if every agent answers, 1 if one does not, 2 bad usage\n"
    "or bad config.\n";

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int
cmd_status(int argc, char **argv)
{
	const char *conf = NULL;
	struct cfg *c = NULL;
	struct cs_err e;
	struct json j;
	char text[1024];
	int ch, i, json = 0, width = 0, down = 0, rc, up;
	pid_t pid;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":c:jh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case 'j':
			json = 1;
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
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	for (i = 0; i < c->nagents; i++)
		if ((int)strlen(c->agents[i].name) > width)
			width = (int)strlen(c->agents[i].name);
	if (json) {
		json_init(&j, stdout);
		json_arr(&j);
	}
	for (i = 0; i < c->nagents; i++) {
		const char *name = c->agents[i].name;

		up = cmd_agent_status(c, i, STATUS_TIMEOUT_MS, &pid, text,
		    sizeof(text), &e) == 0;
		if (!up)
			down++;
		if (json) {
			json_obj(&j);
			json_kstr(&j, "agent", name);
			json_kbool(&j, "up", up);
			json_key(&j, "pid");
			if (up)
				json_int(&j, pid);
			else
				json_null(&j);
			json_kstr(&j, "detail", up ? text : e.msg);
			json_obj_end(&j);
		} else if (up) {
			printf("%-*s  up  pid=%d%s%s\n", width, name, (int)pid,
			    text[0] ? "  " : "", text);
		} else {
			printf("%-*s  down  (%s)\n", width, name, e.msg);
		}
	}
	rc = down ? EXIT_FAILED : EXIT_OK;
	if (json) {
		json_arr_end(&j);
		if (json_end(&j) == -1)
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	}
	cfg_free(c);
	return rc;
}
