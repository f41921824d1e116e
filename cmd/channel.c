/* channel.c - "cutsnap channel": hold or release a channel SRC->DST, for
 * tests and drills. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../net/wire.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap channel -c CONF hold|release [--reverse|--overtake] SRC DST\n"
    "\n"
    "hold: delay delivery on the channel SRC->DST; messages and markers\n"
    "queue at SRC in order. release: resume delivery. The request goes to\n"
    "SRC.\n"
    "\n"
    "  -c, --config CONF   the cluster config file\n"
    "      --reverse       (release) deliver the queue in reverse order,\n"
    "                      marker first: a non-FIFO drill\n"
    "  -o, --overtake      (release) let the first message queued after\n"
    "                      each marker overtake it: a snapshot it crosses\n"
    "                      is refused at commit (aborted, with the reason)\n"
    "\n"
    "Exit status: 0 success, 1 the agent failed or is not running, 2 bad\n"
    "usage or bad config.\n";

/* Options without a short form (cmd_getopt). */
enum { OPT_REVERSE = CMD_OPT_LONG };

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "reverse", no_argument, NULL, OPT_REVERSE },
	{ "overtake", no_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int
cmd_channel(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, 0);
	const char *conf = NULL, *verb;
	struct cfg *c = NULL;
	struct api_reply r = { 0, NULL, 0 };
	struct wbuf req;
	int ch, hold, mode = RELEASE_FIFO, src, dst, rc;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case OPT_REVERSE:
		case 'o':
			if (mode != RELEASE_FIFO)
				return cmd_usage_error("--reverse and --overtake "
				    "exclude each other");
			mode = ch == OPT_REVERSE ? RELEASE_REVERSE :
			    RELEASE_OVERTAKE;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (argc - optind != 3)
		return cmd_usage_error("expected hold|release SRC DST, got %d "
		    "argument%s", argc - optind, argc - optind == 1 ? "" : "s");
	verb = argv[optind];
	if (strcmp(verb, "hold") == 0)
		hold = 1;
	else if (strcmp(verb, "release") == 0)
		hold = 0;
	else
		return cmd_usage_error("unknown action '%s': expected hold or "
		    "release", verb);
	if (hold && mode != RELEASE_FIFO)
		return cmd_usage_error("--%s goes with release, not hold",
		    mode == RELEASE_REVERSE ? "reverse" : "overtake");
	wbuf_init(&req);
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	if ((src = cmd_find_agent(c, argv[optind + 1])) == -1 ||
	    (dst = cmd_find_agent(c, argv[optind + 2])) == -1) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (src == dst || !cfg_has_channel(c, src, dst)) {
		rc = cmd_fail(EXIT_USAGE, "the config has no channel %s->%s",
		    c->agents[src].name, c->agents[dst].name);
		goto out;
	}
	wbuf_put_str(&req, c->agents[dst].name);
	if (!hold)
		wbuf_put_u8(&req, (uint8_t)mode);
	rc = cmd_request(c, src, hold ? W_REQ_HOLD : W_REQ_RELEASE, &req, &r,
	    0);
out:
	api_reply_free(&r);
	wbuf_free(&req);
	cfg_free(c);
	return rc;
}
