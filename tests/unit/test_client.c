/* test_client.c - connecting to an agent socket and one request/reply call. */
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../net/client.h"
#include "../../net/wire.h"
#include "unit.h"

/* A child that reads one frame on fd and answers with the given raw reply
 * frame (type, payload). Exits 0 if the request was W_REQ_GET "k". */
static pid_t
fake_agent(int fd, uint8_t type, const void *payload, size_t plen)
{
	uint8_t *req, rtype;
	size_t rlen;
	pid_t pid;
	int ok;

	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		if (wire_recv(fd, &rtype, &req, &rlen, 5000, NULL) == -1)
			_exit(2);
		ok = rtype == W_REQ_GET && rlen == 1 && req[0] == 'k';
		free(req);
		if (wire_send(fd, type, payload, plen, NULL) == -1)
			_exit(3);
		_exit(ok ? 0 : 1);
	}
	return pid;
}

static void
reap(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void
call_returns_code_and_body(void **state)
{
	uint8_t *body, code = 99;
	struct cs_err e;
	struct wbuf w;
	size_t blen;
	int sv[2];
	pid_t pid;

	(void)state;
	wbuf_init(&w);
	wbuf_put_u8(&w, REPLY_OK);
	wbuf_put_bytes(&w, "150", 3);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fake_agent(sv[1], W_REPLY, w.data, w.len);
	assert_int_equal(client_call(sv[0], W_REQ_GET, "k", 1, &code, &body,
	    &blen, 5000, &e), 0);
	assert_int_equal(code, REPLY_OK);
	assert_int_equal(blen, 3);
	assert_memory_equal(body, "150", 3);
	free(body);
	reap(pid);
	close(sv[0]);
	close(sv[1]);
	wbuf_free(&w);
}

static void
call_with_empty_body(void **state)
{
	uint8_t *body, code = 99;
	struct cs_err e;
	struct wbuf w;
	size_t blen;
	int sv[2];
	pid_t pid;

	(void)state;
	wbuf_init(&w);
	wbuf_put_u8(&w, REPLY_NOTFOUND);
	wbuf_put_bytes(&w, NULL, 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fake_agent(sv[1], W_REPLY, w.data, w.len);
	assert_int_equal(client_call(sv[0], W_REQ_GET, "k", 1, &code, &body,
	    &blen, 5000, &e), 0);
	assert_int_equal(code, REPLY_NOTFOUND);
	assert_int_equal(blen, 0);
	assert_null(body);
	reap(pid);
	close(sv[0]);
	close(sv[1]);
	wbuf_free(&w);
}

static void
call_rejects_wrong_type_and_malformed_reply(void **state)
{
	uint8_t *body, code;
	struct cs_err e;
	struct wbuf w;
	size_t blen;
	int sv[2];
	pid_t pid;

	(void)state;
	wbuf_init(&w);
	wbuf_put_u8(&w, REPLY_OK);
	wbuf_put_bytes(&w, "x", 1);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fake_agent(sv[1], W_PEER_ACK, w.data, w.len);
	assert_int_equal(client_call(sv[0], W_REQ_GET, "k", 1, &code, &body,
	    &blen, 5000, &e), -1);
	assert_non_null(strstr(e.msg, "unexpected frame type 44"));
	assert_null(body);
	reap(pid);

	/* A trailing byte after the body. */
	wbuf_put_u8(&w, 0);
	pid = fake_agent(sv[1], W_REPLY, w.data, w.len);
	assert_int_equal(client_call(sv[0], W_REQ_GET, "k", 1, &code, &body,
	    &blen, 5000, &e), -1);
	assert_string_equal(e.msg, "malformed reply");
	reap(pid);
	close(sv[0]);
	close(sv[1]);
	wbuf_free(&w);
}

static void
call_times_out_without_reply(void **state)
{
	uint8_t *body, code;
	struct cs_err e;
	size_t blen;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(client_call(sv[0], W_REQ_STATUS, NULL, 0, &code,
	    &body, &blen, 50, &e), -1);
	assert_non_null(strstr(e.msg, "timed out"));
	close(sv[0]);
	close(sv[1]);
}

static void
connect_reports_agent_not_running(void **state)
{
	char path[64];
	struct cs_err e;

	(void)state;
	snprintf(path, sizeof(path), "%s", unit_path("none.sock"));
	assert_int_equal(client_connect(path, "A", &e), -1);
	assert_true(strncmp(e.msg, "agent A is not running (connect ", 32)
	    == 0);
	assert_non_null(strstr(e.msg, "No such file or directory)"));
}

static void
connect_reaches_a_listening_socket(void **state)
{
	struct sockaddr_un sun;
	struct cs_err e;
	int lfd, fd;

	(void)state;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s",
	    unit_path("client.sock"));
	unlink(sun.sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(lfd != -1);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	fd = client_connect(sun.sun_path, "A", &e);
	assert_true(fd >= 0);
	close(fd);
	close(lfd);
	unlink(sun.sun_path);
}

static void
connect_rejects_overlong_path(void **state)
{
	char path[200];
	struct cs_err e;

	(void)state;
	memset(path, 'p', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(client_connect(path, "A", &e), -1);
	assert_non_null(strstr(e.msg, "too long"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(call_returns_code_and_body),
		cmocka_unit_test(call_with_empty_body),
		cmocka_unit_test(call_rejects_wrong_type_and_malformed_reply),
		cmocka_unit_test(call_times_out_without_reply),
		cmocka_unit_test(connect_reports_agent_not_running),
		cmocka_unit_test(connect_reaches_a_listening_socket),
		cmocka_unit_test(connect_rejects_overlong_path),
	};

	return cmocka_run_group_tests(tests, unit_setup, unit_teardown);
}
