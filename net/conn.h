/* conn.h - one connection type for every transport: a plain socket (a
 * Unix socket, or any stream fd) and TCP + TLS (xport.h), behind a table
 * of operations, so that the agent's loop, the load generator and the
 * blocking clients read and write without asking which one they hold.
 *
 * The calls never block by themselves: on a non-blocking fd they say
 * what to wait for (NETCONN_WANT_READ, NETCONN_WANT_WRITE); on a blocking
 * fd a plain read or write blocks as read(2) does. TLS can hold
 * decrypted bytes that epoll and poll do not report: a loop asks
 * netconn_pending before it sleeps.
 *
 * OpenSSL writes with write(2), so a TLS write (or close_notify) to a
 * peer that has gone raises SIGPIPE: a process that uses TLS
 * connections ignores it (the agent and the commands do, at start). */
#ifndef CUTSNAP_NET_CONN_H
#define CUTSNAP_NET_CONN_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "../lib/config.h"
#include "../lib/err.h"
#include "role.h"
#include "xport.h"

/* What read, write and sendfile return when they moved no byte: the
 * same values as xport.h's XP_*. A plain NETCONN_ERR leaves errno set. */
enum netconn_rc {
	NETCONN_OK = XP_OK,
	NETCONN_ERR = XP_ERR,
	NETCONN_WANT_READ = XP_WANT_READ,
	NETCONN_WANT_WRITE = XP_WANT_WRITE,
	NETCONN_EOF = XP_EOF,
};

/* Who is at the other end. */
struct netconn_peer {
	char cn[NAME_MAX_LEN + 8];	/* TLS: the certificate's CN; "" */
	enum cs_role role;	/* TLS: the certificate's role (role.h);
				 * CS_ROLE_NONE on a plain socket */
	int has_uid;		/* a Unix socket: uid is the peer's */
	uid_t uid;
};

struct netconn;

/* The operations of one transport (Redis's ConnectionType). */
struct netconn_type {
	const char *name;	/* "plain", "tls" */
	/* Drive the handshake: NETCONN_OK when done, NETCONN_WANT_*, or
	 * NETCONN_ERR with why set to one line. */
	int (*handshake)(struct netconn *nc, char *why, size_t whysz);
	/* > 0 bytes moved, or a netconn_rc (read: NETCONN_EOF at the end). */
	ssize_t (*read)(struct netconn *nc, void *buf, size_t n);
	ssize_t (*write)(struct netconn *nc, const void *buf, size_t n);
	/* Up to n bytes of file fd from *off, *off advanced: > 0 bytes
	 * sent, 0 when the file ended, or a netconn_rc; NULL when the
	 * transport must see the bytes (TLS encrypts them). */
	ssize_t (*sendfile)(struct netconn *nc, int fd, off_t *off,
	    size_t n);
	/* 1 when a read would return bytes that epoll cannot announce;
	 * NULL when the transport never holds any. */
	int (*pending)(struct netconn *nc);
	void (*peer)(struct netconn *nc, struct netconn_peer *p);
	/* Say goodbye (TLS: close_notify, once the handshake is done),
	 * free the transport's state; the fd is closed by netconn_close. */
	void (*close)(struct netconn *nc);
};

/* The two transports (conn_plain.c, conn_tls.c). */
extern const struct netconn_type netconn_plain_type;
extern const struct netconn_type netconn_tls_type;

struct netconn {
	const struct netconn_type *type;
	int fd;			/* owned: closed by netconn_close */
	struct xconn *x;	/* TLS: the session; NULL when plain */
};

/* A plain connection over the connected stream socket fd, which it owns
 * from now on. NULL when memory is short (fd is then left open). */
struct netconn *netconn_plain(int fd);
/* Turn the plain nc into a TLS connection over the same fd, as a server
 * (accepted) or a client, its handshake to be driven by
 * netconn_handshake. 0, or -1 when memory is short (nc unchanged). */
int netconn_start_tls(struct netconn *nc, struct xport_ctx *x, int server);
/* A TLS connection whose handshake is done: the socket fd and the
 * session t, both owned from now on. NULL when memory is short (then
 * neither is freed). */
struct netconn *netconn_tls_wrap(int fd, struct xconn *t);
/* Close the connection and its fd; NULL is accepted. */
void netconn_close(struct netconn *nc);

int netconn_fd(const struct netconn *nc);
/* "plain" or "tls". */
const char *netconn_type_name(const struct netconn *nc);
/* Does the transport encrypt (TLS)? */
int netconn_is_tls(const struct netconn *nc);
/* May the transport hold bytes that epoll cannot announce? A loop keeps
 * such connections in view and asks netconn_pending. */
int netconn_can_pend(const struct netconn *nc);
/* Does the transport send a file's bytes without this process copying
 * them (a plain socket)? */
int netconn_can_sendfile(const struct netconn *nc);

int netconn_handshake(struct netconn *nc, char *why, size_t whysz);
ssize_t netconn_read(struct netconn *nc, void *buf, size_t n);
ssize_t netconn_write(struct netconn *nc, const void *buf, size_t n);
/* NETCONN_ERR with errno EOPNOTSUPP when the transport cannot. */
ssize_t netconn_sendfile(struct netconn *nc, int fd, off_t *off, size_t n);
int netconn_pending(struct netconn *nc);
void netconn_peer(struct netconn *nc, struct netconn_peer *p);

/* Blocking use, for the commands: wait with poll(2) until nc can go on
 * after want (NETCONN_WANT_READ or NETCONN_WANT_WRITE), deadline passes
 * (cs_now_ms clock; < 0: none) or a stop signal is set (cs_stop_sig).
 * 1 ready, 0 timed out, -1 with errno set (EINTR: asked to stop). */
int netconn_wait(struct netconn *nc, int want, int64_t deadline);
/* Write all n bytes of p, waiting as netconn_wait does. 0, or -1 with
 * errno set (EPIPE at the end, EIO when TLS failed, EINTR, ETIMEDOUT). */
int netconn_write_all(struct netconn *nc, const void *p, size_t n,
    int64_t deadline);

/* The commands' connections by fd, so that the fd-based calls (wire.h,
 * client.h) find the TLS session of an fd they are given. A registered
 * connection is closed by netconn_close_fd. 0, or -1 when memory is
 * short (nc is then not registered). */
int netconn_register(struct netconn *nc);
/* The connection registered for fd (the same open socket), or NULL. */
struct netconn *netconn_of_fd(int fd);
/* Close fd, and its registered connection if it has one. */
void netconn_close_fd(int fd);
/* fd was just returned by the kernel for something new: forget any
 * connection registered for an fd of that number closed since. */
void netconn_forget_fd(int fd);

#endif
