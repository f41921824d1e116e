/* test_crcblk.c - block CRCs beside SHA-256: any range's CRC from the
 * blocks equals the CRC read byte by byte. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../log/crcblk.h"
#include "unit.h"

/* A length that ends in a short block. */
#define LEN (5 * CRCBLK_SIZE + 12345)

static uint8_t *
filled(size_t len, unsigned seed)
{
	uint8_t *p = malloc(len);
	size_t i;

	assert_non_null(p);
	srand(seed);
	for (i = 0; i < len; i++)
		p[i] = (uint8_t)rand();
	return p;
}

static void
sha_and_table(void **state)
{
	uint8_t *p = filled(LEN, 1), sha[SHA_LEN], want[SHA_LEN];
	uint32_t tbl[8];
	size_t j;

	(void)state;
	assert_int_equal(crcblk_count(LEN), 6);
	assert_int_equal(crcblk_count(CRCBLK_SIZE), 1);
	assert_int_equal(crcblk_count(0), 0);
	assert_int_equal(crcblk_sha(p, LEN, tbl, sha), 0);
	assert_int_equal(sha256_buf(p, LEN, want), 0);
	assert_memory_equal(sha, want, SHA_LEN);
	for (j = 0; j < 6; j++)
		assert_int_equal(tbl[j], crcblk_bytes(0, p + j * CRCBLK_SIZE,
		    j < 5 ? CRCBLK_SIZE : 12345));
	free(p);
}

/* The known CRC-32 of "123456789" (gzip, zlib): the one records carry. */
static void
check_value(void **state)
{
	(void)state;
	assert_int_equal(crcblk_bytes(0, (const uint8_t *)"123456789", 9),
	    0xcbf43926u);
	assert_int_equal(crcblk_bytes(crcblk_bytes(0,
	    (const uint8_t *)"1234", 4), (const uint8_t *)"56789", 5),
	    0xcbf43926u);
}

/* Ranges of every shape: inside one block, ending on or across block
 * edges, the short last block, the whole buffer, empty; continued from a
 * running CRC as the replay continues a record's across chunks. */
static void
ranges_match_bytes(void **state)
{
	uint8_t *p = filled(LEN, 2), sha[SHA_LEN];
	uint32_t tbl[8], seed;
	size_t a, b, i, n = 0;
	const size_t edges[] = { 0, 1, CRCBLK_SIZE - 1, CRCBLK_SIZE,
	    CRCBLK_SIZE + 1, 3 * CRCBLK_SIZE, 5 * CRCBLK_SIZE,
	    5 * CRCBLK_SIZE + 1, LEN - 1, LEN };

	(void)state;
	assert_int_equal(crcblk_sha(p, LEN, tbl, sha), 0);
	for (a = 0; a < sizeof(edges) / sizeof(edges[0]); a++)
		for (b = a; b < sizeof(edges) / sizeof(edges[0]); b++) {
			seed = (uint32_t)(a * 7919 + b);
			assert_int_equal(crcblk_range(seed, p, LEN, tbl,
			    edges[a], edges[b]), crcblk_bytes(seed,
			    p + edges[a], edges[b] - edges[a]));
			n++;
		}
	srand(3);
	for (i = 0; i < 2000; i++) {
		a = (size_t)rand() % (LEN + 1);
		b = a + (size_t)rand() % (LEN - a + 1);
		assert_int_equal(crcblk_range(0, p, LEN, tbl, a, b),
		    crcblk_bytes(0, p + a, b - a));
		n++;
	}
	assert_int_equal(n, 55 + 2000);
	free(p);
}

/* A table that does not match the bytes shows in the ranges that use
 * its blocks, and only in them: the ends are read. */
static void
stale_block_shows(void **state)
{
	uint8_t *p = filled(LEN, 4), sha[SHA_LEN];
	uint32_t tbl[8];

	(void)state;
	assert_int_equal(crcblk_sha(p, LEN, tbl, sha), 0);
	p[2 * CRCBLK_SIZE + 5] ^= 1;
	assert_int_not_equal(crcblk_range(0, p, LEN, tbl, CRCBLK_SIZE,
	    4 * CRCBLK_SIZE), crcblk_bytes(0, p + CRCBLK_SIZE,
	    3 * CRCBLK_SIZE));
	assert_int_equal(crcblk_range(0, p, LEN, tbl, 2 * CRCBLK_SIZE + 1,
	    3 * CRCBLK_SIZE - 1), crcblk_bytes(0, p + 2 * CRCBLK_SIZE + 1,
	    CRCBLK_SIZE - 2));
	free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sha_and_table),
		cmocka_unit_test(check_value),
		cmocka_unit_test(ranges_match_bytes),
		cmocka_unit_test(stale_block_shows),
	};

	return cmocka_run_group_tests(tests, unit_setup, unit_teardown);
}
