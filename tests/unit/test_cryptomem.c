/* test_cryptomem.c - OpenSSL's allocations once cryptomem is installed:
 * small ones as before, from 2 MiB up a bigbuf mapping (counted live
 * until freed); realloc keeps the contents across both kinds;
 * more big blocks than the table holds fall back to malloc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <openssl/crypto.h>

#include "../../lib/bigbuf.h"
#include "../../crypto/cryptomem.h"

#define MIB ((size_t)1 << 20)

static void
small_stays_small_big_is_mapped(void **state)
{
	long live = bigbuf_live(), nbig = cryptomem_big_allocs();
	uint8_t *s, *b;

	(void)state;
	assert_non_null(s = OPENSSL_malloc(2 * MIB - 1));
	assert_int_equal(bigbuf_live(), live);
	assert_non_null(b = OPENSSL_malloc(2 * MIB));
	assert_int_equal(bigbuf_live(), live + 1);
	assert_int_equal(cryptomem_big_allocs(), nbig + 1);
	assert_int_equal((uintptr_t)b % (2 * MIB), 0);
	memset(b, 7, 2 * MIB);
	memset(s, 8, 2 * MIB - 1);
	OPENSSL_free(s);
	assert_int_equal(bigbuf_live(), live + 1);
	OPENSSL_free(b);
	assert_int_equal(bigbuf_live(), live);
	OPENSSL_free(NULL);
}

/* Small grown past 2 MiB stays the C library's; big shrunk or grown is
 * copied into a fresh block; the bytes survive every move. */
static void
realloc_keeps_contents(void **state)
{
	long live = bigbuf_live();
	uint8_t *p;
	size_t i;

	(void)state;
	assert_non_null(p = OPENSSL_malloc(1000));
	for (i = 0; i < 1000; i++)
		p[i] = (uint8_t)i;
	assert_non_null(p = OPENSSL_realloc(p, 3 * MIB));
	assert_int_equal(bigbuf_live(), live);
	for (i = 0; i < 1000; i++)
		assert_int_equal(p[i], (uint8_t)i);
	OPENSSL_free(p);

	assert_non_null(p = OPENSSL_malloc(3 * MIB));
	assert_int_equal(bigbuf_live(), live + 1);
	p[3 * MIB - 1] = 0x5a;
	p[0] = 0xa5;
	assert_non_null(p = OPENSSL_realloc(p, 5 * MIB));
	assert_int_equal(bigbuf_live(), live + 1);
	assert_int_equal(p[3 * MIB - 1], 0x5a);
	assert_int_equal(p[0], 0xa5);
	assert_non_null(p = OPENSSL_realloc(p, 100));
	assert_int_equal(bigbuf_live(), live);
	assert_int_equal(p[0], 0xa5);
	OPENSSL_free(p);

	/* realloc to 0 of a big block frees it. */
	assert_non_null(p = OPENSSL_malloc(2 * MIB));
	assert_int_equal(bigbuf_live(), live + 1);
	assert_null(OPENSSL_realloc(p, 0));
	assert_int_equal(bigbuf_live(), live);
}

/* More big blocks live than the table holds: the rest from malloc,
 * all usable, all freed. */
static void
table_full_falls_back(void **state)
{
	enum { N = 12 };
	long live = bigbuf_live();
	uint8_t *p[N];
	int i;

	(void)state;
	for (i = 0; i < N; i++) {
		assert_non_null(p[i] = OPENSSL_malloc(2 * MIB));
		memset(p[i], i, 2 * MIB);
	}
	assert_true(bigbuf_live() > live);
	assert_true(bigbuf_live() < live + N);
	for (i = 0; i < N; i++) {
		assert_int_equal(p[i][2 * MIB - 1], i);
		OPENSSL_free(p[i]);
	}
	assert_int_equal(bigbuf_live(), live);
}

/* The process's threads now (/proc/self/status). */
static int
threads_now(void)
{
	char line[128];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	assert_true(n > 0);
	return n;
}

/* scrypt's shape (V of 64 MiB and 1 KiB): the caller writes half the
 * bytes from the bottom while the filler faults pages in (from a quarter
 * of the way up to the top, then below that quarter: over what the
 * caller has written too); every byte reads back as written, and the
 * block's untouched part as zero.
 * Freed at once after allocation, the filler stops and is reaped. */
static void
filler_keeps_what_the_caller_writes(void **state)
{
	const size_t len = 64 * MIB + 1024, half = len / 2;
	long fillers = cryptomem_fillers();
	int threads = threads_now(), round;
	uint8_t *p;
	size_t i;

	(void)state;
	assert_non_null(p = OPENSSL_malloc(len));
	for (i = 0; i < half; i++)
		p[i] = (uint8_t)(i * 31 + 7);
	/* Checked once the filler has gone over the whole block (its
	 * thread ends there), up to 30 s. */
	for (round = 0; round < 3000 && threads_now() != threads; round++)
		usleep(10000);
	assert_int_equal(threads_now(), threads);
	for (i = 0; i < half; i++)
		if (p[i] != (uint8_t)(i * 31 + 7))
			fail_msg("byte %zu changed under the filler", i);
	for (i = half; i < len; i++)
		if (p[i] != 0)
			fail_msg("byte %zu of the untouched part is %u", i, p[i]);
	OPENSSL_free(p);
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2)
		assert_int_equal(cryptomem_fillers(), fillers + 1);
	else
		assert_int_equal(cryptomem_fillers(), fillers);
	assert_int_equal(threads_now(), threads);

	for (round = 0; round < 20; round++) {
		assert_non_null(p = OPENSSL_malloc(len));
		p[0] = 1;
		p[len - 1] = 2;
		OPENSSL_free(p);
	}
	assert_int_equal(threads_now(), threads);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(small_stays_small_big_is_mapped),
		cmocka_unit_test(realloc_keeps_contents),
		cmocka_unit_test(table_full_falls_back),
		cmocka_unit_test(filler_keeps_what_the_caller_writes),
	};

	if (cryptomem_init() != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
