/* test_sha.c - SHA-256 through EVP: known vectors, peek, files, hex. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../lib/fsutil.h"
#include "../../crypto/sha.h"
#include "unit.h"

#define SHA_EMPTY \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SHA_ABC \
	"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define SHA_448 \
	"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
#define MSG_448 "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"

static void
hex_of(const void *p, size_t n, char hex[SHA_HEX_LEN])
{
	uint8_t d[SHA_LEN];

	assert_int_equal(sha256_buf(p, n, d), 0);
	sha_hex(d, hex);
}

static void
known_vectors(void **state)
{
	char hex[SHA_HEX_LEN];

	(void)state;
	hex_of("", 0, hex);
	assert_string_equal(hex, SHA_EMPTY);
	hex_of("abc", 3, hex);
	assert_string_equal(hex, SHA_ABC);
	hex_of(MSG_448, strlen(MSG_448), hex);
	assert_string_equal(hex, SHA_448);
}

static void
incremental_equals_one_shot(void **state)
{
	uint8_t a[SHA_LEN], b[SHA_LEN];
	struct sha_ctx *c;
	size_t i, n = strlen(MSG_448);

	(void)state;
	c = sha_new();
	assert_non_null(c);
	for (i = 0; i < n; i++)
		assert_int_equal(sha_update(c, MSG_448 + i, 1), 0);
	assert_int_equal(sha_update(c, NULL, 0), 0);
	assert_int_equal(sha_final(c, a), 0);
	assert_int_equal(sha256_buf(MSG_448, n, b), 0);
	assert_memory_equal(a, b, SHA_LEN);
	sha_free(c);
	sha_free(NULL);
}

static void
peek_equals_final_of_same_prefix(void **state)
{
	uint8_t peek[SHA_LEN], want[SHA_LEN], fin[SHA_LEN];
	char hex[SHA_HEX_LEN];
	struct sha_ctx *c;

	(void)state;
	c = sha_new();
	assert_non_null(c);
	assert_int_equal(sha_peek(c, peek), 0);
	sha_hex(peek, hex);
	assert_string_equal(hex, SHA_EMPTY);
	assert_int_equal(sha_update(c, "ab", 2), 0);
	assert_int_equal(sha_peek(c, peek), 0);
	assert_int_equal(sha256_buf("ab", 2, want), 0);
	assert_memory_equal(peek, want, SHA_LEN);
	/* Peeking does not disturb the running state. */
	assert_int_equal(sha_peek(c, peek), 0);
	assert_memory_equal(peek, want, SHA_LEN);
	assert_int_equal(sha_update(c, "c", 1), 0);
	assert_int_equal(sha_peek(c, peek), 0);
	assert_int_equal(sha_final(c, fin), 0);
	sha_hex(fin, hex);
	assert_string_equal(hex, SHA_ABC);
	assert_memory_equal(peek, fin, SHA_LEN);
	sha_free(c);
}

static int
tmpfile_with(const void *p, size_t n)
{
	const char *path = unit_path("data");
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd != -1);
	unlink(path);
	assert_int_equal(fs_write_all(fd, p, n), 0);
	return fd;
}

static void
fd_hash_of_prefix(void **state)
{
	const size_t n = 600000;	/* more than one read chunk */
	uint8_t got[SHA_LEN], want[SHA_LEN];
	char hex[SHA_HEX_LEN];
	struct cs_err e;
	uint8_t *buf;
	size_t i;
	int fd;

	(void)state;
	buf = malloc(n);
	assert_non_null(buf);
	for (i = 0; i < n; i++)
		buf[i] = (uint8_t)(i * 31 + (i >> 9));
	fd = tmpfile_with(buf, n);
	assert_int_equal(sha256_fd(fd, n, got, &e), 0);
	assert_int_equal(sha256_buf(buf, n, want), 0);
	assert_memory_equal(got, want, SHA_LEN);
	/* A prefix, as a snapshot records it. */
	assert_int_equal(sha256_fd(fd, 300001, got, &e), 0);
	assert_int_equal(sha256_buf(buf, 300001, want), 0);
	assert_memory_equal(got, want, SHA_LEN);
	assert_int_equal(sha256_fd(fd, 0, got, &e), 0);
	sha_hex(got, hex);
	assert_string_equal(hex, SHA_EMPTY);
	/* Longer than the file. */
	assert_int_equal(sha256_fd(fd, n + 1, got, &e), -1);
	assert_non_null(strstr(e.msg, "shorter"));
	close(fd);
	/* Unreadable. */
	assert_int_equal(sha256_fd(fd, 1, got, &e), -1);
	assert_non_null(strstr(e.msg, "Bad file descriptor"));
	free(buf);
}

static void
hex_roundtrip_and_bad_input(void **state)
{
	uint8_t d[SHA_LEN], back[SHA_LEN];
	char hex[SHA_HEX_LEN], upper[SHA_HEX_LEN];
	size_t i;

	(void)state;
	for (i = 0; i < SHA_LEN; i++)
		d[i] = (uint8_t)(i * 8 + 7);
	sha_hex(d, hex);
	assert_int_equal(strlen(hex), 64);
	assert_int_equal(sha_unhex(hex, back), 0);
	assert_memory_equal(d, back, SHA_LEN);
	for (i = 0; i < 64; i++)
		upper[i] = (char)(hex[i] >= 'a' ? hex[i] - 32 : hex[i]);
	upper[64] = '\0';
	assert_int_equal(sha_unhex(upper, back), 0);
	assert_memory_equal(d, back, SHA_LEN);
	assert_int_equal(sha_unhex("", back), -1);
	assert_int_equal(sha_unhex(SHA_ABC "0", back), -1);
	hex[63] = '\0';
	assert_int_equal(sha_unhex(hex, back), -1);
	hex[63] = 'g';
	assert_int_equal(sha_unhex(hex, back), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(known_vectors),
		cmocka_unit_test(incremental_equals_one_shot),
		cmocka_unit_test(peek_equals_final_of_same_prefix),
		cmocka_unit_test(fd_hash_of_prefix),
		cmocka_unit_test(hex_roundtrip_and_bad_input),
	};

	return cmocka_run_group_tests(tests, unit_setup, unit_teardown);
}
