/* reqid.c - the client request id of add, del and transfer: its options,
 * and the request sent again with the same id when its reply is lost, so
 * that the agent applies it once (reqtab.h). */
#include <sys/random.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../api/api.h"
#include "../net/client.h"
#include "../net/wire.h"
#include "cmd.h"

/* A wait before connecting again to an agent that did not answer. */
#define RETRY_PAUSE_MS 200

static void
id_hex(const uint8_t id[REQ_ID_LEN], char out[2 * REQ_ID_LEN + 1])
{
	size_t i;

	for (i = 0; i < REQ_ID_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", id[i]);
}

static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* 32 hex digits into id. 0, or EXIT_USAGE after printing why. */
static int
parse_id(const char *s, uint8_t id[REQ_ID_LEN])
{
	size_t i;
	int hi, lo;

	if (strlen(s) != 2 * REQ_ID_LEN)
		goto bad;
	for (i = 0; i < REQ_ID_LEN; i++) {
		if ((hi = hexval(s[2 * i])) == -1 ||
		    (lo = hexval(s[2 * i + 1])) == -1)
			goto bad;
		id[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
bad:
	return cmd_usage_error("invalid request ID '%s': expected %d hex "
	    "digits", s, 2 * REQ_ID_LEN);
}

/* --request-id has no short form. */
enum { OPT_REQUEST_ID = CMD_OPT_LONG };

int
cmd_req_opts(int argc, char **argv, const char *usage, int in_order,
    struct cmd_req_opts *o)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "request-id", required_argument, NULL, OPT_REQUEST_ID },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cmd_getopt g = CMD_GETOPT(opts, usage,
	    in_order ? CMD_OPT_IN_ORDER : 0);
	uint64_t secs;
	int ch, have_id = 0;

	memset(o, 0, sizeof(*o));
	o->timeout_ms = CMD_REQ_TIMEOUT_MS;
	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			o->conf = optarg;
			break;
		case 't':
			if (cmd_parse_pos(optarg, "timeout", 86400, &secs) == -1)
				return EXIT_USAGE;
			o->timeout_ms = (int)secs * 1000;
			break;
		case OPT_REQUEST_ID:
			if (parse_id(optarg, o->id) != 0)
				return EXIT_USAGE;
			have_id = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (!have_id && getrandom(o->id, REQ_ID_LEN, 0) != REQ_ID_LEN)
		return cmd_fail(EXIT_FAILED, "getrandom failed");
	return -1;
}

/* One exchange on a new connection: 1 a reply came (in r), 0 the
 * request may have gone out but no reply came (why in e), -1 the
 * connection could not be made (nothing was sent). */
static int
exchange(const struct cfg *c, int i, uint8_t type, const struct wbuf *req,
    struct api_reply *r, int wait_ms, struct cs_err *e)
{
	const uint8_t *b;
	cs_conn *conn;
	int rc = 0;

	api_reply_free(r);
	if ((conn = api_open_cfg(c, i, wait_ms, e, NULL)) == NULL)
		return -1;
	if (api_request(conn, type, req->data, req->len, &r->code, &b,
	    &r->blen) == -1) {
		cs_errf(e, "%s", cs_errmsg(conn));
		goto out;
	}
	rc = 1;
	if (r->blen > 0 && (r->body = malloc(r->blen)) != NULL)
		memcpy(r->body, b, r->blen);
	else
		r->blen = 0;
out:
	cs_close(conn);
	return rc;
}

int
cmd_request_id(const struct cfg *c, int i, uint8_t type, struct wbuf *req,
    const struct cmd_req_opts *o, int notfound_ok, struct api_reply *r)
{
	char hex[2 * REQ_ID_LEN + 1];
	int64_t deadline = cs_now_ms() + o->timeout_ms, left;
	struct cs_err e, lost;
	int got;

	wbuf_put_raw(req, o->id, REQ_ID_LEN);
	if (req->oom)
		return cmd_fail(EXIT_FAILED, "out of memory");
	/* The first wait takes half the time, leaving the rest to a retry. */
	got = exchange(c, i, type, req, r, o->timeout_ms / 2, &e);
	if (got == -1)
		return cmd_fail(EXIT_FAILED, "%s", e.msg);
	lost = e;
	while (!got && (left = deadline - cs_now_ms()) > 0) {
		if ((got = exchange(c, i, type, req, r, (int)left, &e)) == 1)
			break;
		if (got == 0)
			lost = e;
		got = 0;	/* not answered, or still down: unknown */
		if ((left = deadline - cs_now_ms()) > 0)
			cs_sleep_ms(left < RETRY_PAUSE_MS ? (int)left :
			    RETRY_PAUSE_MS);
	}
	if (got)
		return cmd_reply_status(c, i, r, notfound_ok);
	id_hex(o->id, hex);
	return cmd_fail(EXIT_UNKNOWN, "outcome unknown: request ID %s may or "
	    "may not have been applied (%s); retry with --request-id %s",
	    hex, lost.msg, hex);
}
