/* test_wire.c - frame parsing rules and blocking send/recv over sockets. */
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../lib/fsutil.h"
#include "../../net/wire.h"

static void
hdr(uint8_t *b, uint32_t len, uint8_t version, uint8_t type)
{
	buf_le32_put(b, len);
	b[4] = version;
	b[5] = type;
}

static void
parse_whole_frame_and_every_partial_prefix(void **state)
{
	struct cs_err e;
	struct wbuf w;
	const uint8_t *pl;
	size_t plen, used, i;
	uint8_t type;

	(void)state;
	wbuf_init(&w);
	wire_frame(&w, W_PEER_MSG, "payload", 7);
	assert_int_equal(w.len, WIRE_HDR_LEN + 7);
	for (i = 0; i < w.len; i++)
		assert_int_equal(wire_parse(w.data, i, &type, &pl, &plen,
		    &used, &e), 0);
	assert_int_equal(wire_parse(w.data, w.len, &type, &pl, &plen, &used,
	    &e), 1);
	assert_int_equal(type, W_PEER_MSG);
	assert_int_equal(plen, 7);
	assert_memory_equal(pl, "payload", 7);
	assert_int_equal(used, w.len);
	wbuf_free(&w);
}

static void
parse_two_frames_back_to_back(void **state)
{
	struct cs_err e;
	struct wbuf w;
	const uint8_t *pl;
	size_t plen, used;
	uint8_t type;

	(void)state;
	wbuf_init(&w);
	wire_frame(&w, W_REQ_STATUS, NULL, 0);
	wire_frame(&w, W_PEER_ACK, "12345678", 8);
	assert_int_equal(wire_parse(w.data, w.len, &type, &pl, &plen, &used,
	    &e), 1);
	assert_int_equal(type, W_REQ_STATUS);
	assert_int_equal(plen, 0);
	assert_int_equal(used, WIRE_HDR_LEN);
	assert_int_equal(wire_parse(w.data + used, w.len - used, &type, &pl,
	    &plen, &used, &e), 1);
	assert_int_equal(type, W_PEER_ACK);
	assert_int_equal(plen, 8);
	wbuf_free(&w);
}

static void
parse_rejects_oversized_len_from_four_bytes(void **state)
{
	struct cs_err e;
	const uint8_t *pl;
	size_t plen, used;
	uint8_t b[WIRE_HDR_LEN], type;

	(void)state;
	hdr(b, WIRE_MAX_FRAME + 1, WIRE_VERSION, W_REQ_PUT);
	/* Rejected as soon as the length is in, without waiting. */
	assert_int_equal(wire_parse(b, 4, &type, &pl, &plen, &used, &e), -1);
	assert_non_null(strstr(e.msg, "exceeds"));
	assert_int_equal(wire_parse(b, 6, &type, &pl, &plen, &used, &e), -1);
	hdr(b, 0xffffffffu, WIRE_VERSION, W_REQ_PUT);
	assert_int_equal(wire_parse(b, 6, &type, &pl, &plen, &used, &e), -1);
	/* The largest legal length is only incomplete. */
	hdr(b, WIRE_MAX_FRAME, WIRE_VERSION, W_REQ_PUT);
	assert_int_equal(wire_parse(b, 6, &type, &pl, &plen, &used, &e), 0);
}

static void
parse_rejects_zero_and_one_len(void **state)
{
	struct cs_err e;
	const uint8_t *pl;
	size_t plen, used;
	uint8_t b[WIRE_HDR_LEN], type;

	(void)state;
	hdr(b, 0, WIRE_VERSION, W_REQ_PUT);
	assert_int_equal(wire_parse(b, 6, &type, &pl, &plen, &used, &e), -1);
	assert_non_null(strstr(e.msg, "too short"));
	hdr(b, 1, WIRE_VERSION, W_REQ_PUT);
	assert_int_equal(wire_parse(b, 4, &type, &pl, &plen, &used, &e), -1);
}

static void
parse_rejects_bad_version_and_type_zero(void **state)
{
	struct cs_err e;
	const uint8_t *pl;
	size_t plen, used;
	uint8_t b[WIRE_HDR_LEN], type;
	char want[64];

	(void)state;
	hdr(b, 2, WIRE_VERSION + 1, W_REQ_STATUS);
	assert_int_equal(wire_parse(b, 6, &type, &pl, &plen, &used, &e), -1);
	snprintf(want, sizeof(want), "speaks protocol %d, this one %d",
	    WIRE_VERSION + 1, WIRE_VERSION);
	assert_non_null(strstr(e.msg, want));
	hdr(b, 2, 0, W_REQ_STATUS);
	assert_int_equal(wire_parse(b, 6, &type, &pl, &plen, &used, &e), -1);
	hdr(b, 2, WIRE_VERSION, 0);
	assert_int_equal(wire_parse(b, 6, &type, &pl, &plen, &used, &e), -1);
	/* An unknown nonzero type is for the receiver to judge. */
	hdr(b, 2, WIRE_VERSION, 250);
	assert_int_equal(wire_parse(b, 6, &type, &pl, &plen, &used, &e), 1);
	assert_int_equal(type, 250);
}

static void
send_recv_over_socketpair(void **state)
{
	struct cs_err e;
	uint8_t *pl, type;
	size_t plen;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(wire_send(sv[0], W_REQ_GET, "key", 3, &e), 0);
	assert_int_equal(wire_send(sv[0], W_REQ_STATUS, NULL, 0, &e), 0);
	assert_int_equal(wire_recv(sv[1], &type, &pl, &plen, 1000, &e), 0);
	assert_int_equal(type, W_REQ_GET);
	assert_int_equal(plen, 3);
	assert_memory_equal(pl, "key", 3);
	free(pl);
	assert_int_equal(wire_recv(sv[1], &type, &pl, &plen, 1000, &e), 0);
	assert_int_equal(type, W_REQ_STATUS);
	assert_int_equal(plen, 0);
	free(pl);
	close(sv[0]);
	close(sv[1]);
}

/* A child writes buf[0, n) in pieces of step bytes with pauses, so the
 * reader sees short reads. */
static pid_t
slow_writer(int fd, const uint8_t *buf, size_t n, size_t step)
{
	struct timespec ts = { 0, 2000000 };
	size_t off, k;
	pid_t pid;

	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		for (off = 0; off < n; off += k) {
			k = n - off < step ? n - off : step;
			if (fs_write_all(fd, buf + off, k) == -1)
				_exit(1);
			nanosleep(&ts, NULL);
		}
		_exit(0);
	}
	return pid;
}

static void
recv_assembles_short_reads(void **state)
{
	struct cs_err e;
	struct wbuf w;
	uint8_t *pl, type;
	size_t plen;
	int sv[2], st;
	pid_t pid;

	(void)state;
	wbuf_init(&w);
	wire_frame(&w, W_PEER_MARKER, "0123456789abcdef", 16);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = slow_writer(sv[0], w.data, w.len, 1);
	assert_int_equal(wire_recv(sv[1], &type, &pl, &plen, 5000, &e), 0);
	assert_int_equal(type, W_PEER_MARKER);
	assert_int_equal(plen, 16);
	assert_memory_equal(pl, "0123456789abcdef", 16);
	free(pl);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(sv[0]);
	close(sv[1]);
	wbuf_free(&w);
}

static void
send_recv_large_payload(void **state)
{
	const size_t n = 4u << 20;
	struct cs_err e;
	uint8_t *big, *pl, type;
	size_t plen, i;
	int sv[2], st;
	pid_t pid;

	(void)state;
	big = malloc(n);
	assert_non_null(big);
	for (i = 0; i < n; i++)
		big[i] = (uint8_t)(i * 7);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		st = wire_send(sv[0], W_REQ_PUT, big, n, NULL);
		free(big);	/* a leak checker also watches the child */
		_exit(st == 0 ? 0 : 1);
	}
	assert_int_equal(wire_recv(sv[1], &type, &pl, &plen, 10000, &e), 0);
	assert_int_equal(plen, n);
	assert_memory_equal(pl, big, n);
	free(pl);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	free(big);
	close(sv[0]);
	close(sv[1]);
}

static void
recv_times_out(void **state)
{
	struct timespec t0, t1;
	struct cs_err e;
	uint8_t *pl, type;
	size_t plen;
	long ms;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	/* Half a header arrives, then nothing. */
	assert_int_equal(fs_write_all(sv[0], "\x05\x00\x00", 3), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(wire_recv(sv[1], &type, &pl, &plen, 100, &e), -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_true(ms >= 90 && ms < 2000);
	assert_non_null(strstr(e.msg, "timed out"));
	assert_null(pl);
	close(sv[0]);
	close(sv[1]);
}

static void
recv_reports_eof(void **state)
{
	struct cs_err e;
	uint8_t b[WIRE_HDR_LEN], *pl, type;
	size_t plen;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[0]);
	assert_int_equal(wire_recv(sv[1], &type, &pl, &plen, 1000, &e), -1);
	assert_string_equal(e.msg, "connection closed by peer");
	close(sv[1]);

	/* EOF in the middle of a payload. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	hdr(b, 10, WIRE_VERSION, 3);
	assert_int_equal(fs_write_all(sv[0], b, sizeof(b)), 0);
	assert_int_equal(fs_write_all(sv[0], "abc", 3), 0);
	close(sv[0]);
	assert_int_equal(wire_recv(sv[1], &type, &pl, &plen, 1000, &e), -1);
	assert_string_equal(e.msg, "connection closed by peer");
	assert_null(pl);
	close(sv[1]);
}

static void
recv_rejects_malformed_header(void **state)
{
	struct cs_err e;
	uint8_t b[WIRE_HDR_LEN], *pl, type;
	char want[64];
	size_t plen;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	hdr(b, WIRE_MAX_FRAME + 1, WIRE_VERSION, W_REQ_PUT);
	assert_int_equal(fs_write_all(sv[0], b, sizeof(b)), 0);
	assert_int_equal(wire_recv(sv[1], &type, &pl, &plen, 1000, &e), -1);
	assert_non_null(strstr(e.msg, "malformed frame"));
	hdr(b, 2, 9, W_REQ_PUT);
	assert_int_equal(fs_write_all(sv[0], b, sizeof(b)), 0);
	assert_int_equal(wire_recv(sv[1], &type, &pl, &plen, 1000, &e), -1);
	snprintf(want, sizeof(want), "speaks protocol 9, this one %d",
	    WIRE_VERSION);
	assert_non_null(strstr(e.msg, want));
	close(sv[0]);
	close(sv[1]);
}

static void
send_to_closed_peer_fails_without_sigpipe(void **state)
{
	struct cs_err e;
	int sv[2];

	(void)state;
	/* SIGPIPE at its default would kill the test; MSG_NOSIGNAL avoids it. */
	signal(SIGPIPE, SIG_DFL);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]);
	assert_int_equal(wire_send(sv[0], W_REQ_GET, "k", 1, &e), -1);
	assert_non_null(strstr(e.msg, "Broken pipe"));
	close(sv[0]);
}

static void
send_recv_over_a_pipe(void **state)
{
	struct cs_err e;
	uint8_t *pl, type;
	size_t plen;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(wire_send(p[1], W_REPLY, "xy", 2, &e), 0);
	assert_int_equal(wire_recv(p[0], &type, &pl, &plen, 1000, &e), 0);
	assert_int_equal(type, W_REPLY);
	assert_int_equal(plen, 2);
	free(pl);
	close(p[0]);
	close(p[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_whole_frame_and_every_partial_prefix),
		cmocka_unit_test(parse_two_frames_back_to_back),
		cmocka_unit_test(parse_rejects_oversized_len_from_four_bytes),
		cmocka_unit_test(parse_rejects_zero_and_one_len),
		cmocka_unit_test(parse_rejects_bad_version_and_type_zero),
		cmocka_unit_test(send_recv_over_socketpair),
		cmocka_unit_test(recv_assembles_short_reads),
		cmocka_unit_test(send_recv_large_payload),
		cmocka_unit_test(recv_times_out),
		cmocka_unit_test(recv_reports_eof),
		cmocka_unit_test(recv_rejects_malformed_header),
		cmocka_unit_test(send_to_closed_peer_fails_without_sigpipe),
		cmocka_unit_test(send_recv_over_a_pipe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
