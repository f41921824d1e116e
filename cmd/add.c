/* add.c - "cutsnap add": add an integer to a key's value. */
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "../common/wire.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap add -c CONF AGENT KEY DELTA\n"
    "\n"
    "Add the integer DELTA (may be negative) to the decimal int64 value of\n"
    "KEY in AGENT's data file; an absent key counts as 0. Print the new\n"
    "value. Options come before AGENT, so DELTA may start with '-'.\n"
    "\n"
    "  -c, --config CONF   the cluster config file\n"
    "\n"
    "Exit status: 0 success, 1 the value is not an integer, the sum\n"
    "overflows or the agent is not running, 2 bad usage or bad config.\n";

int
cmd_add(int argc, char **argv)
{
	const char *conf, *key;
	struct cfg *c = NULL;
	struct cmd_reply r = { 0, NULL, 0 };
	struct wbuf req;
	int64_t delta;
	int i, rc;

	wbuf_init(&req);
	if ((rc = cmd_conf_opts(argc, argv, usage_text, 1, &conf)) != -1)
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
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	if ((i = cmd_find_agent(c, argv[optind])) == -1) {
		rc = EXIT_USAGE;
		goto out;
	}
	wbuf_put_bytes(&req, key, strlen(key));
	wbuf_put_i64(&req, delta);
	if ((rc = cmd_request(c, i, W_REQ_ADD, &req, &r, 0)) != EXIT_OK)
		goto out;
	printf("%.*s\n", (int)r.blen, r.blen ? (const char *)r.body : "");
out:
	cmd_reply_free(&r);
	wbuf_free(&req);
	cfg_free(c);
	return rc;
}
