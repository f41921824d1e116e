/* client.c - blocking request/reply to an agent: over its Unix socket,
 * or over TCP + TLS read and written directly (conn.h), the connection
 * registered by its fd so that the fd-based calls find it. */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "conn.h"
#include "wire.h"
#include "xport.h"

int
client_connect(const char *sock, const char *agent, struct cs_err *e)
{
	struct sockaddr_un sun;
	int fd = -1;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(sock) >= sizeof(sun.sun_path)) {
		cs_errf(e, "socket path %s is too long (at most %zu bytes); "
		    "use a shorter run_dir", sock, sizeof(sun.sun_path) - 1);
		goto out;
	}
	memcpy(sun.sun_path, sock, strlen(sock) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		cs_errno(e, "socket");
		goto out;
	}
	netconn_forget_fd(fd);	/* a TLS connection's, closed by close(2) */
	while (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		if (errno == EINTR)
			continue;
		/* "Not running" only when nothing listens there. */
		if (errno == ENOENT || errno == ECONNREFUSED)
			cs_errf(e, "agent %s is not running (connect %s: %s)",
			    agent, sock, strerror(errno));
		else
			cs_errf(e, "cannot connect to agent %s (connect %s: "
			    "%s)", agent, sock, strerror(errno));
		close(fd);
		fd = -1;
		goto out;
	}
out:
	return fd;
}

/* Agent i over TCP + TLS: the socket, its session registered by it. */
static int
connect_tls(const struct cfg *c, int i, int64_t deadline, struct cs_err *e)
{
	struct netconn *nc;
	struct xconn *t;
	int fd;

	if (xport_client_connect(c, i, deadline, &fd, &t, e) == -1)
		return -1;
	if ((nc = netconn_tls_wrap(fd, t)) == NULL) {
		xconn_free(t);
		close(fd);
		return cs_errf(e, "out of memory for TLS");
	}
	if (netconn_register(nc) == -1) {
		netconn_close(nc);
		return cs_errf(e, "out of memory for TLS");
	}
	return fd;
}

int
client_connect_agent(const struct cfg *c, int i, int64_t deadline,
    struct cs_err *e)
{
	if (c->agents[i].addr[0] != '\0')
		return connect_tls(c, i, deadline, e);
	return client_connect(c->agents[i].sock, c->agents[i].name, e);
}

void
client_close(int fd)
{
	netconn_close_fd(fd);
}

int
client_pending(int fd)
{
	struct netconn *nc = netconn_of_fd(fd);

	return nc != NULL && netconn_pending(nc);
}

int
client_poll(struct pollfd *pfd, nfds_t n, int timeout_ms)
{
	nfds_t i;
	int held = 0, k;

	for (i = 0; i < n; i++)
		if (pfd[i].fd >= 0 && (pfd[i].events & POLLIN) &&
		    client_pending(pfd[i].fd))
			held = 1;
	/* Bytes held by TLS are ready now: look, but do not wait. */
	if ((k = poll(pfd, n, held ? 0 : timeout_ms)) == -1 || !held)
		return k;
	for (i = 0, k = 0; i < n; i++) {
		if (pfd[i].fd >= 0 && (pfd[i].events & POLLIN) &&
		    client_pending(pfd[i].fd))
			pfd[i].revents |= POLLIN;
		if (pfd[i].revents != 0)
			k++;
	}
	return k;
}

int
client_reply_decode(uint8_t type, const uint8_t *p, size_t n, uint8_t *code,
    const uint8_t **body, size_t *blen, struct cs_err *e)
{
	struct rbuf r;

	if (type != W_REPLY)
		return cs_errf(e, "unexpected frame type %u, expected a reply",
		    type);
	rbuf_init(&r, p, n);
	*code = rbuf_u8(&r);
	*body = rbuf_bytes(&r, blen, WIRE_MAX_FRAME);
	if (!rbuf_done(&r))
		return cs_errf(e, "malformed reply");
	return 0;
}

int
client_call(int fd, uint8_t type, const void *req, size_t reqlen,
    uint8_t *code, uint8_t **body, size_t *blen, int timeout_ms,
    struct cs_err *e)
{
	uint8_t *payload = NULL, *copy = NULL;
	const uint8_t *b;
	size_t plen, n;
	uint8_t rtype;
	int rc = -1;

	*body = NULL;
	*blen = 0;
	if (wire_send(fd, type, req, reqlen, e) == -1)
		goto out;
	if (wire_recv(fd, &rtype, &payload, &plen, timeout_ms, e) == -1)
		goto out;
	if (client_reply_decode(rtype, payload, plen, code, &b, &n, e) == -1)
		goto out;
	if (n > 0) {
		if ((copy = malloc(n)) == NULL) {
			cs_errno(e, "reply");
			goto out;
		}
		memcpy(copy, b, n);
	}
	*body = copy;
	*blen = n;
	copy = NULL;
	rc = 0;
out:
	free(copy);
	free(payload);
	return rc;
}
