/* del.c - "cutsnap del": delete a key. */
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "../common/wire.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap del -c CONF AGENT KEY\n"
    "\n"
    "Delete KEY from AGENT's data file. The command returns once the\n"
    "deletion is durable.\n"
    "\n"
    "  -c, --config CONF   the cluster config file\n"
    "\n"
    "Exit status: 0 success, 1 KEY is absent or the agent is not running,\n"
    "2 bad usage or bad config.\n";

int
cmd_del(int argc, char **argv)
{
	const char *conf, *key;
	struct cfg *c = NULL;
	struct cmd_reply r = { 0, NULL, 0 };
	struct wbuf req;
	int i, rc;

	wbuf_init(&req);
	if ((rc = cmd_conf_opts(argc, argv, usage_text, 0, &conf)) != -1)
		return rc;
	if (argc - optind != 2)
		return cmd_usage_error("expected AGENT KEY, got %d argument%s",
		    argc - optind, argc - optind == 1 ? "" : "s");
	key = argv[optind + 1];
	if (*key == '\0' || strlen(key) > WIRE_MAX_KEY)
		return cmd_usage_error("a key must be 1 to %u bytes long",
		    WIRE_MAX_KEY);
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	if ((i = cmd_find_agent(c, argv[optind])) == -1) {
		rc = EXIT_USAGE;
		goto out;
	}
	wbuf_put_bytes(&req, key, strlen(key));
	if ((rc = cmd_request(c, i, W_REQ_DEL, &req, &r, 1)) != EXIT_OK)
		goto out;
	if (r.code == REPLY_NOTFOUND)
		rc = cmd_fail(EXIT_FAILED, "key '%s' not found on %s", key,
		    c->agents[i].name);
out:
	cmd_reply_free(&r);
	wbuf_free(&req);
	cfg_free(c);
	return rc;
}
