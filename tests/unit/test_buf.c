/* test_buf.c - the little-endian writer/reader: round trips, caps, overruns. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "../../lib/buf.h"

static void
roundtrip_every_field_type(void **state)
{
	struct wbuf w;
	struct rbuf r;
	const uint8_t *p;
	char s[16];
	size_t n;

	(void)state;
	wbuf_init(&w);
	wbuf_put_u8(&w, 0xab);
	wbuf_put_u32(&w, 0xdeadbeef);
	wbuf_put_u64(&w, 0x0102030405060708ull);
	wbuf_put_i64(&w, -42);
	wbuf_put_bytes(&w, "k\0y", 3);
	wbuf_put_str(&w, "hello");
	wbuf_put_bytes(&w, NULL, 0);
	assert_int_equal(w.oom, 0);
	assert_int_equal(w.len, 1 + 4 + 8 + 8 + 7 + 9 + 4);

	rbuf_init(&r, w.data, w.len);
	assert_int_equal(rbuf_u8(&r), 0xab);
	assert_int_equal(rbuf_u32(&r), 0xdeadbeef);
	assert_true(rbuf_u64(&r) == 0x0102030405060708ull);
	assert_true(rbuf_i64(&r) == -42);
	p = rbuf_bytes(&r, &n, 16);
	assert_int_equal(n, 3);
	assert_memory_equal(p, "k\0y", 3);
	rbuf_str(&r, s, sizeof(s));
	assert_string_equal(s, "hello");
	p = rbuf_bytes(&r, &n, 16);
	assert_int_equal(n, 0);
	assert_int_equal(r.err, 0);
	assert_true(rbuf_done(&r));
	wbuf_free(&w);
	assert_null(w.data);
}

static void
encoding_is_little_endian(void **state)
{
	static const uint8_t want[] = { 0x04, 0x03, 0x02, 0x01,
	    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01 };
	struct wbuf w;
	uint8_t t[4];

	(void)state;
	wbuf_init(&w);
	wbuf_put_u32(&w, 0x01020304);
	wbuf_put_u64(&w, 0x0102030405060708ull);
	assert_int_equal(w.len, sizeof(want));
	assert_memory_equal(w.data, want, sizeof(want));
	buf_le32_put(t, 0xa1b2c3d4);
	assert_int_equal(t[0], 0xd4);
	assert_int_equal(t[3], 0xa1);
	assert_int_equal(buf_le32_get(t), 0xa1b2c3d4);
	wbuf_free(&w);
}

static void
overrun_is_sticky_and_reads_zero(void **state)
{
	static const uint8_t b[] = { 1, 2, 3 };
	struct rbuf r;

	(void)state;
	rbuf_init(&r, b, sizeof(b));
	assert_int_equal(rbuf_u32(&r), 0);
	assert_int_equal(r.err, 1);
	/* One byte is there, but after an error every read yields zero. */
	assert_int_equal(rbuf_u8(&r), 0);
	assert_false(rbuf_done(&r));
}

static void
trailing_bytes_are_not_done(void **state)
{
	static const uint8_t b[] = { 1, 2 };
	struct rbuf r;

	(void)state;
	rbuf_init(&r, b, sizeof(b));
	assert_int_equal(rbuf_u8(&r), 1);
	assert_false(rbuf_done(&r));
	assert_int_equal(rbuf_u8(&r), 2);
	assert_true(rbuf_done(&r));
}

static void
bytes_over_cap_or_past_end_fail(void **state)
{
	struct wbuf w;
	struct rbuf r;
	size_t n;

	(void)state;
	wbuf_init(&w);
	wbuf_put_bytes(&w, "abcdef", 6);
	rbuf_init(&r, w.data, w.len);
	assert_null(rbuf_bytes(&r, &n, 5));
	assert_int_equal(n, 0);
	assert_int_equal(r.err, 1);

	/* A length prefix claiming more than the buffer holds. */
	rbuf_init(&r, w.data, w.len - 1);
	assert_null(rbuf_bytes(&r, &n, 100));
	assert_int_equal(r.err, 1);

	/* A huge length prefix must not wrap the bounds check. */
	wbuf_reset(&w);
	wbuf_put_u32(&w, 0xffffffff);
	rbuf_init(&r, w.data, w.len);
	assert_null(rbuf_bytes(&r, &n, SIZE_MAX));
	assert_int_equal(r.err, 1);
	wbuf_free(&w);
}

static void
str_rejects_too_long_and_embedded_nul(void **state)
{
	struct wbuf w;
	struct rbuf r;
	char s[4];

	(void)state;
	wbuf_init(&w);
	wbuf_put_str(&w, "abcd");	/* needs 5 bytes with the NUL */
	rbuf_init(&r, w.data, w.len);
	rbuf_str(&r, s, sizeof(s));
	assert_int_equal(r.err, 1);
	assert_string_equal(s, "");

	wbuf_reset(&w);
	wbuf_put_str(&w, "abc");
	rbuf_init(&r, w.data, w.len);
	rbuf_str(&r, s, sizeof(s));
	assert_true(rbuf_done(&r));
	assert_string_equal(s, "abc");

	wbuf_reset(&w);
	wbuf_put_bytes(&w, "a\0b", 3);
	rbuf_init(&r, w.data, w.len);
	rbuf_str(&r, s, sizeof(s));
	assert_int_equal(r.err, 1);
	wbuf_free(&w);
}

static void
wbuf_grows_and_reset_keeps_allocation(void **state)
{
	uint8_t chunk[1000];
	struct wbuf w;
	uint8_t *old;
	int i;

	(void)state;
	memset(chunk, 0x5a, sizeof(chunk));
	wbuf_init(&w);
	for (i = 0; i < 100; i++)
		wbuf_put_raw(&w, chunk, sizeof(chunk));
	assert_int_equal(w.oom, 0);
	assert_int_equal(w.len, 100000);
	assert_true(w.cap >= w.len);
	assert_int_equal(w.data[99999], 0x5a);
	old = w.data;
	wbuf_reset(&w);
	assert_int_equal(w.len, 0);
	assert_ptr_equal(w.data, old);
	wbuf_free(&w);
	wbuf_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(roundtrip_every_field_type),
		cmocka_unit_test(encoding_is_little_endian),
		cmocka_unit_test(overrun_is_sticky_and_reads_zero),
		cmocka_unit_test(trailing_bytes_are_not_done),
		cmocka_unit_test(bytes_over_cap_or_past_end_fail),
		cmocka_unit_test(str_rejects_too_long_and_embedded_nul),
		cmocka_unit_test(wbuf_grows_and_reset_keeps_allocation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
