/* transfer.c - "cutsnap transfer": debit at SRC, credit sent to DST as a
 * channel message. */
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "../net/wire.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap transfer -c CONF [-t SEC] [--request-id HEX]\n"
    "                        SRC:KEY DST:KEY N\n"
    "\n"
    "Move the positive integer N from KEY at agent SRC to KEY at agent DST:\n"
    "SRC debits its key and sends \"add N\" on the channel SRC->DST in one\n"
    "durable step; DST applies it when it arrives. Print SRC's new value.\n"
    "\n"
    "  -c, --config CONF    the cluster config file\n"
    "  -t, --timeout SEC    wait at most SEC seconds in all (default 30)\n"
    "      --request-id HEX the request's ID, 32 hex digits (default:\n"
    "                       a random one)\n"
    "\n"
    "A transfer over a channel marked diverged in status (its two ends come\n"
    "from different histories) fails at once and changes nothing.\n"
    "\n"
    "The request carries its ID: when the reply is lost, transfer sends it\n"
    "again with the same ID within the timeout, and SRC applies it once\n"
    "(it remembers the last 65536 IDs).\n"
    "\n"
    "Exit status: 0 success, 1 SRC's value would go below 0 or the channel\n"
    "is diverged (nothing is changed) or the agent failed, 2 bad usage or\n"
    "bad config, 4 outcome unknown: no reply came; run it again with the\n"
    "--request-id it printed.\n";

/* Split "AGENT:KEY" at its first ':' into agent index and key. */
static int
parse_endpoint(const struct cfg *c, const char *arg, const char *what,
    int *agent, const char **key)
{
	char name[NAME_MAX_LEN + 1];
	const char *colon = strchr(arg, ':');
	size_t n;

	if (colon == NULL || colon == arg || colon[1] == '\0')
		return cmd_usage_error("invalid %s '%s': expected AGENT:KEY",
		    what, arg);
	n = (size_t)(colon - arg);
	if (n > NAME_MAX_LEN) {
		cmd_warn("unknown agent %.*s", (int)n, arg);
		return EXIT_USAGE;
	}
	memcpy(name, arg, n);
	name[n] = '\0';
	if ((*agent = cmd_find_agent(c, name)) == -1)
		return EXIT_USAGE;
	*key = colon + 1;
	if (strlen(*key) > WIRE_MAX_KEY)
		return cmd_usage_error("a key must be 1 to %u bytes long",
		    WIRE_MAX_KEY);
	return 0;
}

int
cmd_transfer(int argc, char **argv)
{
	struct cmd_req_opts o;
	const char *skey, *dkey;
	struct cfg *c = NULL;
	struct api_reply r = { 0, NULL, 0 };
	struct wbuf req;
	uint64_t n;
	int src, dst, rc;

	wbuf_init(&req);
	if ((rc = cmd_req_opts(argc, argv, usage_text, 1, &o)) != -1)
		return rc;
	if (argc - optind != 3)
		return cmd_usage_error("expected SRC:KEY DST:KEY N, got %d "
		    "argument%s", argc - optind, argc - optind == 1 ? "" : "s");
	if (cmd_parse_pos(argv[optind + 2], "amount", INT64_MAX, &n) == -1)
		return EXIT_USAGE;
	if ((rc = cmd_load_config(o.conf, &c)) != 0)
		return rc;
	if ((rc = parse_endpoint(c, argv[optind], "source", &src,
	    &skey)) != 0 || (rc = parse_endpoint(c, argv[optind + 1],
	    "destination", &dst, &dkey)) != 0)
		goto out;
	if (src == dst) {
		rc = cmd_usage_error("source and destination are both agent "
		    "%s; a transfer goes from one agent to another",
		    c->agents[src].name);
		goto out;
	}
	if (!cfg_has_channel(c, src, dst)) {
		rc = cmd_fail(EXIT_USAGE, "the config has no channel %s->%s; "
		    "add %s>%s to [cluster] channels", c->agents[src].name,
		    c->agents[dst].name, c->agents[src].name,
		    c->agents[dst].name);
		goto out;
	}
	wbuf_put_bytes(&req, skey, strlen(skey));
	wbuf_put_str(&req, c->agents[dst].name);
	wbuf_put_bytes(&req, dkey, strlen(dkey));
	wbuf_put_i64(&req, (int64_t)n);
	if ((rc = cmd_request_id(c, src, W_REQ_TRANSFER, &req, &o,
	    0, &r)) != EXIT_OK)
		goto out;
	if (r.blen > 0)
		printf("%.*s\n", (int)r.blen, (const char *)r.body);
out:
	api_reply_free(&r);
	wbuf_free(&req);
	cfg_free(c);
	return rc;
}
