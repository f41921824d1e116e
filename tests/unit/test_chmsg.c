/* test_chmsg.c - channel message encoding: round trip and every malformation. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../common/chmsg.h"
#include "../../common/wire.h"

static void
roundtrip_keeps_key_and_amount(void **state)
{
	struct chmsg m;
	struct wbuf w;

	(void)state;
	wbuf_init(&w);
	chmsg_encode(&w, "acct\0x", 6, -9223372036854775807LL - 1);
	assert_int_equal(w.oom, 0);
	assert_int_equal(chmsg_decode(w.data, w.len, &m), 0);
	assert_int_equal(m.op, CHMSG_ADD);
	assert_int_equal(m.klen, 6);
	assert_memory_equal(m.key, "acct\0x", 6);
	/* The key is borrowed from the buffer, not copied. */
	assert_ptr_equal(m.key, w.data + 5);
	assert_true(m.amount == INT64_MIN);
	wbuf_free(&w);
}

static void
exact_encoding(void **state)
{
	static const uint8_t want[] = { CHMSG_ADD, 1, 0, 0, 0, 'K',
	    10, 0, 0, 0, 0, 0, 0, 0 };
	struct wbuf w;

	(void)state;
	wbuf_init(&w);
	chmsg_encode(&w, "K", 1, 10);
	assert_int_equal(w.len, sizeof(want));
	assert_memory_equal(w.data, want, sizeof(want));
	wbuf_free(&w);
}

static void
every_truncation_fails(void **state)
{
	struct chmsg m;
	struct wbuf w;
	size_t i;

	(void)state;
	wbuf_init(&w);
	chmsg_encode(&w, "balance", 7, 10);
	for (i = 0; i < w.len; i++)
		assert_int_equal(chmsg_decode(w.data, i, &m), -1);
	wbuf_free(&w);
}

static void
trailing_byte_fails(void **state)
{
	struct chmsg m;
	struct wbuf w;

	(void)state;
	wbuf_init(&w);
	chmsg_encode(&w, "k", 1, 1);
	wbuf_put_u8(&w, 0);
	assert_int_equal(chmsg_decode(w.data, w.len, &m), -1);
	wbuf_free(&w);
}

static void
wrong_op_fails(void **state)
{
	struct chmsg m;
	struct wbuf w;

	(void)state;
	wbuf_init(&w);
	chmsg_encode(&w, "k", 1, 1);
	w.data[0] = 2;
	assert_int_equal(chmsg_decode(w.data, w.len, &m), -1);
	w.data[0] = 0;
	assert_int_equal(chmsg_decode(w.data, w.len, &m), -1);
	wbuf_free(&w);
}

static void
key_length_is_capped(void **state)
{
	struct chmsg m;
	struct wbuf w;
	char *key;

	(void)state;
	key = malloc(WIRE_MAX_KEY + 1);
	assert_non_null(key);
	memset(key, 'k', WIRE_MAX_KEY + 1);
	wbuf_init(&w);
	chmsg_encode(&w, key, WIRE_MAX_KEY, 1);
	assert_int_equal(chmsg_decode(w.data, w.len, &m), 0);
	assert_int_equal(m.klen, WIRE_MAX_KEY);
	wbuf_reset(&w);
	chmsg_encode(&w, key, WIRE_MAX_KEY + 1, 1);
	assert_int_equal(chmsg_decode(w.data, w.len, &m), -1);
	wbuf_free(&w);
	free(key);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(roundtrip_keeps_key_and_amount),
		cmocka_unit_test(exact_encoding),
		cmocka_unit_test(every_truncation_fails),
		cmocka_unit_test(trailing_byte_fails),
		cmocka_unit_test(wrong_op_fails),
		cmocka_unit_test(key_length_is_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
