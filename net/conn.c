/* conn.c - what every transport of conn.h shares: making and closing a
 * connection, the calls through its type's table, the blocking waits of
 * the commands, and the commands' fd-to-connection table. */
#include <sys/stat.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/util.h"
#include "conn.h"

/* A command's blocking waits poll in slices this long, so that a stop
 * signal handled by another thread ends them too. */
#define WAIT_SLICE_MS	100

struct netconn *
netconn_plain(int fd)
{
	struct netconn *nc;

	if ((nc = calloc(1, sizeof(*nc))) == NULL)
		return NULL;
	nc->type = &netconn_plain_type;
	nc->fd = fd;
	return nc;
}

int
netconn_start_tls(struct netconn *nc, struct xport_ctx *x, int server)
{
	struct xconn *t;

	if ((t = xconn_new(x, nc->fd, server)) == NULL)
		return -1;
	nc->type->close(nc);
	nc->x = t;
	nc->type = &netconn_tls_type;
	return 0;
}

struct netconn *
netconn_tls_wrap(int fd, struct xconn *t)
{
	struct netconn *nc;

	if ((nc = netconn_plain(fd)) == NULL)
		return NULL;
	nc->x = t;
	nc->type = &netconn_tls_type;
	return nc;
}

void
netconn_close(struct netconn *nc)
{
	if (nc == NULL)
		return;
	nc->type->close(nc);
	if (nc->fd != -1)
		close(nc->fd);
	free(nc);
}

int
netconn_fd(const struct netconn *nc)
{
	return nc->fd;
}

const char *
netconn_type_name(const struct netconn *nc)
{
	return nc->type->name;
}

int
netconn_is_tls(const struct netconn *nc)
{
	return nc->type == &netconn_tls_type;
}

int
netconn_can_pend(const struct netconn *nc)
{
	return nc->type->pending != NULL;
}

int
netconn_can_sendfile(const struct netconn *nc)
{
	return nc->type->sendfile != NULL;
}

int
netconn_handshake(struct netconn *nc, char *why, size_t whysz)
{
	return nc->type->handshake(nc, why, whysz);
}

ssize_t
netconn_read(struct netconn *nc, void *buf, size_t n)
{
	return nc->type->read(nc, buf, n);
}

ssize_t
netconn_write(struct netconn *nc, const void *buf, size_t n)
{
	return nc->type->write(nc, buf, n);
}

ssize_t
netconn_sendfile(struct netconn *nc, int fd, off_t *off, size_t n)
{
	if (nc->type->sendfile == NULL) {
		errno = EOPNOTSUPP;
		return NETCONN_ERR;
	}
	return nc->type->sendfile(nc, fd, off, n);
}

int
netconn_pending(struct netconn *nc)
{
	return nc->type->pending != NULL ? nc->type->pending(nc) : 0;
}

void
netconn_peer(struct netconn *nc, struct netconn_peer *p)
{
	nc->type->peer(nc, p);
}

int
netconn_wait(struct netconn *nc, int want, int64_t deadline)
{
	struct pollfd pf;
	int64_t left;
	int r, slice;

	for (;;) {
		if (cs_stop_sig) {
			errno = EINTR;
			return -1;
		}
		slice = WAIT_SLICE_MS;
		if (deadline >= 0) {
			if ((left = deadline - cs_now_ms()) <= 0)
				return 0;
			if (left < slice)
				slice = (int)left;
		}
		pf.fd = nc->fd;
		pf.events = want == NETCONN_WANT_WRITE ? POLLOUT : POLLIN;
		pf.revents = 0;
		r = poll(&pf, 1, slice);
		if (r > 0)
			return 1;
		if (r == -1 && errno != EINTR)
			return -1;
	}
}

int
netconn_write_all(struct netconn *nc, const void *p, size_t n,
    int64_t deadline)
{
	const uint8_t *q = p;
	ssize_t k;
	int r;

	while (n > 0) {
		k = netconn_write(nc, q, n);
		if (k > 0) {
			q += k;
			n -= (size_t)k;
			continue;
		}
		if (k == NETCONN_ERR)
			return -1;
		if (k == NETCONN_EOF) {
			errno = EPIPE;
			return -1;
		}
		if ((r = netconn_wait(nc, (int)k, deadline)) == 0)
			errno = ETIMEDOUT;
		if (r <= 0)
			return -1;
	}
	return 0;
}

/* The commands' registered connections. A caller that closes an fd with
 * close(2) leaves its entry behind: the socket's identity (device and
 * inode) tells such an entry from the fd's new owner. */
struct reg {
	struct netconn *nc;
	dev_t dev;
	ino_t ino;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct reg *regs;
static size_t nregs, regcap;

/* The index of fd's entry, or nregs. Under reg_mu. */
static size_t
reg_find(int fd)
{
	size_t i;

	for (i = 0; i < nregs; i++)
		if (regs[i].nc->fd == fd)
			break;
	return i;
}

/* Drop entry i: close its connection and fd, or (stale: the fd number
 * is someone else's now) free its state without a word to that fd.
 * Under reg_mu. */
static void
reg_drop(size_t i, int close_fd)
{
	struct netconn *nc = regs[i].nc;

	regs[i] = regs[--nregs];
	if (close_fd) {
		netconn_close(nc);
		return;
	}
	xconn_free(nc->x);
	free(nc);
}

int
netconn_register(struct netconn *nc)
{
	struct reg *nr;
	struct stat st;
	size_t i;
	int rc = -1;

	if (fstat(nc->fd, &st) == -1)
		return -1;
	pthread_mutex_lock(&reg_mu);
	/* A stale entry for the same number: its fd was closed. */
	if ((i = reg_find(nc->fd)) < nregs)
		reg_drop(i, 0);
	if (nregs == regcap) {
		if ((nr = realloc(regs, (regcap ? regcap * 2 : 8) *
		    sizeof(*nr))) == NULL)
			goto out;
		regs = nr;
		regcap = regcap ? regcap * 2 : 8;
	}
	regs[nregs].nc = nc;
	regs[nregs].dev = st.st_dev;
	regs[nregs].ino = st.st_ino;
	nregs++;
	rc = 0;
out:
	pthread_mutex_unlock(&reg_mu);
	return rc;
}

struct netconn *
netconn_of_fd(int fd)
{
	struct netconn *nc = NULL;
	struct stat st;
	size_t i;

	pthread_mutex_lock(&reg_mu);
	if (nregs == 0 || (i = reg_find(fd)) == nregs)
		goto out;
	if (fstat(fd, &st) == -1 || st.st_dev != regs[i].dev ||
	    st.st_ino != regs[i].ino) {
		reg_drop(i, 0);
		goto out;
	}
	nc = regs[i].nc;
out:
	pthread_mutex_unlock(&reg_mu);
	return nc;
}

void
netconn_close_fd(int fd)
{
	size_t i;

	if (fd < 0)
		return;
	pthread_mutex_lock(&reg_mu);
	if ((i = reg_find(fd)) < nregs) {
		reg_drop(i, 1);
		fd = -1;
	}
	pthread_mutex_unlock(&reg_mu);
	if (fd != -1)
		close(fd);
}

void
netconn_forget_fd(int fd)
{
	size_t i;

	pthread_mutex_lock(&reg_mu);
	if (nregs > 0 && (i = reg_find(fd)) < nregs)
		reg_drop(i, 0);
	pthread_mutex_unlock(&reg_mu);
}
