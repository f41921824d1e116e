/* xport.h - the TCP + mutual TLS 1.3 transport (OpenSSL libssl) of agents
 * that have an addr, for the agent's epoll loop (non-blocking) and for the
 * commands (a blocking handshake, then a relay thread).
 *
 * Identities are certificate CNs: an agent's is its name, the commands'
 * is "client". Every connection verifies the other end's certificate
 * against the cluster's CA (ca.crt in tls_dir); the names are checked by
 * the callers (xport_peer_cn). */
#ifndef CUTSNAP_XPORT_H
#define CUTSNAP_XPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../lib/config.h"
#include "../lib/err.h"
#include "role.h"
#include "xport_name.h"

#define XPORT_HS_TIMEOUT_MS	5000	/* a handshake not done by then is
					 * closed, so no client holds a slot */
#define XPORT_CMD_WAIT_MS	15000	/* a command's TCP connect and TLS
					 * handshake, together, when it
					 * gives no deadline of its own */
#define XPORT_SESSION_S	300	/* a session ticket's lifetime: a client
				 * may resume (no certificates, no
				 * signatures) for that long */
#define XPORT_TICKET_WAIT_MS	1000	/* xport_client_open waits that
					 * long at most for a ticket */

struct xport_ctx;
struct xconn;

enum xp_rc {
	XP_OK = 0,
	XP_WANT_READ = -2,
	XP_WANT_WRITE = -3,
	XP_EOF = -4,
	XP_ERR = -1,
};

/* The TLS context of identity me ("client" or an agent's name): its
 * certificate and key from c->tls_dir (me with a '/': me.crt and me.key
 * there), the CA, TLS 1.3 only, the peer's certificate required. -1
 * with e set (a missing file names it; so does a key, or a tls_dir,
 * that group or others may use: mode & 077). */
int xport_ctx_new(const struct cfg *c, const char *me,
    struct xport_ctx **out, struct cs_err *e);
void xport_ctx_free(struct xport_ctx *x);

/* Refuse path, a private key or a directory of keys (what names it in
 * the message: "private key", "tls_dir"), when group or others may use
 * it (mode & 077), as ssh does: -1 with e naming its mode and the chmod
 * to run. 0 when it is private or missing (the caller names what is
 * missing). */
int xport_check_private(const char *path, const char *what,
    struct cs_err *e);

/* A TLS connection over the connected socket fd (not owned). */
struct xconn *xconn_new(struct xport_ctx *x, int fd, int server);
void xconn_free(struct xconn *t);
/* Drive the handshake: XP_OK when done, XP_WANT_*, or XP_ERR with why
 * set to one line ("certificate has expired", "not TLS (plaintext?)"). */
int xconn_handshake(struct xconn *t, char *why, size_t whysz);
/* > 0 bytes moved, or XP_WANT_READ/XP_WANT_WRITE, XP_EOF, XP_ERR. */
ssize_t xconn_read(struct xconn *t, void *buf, size_t n);
ssize_t xconn_write(struct xconn *t, const void *buf, size_t n);
/* 1 when a read could return bytes that epoll cannot announce: TLS
 * holds decrypted bytes, or read ahead from the socket and has not yet
 * found them to be only part of a record; else 0. A partial record
 * waits for the rest of it to reach the socket, which epoll reports. */
int xconn_pending(struct xconn *t);
/* The verified peer certificate's CN ("" when none). */
const char *xconn_peer_cn(struct xconn *t);
/* The verified peer certificate's role (its OU, role.h): CS_ROLE_NONE
 * for an agent's certificate (and a role-less "client"). */
enum cs_role xconn_peer_role(struct xconn *t);
/* Best-effort close_notify. */
void xconn_shutdown(struct xconn *t);

/* A socket to addr: non-blocking when nonblock, connecting (*inprog set
 * when it is still under way). -1 with e set. */
int xport_tcp_connect(const char *addr, int nonblock, int *inprog,
    struct cs_err *e);
/* A listening TCP socket on addr (non-blocking). -1 with e set. */
int xport_tcp_listen(const char *addr, struct cs_err *e);
/* "IP:PORT" of the other end of fd, for log lines. */
void xport_peer_name(int fd, char *out, size_t sz);

/* The commands' client certificate from now on: NAME (NAME.crt and
 * NAME.key in tls_dir) or PATH/NAME; NULL or "": the environment's
 * CUTSNAP_CLIENT_CERT, else "client". */
void xport_client_cert_set(const char *name);

/* For a command with an event loop of its own: a blocking TCP + TLS
 * connection to agent i of c, as "client", checked to be agent i, in *fd
 * (non-blocking) and *t (xconn_free it, then close *fd), no relay.
 * Such a command opens many connections to each agent: the first one
 * does the full handshake and waits for the agent's session ticket, the
 * later ones resume the session (no certificate, no signature on either
 * side), until the ticket expires. The connect and the handshake end by
 * deadline (cs_now_ms clock; < 0: XPORT_CMD_WAIT_MS from now), however
 * slowly the other end sends, or once cs_stop_sig is set. 0, or -1 with
 * e set ("agent A at ADDR: TLS handshake timed out"). */
int xport_client_open(const struct cfg *c, int i, int64_t deadline, int *fd,
    struct xconn **t, struct cs_err *e);
/* For the commands: as xport_client_open, but neither offering nor
 * keeping a session (one connection per agent and command); the caller
 * reads and writes it directly (client.h registers it by its fd). */
int xport_client_connect(const struct cfg *c, int i, int64_t deadline,
    int *fd, struct xconn **t, struct cs_err *e);

#endif
