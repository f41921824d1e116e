/* version.c - the protocol version exchange: a client's W_HELLO, and the
 * refusal, by name, of a frame in another protocol version (wire.h), so
 * that two builds that do not speak one protocol say so once instead of
 * calling each other's frames malformed. */
#include <stdio.h>
#include <string.h>

#include "../lib/log.h"
#include "agent_int.h"

/* The longest client name a HELLO may carry (only logged). */
#define HELLO_NAME_MAX 64

/* Queue one W_REPLY REPLY_VERSION carrying msg, its header in the
 * sender's version v so that the sender can read it, write it out now
 * and close c: nothing more is read from a connection whose frames we
 * cannot parse. */
static void
refuse(struct agent *a, struct conn *c, unsigned v, const char *msg)
{
	struct wbuf w;
	size_t flen;

	wbuf_init(&w);
	wbuf_put_u8(&w, REPLY_VERSION);
	wbuf_put_bytes(&w, msg, strlen(msg));
	if (!w.oom) {
		flen = WIRE_HDR_LEN + w.len;
		agent_conn_send(a, c, W_REPLY, w.data, w.len, 0);
		/* agent_conn_send wrote our version: the frame is the last
		 * one in c->out. */
		if (!c->dead && !c->out.oom && c->out.len >= flen)
			c->out.data[c->out.len - flen + 4] = (uint8_t)v;
		if (!c->dead)
			agent_conn_flush(a, c);
	}
	wbuf_free(&w);
	agent_conn_close(a, c, "protocol version mismatch");
}

/* The src of a W_PEER_HELLO in another version, for the log line, if its
 * payload still reads as {str src}; else "?". */
static void
hello_src(const uint8_t *p, size_t n, char *out, size_t outsz)
{
	struct rbuf r;
	const uint8_t *s;
	size_t len;

	rbuf_init(&r, p, n);
	s = rbuf_bytes(&r, &len, NAME_MAX_LEN);
	if (r.err || len == 0)
		len = 0;
	cs_printable(s, len, out, outsz, 0);
	if (out[0] == '\0')
		snprintf(out, outsz, "?");
}

void
agent_version_refuse(struct agent *a, struct conn *c, unsigned v)
{
	const uint8_t *f = c->in + c->inoff;
	size_t have = c->inlen - c->inoff;
	char msg[256], src[NAME_MAX_LEN + 1];
	unsigned ours = wire_version();

	if (c->role == ROLE_NEW && f[5] == W_PEER_HELLO) {
		hello_src(f + WIRE_HDR_LEN, have - WIRE_HDR_LEN, src,
		    sizeof(src));
		log_warn("channel %s>%s refused: protocol version mismatch: "
		    "agent %s speaks protocol %u, this agent %u", src, a->name,
		    src, v, ours);
		snprintf(msg, sizeof(msg), "agent %s speaks protocol %u, this "
		    "agent %u", a->name, ours, v);
	} else if (c->role == ROLE_NEW || c->role == ROLE_CLIENT) {
		log_warn("client fd %d refused: protocol version mismatch: "
		    "agent %s speaks protocol %u, this client %u", c->fd,
		    a->name, ours, v);
		snprintf(msg, sizeof(msg), "agent %s speaks protocol %u, this "
		    "client %u", a->name, ours, v);
	} else {
		/* An established channel never changes its version: the
		 * other end was replaced under it. */
		log_warn("channel %s>%s: protocol version mismatch: a frame "
		    "in protocol %u, this agent %u; closing it",
		    c->role == ROLE_PEER_IN ? a->c->agents[c->peer].name :
		    a->name, c->role == ROLE_PEER_IN ? a->name :
		    a->c->agents[c->peer].name, v, ours);
		agent_conn_close(a, c, NULL);
		return;
	}
	refuse(a, c, v, msg);
}

void
agent_hello(struct agent *a, struct conn *c, struct rbuf *r)
{
	char name[HELLO_NAME_MAX + 1], msg[256];
	const uint8_t *s;
	uint32_t proto;
	size_t len;
	struct wbuf w;

	proto = rbuf_u32(r);
	s = rbuf_bytes(r, &len, HELLO_NAME_MAX);
	if (!rbuf_done(r)) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "malformed hello request");
		return;
	}
	cs_printable(s, len, name, sizeof(name), 0);
	if (proto != wire_version()) {
		log_warn("client fd %d (%s) refused: protocol version mismatch: "
		    "agent %s speaks protocol %u, this client %u", c->fd,
		    name[0] ? name : "unnamed", a->name, wire_version(),
		    proto);
		snprintf(msg, sizeof(msg), "agent %s speaks protocol %u, this "
		    "client %u", a->name, wire_version(), proto);
		refuse(a, c, wire_version(), msg);
		return;
	}
	log_debug("client fd %d: hello from %s, protocol %u", c->fd,
	    name[0] ? name : "unnamed", proto);
	wbuf_init(&w);
	wbuf_put_u32(&w, wire_version());
	wbuf_put_bytes(&w, a->name, strlen(a->name));
	if (w.oom)
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
	else
		agent_conn_reply(a, c, REPLY_OK, w.data, w.len, 0);
	wbuf_free(&w);
}
