/* api.h - libcutsnap's internals that the cutsnap command shares: a
 * connection opened from a loaded config, and a raw request on it, so
 * that the command and the library are one client (include/cutsnap.h is
 * the public half). */
#ifndef CUTSNAP_API_H
#define CUTSNAP_API_H

#include <stddef.h>
#include <stdint.h>
#include "../include/cutsnap.h"
#include "../lib/config.h"
#include "../lib/err.h"

/* Connect to agent i of c (its Unix socket, or TCP + TLS as "client"),
 * the connect and the protocol exchange within timeout_ms (< 0: no limit
 * but the TLS handshake's), and set that as the connection's call
 * timeout. NULL with e
 * set ("agent A is not running (...)"); *kind (may be NULL) gets the
 * error's kind, CS_EIO when nothing could be reached. */
cs_conn *api_open_cfg(const struct cfg *c, int i, int timeout_ms,
    struct cs_err *e, int *kind);

/* One request of type with payload req[0, len) and its reply: 0 with the
 * reply's code (enum reply_code) and body, borrowed until the next call
 * on c; -1 when no reply came (cs_errmsg/cs_errcode say why, CS_EIO). */
int api_request(cs_conn *c, uint8_t type, const void *req, size_t len,
    uint8_t *code, const uint8_t **body, size_t *blen);

/* An agent's answer to one request (api_call). */
struct api_reply {
	uint8_t code;		/* enum reply_code */
	uint8_t *body;		/* malloc'ed, may be NULL */
	size_t blen;
};
void api_reply_free(struct api_reply *r);

/* Connect to agent i of c, send one request (req may be NULL for an empty
 * payload) and read its reply into r within timeout_ms. 0, or -1 with e
 * set when the agent could not be reached or the exchange failed; the
 * caller frees r with api_reply_free either way. */
struct wbuf;
int api_call(const struct cfg *c, int i, uint8_t type, const struct wbuf *req,
    struct api_reply *r, int timeout_ms, struct cs_err *e);

/* STATUS, parsed into st (whatever its size; agstat_free it). 0, or -1
 * with e set when the agent does not answer or the reply is malformed. */
struct agstat;
int api_agent_stat(const struct cfg *c, int i, int timeout_ms,
    struct agstat *st, struct cs_err *e);

/* The outcome of reply code with body, as the public calls return it
 * (CS_OK, CS_NOTFOUND, ... or -1), recorded as c's last outcome: the
 * agent's message for a refusal. */
int api_outcome(cs_conn *c, uint8_t code, const uint8_t *body, size_t blen);

/* Record an error of kind on c (returns -1). */
int api_fail(cs_conn *c, int kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Checks a key's length (1 to WIRE_MAX_KEY); 0, or -1 recorded on c. */
int api_check_key(cs_conn *c, size_t kl);

/* The agent's name (from the config, or its HELLO reply). */
const char *api_agent(const cs_conn *c);

#endif
