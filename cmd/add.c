/* add.c - "cutsnap add": add an integer to a key's value. */
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "../net/wire.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap add -c CONF [-t SEC] [--request-id HEX] AGENT KEY DELTA\n"
    "\n"
    "Add the integer DELTA (may be negative) to the decimal int64 value of\n"
    "KEY in AGENT's data file; an absent key counts as 0. Print the new\n"
    "value. Options come before AGENT, so DELTA may start with '-'.\n"
    "\n"
    "  -c, --config CONF    the cluster config file\n"
    "  -t, --timeout SEC    wait at most SEC seconds in all (default 30)\n"
    "      --request-id HEX the request's ID, 32 hex digits (default:\n"
    "                       a random one)\n"
    "\n"
    "The request carries its ID: when the reply is lost, add sends it\n"
    "again with the same ID within the timeout, and the agent applies it\n"
    "once (it remembers the last 65536 IDs).\n"
    "\n"
    "Exit status: 0 success, 1 the value is not an integer, the sum\n"
    "overflows or the agent is not running (nothing changed), 2 bad usage\n"
    "or bad config, 4 outcome unknown: no reply came; run it again with\n"
    "the --request-id it printed.\n";

int
cmd_add(int argc, char **argv)
{
	struct cmd_req_opts o;
	const char *key;
	struct cfg *c = NULL;
	struct api_reply r = { 0, NULL, 0 };
	struct wbuf req;
	int64_t delta;
	int i, rc;

	wbuf_init(&req);
	if ((rc = cmd_req_opts(argc, argv, usage_text, 1, &o)) != -1)
		return rc;
	if (argc - optind != 3)
		return cmd_usage_error("expected AGENT KEY DELTA, got %d "
		    "argument%s", argc - optind, argc - optind == 1 ? "" : "s");
	key = argv[optind + 1];
	if (*key == '\0' || strlen(key) > WIRE_MAX_KEY)
		return cmd_usage_error("a key must be 1 to %u bytes long",
		    WIRE_MAX_KEY);
	if (cmd_parse_i64(argv[optind + 2], "amount", &delta) == -1)
		return EXIT_USAGE;
	if ((rc = cmd_load_config(o.conf, &c)) != 0)
		return rc;
	if ((i = cmd_find_agent(c, argv[optind])) == -1) {
		rc = EXIT_USAGE;
		goto out;
	}
	wbuf_put_bytes(&req, key, strlen(key));
	wbuf_put_i64(&req, delta);
	if ((rc = cmd_request_id(c, i, W_REQ_ADD, &req, &o, 0, &r)) != EXIT_OK)
		goto out;
	printf("%.*s\n", (int)r.blen, r.blen ? (const char *)r.body : "");
out:
	api_reply_free(&r);
	wbuf_free(&req);
	cfg_free(c);
	return rc;
}
