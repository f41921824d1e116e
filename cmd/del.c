/* del.c - "cutsnap del": delete a key. */
#include <unistd.h>
#include <string.h>

#include "../net/wire.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap del -c CONF [-t SEC] [--request-id HEX] AGENT KEY\n"
    "\n"
    "Delete KEY from AGENT's data file. The command returns once the\n"
    "deletion is durable.\n"
    "\n"
    "  -c, --config CONF    the cluster config file\n"
    "  -t, --timeout SEC    wait at most SEC seconds in all (default 30)\n"
    "      --request-id HEX the request's ID, 32 hex digits (default:\n"
    "                       a random one)\n"
    "\n"
    "The request carries its ID, as add's does: a lost reply is retried\n"
    "with it and the deletion is applied once.\n"
    "\n"
    "Exit status: 0 success, 1 KEY is absent or the agent is not running,\n"
    "2 bad usage or bad config, 4 outcome unknown: no reply came; run it\n"
    "again with the --request-id it printed.\n";

int
cmd_del(int argc, char **argv)
{
	struct api_reply r = { 0, NULL, 0 };
	struct cmd_req_opts o;
	struct cfg *c = NULL;
	struct wbuf req;
	const char *key;
	int i, rc;

	wbuf_init(&req);
	if ((rc = cmd_req_opts(argc, argv, usage_text, 0, &o)) != -1)
		return rc;
	if ((rc = cmd_agent_key(argc, argv, o.conf, &c, &i, &key)) != EXIT_OK)
		return rc;
	wbuf_put_bytes(&req, key, strlen(key));
	if ((rc = cmd_request_id(c, i, W_REQ_DEL, &req, &o, 1, &r)) != EXIT_OK)
		goto out;
	if (r.code == REPLY_NOTFOUND)
		rc = cmd_fail(EXIT_FAILED, "key '%s' not found on %s", key,
		    c->agents[i].name);
out:
	api_reply_free(&r);
	wbuf_free(&req);
	cfg_free(c);
	return rc;
}
