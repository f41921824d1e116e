/* kv.c - libcutsnap's single requests: put, get (also pipelined), del,
 * add, status and a value with its version. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/util.h"
#include "../proto/agstat.h"
#include "api_int.h"

/* Build {bytes key [, bytes value]} in w. 0, or -1 recorded. */
static int
key_req(cs_conn *c, struct wbuf *w, const void *k, size_t kl)
{
	if (api_check_key(c, kl) == -1)
		return -1;
	wbuf_put_bytes(w, k, kl);
	return 0;
}

/* Send w as a request of type and map its reply; the body, borrowed, in *body and *blen. */
static int
call(cs_conn *c, uint8_t type, struct wbuf *w, const uint8_t **body,
    size_t *blen)
{
	const uint8_t *b;
	uint8_t code;
	size_t n;
	int rc;

	if (w->oom)
		rc = api_fail(c, CS_ERROR, "out of memory");
	else if (api_request(c, type, w->data, w->len, &code, &b, &n) == -1)
		rc = -1;
	else
		rc = api_outcome(c, code, b, n);
	wbuf_free(w);
	if (rc == CS_OK && body != NULL) {
		*body = b;
		*blen = n;
	}
	return rc;
}

/* A malloc'ed, NUL-terminated copy of b[0, n) in *v. 0, or -1 recorded. */
static int
copy_out(cs_conn *c, const uint8_t *b, size_t n, void **v, size_t *vl)
{
	char *p;

	if ((p = malloc(n + 1)) == NULL)
		return api_fail(c, CS_ERROR, "out of memory");
	if (n > 0)
		memcpy(p, b, n);
	p[n] = '\0';
	*v = p;
	*vl = n;
	return 0;
}

int
cs_put(cs_conn *c, const void *k, size_t kl, const void *v, size_t vl)
{
	struct wbuf w;

	wbuf_init(&w);
	if (vl > WIRE_MAX_VALUE)
		return api_fail(c, CS_ERROR, "a value is at most 16 MiB");
	if (key_req(c, &w, k, kl) == -1) {
		wbuf_free(&w);
		return -1;
	}
	wbuf_put_bytes(&w, v, vl);
	return call(c, W_REQ_PUT, &w, NULL, NULL);
}

/* A get's reply (code already read) into *v, *vl. */
static int
get_result(cs_conn *c, uint8_t code, const uint8_t *b, size_t n, void **v,
    size_t *vl)
{
	int rc;

	*v = NULL;
	*vl = 0;
	if ((rc = api_outcome(c, code, b, n)) != CS_OK)
		return rc;
	return copy_out(c, b, n, v, vl);
}

int
cs_get(cs_conn *c, const void *k, size_t kl, void **v, size_t *vl)
{
	const uint8_t *b;
	struct wbuf w;
	uint8_t code;
	size_t n;
	int rc;

	*v = NULL;
	*vl = 0;
	wbuf_init(&w);
	if (key_req(c, &w, k, kl) == -1) {
		wbuf_free(&w);
		return -1;
	}
	rc = w.oom ? api_fail(c, CS_ERROR, "out of memory") :
	    api_request(c, W_REQ_GET, w.data, w.len, &code, &b, &n);
	wbuf_free(&w);
	if (rc == -1)
		return -1;
	return get_result(c, code, b, n, v, vl);
}

int
cs_get_async(cs_conn *c, const void *k, size_t kl)
{
	struct wbuf w;
	int rc;

	if (c->owed >= CS_PIPELINE_MAX)
		return api_fail(c, CS_ERROR, "%u requests are outstanding: "
		    "read their replies first", c->owed);
	wbuf_init(&w);
	if (key_req(c, &w, k, kl) == -1) {
		wbuf_free(&w);
		return -1;
	}
	rc = w.oom ? api_fail(c, CS_ERROR, "out of memory") :
	    api_queue(c, W_REQ_GET, w.data, w.len);
	wbuf_free(&w);
	if (rc == 0)
		api_ok(c, CS_OK);
	return rc;
}

int
cs_flush(cs_conn *c)
{
	if (c->fd == -1)
		return api_fail(c, CS_EIO, "the connection is closed after an "
		    "earlier error");
	if (api_flush(c) == -1)
		return -1;
	api_ok(c, CS_OK);
	return 0;
}

int
cs_get_reply(cs_conn *c, void **v, size_t *vl)
{
	const uint8_t *b;
	uint8_t code;
	size_t n;

	*v = NULL;
	*vl = 0;
	if (c->owed == 0)
		return api_fail(c, CS_ERROR, "no request is outstanding");
	if (api_read_reply(c, c->timeout_ms, &code, &b, &n) == -1)
		return -1;
	return get_result(c, code, b, n, v, vl);
}

int
cs_del_id(cs_conn *c, const void *k, size_t kl, const uint8_t id[CS_ID_LEN])
{
	struct wbuf w;

	wbuf_init(&w);
	if (key_req(c, &w, k, kl) == -1) {
		wbuf_free(&w);
		return -1;
	}
	if (id != NULL)
		wbuf_put_raw(&w, id, CS_ID_LEN);
	return call(c, W_REQ_DEL, &w, NULL, NULL);
}

int
cs_del(cs_conn *c, const void *k, size_t kl)
{
	return cs_del_id(c, k, kl, NULL);
}

int
cs_add_id(cs_conn *c, const void *k, size_t kl, int64_t delta,
    const uint8_t id[CS_ID_LEN], int64_t *result)
{
	const uint8_t *b = NULL;
	char num[32], *end;
	long long val;
	struct wbuf w;
	size_t n = 0;
	int rc;

	wbuf_init(&w);
	if (key_req(c, &w, k, kl) == -1) {
		wbuf_free(&w);
		return -1;
	}
	wbuf_put_i64(&w, delta);
	if (id != NULL)
		wbuf_put_raw(&w, id, CS_ID_LEN);
	if ((rc = call(c, W_REQ_ADD, &w, &b, &n)) != CS_OK)
		return rc;
	/* The body is the new value in decimal. */
	if (n == 0 || n >= sizeof(num))
		return api_fail(c, CS_ERROR, "agent %s: malformed add reply",
		    c->agent);
	memcpy(num, b, n);
	num[n] = '\0';
	errno = 0;
	val = strtoll(num, &end, 10);
	if (errno != 0 || *end != '\0' || end == num)
		return api_fail(c, CS_ERROR, "agent %s: malformed add reply",
		    c->agent);
	if (result != NULL)
		*result = val;
	return CS_OK;
}

int
cs_add(cs_conn *c, const void *k, size_t kl, int64_t delta, int64_t *result)
{
	return cs_add_id(c, k, kl, delta, NULL, result);
}

int
cs_status(cs_conn *c, char **text, int *pid)
{
	const uint8_t *b, *t;
	struct wbuf w;
	struct rbuf r;
	size_t n, tl;
	uint32_t p;
	void *v = NULL;
	int rc;

	*text = NULL;
	wbuf_init(&w);
	if ((rc = call(c, W_REQ_STATUS, &w, &b, &n)) != CS_OK)
		return rc == CS_NOTFOUND ? -1 : rc;
	rbuf_init(&r, b, n);
	p = rbuf_u32(&r);
	t = rbuf_bytes(&r, &tl, AGSTAT_MAX_TEXT);
	if (!rbuf_done(&r))
		return api_fail(c, CS_ERROR, "agent %s: malformed status reply",
		    c->agent);
	if (copy_out(c, t, tl, &v, &n) == -1)
		return -1;
	*text = v;
	if (pid != NULL)
		*pid = (int)p;
	return CS_OK;
}

int
cs_get_version(cs_conn *c, const void *k, size_t kl, void **v, size_t *vl,
    uint64_t *version)
{
	const uint8_t *b, *val;
	struct wbuf w;
	struct rbuf r;
	size_t n, vn;
	uint64_t ver;
	int rc;

	*v = NULL;
	*vl = 0;
	wbuf_init(&w);
	if (key_req(c, &w, k, kl) == -1) {
		wbuf_free(&w);
		return -1;
	}
	if ((rc = call(c, W_REQ_GETV, &w, &b, &n)) != CS_OK)
		return rc;
	rbuf_init(&r, b, n);
	ver = rbuf_u64(&r);
	val = rbuf_bytes(&r, &vn, WIRE_MAX_VALUE);
	if (!rbuf_done(&r))
		return api_fail(c, CS_ERROR, "agent %s: malformed reply to a "
		    "versioned get", c->agent);
	if (version != NULL)
		*version = ver;
	return copy_out(c, val, vn, v, vl);
}
