/* wire.c - frame parsing and blocking frame I/O for the socket protocol. */
#include <sys/socket.h>
#include <sys/types.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/fsutil.h"
#include "../lib/util.h"
#include "conn.h"
#include "wire.h"

unsigned
wire_version(void)
{
	/* Read once: every frame of the process speaks one version. */
	static unsigned v;
	char val[16];
	const char *s;
	char *end;
	unsigned long n;

	if (v != 0)
		return v;
	v = WIRE_VERSION;
	if ((s = cs_fault_value("wire-version", val, sizeof(val))) != NULL) {
		n = strtoul(s, &end, 10);
		if (end != s && *end == '\0' && n >= 1 && n <= 255)
			v = (unsigned)n;
	}
	return v;
}

/* Validates the u32 length of a frame; 0, or -1 with e set. */
static int
wire_check_len(uint32_t len, struct cs_err *e)
{
	if (len < 2)
		return cs_errf(e, "malformed frame: length %u too short", len);
	if (len > WIRE_MAX_FRAME)
		return cs_errf(e, "malformed frame: length %u exceeds %u", len,
		    WIRE_MAX_FRAME);
	return 0;
}

/* Validates a whole 6-byte header; 0, or -1 with e set. Shared by
 * wire_parse and wire_recv so both reject exactly the same frames. The
 * type is only checked to be nonzero: the receiver knows which it accepts. */
static int
wire_check_header(const uint8_t *hdr, uint32_t *lenp, struct cs_err *e)
{
	uint32_t len = buf_le32_get(hdr);

	if (wire_check_len(len, e) == -1)
		return -1;
	if (hdr[4] != wire_version())
		return cs_errf(e, "protocol version mismatch: the other end "
		    "speaks protocol %u, this one %u", hdr[4], wire_version());
	if (hdr[5] == 0)
		return cs_errf(e, "malformed frame: type 0");
	*lenp = len;
	return 0;
}

int
wire_other_version(const uint8_t *buf, size_t len)
{
	uint32_t flen;

	if (len < WIRE_HDR_LEN)
		return -1;
	flen = buf_le32_get(buf);
	if (flen < 2 || flen > WIRE_MAX_FRAME || buf[4] == wire_version())
		return -1;
	return buf[4];
}

int
wire_parse(const uint8_t *buf, size_t len, uint8_t *type,
    const uint8_t **payload, size_t *plen, size_t *consumed,
    struct cs_err *e)
{
	uint32_t flen;

	/* Reject a bad length as soon as its four bytes are in, so a peer
	 * cannot make us wait for (or buffer) a frame we will refuse. */
	if (len >= 4 && wire_check_len(buf_le32_get(buf), e) == -1)
		return -1;
	if (len < WIRE_HDR_LEN)
		return 0;
	if (wire_check_header(buf, &flen, e) == -1)
		return -1;
	if (len - 4 < flen)
		return 0;
	*type = buf[5];
	*payload = buf + WIRE_HDR_LEN;
	*plen = flen - 2;
	*consumed = 4 + (size_t)flen;
	return 1;
}

void
wire_header(uint8_t hdr[WIRE_HDR_LEN], uint8_t type, size_t plen)
{
	buf_le32_put(hdr, (uint32_t)(plen + 2));
	hdr[4] = (uint8_t)wire_version();
	hdr[5] = type;
}

void
wire_frame(struct wbuf *out, uint8_t type, const void *payload, size_t plen)
{
	uint8_t hdr[WIRE_HDR_LEN];

	wire_header(hdr, type, plen);
	wbuf_put_raw(out, hdr, sizeof(hdr));
	wbuf_put_raw(out, payload, plen);
}

int
wire_send(int fd, uint8_t type, const void *payload, size_t plen,
    struct cs_err *e)
{
	uint8_t hdr[WIRE_HDR_LEN];
	struct netconn *nc;

	if (plen > WIRE_MAX_FRAME - 2)
		return cs_errf(e, "frame of %zu bytes exceeds the limit", plen);
	wire_header(hdr, type, plen);
	/* A command's TLS connection (client.h) is written through TLS,
	 * waiting with poll for its non-blocking socket. */
	if ((nc = netconn_of_fd(fd)) != NULL) {
		if (netconn_write_all(nc, hdr, sizeof(hdr), -1) == -1 ||
		    (plen > 0 && netconn_write_all(nc, payload, plen, -1) ==
		    -1))
			return cs_errno(e, "send");
		return 0;
	}
	if (fs_send_all(fd, hdr, sizeof(hdr)) == -1 ||
	    (plen > 0 && fs_send_all(fd, payload, plen) == -1))
		return cs_errno(e, "send");
	return 0;
}

/* recv_full over a command's TLS connection: read first (TLS may hold
 * the bytes already, where poll cannot see them), then wait for what TLS
 * asks for. */
static int
recv_full_conn(struct netconn *nc, uint8_t *q, size_t n, int64_t deadline,
    struct cs_err *e)
{
	ssize_t k;
	int r;

	while (n > 0) {
		k = netconn_read(nc, q, n);
		if (k > 0) {
			q += k;
			n -= (size_t)k;
			continue;
		}
		/* A TLS failure reads as the peer's going away, as it did
		 * when a relay thread carried the bytes. */
		if (k == NETCONN_EOF || k == NETCONN_ERR)
			return cs_errf(e, "connection closed by peer");
		r = netconn_wait(nc, (int)k, deadline);
		if (r == 0)
			return cs_errf(e, "timed out waiting for a reply");
		if (r == -1 && errno == EINTR)
			return cs_errf(e, "interrupted");
		if (r == -1)
			return cs_errno(e, "poll");
	}
	return 0;
}

/* Reads exactly n bytes before the deadline (-1: none). */
static int
recv_full(int fd, void *p, size_t n, int64_t deadline, struct cs_err *e)
{
	uint8_t *q = p;
	struct netconn *nc;
	struct pollfd pfd;
	int64_t left;
	ssize_t r;
	int rc;

	if ((nc = netconn_of_fd(fd)) != NULL)
		return recv_full_conn(nc, q, n, deadline, e);
	while (n > 0) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		left = -1;
		if (deadline >= 0) {
			left = deadline - cs_now_ms();
			if (left < 0)
				left = 0;
		}
		rc = poll(&pfd, 1, (int)left);
		if (rc == -1) {
			/* A command asked to stop (cs_stop_sig) stops waiting:
			 * no agent ever sets it. */
			if (errno == EINTR && cs_stop_sig)
				return cs_errf(e, "interrupted");
			if (errno == EINTR)
				continue;
			return cs_errno(e, "poll");
		}
		if (rc == 0)
			return cs_errf(e, "timed out waiting for a reply");
		r = read(fd, q, n);
		if (r == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return cs_errno(e, "read");
		}
		if (r == 0)
			return cs_errf(e, "connection closed by peer");
		q += r;
		n -= (size_t)r;
	}
	return 0;
}

int
wire_recv(int fd, uint8_t *type, uint8_t **payload, size_t *plen,
    int timeout_ms, struct cs_err *e)
{
	uint8_t hdr[WIRE_HDR_LEN];
	uint8_t *p = NULL;
	int64_t deadline = -1;
	uint32_t len;
	int rc = -1;

	*payload = NULL;
	*plen = 0;
	if (timeout_ms >= 0)
		deadline = cs_now_ms() + timeout_ms;
	if (recv_full(fd, hdr, sizeof(hdr), deadline, e) == -1)
		goto out;
	if (wire_check_header(hdr, &len, e) == -1)
		goto out;
	/* +1 so that an empty payload still gets a non-NULL buffer. */
	if ((p = malloc((size_t)len - 2 + 1)) == NULL) {
		cs_errno(e, "receive frame");
		goto out;
	}
	if (recv_full(fd, p, (size_t)len - 2, deadline, e) == -1)
		goto out;
	*type = hdr[5];
	*payload = p;
	*plen = (size_t)len - 2;
	p = NULL;
	rc = 0;
out:
	free(p);
	return rc;
}
