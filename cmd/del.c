/* del.c - "cutsnap del": delete a key. */

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
	struct cmd_reply r = { 0, NULL, 0 };
	int rc;

	rc = cmd_key_request(argc, argv, usage_text, W_REQ_DEL, &r);
	cmd_reply_free(&r);
	return rc;
}
