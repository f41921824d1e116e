/* test_bigbuf.c - chunk-sized buffers: aligned for O_DIRECT (and to a huge
 * page from 2 MiB up), zeroed, writable to their last byte, counted while
 * live; odd sizes and size 0 round to whole pages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../lib/bigbuf.h"

static void
sizes_are_aligned_zeroed_and_writable(void **state)
{
	static const size_t sizes[] = { 0, 1, 4095, 4096, 65537,
	    ((size_t)2 << 20) - 1, (size_t)2 << 20, ((size_t)4 << 20) + 16,
	    (size_t)9 << 20 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE), i, k, n;
	long live = bigbuf_live();
	uint8_t *p;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		n = sizes[i];
		p = bigbuf_alloc(n);
		assert_non_null(p);
		assert_int_equal(bigbuf_live(), live + 1);
		assert_int_equal((uintptr_t)p % page, 0);
		if (n >= (size_t)2 << 20)
			assert_int_equal((uintptr_t)p % ((size_t)2 << 20), 0);
		/* Zeroed, and every byte up to len (or the first) ours. */
		for (k = 0; k < n; k += 4093)
			assert_int_equal(p[k], 0);
		if (n > 0) {
			memset(p, 0xa5, n);
			assert_int_equal(p[n - 1], 0xa5);
		} else {
			p[0] = 1;
		}
		bigbuf_free(p, n);
		assert_int_equal(bigbuf_live(), live);
	}
}

/* Two live at once do not overlap; freeing NULL changes nothing. */
static void
buffers_are_distinct_and_null_is_ignored(void **state)
{
	size_t n = ((size_t)4 << 20) + 4096;
	long live = bigbuf_live();
	uint8_t *a, *b;

	(void)state;
	assert_non_null(a = bigbuf_alloc(n));
	assert_non_null(b = bigbuf_alloc(n));
	assert_int_equal(bigbuf_live(), live + 2);
	assert_true(a + n <= b || b + n <= a);
	memset(a, 1, n);
	memset(b, 2, n);
	assert_int_equal(a[n - 1], 1);
	assert_int_equal(b[0], 2);
	bigbuf_free(NULL, n);
	assert_int_equal(bigbuf_live(), live + 2);
	bigbuf_free(a, n);
	bigbuf_free(b, n);
	assert_int_equal(bigbuf_live(), live);
}

/* A size no mapping can hold fails cleanly. */
static void
impossible_size_fails(void **state)
{
	long live = bigbuf_live();

	(void)state;
	assert_null(bigbuf_alloc(SIZE_MAX));
	assert_null(bigbuf_alloc(SIZE_MAX / 2));
	assert_int_equal(bigbuf_live(), live);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_are_aligned_zeroed_and_writable),
		cmocka_unit_test(buffers_are_distinct_and_null_is_ignored),
		cmocka_unit_test(impossible_size_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
