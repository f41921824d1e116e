/* test_datalog_ref.c - a live data file keeps large values on disk: the map
 * holds offsets, reads come from the file, and the streamed replay on open
 * (through a bounded window) rebuilds the same state and running hash. */
#include <sys/stat.h>

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

#include "../../log/datalog.h"
#include "../../log/dlfile.h"
#include "../../lib/fsutil.h"
#include "../../crypto/sha.h"
#include "unit.h"

/* Deterministic, distinct contents for value i. */
static void
fill(uint8_t *p, size_t n, unsigned i)
{
	uint32_t x = 2654435761u * (i + 1);
	size_t k;

	for (k = 0; k < n; k++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[k] = (uint8_t)x;
	}
}

static void
put(struct datalog *dl, const char *key, const uint8_t *v, size_t n)
{
	struct dl_record r = { .type = DL_PUT };
	struct cs_err e;

	r.key = (const uint8_t *)key;
	r.klen = strlen(key);
	r.val = v;
	r.vlen = n;
	if (datalog_append(dl, &r, &e) == -1)
		fail_msg("append %s: %s", key, e.msg);
}

/* The value of key as the live map gives it: inline or read back. */
static void
check_value(struct datalog *dl, const char *key, const uint8_t *want,
    size_t n, int by_ref)
{
	const struct kv_entry *ent;
	struct cs_err e;
	uint8_t *got = NULL;

	ent = kvmap_entry(datalog_state(dl)->kv, key, strlen(key));
	assert_non_null(ent);
	assert_int_equal(ent->vlen, n);
	if (by_ref) {
		assert_null(ent->val);
		if (datalog_read_value(dl, ent, &got, &e) == -1)
			fail_msg("read %s: %s", key, e.msg);
		assert_memory_equal(got, want, n);
		free(got);
	} else {
		assert_non_null(ent->val);
		assert_memory_equal(ent->val, want, n);
	}
}

static void
expect_prefix_sha_is_file_sha(struct datalog *dl)
{
	uint8_t a[SHA_LEN], b[SHA_LEN];
	struct cs_err e;
	int fd;

	assert_int_equal(datalog_flush(dl, &e), 0);
	assert_int_equal(datalog_prefix_sha(dl, a), 0);
	assert_true((fd = open(unit_data, O_RDONLY)) >= 0);
	assert_int_equal(sha256_fd(fd, datalog_end(dl), b, &e), 0);
	close(fd);
	assert_memory_equal(a, b, SHA_LEN);
}

#define NBIG 12
#define BIG (300u * 1024u)	/* 12 x 300 KiB: several replay windows */

/* Large values by reference, small ones inline; the same after reopening
 * (a streamed replay over more than one window); rewriting a key switches
 * it between the two forms. */
static void
large_values_stay_on_disk_across_reopen(void **state)
{
	static uint8_t big[NBIG][BIG];
	struct datalog *dl;
	struct cs_err e;
	char key[16];
	unsigned i, round;

	(void)state;
	unlink(unit_data);
	for (i = 0; i < NBIG; i++)
		fill(big[i], BIG, i);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	for (i = 0; i < NBIG; i++) {
		snprintf(key, sizeof(key), "k%u", i);
		put(dl, key, big[i], BIG);
		put(dl, "small", (const uint8_t *)key, strlen(key));
	}
	/* Exactly DL_INLINE_MAX stays inline; one more byte does not. */
	put(dl, "edge", big[0], DL_INLINE_MAX);
	put(dl, "edge1", big[1], DL_INLINE_MAX + 1);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < NBIG; i++) {
			snprintf(key, sizeof(key), "k%u", i);
			check_value(dl, key, big[i], BIG, 1);
		}
		check_value(dl, "small", (const uint8_t *)"k11", 3, 0);
		check_value(dl, "edge", big[0], DL_INLINE_MAX, 0);
		check_value(dl, "edge1", big[1], DL_INLINE_MAX + 1, 1);
		expect_prefix_sha_is_file_sha(dl);
		assert_int_equal(datalog_sync(dl, &e), 0);
		datalog_close(dl);
		assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
		assert_int_equal(datalog_cut_bytes(dl), 0);
	}
	/* Rewrite: a large key becomes small and a small one large. */
	put(dl, "k3", (const uint8_t *)"tiny", 4);
	put(dl, "small", big[7], BIG);
	check_value(dl, "k3", (const uint8_t *)"tiny", 4, 0);
	check_value(dl, "small", big[7], BIG, 1);
	assert_int_equal(datalog_sync(dl, &e), 0);
	datalog_close(dl);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	check_value(dl, "k3", (const uint8_t *)"tiny", 4, 0);
	check_value(dl, "small", big[7], BIG, 1);
	expect_prefix_sha_is_file_sha(dl);
	datalog_close(dl);
}

/* A large final record cut short by a crash is cut off by the streamed
 * replay, and the earlier large values still read back. */
static void
torn_large_record_is_cut(void **state)
{
	static uint8_t v[BIG];
	struct datalog *dl;
	struct cs_err e;
	uint64_t good;
	char key[16];
	unsigned i;

	(void)state;
	unlink(unit_data);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	for (i = 0; i < 5; i++) {
		fill(v, BIG, i);
		snprintf(key, sizeof(key), "k%u", i);
		put(dl, key, v, BIG);
	}
	good = datalog_end(dl);
	fill(v, BIG, 99);
	put(dl, "last", v, BIG);
	assert_int_equal(datalog_sync(dl, &e), 0);
	datalog_close(dl);
	assert_int_equal(truncate(unit_data, (off_t)(good + BIG / 2)), 0);

	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	assert_int_equal(datalog_end(dl), good);
	assert_int_equal(datalog_cut_bytes(dl), BIG / 2);
	assert_null(kvmap_entry(datalog_state(dl)->kv, "last", 4));
	fill(v, BIG, 4);
	check_value(dl, "k4", v, BIG, 1);
	expect_prefix_sha_is_file_sha(dl);
	datalog_close(dl);
}

/* A PUT appended from a file (a spooled put, its checksum computed as
 * the value arrived) writes the same bytes as one from memory: the same
 * record, so the same file, hash and state; a reopen accepts it; and the
 * value reads back through datalog_value_fd. Sizes around a copy piece. */
static void
put_from_file_is_the_same_record(void **state)
{
	static const size_t sizes[] = { DL_INLINE_MAX + 1, 256u << 10,
	    (256u << 10) + 1, 3u << 20 };
	static uint8_t v[3u << 20], got[3u << 20];
	const struct kv_entry *ent;
	struct dl_record r = { .type = DL_PUT };
	struct dl_vsrc src;
	struct datalog *dl;
	struct cs_err e;
	uint8_t a[SHA_LEN], b[SHA_LEN];
	char path[600];
	unsigned i, round;
	int fd, vfd;

	(void)state;
	snprintf(path, sizeof(path), "%s.spool", unit_data);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fill(v, sizes[i], i);
		for (round = 0; round < 2; round++) {
			unlink(unit_data);
			assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
			put(dl, "before", (const uint8_t *)"x", 1);
			if (round == 0) {
				put(dl, "k", v, sizes[i]);
			} else {
				assert_true((fd = open(path, O_RDWR | O_CREAT |
				    O_TRUNC, 0600)) >= 0);
				assert_int_equal(pwrite_all(fd, v, sizes[i], 0),
				    0);
				src.fd = fd;
				src.crc = dl_rec_crc_more(dl_put_head_crc(
				    (const uint8_t *)"k", 1, sizes[i]), v,
				    sizes[i]);
				r.key = (const uint8_t *)"k";
				r.klen = 1;
				r.vlen = sizes[i];
				r.vsrc = &src;
				if (datalog_append(dl, &r, &e) == -1)
					fail_msg("append from a file: %s", e.msg);
				close(fd);
				unlink(path);
			}
			put(dl, "after", (const uint8_t *)"y", 1);
			check_value(dl, "k", v, sizes[i], 1);
			assert_int_equal(datalog_flush(dl, &e), 0);
			assert_int_equal(datalog_prefix_sha(dl,
			    round == 0 ? a : b), 0);
			assert_non_null(ent = kvmap_entry(datalog_state(dl)->kv,
			    "k", 1));
			assert_int_equal(datalog_value_fd(dl, ent, &vfd, &e), 0);
			assert_true(vfd >= 0);
			assert_int_equal(fs_pread_all(vfd, got, sizes[i],
			    (off_t)ent->voff), 0);
			assert_memory_equal(got, v, sizes[i]);
			close(vfd);
			expect_prefix_sha_is_file_sha(dl);
			assert_int_equal(datalog_sync(dl, &e), 0);
			datalog_close(dl);
			assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
			assert_int_equal(datalog_cut_bytes(dl), 0);
			check_value(dl, "k", v, sizes[i], 1);
			datalog_close(dl);
		}
		assert_memory_equal(a, b, SHA_LEN);
	}
}

/* Offline replays (verify, restore, dump) keep every value in memory. */
static void
offline_replay_keeps_values_inline(void **state)
{
	static uint8_t v[BIG], *img;
	const struct kv_entry *ent;
	struct dl_state st;
	struct datalog *dl;
	struct cs_err e;
	struct stat sb;
	size_t valid;
	FILE *f;

	(void)state;
	unlink(unit_data);
	fill(v, BIG, 5);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	put(dl, "k", v, BIG);
	assert_int_equal(datalog_sync(dl, &e), 0);
	datalog_close(dl);
	assert_int_equal(stat(unit_data, &sb), 0);
	assert_non_null(img = malloc((size_t)sb.st_size));
	assert_non_null(f = fopen(unit_data, "rb"));
	assert_int_equal(fread(img, 1, (size_t)sb.st_size, f), sb.st_size);
	fclose(f);
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(img, (size_t)sb.st_size, "img", 0, &st,
	    &valid, &e), 0);
	assert_non_null(ent = kvmap_entry(st.kv, "k", 1));
	assert_non_null(ent->val);
	assert_memory_equal(ent->val, v, BIG);
	dl_state_free(&st);
	free(img);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(large_values_stay_on_disk_across_reopen),
		cmocka_unit_test(torn_large_record_is_cut),
		cmocka_unit_test(offline_replay_keeps_values_inline),
		cmocka_unit_test(put_from_file_is_the_same_record),
	};

	return cmocka_run_group_tests(tests, unit_setup_data, unit_teardown);
}
