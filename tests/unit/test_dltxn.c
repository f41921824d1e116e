/* test_dltxn.c - a data file's TXN and KVER records: a transaction's ops
 * round-trip through a file and replay to the same values and key
 * versions (a large value by reference included), its request id
 * remembers the reply built from its adds, malformed records are
 * corruption, and versions survive a reopen and a compaction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../log/datalog.h"
#include "../../log/dlfile.h"
#include "../../log/dlrewrite.h"
#include "../../log/reqtab.h"
#include "unit.h"

static void
op(struct wbuf *w, int kind, const char *k, const char *v)
{
	wbuf_put_u8(w, (uint8_t)kind);
	wbuf_put_bytes(w, k, strlen(k));
	if (v != NULL)
		wbuf_put_bytes(w, v, strlen(v));
}

static int
append_txn(struct datalog *dl, const struct wbuf *ops, uint32_t n,
    const uint8_t *id)
{
	struct dl_record r = { .type = DL_TXN };
	struct cs_err e;

	r.ops = ops->data;
	r.opslen = ops->len;
	r.nops = n;
	r.req_id = id;
	r.req_digest = 42;
	return datalog_append(dl, &r, &e);
}

static void
put(struct datalog *dl, const char *k, const char *v)
{
	struct dl_record r = { .type = DL_PUT };
	struct cs_err e;

	r.key = (const uint8_t *)k;
	r.klen = strlen(k);
	r.val = (const uint8_t *)v;
	r.vlen = strlen(v);
	assert_int_equal(datalog_append(dl, &r, &e), 0);
}

/* The key's version, 0 when absent; its value (read back) in val. */
static uint64_t
ver(struct datalog *dl, const char *k, char *val, size_t sz)
{
	const struct kv_entry *en;
	struct cs_err e;
	uint8_t *p;

	en = kvmap_entry(datalog_state(dl)->kv, k, strlen(k));
	if (en == NULL)
		return 0;
	assert_true(en->vlen < sz);
	if (en->val != NULL) {
		memcpy(val, en->val, en->vlen);
	} else {
		assert_int_equal(datalog_read_value(dl, en, &p, &e), 0);
		memcpy(val, p, en->vlen);
		free(p);
	}
	val[en->vlen] = '\0';
	return en->ver;
}

static char big[200];

/* a=1 (v1); then a txn: put a, add n (+5 from 7), del gone, put big
 * (200 bytes, by reference in a live file), add m (-3 from absent). */
static void
build(struct datalog *dl, const uint8_t *id)
{
	struct wbuf w;

	memset(big, 'q', sizeof(big) - 1);
	put(dl, "a", "1");
	put(dl, "n", "7");
	put(dl, "gone", "x");
	wbuf_init(&w);
	op(&w, DL_TXN_PUT, "a", "2");
	op(&w, DL_TXN_ADD, "n", "12");
	op(&w, DL_TXN_DEL, "gone", NULL);
	op(&w, DL_TXN_PUT, "big", big);
	op(&w, DL_TXN_ADD, "m", "-3");
	assert_false(w.oom);
	assert_int_equal(append_txn(dl, &w, 5, id), 0);
	wbuf_free(&w);
}

static void
check_state(struct datalog *dl)
{
	char v[256];

	assert_int_equal(ver(dl, "a", v, sizeof(v)), 2);
	assert_string_equal(v, "2");
	assert_int_equal(ver(dl, "n", v, sizeof(v)), 2);
	assert_string_equal(v, "12");
	assert_int_equal(ver(dl, "m", v, sizeof(v)), 1);
	assert_string_equal(v, "-3");
	assert_int_equal(ver(dl, "big", v, sizeof(v)), 1);
	assert_string_equal(v, big);
	/* Kept in the file, at the offset of its bytes in the TXN record. */
	assert_null(kvmap_entry(datalog_state(dl)->kv, "big", 3)->val);
	assert_int_equal(ver(dl, "gone", v, sizeof(v)), 0);
	assert_int_equal(kvmap_count(datalog_state(dl)->kv), 4);
}

static void
test_txn_replays(void **state)
{
	static const uint8_t id[REQ_ID_LEN] = { 1, 2, 3 };
	const struct reqent *en;
	struct datalog *dl;
	struct cs_err e;
	struct rbuf rb;

	(void)state;
	(void)unlink(unit_data);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	build(dl, id);
	check_state(dl);
	assert_int_equal(datalog_sync(dl, &e), 0);
	datalog_close(dl);
	/* Replayed from the file: the same values, versions and reply. */
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	check_state(dl);
	en = reqtab_find(&datalog_state(dl)->reqs, id);
	assert_non_null(en);
	assert_int_equal(en->digest, 42);
	assert_int_equal(en->vlen, 4 + 2 * 8);
	rbuf_init(&rb, (const uint8_t *)en->val, en->vlen);
	assert_int_equal(rbuf_u32(&rb), 2);
	assert_int_equal(rbuf_i64(&rb), 12);
	assert_int_equal(rbuf_i64(&rb), -3);
	assert_true(rbuf_done(&rb));
	datalog_close(dl);
	(void)unlink(unit_data);
}

static void
test_versions_survive_compaction(void **state)
{
	struct dl_rewrite_result res;
	struct timespec ts = { 0, 1000000L };
	struct dl_rewrite *rw;
	struct datalog *dl;
	struct cs_err e;
	char v[256];
	int i;

	(void)state;
	(void)unlink(unit_data);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	build(dl, NULL);
	for (i = 0; i < 5; i++)
		put(dl, "a", "again");
	assert_int_equal(datalog_sync(dl, &e), 0);
	assert_int_equal(dl_rewrite_start(dl, &rw, &e), 0);
	for (i = 0; i < 20000 && !dl_rewrite_done(rw); i++)
		nanosleep(&ts, NULL);
	assert_true(dl_rewrite_done(rw));
	assert_int_equal(dl_rewrite_finish(dl, rw, &res, &e), 0);
	assert_int_equal(res.gen, 1);
	assert_int_equal(ver(dl, "a", v, sizeof(v)), 7);
	assert_int_equal(ver(dl, "n", v, sizeof(v)), 2);
	assert_int_equal(ver(dl, "big", v, sizeof(v)), 1);
	assert_string_equal(v, big);
	datalog_close(dl);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	assert_int_equal(datalog_state(dl)->gen, 1);
	assert_int_equal(ver(dl, "a", v, sizeof(v)), 7);
	assert_string_equal(v, "again");
	assert_int_equal(ver(dl, "n", v, sizeof(v)), 2);
	assert_string_equal(v, "12");
	datalog_close(dl);
	(void)unlink(unit_data);
}

/* Each malformed record is refused before it changes anything. */
static void
test_malformed_refused(void **state)
{
	static const uint8_t id[REQ_ID_LEN] = { 9 };
	struct dl_record r = { .type = DL_KVER };
	struct datalog *dl;
	struct cs_err e;
	struct wbuf w;
	uint64_t end;

	(void)state;
	(void)unlink(unit_data);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	put(dl, "a", "1");
	end = datalog_end(dl);
	wbuf_init(&w);
	assert_int_equal(append_txn(dl, &w, 0, NULL), -1);	/* no ops */
	op(&w, 7, "a", "1");					/* kind 7 */
	assert_int_equal(append_txn(dl, &w, 1, NULL), -1);
	wbuf_reset(&w);
	op(&w, DL_TXN_ADD, "a", "1x");				/* not int */
	assert_int_equal(append_txn(dl, &w, 1, NULL), -1);
	wbuf_reset(&w);
	op(&w, DL_TXN_PUT, "a", "1");				/* n too big */
	assert_int_equal(append_txn(dl, &w, 2, NULL), -1);
	wbuf_reset(&w);
	op(&w, DL_TXN_ADD, "a", "1");
	op(&w, DL_TXN_ADD, "b", "1");
	op(&w, DL_TXN_ADD, "c", "1");		/* 3 adds: no room for a reply */
	assert_int_equal(append_txn(dl, &w, 3, id), -1);
	assert_int_equal(append_txn(dl, &w, 3, NULL), 0);	/* without id */
	r.key = (const uint8_t *)"zz";
	r.klen = 2;
	r.seq = 3;
	assert_int_equal(datalog_append(dl, &r, &e), -1);	/* not held */
	assert_true(datalog_end(dl) > end);	/* only the good one */
	assert_int_equal(kvmap_count(datalog_state(dl)->kv), 3);
	wbuf_free(&w);
	datalog_close(dl);
	(void)unlink(unit_data);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_txn_replays),
		cmocka_unit_test(test_versions_survive_compaction),
		cmocka_unit_test(test_malformed_refused),
	};

	return cmocka_run_group_tests(tests, unit_setup_data, unit_teardown);
}
