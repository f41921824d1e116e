/* test_conn.c - the connection type (net/conn.h) over both transports:
 * a plain pair on a socket pair and a TLS pair on another, with the
 * certificates of a cluster made by tools/ca.c: partial writes, bytes TLS
 * holds that poll cannot see, EOF, the peer's identity, and the commands'
 * fd table that the fd-based wire calls use. */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../lib/config.h"
#include "../../net/conn.h"
#include "../../net/wire.h"
#include "../../tools/ca.h"
#include "unit.h"

#define CHUNK	(64u << 10)

static struct cfg *cl;		/* cluster: agent A with an addr, tls_dir */
static struct xport_ctx *srv_ctx, *cli_ctx;

static int
setup(void **state)
{
	char text[512];
	struct cs_err e;
	int n;

	/* OpenSSL writes with write(2): a close_notify to a closed peer
	 * raises SIGPIPE, which cutsnap's processes ignore (conn.h). */
	signal(SIGPIPE, SIG_IGN);
	if (unit_setup(state) != 0)
		return -1;
	snprintf(text, sizeof(text), "[cluster]\ntls_dir = tls\n"
	    "[agent A]\ndata = a.data\naddr = 127.0.0.1:7101\n");
	if (cfg_parse(text, unit_path("c.ini"), &cl, &e) == -1)
		return -1;
	/* The CA, A's certificate and the commands' "client". */
	if ((n = ca_cluster(cl, 1, NULL, NULL, &e)) != 3) {
		fprintf(stderr, "ca_cluster: %d %s\n", n, e.msg);
		return -1;
	}
	if (xport_ctx_new(cl, "A", &srv_ctx, &e) == -1 ||
	    xport_ctx_new(cl, XPORT_CLIENT_CN, &cli_ctx, &e) == -1) {
		fprintf(stderr, "xport_ctx_new: %s\n", e.msg);
		return -1;
	}
	return 0;
}

static int
teardown(void **state)
{
	xport_ctx_free(srv_ctx);
	xport_ctx_free(cli_ctx);
	cfg_free(cl);
	return unit_teardown(state);
}

/* A connected, non-blocking socket pair as two plain connections. */
static void
plain_pair(struct netconn **a, struct netconn **b)
{
	int sp[2], i;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    sp), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(fcntl(sp[i], F_SETFL,
		    fcntl(sp[i], F_GETFL) | O_NONBLOCK), 0);
	assert_non_null(*a = netconn_plain(sp[0]));
	assert_non_null(*b = netconn_plain(sp[1]));
}

/* The same, then TLS with A as the server (b) and "client" (a), the
 * handshakes driven in turn until both are done. */
static void
tls_pair(struct netconn **a, struct netconn **b)
{
	char why[200];
	int ra = NETCONN_WANT_WRITE, rb = NETCONN_WANT_READ, i;

	plain_pair(a, b);
	assert_int_equal(netconn_start_tls(*a, cli_ctx, 0), 0);
	assert_int_equal(netconn_start_tls(*b, srv_ctx, 1), 0);
	for (i = 0; i < 100 && (ra != NETCONN_OK || rb != NETCONN_OK); i++) {
		if (ra != NETCONN_OK)
			ra = netconn_handshake(*a, why, sizeof(why));
		if (rb != NETCONN_OK)
			rb = netconn_handshake(*b, why, sizeof(why));
		assert_true(ra != NETCONN_ERR && rb != NETCONN_ERR);
	}
	assert_int_equal(ra, NETCONN_OK);
	assert_int_equal(rb, NETCONN_OK);
}

/* Write pattern bytes from *sent on until the transport wants to wait;
 * how many were written. */
static size_t
fill(struct netconn *nc, size_t *sent)
{
	static uint8_t buf[CHUNK];
	size_t i, total = 0;
	ssize_t k;

	for (;;) {
		for (i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)((*sent + i) % 251);
		k = netconn_write(nc, buf, sizeof(buf));
		if (k <= 0)
			break;
		total += (size_t)k;
		*sent += (size_t)k;
		assert_true(total < (256u << 20));	/* it must fill */
	}
	assert_int_equal(k, NETCONN_WANT_WRITE);
	return total;
}

/* Read until the transport wants to wait, checking the pattern from
 * *got on; how many were read. */
static size_t
drain(struct netconn *nc, size_t *got)
{
	static uint8_t buf[CHUNK];
	size_t i, total = 0;
	ssize_t k;

	while ((k = netconn_read(nc, buf, sizeof(buf))) > 0) {
		for (i = 0; i < (size_t)k; i++)
			assert_int_equal(buf[i], (*got + i) % 251);
		*got += (size_t)k;
		total += (size_t)k;
	}
	assert_int_equal(k, NETCONN_WANT_READ);
	return total;
}

/* A full socket takes part of a write, says WANT_WRITE, and takes the
 * rest once the other end has read: every byte arrives, in order. */
static void
partial_writes(struct netconn *a, struct netconn *b)
{
	size_t sent = 0, got = 0, first, second;

	first = fill(a, &sent);
	assert_true(first > 0);
	assert_int_equal(drain(b, &got), first);
	second = fill(a, &sent);
	assert_true(second > 0);
	assert_int_equal(drain(b, &got), second);
	assert_int_equal(got, sent);
}

static void
plain_partial_writes_arrive_whole(void **state)
{
	struct netconn *a, *b;

	(void)state;
	plain_pair(&a, &b);
	assert_string_equal(netconn_type_name(a), "plain");
	partial_writes(a, b);
	netconn_close(a);
	netconn_close(b);
}

static void
tls_partial_writes_arrive_whole(void **state)
{
	struct netconn *a, *b;

	(void)state;
	tls_pair(&a, &b);
	assert_string_equal(netconn_type_name(a), "tls");
	partial_writes(a, b);
	partial_writes(b, a);
	netconn_close(a);
	netconn_close(b);
}

/* Plain: nothing is ever held back from poll, and sendfile works. */
static void
plain_holds_nothing_and_sends_files(void **state)
{
	struct netconn *a, *b;
	char buf[16];
	off_t off = 2;
	int fd;

	(void)state;
	plain_pair(&a, &b);
	assert_false(netconn_can_pend(a));
	assert_true(netconn_can_sendfile(a));
	unit_write_text(unit_path("f"), "0123456789");
	assert_true((fd = open(unit_path("f"), O_RDONLY)) != -1);
	assert_int_equal(netconn_sendfile(a, fd, &off, 5), 5);
	assert_int_equal(off, 7);
	assert_int_equal(netconn_pending(b), 0);
	assert_int_equal(netconn_read(b, buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "23456", 5);
	/* The file's end: 0, not an error. */
	off = 10;
	assert_int_equal(netconn_sendfile(a, fd, &off, 5), 0);
	close(fd);
	netconn_close(a);
	netconn_close(b);
}

/* TLS: a read that takes part of a record leaves the rest decrypted,
 * where poll cannot see it; netconn_pending says so until it is read. */
static void
tls_pending_bytes_are_reported(void **state)
{
	struct netconn *a, *b;
	uint8_t msg[300], buf[300];
	off_t off = 0;
	size_t i;

	(void)state;
	tls_pair(&a, &b);
	assert_true(netconn_can_pend(a));
	assert_false(netconn_can_sendfile(a));
	errno = 0;
	assert_int_equal(netconn_sendfile(b, 0, &off, 1), NETCONN_ERR);
	assert_int_equal(errno, EOPNOTSUPP);
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	assert_int_equal(netconn_write(b, msg, sizeof(msg)), sizeof(msg));
	assert_int_equal(netconn_read(a, buf, 10), 10);
	assert_int_equal(netconn_pending(a), 1);
	assert_int_equal(netconn_read(a, buf + 10, sizeof(buf) - 10),
	    sizeof(buf) - 10);
	assert_memory_equal(buf, msg, sizeof(msg));
	/* All read: nothing held, and the next read waits for the socket. */
	assert_int_equal(netconn_read(a, buf, sizeof(buf)), NETCONN_WANT_READ);
	assert_int_equal(netconn_pending(a), 0);
	netconn_close(a);
	netconn_close(b);
}

/* The other end closed: EOF, after the bytes it sent before; a write to
 * a plain socket whose reader is gone fails with EPIPE, no signal. */
static void
eof_after_the_last_bytes(void **state)
{
	struct netconn *a, *b;
	char buf[8];
	int tls;

	(void)state;
	for (tls = 0; tls < 2; tls++) {
		if (tls)
			tls_pair(&a, &b);
		else
			plain_pair(&a, &b);
		assert_int_equal(netconn_write(b, "bye", 3), 3);
		netconn_close(b);
		assert_int_equal(netconn_read(a, buf, sizeof(buf)), 3);
		assert_memory_equal(buf, "bye", 3);
		assert_int_equal(netconn_read(a, buf, sizeof(buf)),
		    NETCONN_EOF);
		if (!tls) {
			errno = 0;
			assert_int_equal(netconn_write(a, "x", 1),
			    NETCONN_ERR);
			assert_int_equal(errno, EPIPE);
		}
		netconn_close(a);
	}
	assert_int_equal(tls, 2);
}

static void
peer_identity_of_each_transport(void **state)
{
	struct netconn_peer p;
	struct netconn *a, *b;

	(void)state;
	plain_pair(&a, &b);
	netconn_peer(a, &p);
	assert_int_equal(p.has_uid, 1);
	assert_int_equal(p.uid, getuid());
	assert_string_equal(p.cn, "");
	assert_int_equal(p.role, CS_ROLE_NONE);
	netconn_close(a);
	netconn_close(b);

	tls_pair(&a, &b);
	/* The client sees agent A's certificate, which has no role ... */
	netconn_peer(a, &p);
	assert_string_equal(p.cn, "A");
	assert_int_equal(p.role, CS_ROLE_NONE);
	assert_int_equal(p.has_uid, 0);
	/* ... and A the commands' certificate, an admin's. */
	netconn_peer(b, &p);
	assert_string_equal(p.cn, XPORT_CLIENT_CN);
	assert_int_equal(p.role, CS_ROLE_ADMIN);
	netconn_close(a);
	netconn_close(b);
}

/* A blocking client's TLS connection, registered by its fd, carries the
 * fd-based wire calls; a registration whose fd was closed behind its
 * back is not mistaken for the fd's next owner. */
static void
registered_fd_carries_wire_frames(void **state)
{
	struct netconn *a, *b, *p1, *p2;
	uint8_t type, *payload, hdr[WIRE_HDR_LEN], buf[64];
	size_t plen, got = 0;
	ssize_t k;
	int fd, i;

	(void)state;
	tls_pair(&a, &b);
	fd = netconn_fd(a);
	assert_int_equal(netconn_register(a), 0);
	assert_ptr_equal(netconn_of_fd(fd), a);
	assert_int_equal(wire_send(fd, W_REQ_GET, "k", 1, NULL), 0);
	for (i = 0; i < 100 && got < WIRE_HDR_LEN + 1; i++)
		if ((k = netconn_read(b, buf + got, sizeof(buf) - got)) > 0)
			got += (size_t)k;
	assert_int_equal(got, WIRE_HDR_LEN + 1);
	assert_int_equal(buf[WIRE_HDR_LEN], 'k');
	wire_header(hdr, W_REPLY, 2);
	assert_int_equal(netconn_write_all(b, hdr, sizeof(hdr), -1), 0);
	assert_int_equal(netconn_write_all(b, "\0z", 2, -1), 0);
	assert_int_equal(wire_recv(fd, &type, &payload, &plen, 5000, NULL),
	    0);
	assert_int_equal(type, W_REPLY);
	assert_int_equal(plen, 2);
	assert_int_equal(payload[1], 'z');
	free(payload);
	netconn_close_fd(fd);
	assert_null(netconn_of_fd(fd));
	netconn_close(b);

	/* Registered, then closed with close(2): the number's next socket
	 * is not taken for it. */
	plain_pair(&p1, &p2);
	fd = netconn_fd(p1);
	assert_int_equal(netconn_register(p1), 0);
	close(fd);	/* behind the table's back: p1 is the table's now */
	netconn_close(p2);
	/* The lowest free numbers: fd is taken again at once. */
	plain_pair(&p1, &p2);
	assert_int_equal(netconn_fd(p1), fd);
	assert_null(netconn_of_fd(fd));
	netconn_close(p1);
	netconn_close(p2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_partial_writes_arrive_whole),
		cmocka_unit_test(tls_partial_writes_arrive_whole),
		cmocka_unit_test(plain_holds_nothing_and_sends_files),
		cmocka_unit_test(tls_pending_bytes_are_reported),
		cmocka_unit_test(eof_after_the_last_bytes),
		cmocka_unit_test(peer_identity_of_each_transport),
		cmocka_unit_test(registered_fd_carries_wire_frames),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
