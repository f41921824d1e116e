/* client.h - blocking request/reply to an agent, for cmd/ and the
 * coordinator. */
#ifndef CUTSNAP_CLIENT_H
#define CUTSNAP_CLIENT_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include "../lib/buf.h"
#include "../lib/config.h"
#include "../lib/err.h"

/* Connect to an agent's Unix socket. Returns an fd, or -1 with e set
 * ("agent A is not running (connect run/A.sock: ...)"). */
int client_connect(const char *sock, const char *agent, struct cs_err *e);
/* Connect to agent i of c: its Unix socket, or with an addr TCP + TLS as
 * "client" (xport_client_connect, connected and authenticated by
 * deadline, cs_now_ms clock; < 0: XPORT_CMD_WAIT_MS from now). An fd, or
 * -1 with e set. Over TLS the fd is the TCP socket and its session is
 * found by it (conn.h): read and write it with wire.h and client_call
 * only, wait for it with client_poll, close it with client_close. */
int client_connect_agent(const struct cfg *c, int i, int64_t deadline,
    struct cs_err *e);
/* Close an fd of client_connect_agent (or client_connect), with its TLS
 * session if it has one; -1 is accepted. */
void client_close(int fd);
/* 1 when TLS holds bytes of fd that poll(2) cannot see, else 0. */
int client_pending(int fd);
/* poll(2) over client fds, counting one whose TLS holds bytes as
 * readable (POLLIN) at once. */
int client_poll(struct pollfd *pfd, nfds_t n, int timeout_ms);
/* Decode a reply frame (type, payload p[0, n)): its code and its body,
 * borrowed from p. -1 with e set when it is not a well-formed W_REPLY. */
int client_reply_decode(uint8_t type, const uint8_t *p, size_t n,
    uint8_t *code, const uint8_t **body, size_t *blen, struct cs_err *e);
/* Send one request frame and wait up to timeout_ms for the W_REPLY.
 * body is malloc'ed (caller frees, may be NULL when empty). */
int client_call(int fd, uint8_t type, const void *req, size_t reqlen,
    uint8_t *code, uint8_t **body, size_t *blen, int timeout_ms,
    struct cs_err *e);

#endif
