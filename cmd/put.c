/* put.c - "cutsnap put": set a key on an agent. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../api/api.h"
#include "../net/wire.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap put -c CONF AGENT KEY VALUE|-\n"
    "\n"
    "Set KEY to VALUE in AGENT's data file. With VALUE \"-\" the value is\n"
    "read from stdin (up to 16 MiB, any bytes). Options come before AGENT,\n"
    "so VALUE may start with '-'. The command returns once the value is\n"
    "durable.\n"
    "\n"
    "  -c, --config CONF   the cluster config file\n"
    "\n"
    "Exit status: 0 success, 1 the agent failed or is not running, 2 bad\n"
    "usage, bad config or a value over 16 MiB.\n";

/* Read all of stdin, at most WIRE_MAX_VALUE bytes. 0, -1 (printed). */
static int
read_stdin(uint8_t **out, size_t *len)
{
	size_t cap = 64 * 1024, n = 0;
	uint8_t *buf, *nb;
	ssize_t r;

	if ((buf = malloc(cap)) == NULL)
		goto oom;
	for (;;) {
		if (n == cap) {
			if (cap > WIRE_MAX_VALUE) {
				free(buf);
				cmd_warn("value on stdin is larger than "
				    "16 MiB");
				return -1;
			}
			cap *= 2;
			if ((nb = realloc(buf, cap + 1)) == NULL)
				goto oom;
			buf = nb;
		}
		r = read(STDIN_FILENO, buf + n, cap - n);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			cmd_warn("read stdin: %s", strerror(errno));
			free(buf);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > WIRE_MAX_VALUE) {
		free(buf);
		cmd_warn("value on stdin is larger than 16 MiB");
		return -1;
	}
	*out = buf;
	*len = n;
	return 0;
oom:
	free(buf);
	cmd_warn("out of memory reading stdin");
	return -1;
}

int
cmd_put(int argc, char **argv)
{
	const char *conf, *key, *value;
	uint8_t *in = NULL;
	size_t vlen;
	struct cfg *c = NULL;
	struct cs_err e;
	cs_conn *conn = NULL;
	int i, rc;

	if ((rc = cmd_conf_opts(argc, argv, usage_text, 1, &conf)) != -1)
		return rc;
	if (argc - optind != 3)
		return cmd_usage_error("expected AGENT KEY VALUE, got %d "
		    "argument%s", argc - optind, argc - optind == 1 ? "" : "s");
	key = argv[optind + 1];
	value = argv[optind + 2];
	if (*key == '\0' || strlen(key) > WIRE_MAX_KEY)
		return cmd_usage_error("a key must be 1 to %u bytes long",
		    WIRE_MAX_KEY);
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	if ((i = cmd_find_agent(c, argv[optind])) == -1) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (strcmp(value, "-") == 0) {
		if (read_stdin(&in, &vlen) == -1) {
			rc = EXIT_USAGE;
			goto out;
		}
		value = (const char *)in;
	} else {
		vlen = strlen(value);
		if (vlen > WIRE_MAX_VALUE) {
			rc = cmd_usage_error("a value is at most 16 MiB");
			goto out;
		}
	}
	if ((conn = api_open_cfg(c, i, CMD_REQ_TIMEOUT_MS, &e, NULL)) ==
	    NULL) {
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
		goto out;
	}
	rc = EXIT_OK;
	if (cs_put(conn, key, strlen(key), value, vlen) != CS_OK)
		rc = cmd_fail(EXIT_FAILED, "%s", cs_errmsg(conn));
out:
	cs_close(conn);
	free(in);
	cfg_free(c);
	return rc;
}
