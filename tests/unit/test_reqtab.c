/* test_reqtab.c - client request ids: the table (lookup, the oldest
 * forgotten first), their field on PUT and SEND records, REQS records in
 * a base section, and a live file that remembers them across a reopen
 * and a compaction. */
#include <sys/stat.h>

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

/* The id numbered k: its first 8 bytes k, the rest fixed. */
static void
id_of(uint64_t k, uint8_t id[REQ_ID_LEN])
{
	memset(id, 0xa5, REQ_ID_LEN);
	memcpy(id, &k, sizeof(k));
}

static void
table_finds_and_forgets_the_oldest_first(void **state)
{
	struct reqtab t;
	const struct reqent *en;
	uint8_t id[REQ_ID_LEN];
	uint64_t k;
	char v[24];

	(void)state;
	memset(&t, 0, sizeof(t));
	id_of(1, id);
	assert_null(reqtab_find(&t, id));
	for (k = 0; k < REQTAB_MAX + 10; k++) {
		id_of(k, id);
		snprintf(v, sizeof(v), "%llu", (unsigned long long)k);
		assert_int_equal(reqtab_add(&t, id, k * 3, v, strlen(v)), 0);
	}
	assert_int_equal(t.n, REQTAB_MAX);
	for (k = 0; k < 10; k++) {
		id_of(k, id);
		assert_null(reqtab_find(&t, id));
	}
	for (k = 10; k < REQTAB_MAX + 10; k += 997) {
		id_of(k, id);
		assert_non_null(en = reqtab_find(&t, id));
		assert_int_equal(en->digest, k * 3);
		snprintf(v, sizeof(v), "%llu", (unsigned long long)k);
		assert_int_equal(en->vlen, strlen(v));
		assert_memory_equal(en->val, v, en->vlen);
	}
	/* Oldest first: the 11th added is first now. */
	id_of(10, id);
	assert_memory_equal(reqtab_at(&t, 0)->id, id, REQ_ID_LEN);
	id_of(REQTAB_MAX + 9, id);
	assert_memory_equal(reqtab_at(&t, t.n - 1)->id, id, REQ_ID_LEN);
	reqtab_free(&t);
}

static void
digest_tells_requests_apart(void **state)
{
	(void)state;
	assert_int_equal(reqtab_digest(5, "abc", 3), reqtab_digest(5, "abc", 3));
	assert_int_not_equal(reqtab_digest(5, "abc", 3),
	    reqtab_digest(6, "abc", 3));
	assert_int_not_equal(reqtab_digest(5, "abc", 3),
	    reqtab_digest(5, "abd", 3));
}

static struct dl_record
rec_add(const char *k, const char *v, const uint8_t *id, uint64_t digest)
{
	struct dl_record r = { .type = DL_PUT };

	r.key = (const uint8_t *)k;
	r.klen = strlen(k);
	r.val = (const uint8_t *)v;
	r.vlen = strlen(v);
	r.req_id = id;
	r.req_digest = digest;
	return r;
}

static void
image(struct wbuf *w, const struct dl_record *rs, size_t n)
{
	uint8_t h[DL_HEADER_LEN];
	size_t i;

	wbuf_init(w);
	dl_header(h);
	wbuf_put_raw(w, h, sizeof(h));
	for (i = 0; i < n; i++)
		dl_encode(w, &rs[i]);
	assert_int_equal(w->oom, 0);
}

static void
records_carry_the_id_after_the_chain(void **state)
{
	uint8_t id1[REQ_ID_LEN], id2[REQ_ID_LEN], chain[DL_CHAIN_LEN];
	struct dl_record rs[3];
	const struct reqent *en;
	struct dl_state st;
	struct cs_err e;
	struct wbuf w;

	(void)state;
	id_of(1, id1);
	id_of(2, id2);
	memset(chain, 7, sizeof(chain));
	rs[0] = rec_add("a", "100", id1, 11);
	rs[1] = rec_add("a", "90", id2, 22);
	rs[1].type = DL_SEND;
	rs[1].peer = "B";
	rs[1].seq = 1;
	rs[1].msg = (const uint8_t *)"m";
	rs[1].msglen = 1;
	rs[1].chain = chain;
	rs[2] = rec_add("b", "1", NULL, 0);	/* a request without an id */
	image(&w, rs, 3);
	/* Without track_reqs: read and checked, not kept. */
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(w.data, w.len, "img", 0, &st, NULL, &e), 0);
	assert_int_equal(st.reqs.n, 0);
	dl_state_free(&st);
	assert_int_equal(dl_state_init(&st, 0), 0);
	st.track_reqs = 1;
	assert_int_equal(dl_replay(w.data, w.len, "img", 0, &st, NULL, &e), 0);
	assert_int_equal(st.reqs.n, 2);
	assert_non_null(en = reqtab_find(&st.reqs, id2));
	assert_int_equal(en->digest, 22);
	assert_memory_equal(en->val, "90", 2);
	assert_non_null(en = reqtab_find(&st.reqs, id1));
	assert_memory_equal(en->val, "100", 3);
	assert_int_equal(dl_wm_chain(&st.sent, "B")[0], 7);
	dl_state_free(&st);
	wbuf_free(&w);
}

static void
reqs_records_belong_to_the_base_section(void **state)
{
	uint8_t id[REQ_ID_LEN], gid[DL_GEN_ID_LEN] = { 1 };
	struct dl_record gen = { .type = DL_GEN, .seq = 1 }, rs[2];
	struct reqtab t;
	struct dl_state st;
	struct cs_err e;
	struct wbuf w;
	uint64_t k;
	char want[64];

	(void)state;
	memset(&t, 0, sizeof(t));
	for (k = 0; k < 5; k++) {
		id_of(k, id);
		assert_int_equal(reqtab_add(&t, id, k, "7", 1), 0);
	}
	gen.gen_id = gid;
	rs[0] = gen;
	image(&w, rs, 1);
	dl_encode_reqs(&w, &t, 1, 4);
	assert_int_equal(dl_state_init(&st, 0), 0);
	st.track_reqs = 1;
	assert_int_equal(dl_replay(w.data, w.len, "img", 0, &st, NULL, &e), 0);
	assert_int_equal(st.reqs.n, 4);
	id_of(0, id);
	assert_null(reqtab_find(&st.reqs, id));
	id_of(4, id);
	assert_non_null(reqtab_find(&st.reqs, id));
	dl_state_free(&st);
	wbuf_free(&w);

	/* Outside a base section, it is corruption. */
	rs[0] = rec_add("a", "1", NULL, 0);
	image(&w, rs, 1);
	k = w.len;
	dl_encode_reqs(&w, &t, 0, 1);
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(w.data, w.len, "img", 0, &st, NULL, &e), -1);
	snprintf(want, sizeof(want), "img: corrupt record at offset %llu",
	    (unsigned long long)k);
	assert_memory_equal(e.msg, want, strlen(want));
	assert_non_null(strstr(e.msg, "base record outside the base"));
	dl_state_free(&st);
	wbuf_free(&w);
	reqtab_free(&t);
}

static void
an_id_on_a_long_value_is_corruption(void **state)
{
	uint8_t id[REQ_ID_LEN];
	struct dl_record r;
	struct dl_state st;
	struct cs_err e;
	struct wbuf w;

	(void)state;
	id_of(3, id);
	r = rec_add("a", "123456789012345678901234", id, 1);
	image(&w, &r, 1);
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(w.data, w.len, "img", 0, &st, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "with a request id"));
	dl_state_free(&st);
	wbuf_free(&w);
}

/* Wait for the rewrite's thread, then switch. */
static void
compact(struct datalog *dl)
{
	struct dl_rewrite_result res;
	struct dl_rewrite *rw;
	struct timespec ts = { 0, 1000000L };
	struct cs_err e;
	int n = 0;

	assert_int_equal(dl_rewrite_start(dl, &rw, &e), 0);
	while (!dl_rewrite_done(rw) && n++ < 20000)
		nanosleep(&ts, NULL);
	assert_int_equal(dl_rewrite_finish(dl, rw, &res, &e), 0);
	assert_int_equal(res.gen, 1);
}

static void
live_file_remembers_ids_across_reopen_and_compaction(void **state)
{
	uint8_t id[REQ_ID_LEN];
	struct datalog *dl;
	struct dl_record r;
	struct cs_err e;
	const struct reqent *en;
	char v[24];
	uint64_t k;

	(void)state;
	unlink(unit_data);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	for (k = 0; k < 5000; k++) {
		id_of(k, id);
		snprintf(v, sizeof(v), "%llu", (unsigned long long)k);
		r = rec_add("a", v, id, k);
		assert_int_equal(datalog_append(dl, &r, &e), 0);
	}
	assert_int_equal(datalog_sync(dl, &e), 0);
	compact(dl);
	assert_int_equal(datalog_state(dl)->reqs.n, 5000);
	datalog_close(dl);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	assert_int_equal(datalog_state(dl)->gen, 1);
	assert_int_equal(datalog_state(dl)->reqs.n, 5000);
	id_of(4321, id);
	assert_non_null(en = reqtab_find(&datalog_state(dl)->reqs, id));
	assert_int_equal(en->digest, 4321);
	assert_memory_equal(en->val, "4321", 4);
	/* Oldest first, as they were added. */
	id_of(0, id);
	assert_memory_equal(reqtab_at(&datalog_state(dl)->reqs, 0)->id, id,
	    REQ_ID_LEN);
	datalog_close(dl);
	unlink(unit_data);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_finds_and_forgets_the_oldest_first),
		cmocka_unit_test(digest_tells_requests_apart),
		cmocka_unit_test(records_carry_the_id_after_the_chain),
		cmocka_unit_test(reqs_records_belong_to_the_base_section),
		cmocka_unit_test(an_id_on_a_long_value_is_corruption),
		cmocka_unit_test(live_file_remembers_ids_across_reopen_and_compaction),
	};

	umask(022);
	return cmocka_run_group_tests(tests, unit_setup_data, unit_teardown);
}
