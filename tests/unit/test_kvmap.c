/* test_kvmap.c - the byte-string map: put/get/del, growth, deletion runs,
 * sorted iteration, binary keys, the running sum of lengths. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../log/kvmap.h"

/* Assert that key maps to the NUL-terminated value want. */
static void
expect_val(const struct kvmap *m, const char *key, const char *want)
{
	const uint8_t *v;
	size_t n;

	assert_int_equal(kvmap_get(m, key, strlen(key), &v, &n), 1);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(v, want, n);
}

static void
put_get_replace_delete(void **state)
{
	struct kvmap *m;
	const uint8_t *v;
	size_t n;

	(void)state;
	assert_non_null(m = kvmap_new());
	assert_int_equal(kvmap_count(m), 0);
	assert_int_equal(kvmap_get(m, "a", 1, &v, &n), 0);
	assert_int_equal(kvmap_del(m, "a", 1), 0);

	assert_int_equal(kvmap_put(m, "a", 1, "100", 3), 0);
	assert_int_equal(kvmap_put(m, "b", 1, "50", 2), 0);
	assert_int_equal(kvmap_count(m), 2);
	expect_val(m, "a", "100");
	expect_val(m, "b", "50");

	assert_int_equal(kvmap_put(m, "a", 1, "90", 2), 0);
	assert_int_equal(kvmap_count(m), 2);
	expect_val(m, "a", "90");

	assert_int_equal(kvmap_del(m, "a", 1), 1);
	assert_int_equal(kvmap_del(m, "a", 1), 0);
	assert_int_equal(kvmap_count(m), 1);
	assert_int_equal(kvmap_get(m, "a", 1, &v, &n), 0);
	expect_val(m, "b", "50");
	kvmap_free(m);
	kvmap_free(NULL);
}

static void
binary_and_empty_keys_and_values(void **state)
{
	struct kvmap *m;
	const uint8_t *v;
	size_t n;

	(void)state;
	assert_non_null(m = kvmap_new());
	assert_int_equal(kvmap_put(m, "", 0, "empty-key", 9), 0);
	assert_int_equal(kvmap_put(m, "k\0a", 3, "", 0), 0);
	assert_int_equal(kvmap_put(m, "k\0b", 3, "x\0y", 3), 0);
	assert_int_equal(kvmap_count(m), 3);

	assert_int_equal(kvmap_get(m, "", 0, &v, &n), 1);
	assert_int_equal(n, 9);
	assert_memory_equal(v, "empty-key", 9);
	assert_int_equal(kvmap_get(m, "k\0a", 3, &v, &n), 1);
	assert_int_equal(n, 0);
	assert_int_equal(kvmap_get(m, "k\0b", 3, &v, &n), 1);
	assert_int_equal(n, 3);
	assert_memory_equal(v, "x\0y", 3);
	/* A prefix of a key is a different key. */
	assert_int_equal(kvmap_get(m, "k", 1, &v, &n), 0);
	kvmap_free(m);
}

/* Many keys force several growths and long probe runs; deleting every
 * other one exercises backward-shift deletion across those runs. */
static void
growth_and_deletion_keep_every_key_reachable(void **state)
{
	enum { N = 5000 };
	struct kvmap *m;
	char k[32], val[32];
	const uint8_t *v;
	size_t n;
	int i;

	(void)state;
	assert_non_null(m = kvmap_new());
	for (i = 0; i < N; i++) {
		snprintf(k, sizeof(k), "key-%d", i);
		snprintf(val, sizeof(val), "%d", i * 7);
		assert_int_equal(kvmap_put(m, k, strlen(k), val, strlen(val)),
		    0);
	}
	assert_int_equal(kvmap_count(m), N);
	for (i = 0; i < N; i += 2) {
		snprintf(k, sizeof(k), "key-%d", i);
		assert_int_equal(kvmap_del(m, k, strlen(k)), 1);
	}
	assert_int_equal(kvmap_count(m), N / 2);
	for (i = 0; i < N; i++) {
		snprintf(k, sizeof(k), "key-%d", i);
		if (i % 2 == 0) {
			assert_int_equal(kvmap_get(m, k, strlen(k), &v, &n), 0);
			continue;
		}
		snprintf(val, sizeof(val), "%d", i * 7);
		expect_val(m, k, val);
	}
	/* Reinsert the deleted half: the table is consistent again. */
	for (i = 0; i < N; i += 2) {
		snprintf(k, sizeof(k), "key-%d", i);
		assert_int_equal(kvmap_put(m, k, strlen(k), "r", 1), 0);
	}
	assert_int_equal(kvmap_count(m), N);
	expect_val(m, "key-0", "r");
	expect_val(m, "key-4999", "34993");
	kvmap_free(m);
}

/* Random put/del against a plain array model. */
static void
random_operations_match_a_model(void **state)
{
	enum { K = 300, OPS = 20000 };
	struct kvmap *m;
	int model[K], i, op, key, live = 0;
	char k[16], val[16];
	const uint8_t *v;
	uint64_t bytes = 0;
	size_t n;

	(void)state;
	srand(12345);
	memset(model, -1, sizeof(model));
	assert_non_null(m = kvmap_new());
	for (op = 0; op < OPS; op++) {
		key = rand() % K;
		snprintf(k, sizeof(k), "%d", key);
		if (rand() % 3 == 0) {
			assert_int_equal(kvmap_del(m, k, strlen(k)),
			    model[key] != -1);
			if (model[key] != -1)
				live--;
			model[key] = -1;
		} else {
			snprintf(val, sizeof(val), "%d", op);
			assert_int_equal(kvmap_put(m, k, strlen(k), val,
			    strlen(val)), 0);
			if (model[key] == -1)
				live++;
			model[key] = op;
		}
	}
	assert_int_equal(kvmap_count(m), (size_t)live);
	for (i = 0; i < K; i++) {
		snprintf(k, sizeof(k), "%d", i);
		if (model[i] == -1) {
			assert_int_equal(kvmap_get(m, k, strlen(k), &v, &n), 0);
		} else {
			snprintf(val, sizeof(val), "%d", model[i]);
			expect_val(m, k, val);
			bytes += strlen(k) + strlen(val);
		}
	}
	assert_int_equal(kvmap_bytes(m), bytes);
	kvmap_free(m);
}

/* kvmap_bytes: the live entries' key and value lengths, through puts,
 * replacements (longer and shorter), values by reference and deletions. */
static void
bytes_follow_every_change(void **state)
{
	struct kvmap *m;

	(void)state;
	assert_non_null(m = kvmap_new());
	assert_int_equal(kvmap_bytes(m), 0);
	assert_int_equal(kvmap_put(m, "a", 1, "100", 3), 0);
	assert_int_equal(kvmap_bytes(m), 4);
	assert_int_equal(kvmap_put(m, "a", 1, "1000000", 7), 0);
	assert_int_equal(kvmap_bytes(m), 8);
	assert_int_equal(kvmap_put(m, "a", 1, "", 0), 0);
	assert_int_equal(kvmap_bytes(m), 1);
	assert_int_equal(kvmap_put_ref(m, "big", 3, 4096, 16u << 20), 0);
	assert_int_equal(kvmap_bytes(m), 1 + 3 + (16u << 20));
	assert_int_equal(kvmap_put(m, "big", 3, "x", 1), 0);
	assert_int_equal(kvmap_bytes(m), 1 + 3 + 1);
	assert_int_equal(kvmap_del(m, "big", 3), 1);
	assert_int_equal(kvmap_del(m, "big", 3), 0);
	assert_int_equal(kvmap_bytes(m), 1);
	assert_int_equal(kvmap_del(m, "a", 1), 1);
	assert_int_equal(kvmap_bytes(m), 0);
	kvmap_free(m);
}

static void
sorted_orders_by_bytes_then_length(void **state)
{
	static const char *want[] = { "", "a", "ab", "b", "b\x01", "ba" };
	const struct kv_entry **v;
	struct kvmap *m;
	size_t n, i;

	(void)state;
	assert_non_null(m = kvmap_new());
	assert_int_equal(kvmap_put(m, "ba", 2, "6", 1), 0);
	assert_int_equal(kvmap_put(m, "ab", 2, "3", 1), 0);
	assert_int_equal(kvmap_put(m, "b\x01", 2, "5", 1), 0);
	assert_int_equal(kvmap_put(m, "a", 1, "2", 1), 0);
	assert_int_equal(kvmap_put(m, "", 0, "1", 1), 0);
	assert_int_equal(kvmap_put(m, "b", 1, "4", 1), 0);
	assert_int_equal(kvmap_sorted(m, &v, &n), 0);
	assert_int_equal(n, 6);
	for (i = 0; i < n; i++) {
		assert_int_equal(v[i]->klen, strlen(want[i]));
		assert_memory_equal(v[i]->key, want[i], v[i]->klen);
		assert_int_equal(v[i]->vlen, 1);
		assert_int_equal(v[i]->val[0], '1' + (int)i);
	}
	free(v);

	/* An empty map gives an empty, freeable array. */
	kvmap_free(m);
	assert_non_null(m = kvmap_new());
	assert_int_equal(kvmap_sorted(m, &v, &n), 0);
	assert_int_equal(n, 0);
	free(v);
	kvmap_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(put_get_replace_delete),
		cmocka_unit_test(binary_and_empty_keys_and_values),
		cmocka_unit_test(growth_and_deletion_keep_every_key_reachable),
		cmocka_unit_test(random_operations_match_a_model),
		cmocka_unit_test(bytes_follow_every_change),
		cmocka_unit_test(sorted_orders_by_bytes_then_length),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
