/* conn_tls.c - the TLS transport of conn.h, over xport.c's OpenSSL
 * session: no sendfile (the bytes must be encrypted here), and a pending
 * hook for the decrypted bytes that epoll does not see. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"

static int
tls_handshake(struct netconn *nc, char *why, size_t whysz)
{
	return xconn_handshake(nc->x, why, whysz);
}

/* A TLS failure has no errno of its own: EIO, as a failed device. */
static ssize_t
tls_rc(ssize_t k)
{
	if (k == XP_ERR)
		errno = EIO;
	return k;
}

static ssize_t
tls_read(struct netconn *nc, void *buf, size_t n)
{
	return tls_rc(xconn_read(nc->x, buf, n));
}

static ssize_t
tls_write(struct netconn *nc, const void *buf, size_t n)
{
	return tls_rc(xconn_write(nc->x, buf, n));
}

static int
tls_pending(struct netconn *nc)
{
	return xconn_pending(nc->x) > 0;
}

static void
tls_peer(struct netconn *nc, struct netconn_peer *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->cn, sizeof(p->cn), "%s", xconn_peer_cn(nc->x));
	p->role = xconn_peer_role(nc->x);
}

static void
tls_close(struct netconn *nc)
{
	/* close_notify only after a handshake (xconn_shutdown checks). */
	xconn_shutdown(nc->x);
	xconn_free(nc->x);
	nc->x = NULL;
}

const struct netconn_type netconn_tls_type = {
	.name = "tls",
	.handshake = tls_handshake,
	.read = tls_read,
	.write = tls_write,
	.sendfile = NULL,
	.pending = tls_pending,
	.peer = tls_peer,
	.close = tls_close,
};
