/* client.c - blocking request/reply to an agent over its Unix socket. */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "wire.h"

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
	while (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		if (errno == EINTR)
			continue;
		cs_errno(e, "agent %s is not running (connect %s", agent, sock);
		/* cs_errno appended ": strerror"; close the parenthesis. */
		if (e != NULL) {
			size_t n = strlen(e->msg);

			if (n + 1 < sizeof(e->msg)) {
				e->msg[n] = ')';
				e->msg[n + 1] = '\0';
			}
		}
		close(fd);
		fd = -1;
		goto out;
	}
out:
	return fd;
}

int
client_call(int fd, uint8_t type, const void *req, size_t reqlen,
    uint8_t *code, uint8_t **body, size_t *blen, int timeout_ms,
    struct cs_err *e)
{
	uint8_t *payload = NULL, *copy = NULL;
	const uint8_t *b;
	struct rbuf r;
	size_t plen, n;
	uint8_t rtype;
	int rc = -1;

	*body = NULL;
	*blen = 0;
	if (wire_send(fd, type, req, reqlen, e) == -1)
		goto out;
	if (wire_recv(fd, &rtype, &payload, &plen, timeout_ms, e) == -1)
		goto out;
	if (rtype != W_REPLY) {
		cs_errf(e, "unexpected frame type %u, expected a reply", rtype);
		goto out;
	}
	rbuf_init(&r, payload, plen);
	*code = rbuf_u8(&r);
	b = rbuf_bytes(&r, &n, WIRE_MAX_FRAME);
	if (!rbuf_done(&r)) {
		cs_errf(e, "malformed reply");
		goto out;
	}
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
