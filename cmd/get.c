/* get.c - "cutsnap get": print a key's value. */
#include <stdio.h>

#include "../net/wire.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap get -c CONF AGENT KEY\n"
    "\n"
    "Print the value of KEY in AGENT's data file, as stored, followed by a\n"
    "newline.\n"
    "\n"
    "  -c, --config CONF   the cluster config file\n"
    "\n"
    "Exit status: 0 success, 1 KEY is absent or the agent is not running,\n"
    "2 bad usage or bad config.\n";

int
cmd_get(int argc, char **argv)
{
	struct api_reply r = { 0, NULL, 0 };
	int rc;

	rc = cmd_key_request(argc, argv, usage_text, &r);
	if (rc == EXIT_OK) {
		if (r.blen > 0)
			fwrite(r.body, 1, r.blen, stdout);
		putchar('\n');
		if (fflush(stdout) == EOF || ferror(stdout))
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	}
	api_reply_free(&r);
	return rc;
}
