/* deadletter.c - "cutsnap deadletter": list the dead letters of a cluster
 * (credits an agent consumed but could not apply) and resolve one, by
 * retrying it into its key or refunding it to its sender. Also the
 * helpers status and dump use to show dead letters, and the notes verify
 * and restore print for what their replay dead-letters. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../log/datalog.h"
#include "../net/wire.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap deadletter -c CONF list [AGENT] [--all] [--json]\n"
    "       cutsnap deadletter -c CONF retry AGENT SRC SEQ\n"
    "       cutsnap deadletter -c CONF refund AGENT SRC SEQ\n"
    "\n"
    "A dead letter is a channel message SRC->AGENT whose credit AGENT\n"
    "could not apply (the key holds text, or the sum would leave int64):\n"
    "AGENT consumed it, recorded it durably and went on with the channel.\n"
    "\n"
    "  list     print the open dead letters of AGENT (default: every\n"
    "           agent), one line each: \"AGENT  dead letter SRC->AGENT\n"
    "           seq=SEQ  key=KEY  amount=N  from=KEY  (REASON)\"; --all\n"
    "           adds the resolved ones, with their state\n"
    "  retry    apply the credit of dead letter SEQ of channel SRC->AGENT to\n"
    "           its key now (after the key was fixed); print the key's new\n"
    "           value. If it still cannot be applied, nothing changes\n"
    "  refund   send the credit back to the key it was debited from, as a\n"
    "           message on the reverse channel AGENT->SRC (needs that\n"
    "           channel, not diverged); print \"dead letter SRC->AGENT seq\n"
    "           SEQ refunded as message AGENT->SRC seq N\"\n"
    "\n"
    "Resolving is one durable record that marks the dead letter resolved\n"
    "and carries the credit or the refund: it happens exactly once, and a\n"
    "second attempt fails.\n"
    "\n"
    "  -c, --config CONF   the cluster config file\n"
    "  -a, --all           list: resolved dead letters too\n"
    "  -j, --json          list: {\"agents\":[{\"agent\":A,\"dead_letters\":[\n"
    "                      {\"channel\":\"S->D\",\"src\":S,\"seq\":N,\"key\":K,\n"
    "                      \"amount\":N,\"reason\":R,\"from\":K|null,\n"
    "                      \"state\":\"open|retried|refunded\"},...],\n"
    "                      \"total\":N},...]}\n"
    "\n"
    "Exit status: 0 success, 1 an agent did not answer or the dead letter\n"
    "could not be resolved (none such, already resolved, the value still\n"
    "not an integer, no reverse channel or a diverged one), 2 bad usage or\n"
    "bad config.\n";

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "all", no_argument, NULL, 'a' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

void
cmd_dead_list_free(struct cmd_dead_list *l)
{
	size_t i;

	if (l == NULL)
		return;
	for (i = 0; i < l->n; i++) {
		free(l->v[i].key);
		free(l->v[i].from);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* Decode one entry of a W_REQ_DEAD_LIST reply into d (owning copies). */
static int
decode_entry(struct rbuf *rb, struct dl_dead *d)
{
	const uint8_t *k, *f;

	memset(d, 0, sizeof(*d));
	rbuf_str(rb, d->peer, sizeof(d->peer));
	d->seq = rbuf_u64(rb);
	d->reason = rbuf_u8(rb);
	d->resolved = rbuf_u8(rb);
	d->amount = rbuf_i64(rb);
	k = rbuf_bytes(rb, &d->klen, WIRE_MAX_KEY);
	f = rbuf_bytes(rb, &d->flen, WIRE_MAX_KEY);
	d->refund_seq = rbuf_u64(rb);
	if (rb->err)
		return -1;
	if ((d->key = malloc(d->klen + 1)) == NULL ||
	    (d->from = malloc(d->flen + 1)) == NULL)
		return -1;
	memcpy(d->key, k, d->klen);
	memcpy(d->from, f, d->flen);
	return 0;
}

int
cmd_dead_fetch(const struct cfg *c, int i, int all, int timeout_ms,
    struct cmd_dead_list *l, struct cs_err *e)
{
	struct api_reply r = { 0, NULL, 0 };
	struct wbuf req;
	struct rbuf rb;
	uint32_t n, k;
	int rc = -1;

	memset(l, 0, sizeof(*l));
	wbuf_init(&req);
	wbuf_put_u8(&req, (uint8_t)(all != 0));
	if (api_call(c, i, W_REQ_DEAD_LIST, &req, &r, timeout_ms, e) == -1)
		goto out;
	if (r.code != REPLY_OK) {
		cs_errf(e, "agent %s: dead letter list refused: %.*s",
		    c->agents[i].name, (int)(r.blen > 200 ? 200 : r.blen),
		    r.body ? (const char *)r.body : "");
		goto out;
	}
	rbuf_init(&rb, r.body, r.blen);
	l->total = rbuf_u32(&rb);
	n = rbuf_u32(&rb);
	if (rb.err || n > DEAD_LIST_MAX || n > l->total ||
	    (l->v = calloc((size_t)n + 1, sizeof(*l->v))) == NULL)
		goto bad;
	for (k = 0; k < n; k++) {
		l->n++;
		if (decode_entry(&rb, &l->v[k]) == -1)
			goto bad;
	}
	if (!rbuf_done(&rb))
		goto bad;
	rc = 0;
	goto out;
bad:
	cs_errf(e, "agent %s: malformed dead letter list", c->agents[i].name);
out:
	if (rc == -1)
		cmd_dead_list_free(l);
	api_reply_free(&r);
	wbuf_free(&req);
	return rc;
}

void
cmd_dead_json(struct json *j, const struct dl_dead *d, const char *self)
{
	char ch[2 * NAME_MAX_LEN + 4];

	json_obj(j);
	if (self != NULL) {
		snprintf(ch, sizeof(ch), "%s->%s", d->peer, self);
		json_kstr(j, "channel", ch);
	}
	json_kstr(j, "src", d->peer);
	json_kuint(j, "seq", d->seq);
	json_key(j, "key");
	json_strn(j, d->key, d->klen);
	json_kint(j, "amount", d->amount);
	json_kstr(j, "reason", dl_dead_reason_name(d->reason));
	json_key(j, "from");
	if (d->flen > 0)
		json_strn(j, d->from, d->flen);
	else
		json_null(j);
	json_kstr(j, "state", dl_resolve_name(d->resolved));
	if (d->resolved == DL_RESOLVE_REFUND)
		json_kuint(j, "refund_seq", d->refund_seq);
	json_obj_end(j);
}

void
cmd_dead_text(FILE *f, const char *indent, const struct dl_dead *d,
    const char *self)
{
	char key[80], from[80];

	cs_printable(d->key, d->klen, key, sizeof(key), 0);
	cs_printable(d->from, d->flen, from, sizeof(from), 0);
	fprintf(f, "%sdead letter %s->%s  seq=%llu  key=%s  amount=%lld  "
	    "from=%s  (%s)", indent, d->peer, self,
	    (unsigned long long)d->seq, key, (long long)d->amount,
	    d->flen > 0 ? from : "-", dl_dead_reason_name(d->reason));
	if (d->resolved == DL_RESOLVE_REFUND)
		fprintf(f, "  refunded as %s->%s seq=%llu", self, d->peer,
		    (unsigned long long)d->refund_seq);
	else if (d->resolved)
		fprintf(f, "  %s", dl_resolve_name(d->resolved));
	fputc('\n', f);
}

static int
do_list(const struct cfg *c, int only, int all, int json)
{
	struct cmd_dead_list l;
	struct cs_err e;
	struct json j;
	size_t k;
	int i, rc = EXIT_OK;

	if (json) {
		cmd_json_init(&j);
		json_obj(&j);
		json_key(&j, "agents");
		json_arr(&j);
	}
	for (i = 0; i < c->nagents; i++) {
		if (only >= 0 && i != only)
			continue;
		if (cmd_dead_fetch(c, i, all, CMD_REQ_TIMEOUT_MS, &l,
		    &e) == -1) {
			cmd_warn("%s", e.msg);
			rc = EXIT_FAILED;
			continue;
		}
		if (json) {
			json_obj(&j);
			json_kstr(&j, "agent", c->agents[i].name);
			json_kuint(&j, "total", l.total);
			json_key(&j, "dead_letters");
			json_arr(&j);
		}
		for (k = 0; k < l.n; k++) {
			if (json)
				cmd_dead_json(&j, &l.v[k], c->agents[i].name);
			else {
				printf("%s  ", c->agents[i].name);
				cmd_dead_text(stdout, "", &l.v[k],
				    c->agents[i].name);
			}
		}
		if (json) {
			json_arr_end(&j);
			json_obj_end(&j);
		} else if (l.total > l.n)
			printf("%s  ... and %llu more\n", c->agents[i].name,
			    (unsigned long long)(l.total - l.n));
		cmd_dead_list_free(&l);
	}
	if (json) {
		json_arr_end(&j);
		json_obj_end(&j);
		if (json_end(&j) == -1)
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	}
	return rc;
}

static int
do_resolve(const struct cfg *c, int how, char **args)
{
	struct api_reply r = { 0, NULL, 0 };
	struct wbuf req;
	struct rbuf rb;
	uint64_t seq, sseq;
	int ag, src, rc;

	wbuf_init(&req);
	if ((ag = cmd_find_agent(c, args[0])) == -1 ||
	    (src = cmd_find_agent(c, args[1])) == -1) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (cmd_parse_pos(args[2], "seq", INT64_MAX, &seq) == -1) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (!cfg_has_channel(c, src, ag)) {
		rc = cmd_fail(EXIT_USAGE, "the config has no channel %s->%s, "
		    "so %s has no dead letters from %s", args[1], args[0],
		    args[0], args[1]);
		goto out;
	}
	wbuf_put_str(&req, c->agents[src].name);
	wbuf_put_u64(&req, seq);
	wbuf_put_u8(&req, (uint8_t)how);
	if ((rc = cmd_request(c, ag, W_REQ_DEAD_RESOLVE, &req, &r,
	    0)) != EXIT_OK)
		goto out;
	if (how == DL_RESOLVE_RETRY) {
		/* Like add: the key's new value. */
		printf("%.*s\n", (int)r.blen, r.body ? (const char *)r.body :
		    "");
	} else {
		rbuf_init(&rb, r.body, r.blen);
		sseq = rbuf_u64(&rb);
		if (!rbuf_done(&rb)) {
			rc = cmd_fail(EXIT_FAILED, "agent %s: malformed reply",
			    c->agents[ag].name);
			goto out;
		}
		printf("dead letter %s->%s seq %llu refunded as message "
		    "%s->%s seq %llu\n", c->agents[src].name,
		    c->agents[ag].name, (unsigned long long)seq,
		    c->agents[ag].name, c->agents[src].name,
		    (unsigned long long)sseq);
	}
out:
	api_reply_free(&r);
	wbuf_free(&req);
	return rc;
}

int
cmd_deadletter(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, 0);
	const char *conf = NULL, *verb;
	struct cfg *c = NULL;
	int ch, all = 0, json = 0, only = -1, rc, nargs;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case 'a':
			all = 1;
			break;
		case 'j':
			json = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (optind >= argc)
		return cmd_usage_error("expected list, retry or refund");
	verb = argv[optind];
	nargs = argc - optind - 1;
	if (strcmp(verb, "list") == 0) {
		if (nargs > 1)
			return cmd_usage_error("unexpected argument '%s'",
			    argv[optind + 2]);
	} else if (strcmp(verb, "retry") == 0 || strcmp(verb, "refund") == 0) {
		if (nargs != 3)
			return cmd_usage_error("expected %s AGENT SRC SEQ",
			    verb);
		if (all || json)
			return cmd_usage_error("--all and --json go with list "
			    "only");
	} else
		return cmd_usage_error("unknown action '%s': expected list, "
		    "retry or refund", verb);
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	if (strcmp(verb, "list") == 0) {
		if (nargs == 1 &&
		    (only = cmd_find_agent(c, argv[optind + 1])) == -1)
			rc = EXIT_USAGE;
		else
			rc = do_list(c, only, all, json);
	} else
		rc = do_resolve(c, strcmp(verb, "retry") == 0 ?
		    DL_RESOLVE_RETRY : DL_RESOLVE_REFUND, argv + optind + 1);
	cfg_free(c);
	return rc;
}
