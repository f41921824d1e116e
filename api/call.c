/* call.c - one request to an agent of a loaded config and its reply, and
 * an agent's status parsed: the calls the command (cmd/) and the tools
 * (tools/) make through libcutsnap's client, so that they are one
 * client. */
#include <stdlib.h>
#include <string.h>

#include "../proto/agstat.h"
#include "api.h"

void
api_reply_free(struct api_reply *r)
{
	if (r == NULL)
		return;
	free(r->body);
	r->body = NULL;
	r->blen = 0;
}

int
api_call(const struct cfg *c, int i, uint8_t type, const struct wbuf *req,
    struct api_reply *r, int timeout_ms, struct cs_err *e)
{
	const uint8_t *b;
	cs_conn *conn;
	int rc = -1;

	r->code = 0;
	r->body = NULL;
	r->blen = 0;
	if (req != NULL && req->oom)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if ((conn = api_open_cfg(c, i, timeout_ms, e, NULL)) == NULL)
		return -1;
	if (api_request(conn, type, req ? req->data : NULL, req ? req->len :
	    0, &r->code, &b, &r->blen) == -1) {
		cs_errf(e, "%s", cs_errmsg(conn));
		goto out;
	}
	if (r->blen > 0 && (r->body = malloc(r->blen)) == NULL) {
		r->blen = 0;
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	if (r->blen > 0)
		memcpy(r->body, b, r->blen);
	rc = 0;
out:
	cs_close(conn);
	return rc;
}

int
api_agent_stat(const struct cfg *c, int i, int timeout_ms, struct agstat *st,
    struct cs_err *e)
{
	cs_conn *conn;
	char *text = NULL;
	int pid, rc = -1;

	memset(st, 0, sizeof(*st));
	if ((conn = api_open_cfg(c, i, timeout_ms, e, NULL)) == NULL)
		return -1;
	if (cs_status(conn, &text, &pid) != CS_OK) {
		if (cs_errcode(conn) == CS_EIO)
			cs_errf(e, "%s", cs_errmsg(conn));
		else
			cs_errf(e, "agent %s: status request refused (%s)",
			    c->agents[i].name, cs_errmsg(conn));
		goto out;
	}
	if (agstat_parse(text, strlen(text), st, e) == -1) {
		cs_errctx(e, "agent %s", c->agents[i].name);
		goto out;
	}
	st->pid = pid;
	rc = 0;
out:
	free(text);
	cs_close(conn);
	return rc;
}
