/* test_snapuid.c - snapshot identities: random and distinct, hex round
 * trip, parsing refuses anything but 32 hex digits, the wire form. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "../../proto/snapuid.h"

static void
new_ids_are_nonzero_and_distinct(void **state)
{
	struct snapuid u[64];
	size_t i, j;

	(void)state;
	for (i = 0; i < 64; i++) {
		assert_int_equal(snapuid_new(&u[i], NULL), 0);
		assert_false(snapuid_is_zero(&u[i]));
	}
	for (i = 0; i < 64; i++)
		for (j = i + 1; j < 64; j++)
			assert_false(snapuid_eq(&u[i], &u[j]));
}

static void
hex_roundtrips(void **state)
{
	char hex[SNAPUID_HEX_LEN];
	struct snapuid u, v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(u.b); i++)
		u.b[i] = (uint8_t)(i * 17 + 1);
	snapuid_hex(&u, hex);
	assert_string_equal(hex, "0112233445566778899aabbccddeef00");
	assert_int_equal(snapuid_parse(hex, &v), 0);
	assert_true(snapuid_eq(&u, &v));
	assert_int_equal(snapuid_parse("0112233445566778899AABBCCDDEEF00", &v),
	    0);
	assert_true(snapuid_eq(&u, &v));
}

static void
parse_refuses_bad_text(void **state)
{
	static const char *const bad[] = {
		"",
		"0112233445566778899aabbccddeeff",	/* 31 digits */
		"0112233445566778899aabbccddeeff00",	/* 33 digits */
		"0112233445566778899aabbccddeefg0",	/* not hex */
		"0112233445566778899aabbccddeef 0",
		"-112233445566778899aabbccddeeff0",
	};
	struct snapuid v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(snapuid_parse(bad[i], &v), -1);
}

static void
wire_form_is_16_raw_bytes(void **state)
{
	struct snapuid u, v;
	struct wbuf w;
	struct rbuf r;

	(void)state;
	assert_int_equal(snapuid_new(&u, NULL), 0);
	wbuf_init(&w);
	snapuid_put(&w, &u);
	assert_false(w.oom);
	assert_int_equal(w.len, SNAPUID_LEN);
	assert_memory_equal(w.data, u.b, SNAPUID_LEN);
	rbuf_init(&r, w.data, w.len);
	snapuid_get(&r, &v);
	assert_true(rbuf_done(&r));
	assert_true(snapuid_eq(&u, &v));
	/* One byte short: an error, and the id reads as zero. */
	rbuf_init(&r, w.data, w.len - 1);
	snapuid_get(&r, &v);
	assert_int_equal(r.err, 1);
	assert_true(snapuid_is_zero(&v));
	wbuf_free(&w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(new_ids_are_nonzero_and_distinct),
		cmocka_unit_test(hex_roundtrips),
		cmocka_unit_test(parse_refuses_bad_text),
		cmocka_unit_test(wire_form_is_16_raw_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
