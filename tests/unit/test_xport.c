/* test_xport.c - HOST:PORT parsing of addr and the TCP helpers. */
#include <sys/socket.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../net/xport.h"

static void
split_accepts_host_port_and_v6(void **state)
{
	char h[64], p[8];

	(void)state;
	assert_int_equal(xport_split("10.0.0.1:7101", h, sizeof(h), p,
	    sizeof(p)), 0);
	assert_string_equal(h, "10.0.0.1");
	assert_string_equal(p, "7101");
	assert_int_equal(xport_split("host1.example:1", h, sizeof(h), p,
	    sizeof(p)), 0);
	assert_string_equal(h, "host1.example");
	assert_string_equal(p, "1");
	assert_int_equal(xport_split("[::1]:65535", h, sizeof(h), p,
	    sizeof(p)), 0);
	assert_string_equal(h, "::1");
	assert_string_equal(p, "65535");
}

static void
split_rejects_bad_addresses(void **state)
{
	static const char *bad[] = {
		"", "host", "host:", ":7101", "host:0", "host:65536",
		"host:-1", "host:12x", "host: 12", "[]:7101",
		"a-very-long-host-name-that-does-not-fit-in-the-buffer:1",
	};
	char h[32], p[8];
	size_t i, n = 0;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(xport_split(bad[i], h, sizeof(h), p,
		    sizeof(p)), -1);
		n++;
	}
	assert_int_equal(n, 11);
}

static void
listen_then_connect_on_loopback(void **state)
{
	struct cs_err e;
	char addr[64], who[64];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int lfd, cfd, afd = -1, inprog, i;

	(void)state;
	/* Port 0 is refused by the parser: find a free port by binding. */
	lfd = -1;
	for (i = 0; i < 50 && lfd == -1; i++) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%d",
		    20000 + (int)((getpid() * 7 + i * 131) % 30000));
		lfd = xport_tcp_listen(addr, &e);
	}
	assert_true(lfd != -1);
	cfd = xport_tcp_connect(addr, 0, &inprog, &e);
	assert_true(cfd != -1);
	assert_int_equal(inprog, 0);
	for (i = 0; i < 1000 && afd == -1; i++) {
		afd = accept(lfd, (struct sockaddr *)&ss, &sl);
		if (afd == -1)
			usleep(1000);
	}
	assert_true(afd != -1);
	xport_peer_name(afd, who, sizeof(who));
	assert_true(strncmp(who, "127.0.0.1:", 10) == 0);
	/* The same address again is in use. */
	assert_int_equal(xport_tcp_listen(addr, &e), -1);
	assert_non_null(strstr(e.msg, "in use"));
	close(afd);
	close(cfd);
	close(lfd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(split_accepts_host_port_and_v6),
		cmocka_unit_test(split_rejects_bad_addresses),
		cmocka_unit_test(listen_then_connect_on_loopback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
