/* inbox.c - "cutsnap inbox": list an agent's inbox, the application
 * messages it received and no transaction has consumed yet. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../net/wire.h"
#include "../proto/chmsg.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap inbox -c CONF AGENT [--json]\n"
    "\n"
    "List AGENT's inbox: the application messages (sent by a transaction's\n"
    "send on a channel SRC->AGENT) that AGENT holds and no transaction has\n"
    "consumed yet, oldest first, one line each: \"SRC  seq=SEQ  id=HEX\n"
    "bytes=N\", then \"AGENT: N messages, B payload bytes\". At most 10000\n"
    "are listed; the count covers them all. Payloads are not printed: an\n"
    "application reads them with RECV (docs/PROTOCOL.md).\n"
    "\n"
    "  -c, --config CONF   the cluster config file\n"
    "  -j, --json          {\"schema\":1,\"agent\":A,\"count\":N,\"bytes\":B,\n"
    "                      \"listed\":L,\"messages\":[{\"from\":S,\"seq\":N,\n"
    "                      \"id\":HEX,\"bytes\":N},...]}\n"
    "\n"
    "Exit status: 0 success, 1 the agent is not running or refused, 2 bad\n"
    "usage or bad config.\n";

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* One listed message. */
struct entry {
	char from[NAME_MAX_LEN + 1];
	uint64_t seq;
	char id[2 * CHMSG_ID_LEN + 1];
	uint32_t bytes;
};

static void
hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Print the reply body's listing; EXIT_OK, or EXIT_FAILED when it is
 * malformed. */
static int
print_list(const char *agent, const uint8_t *body, size_t blen, int json)
{
	struct entry en;
	struct json j;
	struct rbuf rb;
	uint64_t bytes;
	uint32_t total, n, i;
	const uint8_t *id;

	rbuf_init(&rb, body, blen);
	bytes = rbuf_u64(&rb);
	total = rbuf_u32(&rb);
	n = rbuf_u32(&rb);
	if (rb.err || n > total || n > INBOX_LIST_MAX)
		return cmd_fail(EXIT_FAILED, "agent %s: malformed inbox list",
		    agent);
	if (json) {
		cmd_json_init(&j);
		json_obj(&j);
		json_kstr(&j, "agent", agent);
		json_kuint(&j, "count", total);
		json_kuint(&j, "bytes", bytes);
		json_kuint(&j, "listed", n);
		json_key(&j, "messages");
		json_arr(&j);
	}
	for (i = 0; i < n; i++) {
		rbuf_str(&rb, en.from, sizeof(en.from));
		en.seq = rbuf_u64(&rb);
		if (rb.err || rb.len - rb.off < CHMSG_ID_LEN) {
			rb.err = 1;
			break;
		}
		id = rb.p + rb.off;
		rb.off += CHMSG_ID_LEN;
		en.bytes = rbuf_u32(&rb);
		if (rb.err)
			break;
		hex(id, CHMSG_ID_LEN, en.id);
		if (!json) {
			printf("%s  seq=%" PRIu64 "  id=%s  bytes=%" PRIu32
			    "\n", en.from, en.seq, en.id, en.bytes);
			continue;
		}
		json_obj(&j);
		json_kstr(&j, "from", en.from);
		json_kuint(&j, "seq", en.seq);
		json_kstr(&j, "id", en.id);
		json_kuint(&j, "bytes", en.bytes);
		json_obj_end(&j);
	}
	if (json) {
		json_arr_end(&j);
		json_obj_end(&j);
		if (json_end(&j) == -1)
			return EXIT_FAILED;
	}
	/* A damaged reply after some lines: they went out, say so after. */
	if (!rbuf_done(&rb))
		return cmd_fail(EXIT_FAILED, "agent %s: malformed inbox list",
		    agent);
	if (!json)
		printf("%s: %" PRIu32 " message%s, %" PRIu64 " payload "
		    "bytes%s\n", agent, total, total == 1 ? "" : "s", bytes,
		    n < total ? " (the oldest listed)" : "");
	if (fflush(stdout) == EOF || ferror(stdout))
		return cmd_fail(EXIT_FAILED, "write stdout failed");
	return EXIT_OK;
}

int
cmd_inbox(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, 0);
	struct api_reply r = { 0, NULL, 0 };
	const char *conf = NULL;
	struct cfg *c = NULL;
	int ch, i, json = 0, rc;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case 'j':
			json = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (optind != argc - 1)
		return cmd_usage_error("expected one AGENT, got %d "
		    "arguments", argc - optind);
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	if ((i = cmd_find_agent(c, argv[optind])) < 0) {
		rc = EXIT_USAGE;
		goto out;
	}
	if ((rc = cmd_request(c, i, W_REQ_INBOX, NULL, &r, 0)) != EXIT_OK)
		goto out;
	rc = print_list(c->agents[i].name, r.body, r.blen, json);
out:
	api_reply_free(&r);
	cfg_free(c);
	return rc;
}
