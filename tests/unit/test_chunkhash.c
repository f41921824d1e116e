/* test_chunkhash.c - per-chunk SHA-256 of an append-only file: digests
 * equal the SHA-256 of each chunk whatever the append sizes, the partial
 * chunk is peeked without disturbing the state, and a data file reopened
 * (replayed) yields the same digests as the appends did. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../log/chunkhash.h"
#include "../../log/datalog.h"
#include "../../log/dlfile.h"
#include "../../crypto/sha.h"
#include "unit.h"

#define CS 4096u

static void
sizes_and_counts(void **state)
{
	(void)state;
	assert_true(chunk_size_valid(4096));
	assert_true(chunk_size_valid(4u << 20));
	assert_true(chunk_size_valid(64u << 20));
	assert_false(chunk_size_valid(2048));
	assert_false(chunk_size_valid(4097));
	assert_false(chunk_size_valid(128u << 20));
	assert_false(chunk_size_valid(0));
	assert_int_equal(chunk_count(0, CS), 0);
	assert_int_equal(chunk_count(1, CS), 1);
	assert_int_equal(chunk_count(CS, CS), 1);
	assert_int_equal(chunk_count(CS + 1, CS), 2);
	assert_null(chunkhash_new(1000));
	unsetenv("CUTSNAP_CHUNK_SIZE");
	assert_int_equal(chunk_size_default(), CHUNK_SIZE_DEFAULT);
	setenv("CUTSNAP_CHUNK_SIZE", "8192", 1);
	assert_int_equal(chunk_size_default(), 8192);
	setenv("CUTSNAP_CHUNK_SIZE", "12345", 1);	/* invalid: ignored */
	assert_int_equal(chunk_size_default(), CHUNK_SIZE_DEFAULT);
	unsetenv("CUTSNAP_CHUNK_SIZE");
}

/* Feed buf in pieces of varying sizes (1 byte to several chunks); after
 * every piece the finished digests and the peek match one-shot hashes. */
static void
digests_match_one_shot_hashes(void **state)
{
	static const size_t steps[] = { 1, 7, 4095, 4096, 1, 9000, 12288, 3 };
	size_t len = 5 * CS + 1000, off = 0, i = 0, k;
	uint8_t *buf = malloc(len), want[SHA_LEN], got[SHA_LEN];
	struct chunkhash *h = chunkhash_new(CS);

	(void)state;
	assert_non_null(buf);
	assert_non_null(h);
	for (k = 0; k < len; k++)
		buf[k] = (uint8_t)(k * 31 + k / 7);
	while (off < len) {
		size_t n = steps[i++ % 8];

		if (n > len - off)
			n = len - off;
		assert_int_equal(chunkhash_update(h, buf + off, n), 0);
		off += n;
		assert_true(chunkhash_len(h) == off);
		assert_int_equal(chunkhash_nfull(h), off / CS);
		for (k = 0; k < off / CS; k++) {
			assert_int_equal(sha256_buf(buf + k * CS, CS, want), 0);
			assert_memory_equal(chunkhash_digest(h, k), want,
			    SHA_LEN);
		}
		assert_null(chunkhash_digest(h, off / CS));
		if (off % CS != 0) {
			assert_int_equal(sha256_buf(buf + off / CS * CS,
			    off % CS, want), 0);
			assert_int_equal(chunkhash_peek(h, got), 0);
			assert_memory_equal(got, want, SHA_LEN);
		}
	}
	chunkhash_free(h);
	chunkhash_free(NULL);
	free(buf);
}

/* The chunks a live datalog kept while appending equal those computed by
 * replay when the file is reopened. */
static void
datalog_reopen_yields_same_chunks(void **state)
{
	char dir[64], path[128];
	uint8_t val[3000], (*before)[SHA_LEN], p1[SHA_LEN], p2[SHA_LEN];
	const struct chunkhash *h;
	struct datalog *dl;
	struct dl_record r;
	struct cs_err e;
	size_t i, n;

	(void)state;
	setenv("CUTSNAP_CHUNK_SIZE", "4096", 1);
	assert_int_equal(unit_mkdtemp(dir, sizeof(dir)), 0);
	snprintf(path, sizeof(path), "%s/a.data", dir);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	memset(val, 'v', sizeof(val));
	memset(&r, 0, sizeof(r));
	r.type = DL_PUT;
	r.key = (const uint8_t *)"k";
	r.klen = 1;
	r.val = val;
	r.vlen = sizeof(val);
	for (i = 0; i < 10; i++)
		assert_int_equal(datalog_append(dl, &r, &e), 0);
	assert_int_equal(datalog_sync(dl, &e), 0);
	h = datalog_chunks(dl);
	assert_int_equal(chunkhash_size(h), 4096);
	assert_true(chunkhash_len(h) == datalog_end(dl));
	n = chunkhash_nfull(h);
	assert_int_equal(n, datalog_end(dl) / 4096);
	assert_true(n >= 7);
	before = malloc(n * SHA_LEN);
	assert_non_null(before);
	for (i = 0; i < n; i++)
		memcpy(before[i], chunkhash_digest(h, i), SHA_LEN);
	assert_int_equal(chunkhash_peek(h, p1), 0);
	datalog_close(dl);

	assert_int_equal(datalog_open(path, &dl, &e), 0);
	h = datalog_chunks(dl);
	assert_int_equal(chunkhash_nfull(h), n);
	for (i = 0; i < n; i++)
		assert_memory_equal(chunkhash_digest(h, i), before[i], SHA_LEN);
	assert_int_equal(chunkhash_peek(h, p2), 0);
	assert_memory_equal(p1, p2, SHA_LEN);
	datalog_close(dl);
	assert_int_equal(unit_rmtree(dir), 0);
	free(before);
	unsetenv("CUTSNAP_CHUNK_SIZE");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_and_counts),
		cmocka_unit_test(digests_match_one_shot_hashes),
		cmocka_unit_test(datalog_reopen_yields_same_chunks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
