/* compact.c - "cutsnap compact": rewrite agents' data files to their live
 * state now, online. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../net/wire.h"
#include "cmd.h"

#define COMPACT_TIMEOUT_S 600

static const char usage_text[] =
    "usage: cutsnap compact -c CONF [--json] [--timeout SEC] [AGENT...]\n"
    "\n"
    "Rewrite the data file of each named agent (default: every agent of\n"
    "CONF) to its live state now: values, watermarks, dead letters and\n"
    "unacknowledged sends are written to a new file while the agent keeps\n"
    "serving, which then replaces the old one atomically. Returns once each\n"
    "new file is durable; a snapshot in progress at an agent delays its\n"
    "switch until the snapshot has copied its recorded state. Prints a line\n"
    "per agent \"NAME  BEFORE -> AFTER bytes  live=BYTES  generation=N\n"
    "ms=MS\". Agents also compact on their own once their file is at least\n"
    "compact_min_size ([cluster], default 64M) and twice its size after\n"
    "the last rewrite, unless its live state is more than half of it (a\n"
    "file of new keys): they skip that rewrite, and log it, until the file\n"
    "doubles again. This command rewrites whatever the live share.\n"
    "\n"
    "  -c, --config CONF   the cluster config file\n"
    "  -j, --json          a JSON array, one object per agent: agent, ok,\n"
    "                      before, after, live, generation, ms (or error)\n"
    "  -t, --timeout SEC   how long to wait for each agent (default 600)\n"
    "\n"
    "Exit status: 0 if every file was rewritten, 1 if one was not (an agent\n"
    "not running, a failed rewrite), 2 bad usage or bad config.\n";

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "json", no_argument, NULL, 'j' },
	{ "timeout", required_argument, NULL, 't' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct result {
	uint64_t before, after, live, gen, ms;
};

/* Ask agent i to compact and wait. 0, or -1 with msg set. */
static int
compact_one(const struct cfg *c, int i, int timeout_ms, struct result *res,
    char *msg, size_t msgsz)
{
	struct api_reply r;
	struct cs_err e;
	struct rbuf rb;
	char text[CS_ERR_MAX];
	int rc = -1;

	if (api_call(c, i, W_REQ_COMPACT, NULL, &r, timeout_ms, &e) == -1) {
		snprintf(msg, msgsz, "%s", e.msg);
		return -1;
	}
	if (r.code != REPLY_OK) {
		cs_printable(r.body, r.blen, text, sizeof(text), 0);
		snprintf(msg, msgsz, "%s", text[0] ? text :
		    "compaction refused");
		goto out;
	}
	rbuf_init(&rb, r.body, r.blen);
	res->before = rbuf_u64(&rb);
	res->after = rbuf_u64(&rb);
	res->live = rbuf_u64(&rb);
	res->gen = rbuf_u64(&rb);
	res->ms = rbuf_u64(&rb);
	if (!rbuf_done(&rb)) {
		snprintf(msg, msgsz, "agent %s: malformed compact reply",
		    c->agents[i].name);
		goto out;
	}
	rc = 0;
out:
	api_reply_free(&r);
	return rc;
}

int
cmd_compact(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, 0);
	const char *conf = NULL;
	struct cfg *c = NULL;
	struct result res;
	struct json j;
	uint64_t secs = COMPACT_TIMEOUT_S;
	char msg[CS_ERR_MAX];
	int *pick = NULL, ch, i, k, n = 0, json = 0, failed = 0, ok, rc;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 't':
			if (cmd_parse_pos(optarg, "timeout", 86400, &secs) == -1)
				return EXIT_USAGE;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	if ((pick = calloc((size_t)c->nagents + 1, sizeof(*pick))) == NULL) {
		rc = cmd_fail(EXIT_FAILED, "out of memory");
		goto out;
	}
	for (k = optind; k < argc; k++) {
		if ((i = cmd_find_agent(c, argv[k])) < 0) {
			rc = EXIT_USAGE;
			goto out;
		}
		pick[i] = 1;
		n++;
	}
	if (json) {
		cmd_json_init(&j);
		json_arr(&j);
	}
	for (i = 0; i < c->nagents; i++) {
		if (n > 0 && !pick[i])
			continue;
		memset(&res, 0, sizeof(res));
		ok = compact_one(c, i, (int)secs * 1000, &res, msg,
		    sizeof(msg)) == 0;
		if (!ok) {
			failed++;
			if (!json)
				cmd_warn("%s", msg);
		} else if (!json) {
			printf("%s  %llu -> %llu bytes  live=%llu  "
			    "generation=%llu  ms=%llu\n", c->agents[i].name,
			    (unsigned long long)res.before,
			    (unsigned long long)res.after,
			    (unsigned long long)res.live,
			    (unsigned long long)res.gen,
			    (unsigned long long)res.ms);
		}
		if (!json)
			continue;
		json_obj(&j);
		json_kstr(&j, "agent", c->agents[i].name);
		json_kbool(&j, "ok", ok);
		if (!ok) {
			json_kstr(&j, "error", msg);
		} else {
			json_kuint(&j, "before", res.before);
			json_kuint(&j, "after", res.after);
			json_kuint(&j, "live", res.live);
			json_kuint(&j, "generation", res.gen);
			json_kuint(&j, "ms", res.ms);
		}
		json_obj_end(&j);
	}
	if (json) {
		json_arr_end(&j);
		if (json_end(&j) == -1 && failed == 0)
			failed = 1;
	}
	rc = failed ? EXIT_FAILED : EXIT_OK;
out:
	free(pick);
	cfg_free(c);
	return rc;
}
