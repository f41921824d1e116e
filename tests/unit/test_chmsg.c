/* test_chmsg.c - channel message encoding: round trip and every malformation. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../proto/chmsg.h"
#include "../../net/wire.h"

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

/* ADD_FROM names the sending key too (for a dead letter's refund). */
static void
add_from_round_trips_and_is_strict(void **state)
{
	static const uint8_t id[CHMSG_ID_LEN] = { 1, 2, 3 };
	struct chmsg m;
	struct wbuf w;
	size_t i;

	(void)state;
	wbuf_init(&w);
	chmsg_encode_from(&w, "K", 1, 10, id, "Fr", 2);
	/* op, key, amount, id, from */
	assert_int_equal(w.len, 1 + 5 + 8 + CHMSG_ID_LEN + 6);
	assert_int_equal(w.data[0], CHMSG_ADD_FROM);
	assert_int_equal(chmsg_decode(w.data, w.len, &m), 0);
	assert_int_equal(m.op, CHMSG_ADD_FROM);
	assert_int_equal(m.klen, 1);
	assert_int_equal(m.amount, 10);
	assert_non_null(m.id);
	assert_memory_equal(m.id, id, CHMSG_ID_LEN);
	assert_int_equal(m.flen, 2);
	assert_memory_equal(m.from, "Fr", 2);
	/* The amount stays right after the key, as in the other encodings. */
	assert_int_equal(w.data[6], 10);
	for (i = 0; i < w.len; i++)
		assert_int_equal(chmsg_decode(w.data, i, &m), -1);
	wbuf_free(&w);
	/* An empty sending key is not a valid ADD_FROM. */
	wbuf_init(&w);
	chmsg_encode_from(&w, "K", 1, 10, id, "", 0);
	assert_int_equal(chmsg_decode(w.data, w.len, &m), -1);
	wbuf_free(&w);
	/* ADD_ID names none. */
	wbuf_init(&w);
	chmsg_encode_id(&w, "K", 1, 10, id);
	assert_int_equal(chmsg_decode(w.data, w.len, &m), 0);
	assert_null(m.from);
	assert_int_equal(m.flen, 0);
	wbuf_free(&w);
}

static void
app_round_trips_and_is_strict(void **state)
{
	static const uint8_t want[] = { CHMSG_APP, 1, 2, 3, 4, 5, 6, 7, 8, 9,
	    10, 11, 12, 13, 14, 15, 16, 3, 0, 0, 0, 'a', 0, 'b' };
	struct chmsg_app a;
	struct chmsg m;
	struct wbuf w;
	size_t i;

	(void)state;
	wbuf_init(&w);
	chmsg_encode_app(&w, want + 1, "a\0b", 3);
	assert_int_equal(w.oom, 0);
	assert_int_equal(w.len, sizeof(want));
	assert_memory_equal(w.data, want, sizeof(want));
	assert_int_equal(chmsg_op(w.data, w.len), CHMSG_APP);
	assert_int_equal(chmsg_decode_app(w.data, w.len, &a), 0);
	assert_ptr_equal(a.id, w.data + 1);
	assert_int_equal(a.plen, 3);
	assert_memory_equal(a.payload, "a\0b", 3);
	/* Code that moves amounts never takes it for a credit. */
	assert_int_equal(chmsg_decode(w.data, w.len, &m), -1);
	for (i = 0; i < w.len; i++)
		assert_int_equal(chmsg_decode_app(w.data, i, &a), -1);
	assert_int_equal(chmsg_op(w.data, 0), -1);
	wbuf_put_u8(&w, 0);
	assert_int_equal(chmsg_decode_app(w.data, w.len, &a), -1);
	wbuf_free(&w);
	/* An empty payload is a message; a credit is not one. */
	wbuf_init(&w);
	chmsg_encode_app(&w, want + 1, "", 0);
	assert_int_equal(chmsg_decode_app(w.data, w.len, &a), 0);
	assert_int_equal(a.plen, 0);
	wbuf_free(&w);
	wbuf_init(&w);
	chmsg_encode_id(&w, "K", 1, 10, want + 1);
	assert_int_equal(chmsg_decode_app(w.data, w.len, &a), -1);
	wbuf_free(&w);
}

static void
app_payload_is_capped(void **state)
{
	size_t hdr = 1 + CHMSG_ID_LEN + 4, n = hdr + CHMSG_APP_MAX + 1;
	struct chmsg_app a;
	uint8_t *p;

	(void)state;
	p = calloc(1, n);
	assert_non_null(p);
	p[0] = CHMSG_APP;
	/* Exactly the cap decodes... */
	buf_le32_put(p + 1 + CHMSG_ID_LEN, CHMSG_APP_MAX);
	assert_int_equal(chmsg_decode_app(p, n - 1, &a), 0);
	assert_int_equal(a.plen, CHMSG_APP_MAX);
	assert_true(n - 1 == CHMSG_APP_ENC_MAX);
	/* ...one byte more, complete in the buffer, does not. */
	buf_le32_put(p + 1 + CHMSG_ID_LEN, CHMSG_APP_MAX + 1);
	assert_int_equal(chmsg_decode_app(p, n, &a), -1);
	free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(add_from_round_trips_and_is_strict),
		cmocka_unit_test(roundtrip_keeps_key_and_amount),
		cmocka_unit_test(exact_encoding),
		cmocka_unit_test(every_truncation_fails),
		cmocka_unit_test(trailing_byte_fails),
		cmocka_unit_test(wrong_op_fails),
		cmocka_unit_test(key_length_is_capped),
		cmocka_unit_test(app_round_trips_and_is_strict),
		cmocka_unit_test(app_payload_is_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
