/* conn_plain.c - the plain transport of conn.h: a stream socket read and
 * written as it is (a Unix socket, or TCP without TLS). */
#include <sys/sendfile.h>
#include <sys/socket.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"

static int
plain_handshake(struct netconn *nc, char *why, size_t whysz)
{
	(void)nc;
	(void)why;
	(void)whysz;
	return NETCONN_OK;
}

/* A failed call's errno as a netconn_rc: waiting, or an error. */
static ssize_t
plain_rc(int want)
{
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return want;
	return NETCONN_ERR;
}

static ssize_t
plain_read(struct netconn *nc, void *buf, size_t n)
{
	ssize_t k;

	/* read(2), not recv(2): the commands hand any stream fd here. */
	while ((k = read(nc->fd, buf, n)) == -1 && errno == EINTR)
		;
	if (k > 0)
		return k;
	if (k == 0)
		return NETCONN_EOF;
	return plain_rc(NETCONN_WANT_READ);
}

static ssize_t
plain_write(struct netconn *nc, const void *buf, size_t n)
{
	ssize_t k;

	/* MSG_NOSIGNAL: a peer gone is EPIPE here, not a SIGPIPE. */
	while ((k = send(nc->fd, buf, n, MSG_NOSIGNAL)) == -1 &&
	    errno == EINTR)
		;
	if (k == -1 && errno == ENOTSOCK)
		while ((k = write(nc->fd, buf, n)) == -1 && errno == EINTR)
			;
	if (k > 0)
		return k;
	if (k == 0) {
		errno = EPIPE;
		return NETCONN_ERR;
	}
	return plain_rc(NETCONN_WANT_WRITE);
}

/* From the page cache to the socket, no copy in this process. 0 when
 * the file ended before n bytes. */
static ssize_t
plain_sendfile(struct netconn *nc, int fd, off_t *off, size_t n)
{
	ssize_t k;

	while ((k = sendfile(nc->fd, fd, off, n)) == -1 && errno == EINTR)
		;
	if (k >= 0)
		return k;
	return plain_rc(NETCONN_WANT_WRITE);
}

static void
plain_peer(struct netconn *nc, struct netconn_peer *p)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	memset(p, 0, sizeof(*p));
	p->role = CS_ROLE_NONE;
	/* The peer's credentials as they were at connect (Unix sockets). */
	if (getsockopt(nc->fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == 0 &&
	    len == sizeof(uc) && uc.pid != 0) {
		p->has_uid = 1;
		p->uid = uc.uid;
	}
}

static void
plain_close(struct netconn *nc)
{
	(void)nc;
}

const struct netconn_type netconn_plain_type = {
	.name = "plain",
	.handshake = plain_handshake,
	.read = plain_read,
	.write = plain_write,
	.sendfile = plain_sendfile,
	.pending = NULL,
	.peer = plain_peer,
	.close = plain_close,
};
