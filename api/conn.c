/* conn.c - libcutsnap's connection: connect (config + name or a socket
 * path), the protocol exchange, buffered frame I/O, and the one mapping
 * of an agent's reply codes to the API's outcomes. */
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/fsutil.h"
#include "../lib/util.h"
#include "../net/client.h"
#include "../net/conn.h"
#include "../net/xport.h"
#include "api_int.h"

#define API_IN_MIN 65536u	/* the read buffer kept between calls */
#define HELLO_CLIENT "libcutsnap"

int
api_fail(cs_conn *c, int kind, const char *fmt, ...)
{
	va_list ap;

	c->code = kind;
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
	return -1;
}

void
api_ok(cs_conn *c, int code)
{
	c->code = code;
	c->msg[0] = '\0';
}

const char *
api_agent(const cs_conn *c)
{
	return c->agent;
}

int
api_check_key(cs_conn *c, size_t kl)
{
	if (kl == 0 || kl > WIRE_MAX_KEY)
		return api_fail(c, CS_ERROR, "a key must be 1 to %u bytes long",
		    WIRE_MAX_KEY);
	return 0;
}

/* The connection cannot be trusted to be in step any more: close it, so
 * that every later call fails at once rather than read another reply. */
static int
broken(cs_conn *c, int kind, const char *what)
{
	if (c->fd != -1)
		client_close(c->fd);
	c->fd = -1;
	c->owed = 0;
	wbuf_reset(&c->out);
	c->inoff = c->inlen = c->consumed = 0;
	if (c->agent[0] != '\0')
		return api_fail(c, kind, "agent %s: %s", c->agent, what);
	return api_fail(c, kind, "%s", what);
}

int
api_queue(cs_conn *c, uint8_t type, const void *req, size_t len)
{
	if (c->fd == -1)
		return api_fail(c, CS_EIO, "the connection is closed after an "
		    "earlier error");
	if (len > WIRE_MAX_FRAME - 2)
		return api_fail(c, CS_ERROR, "request of %zu bytes exceeds the "
		    "protocol's limit of %u", len, WIRE_MAX_FRAME - 2);
	wire_frame(&c->out, type, req, len);
	if (c->out.oom) {
		wbuf_reset(&c->out);
		c->out.oom = 0;
		return api_fail(c, CS_ERROR, "out of memory");
	}
	c->owed++;
	return 0;
}

int
api_flush(cs_conn *c)
{
	struct netconn *nc;
	struct cs_err e;

	/* Over TLS (an agent with an addr) the registered connection
	 * writes: the bytes on the socket are records, not frames. */
	if ((nc = netconn_of_fd(c->fd)) != NULL) {
		if (netconn_write_all(nc, c->out.data, c->out.len, -1) == -1) {
			cs_errno(&e, "send");
			return broken(c, CS_EIO, e.msg);
		}
		wbuf_reset(&c->out);
		return 0;
	}
	if (fs_send_all(c->fd, c->out.data, c->out.len) == -1) {
		cs_errno(&e, "send");
		return broken(c, CS_EIO, e.msg);
	}
	wbuf_reset(&c->out);
	return 0;
}

/* fill() over TLS: what the connection decrypts, waiting with its own
 * wait (TLS may hold bytes poll cannot see, or need to write to read). */
static int
fill_tls(cs_conn *c, struct netconn *nc, int64_t deadline)
{
	struct cs_err e;
	ssize_t k;
	int r;

	for (;;) {
		k = netconn_read(nc, c->in + c->inlen, c->incap - c->inlen);
		if (k > 0) {
			c->inlen += (size_t)k;
			return 0;
		}
		if (k == NETCONN_EOF || k == NETCONN_ERR)
			return broken(c, CS_EIO, "connection closed by peer");
		r = netconn_wait(nc, (int)k, deadline);
		if (r == 0)
			return broken(c, CS_EIO, "timed out waiting for a "
			    "reply");
		if (r == -1 && errno == EINTR)
			return broken(c, CS_EIO, "interrupted");
		if (r == -1) {
			cs_errno(&e, "poll");
			return broken(c, CS_EIO, e.msg);
		}
	}
}

/* Read what the socket has (at least one byte) before the deadline. */
static int
fill(cs_conn *c, int64_t deadline)
{
	struct netconn *nc;
	struct pollfd pfd;
	struct cs_err e;
	size_t ncap;
	int64_t left;
	uint8_t *p;
	ssize_t r;
	int rc;

	if (c->inoff > 0 && (c->inoff == c->inlen || c->incap - c->inlen <
	    API_IN_MIN / 4)) {
		memmove(c->in, c->in + c->inoff, c->inlen - c->inoff);
		c->inlen -= c->inoff;
		c->inoff = 0;
	}
	if (c->incap - c->inlen < 4096) {
		ncap = c->incap ? c->incap * 2 : API_IN_MIN;
		if ((p = realloc(c->in, ncap)) == NULL)
			return broken(c, CS_EIO, "out of memory reading a "
			    "reply");
		c->in = p;
		c->incap = ncap;
	}
	if ((nc = netconn_of_fd(c->fd)) != NULL)
		return fill_tls(c, nc, deadline);
	for (;;) {
		left = -1;
		if (deadline >= 0 && (left = deadline - cs_now_ms()) < 0)
			left = 0;
		pfd.fd = c->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		rc = poll(&pfd, 1, (int)left);
		if (rc == -1 && errno == EINTR)
			continue;
		if (rc == -1) {
			cs_errno(&e, "poll");
			return broken(c, CS_EIO, e.msg);
		}
		if (rc == 0)
			return broken(c, CS_EIO, "timed out waiting for a "
			    "reply");
		r = read(c->fd, c->in + c->inlen, c->incap - c->inlen);
		if (r == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r == -1) {
			cs_errno(&e, "read");
			return broken(c, CS_EIO, e.msg);
		}
		if (r == 0)
			return broken(c, CS_EIO, "connection closed by peer");
		c->inlen += (size_t)r;
		return 0;
	}
}

/* A reply in another protocol version: the agent's refusal (REPLY_VERSION
 * written in our version) is handled by the caller; anything else in
 * another version is named here. */
static int
other_version(cs_conn *c)
{
	int v = wire_other_version(c->in + c->inoff, c->inlen - c->inoff);
	char m[160];

	if (v < 0)
		return 0;
	snprintf(m, sizeof(m), "agent speaks protocol %d, this client %u", v,
	    wire_version());
	return broken(c, CS_EVERSION, m);
}

int
api_read_reply(cs_conn *c, int timeout_ms, uint8_t *code,
    const uint8_t **body, size_t *blen)
{
	int64_t deadline = timeout_ms < 0 ? -1 : cs_now_ms() + timeout_ms;
	const uint8_t *p;
	size_t plen, used;
	struct cs_err e;
	uint8_t type;
	int r;

	if (c->fd == -1)
		return api_fail(c, CS_EIO, "the connection is closed after an "
		    "earlier error");
	if (c->out.len > 0 && api_flush(c) == -1)
		return -1;
	c->inoff += c->consumed;
	c->consumed = 0;
	for (;;) {
		r = wire_parse(c->in + c->inoff, c->inlen - c->inoff, &type,
		    &p, &plen, &used, &e);
		if (r == 1)
			break;
		if (r == -1) {
			if (other_version(c) == -1)
				return -1;
			return broken(c, CS_EIO, e.msg);
		}
		if (fill(c, deadline) == -1)
			return -1;
	}
	c->consumed = used;
	if (c->owed > 0)
		c->owed--;
	if (client_reply_decode(type, p, plen, code, body, blen, &e) == -1)
		return broken(c, CS_EIO, e.msg);
	return 0;
}

int
api_request(cs_conn *c, uint8_t type, const void *req, size_t len,
    uint8_t *code, const uint8_t **body, size_t *blen)
{
	if (c->owed > 0)
		return api_fail(c, CS_ERROR, "%u pipelined replies are still "
		    "to be read (cs_get_reply)", c->owed);
	if (api_queue(c, type, req, len) == -1)
		return -1;
	return api_read_reply(c, c->timeout_ms, code, body, blen);
}

int
api_outcome(cs_conn *c, uint8_t code, const uint8_t *body, size_t blen)
{
	char m[CS_ERR_MAX];

	cs_printable(body, blen, m, sizeof(m), 0);
	switch (code) {
	case REPLY_OK:
		api_ok(c, CS_OK);
		return CS_OK;
	case REPLY_NOTFOUND:
		api_fail(c, CS_NOTFOUND, "%s", m[0] ? m : "not found");
		return CS_NOTFOUND;
	case REPLY_FAIL:
	case REPLY_BADREQ:
		if (m[0] == '\0')
			return api_fail(c, CS_ERROR, "agent %s: request failed",
			    c->agent);
		return api_fail(c, CS_ERROR, "%s", m);
	case REPLY_DENIED:
		return api_fail(c, CS_EDENIED, "%s", m);
	case REPLY_VERSION:
		/* The agent closes the connection after it. */
		broken(c, CS_EVERSION, "");
		return api_fail(c, CS_EVERSION, "%s", m);
	default:
		return api_fail(c, CS_ERROR, "agent %s: unexpected reply code "
		    "%u", c->agent, code);
	}
}

/* The protocol exchange: W_HELLO, and the agent's name from its reply.
 * An agent too old to know HELLO closes the connection: said so. */
static int
hello(cs_conn *c)
{
	const uint8_t *b, *name;
	struct wbuf w;
	struct rbuf r;
	uint8_t code;
	size_t blen, nl;
	int rc;

	wbuf_init(&w);
	wbuf_put_u32(&w, wire_version());
	wbuf_put_bytes(&w, HELLO_CLIENT, strlen(HELLO_CLIENT));
	rc = w.oom ? api_fail(c, CS_ERROR, "out of memory") :
	    api_request(c, W_HELLO, w.data, w.len, &code, &b, &blen);
	wbuf_free(&w);
	if (rc == -1)
		return -1;
	if (code != REPLY_OK) {
		if (api_outcome(c, code, b, blen) >= 0)
			api_fail(c, CS_ERROR, "agent %s: unexpected answer to "
			    "the protocol exchange", c->agent);
		return -1;
	}
	rbuf_init(&r, b, blen);
	(void)rbuf_u32(&r);
	name = rbuf_bytes(&r, &nl, NAME_MAX_LEN);
	if (!rbuf_done(&r))
		return broken(c, CS_EIO, "malformed hello reply");
	if (c->agent[0] == '\0')
		cs_printable(name, nl, c->agent, sizeof(c->agent), 0);
	api_ok(c, CS_OK);
	return 0;
}

static cs_conn *
conn_new(int fd, const char *agent, int timeout_ms)
{
	cs_conn *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->fd = fd;
	c->timeout_ms = timeout_ms;
	wbuf_init(&c->out);
	snprintf(c->agent, sizeof(c->agent), "%s", agent ? agent : "");
	return c;
}

/* Wrap fd, exchange versions. NULL with e set (fd closed). */
static cs_conn *
open_fd(int fd, const char *agent, int timeout_ms, struct cs_err *e,
    int *kind)
{
	cs_conn *c;

	if ((c = conn_new(fd, agent, timeout_ms)) == NULL) {
		client_close(fd);
		if (kind != NULL)
			*kind = CS_ERROR;
		cs_errc(e, CS_E_NOMEM, "out of memory");
		return NULL;
	}
	if (hello(c) == -1) {
		if (kind != NULL)
			*kind = c->code;
		cs_errf(e, "%s", c->msg);
		cs_close(c);
		return NULL;
	}
	return c;
}

cs_conn *
api_open_cfg(const struct cfg *c, int i, int timeout_ms, struct cs_err *e,
    int *kind)
{
	int fd;

	if (kind != NULL)
		*kind = CS_EIO;
	/* The handshake within the call's time, and never longer than a
	 * command without a deadline of its own waits for one. */
	if ((fd = client_connect_agent(c, i, cs_now_ms() +
	    (timeout_ms >= 0 && timeout_ms < XPORT_CMD_WAIT_MS ? timeout_ms :
	    XPORT_CMD_WAIT_MS), e)) == -1)
		return NULL;
	return open_fd(fd, c->agents[i].name, timeout_ms, e, kind);
}

/* Copy e's message into the caller's err[errlen]. */
static void
give_err(const struct cs_err *e, char *err, size_t errlen)
{
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "%s", e->msg);
}

cs_conn *
cs_connect(const char *config, const char *agent, char *err, size_t errlen)
{
	struct cfg *c = NULL;
	struct cs_err e;
	cs_conn *conn = NULL;
	int i;

	if (config == NULL || agent == NULL) {
		cs_errf(&e, "cs_connect: a config and an agent name are "
		    "needed");
		goto out;
	}
	if (cfg_load(config, &c, &e) == -1) {
		c = NULL;
		goto out;
	}
	if ((i = cfg_find(c, agent)) < 0) {
		cs_errf(&e, "unknown agent %s in %s", agent, config);
		goto out;
	}
	conn = api_open_cfg(c, i, API_TIMEOUT_MS, &e, NULL);
out:
	if (conn == NULL)
		give_err(&e, err, errlen);
	cfg_free(c);
	return conn;
}

cs_conn *
cs_connect_path(const char *path, char *err, size_t errlen)
{
	struct cs_err e;
	cs_conn *conn = NULL;
	int fd;

	if (path == NULL) {
		cs_errf(&e, "cs_connect_path: a socket path is needed");
		goto out;
	}
	if ((fd = client_connect(path, path, &e)) == -1)
		goto out;
	conn = open_fd(fd, NULL, API_TIMEOUT_MS, &e, NULL);
out:
	if (conn == NULL)
		give_err(&e, err, errlen);
	return conn;
}

void
cs_close(cs_conn *c)
{
	if (c == NULL)
		return;
	if (c->fd != -1)
		client_close(c->fd);
	wbuf_free(&c->out);
	free(c->in);
	free(c);
}

const char *
cs_errmsg(const cs_conn *c)
{
	return c == NULL ? "no connection" : c->msg;
}

int
cs_errcode(const cs_conn *c)
{
	return c == NULL ? CS_ERROR : c->code;
}

void
cs_set_timeout(cs_conn *c, int timeout_ms)
{
	if (c != NULL)
		c->timeout_ms = timeout_ms < 0 ? -1 : timeout_ms;
}

const char *
cs_version(void)
{
	return "0.1.0";
}

int
cs_protocol(void)
{
	return (int)wire_version();
}
