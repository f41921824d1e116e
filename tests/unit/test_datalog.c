/* test_datalog.c - the data file: record round trips, replay invariants,
 * torn-tail recovery versus corruption, prefixes, hashing, locking. */
#include <sys/stat.h>

#include <errno.h>
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

#include "../../log/chain.h"
#include "../../proto/chmsg.h"
#include "../../log/crcblk.h"
#include "../../log/datalog.h"
#include "../../log/dlfile.h"
#include "../../lib/fsutil.h"
#include "../../crypto/sha.h"
#include "unit.h"

/* --- record builders ------------------------------------------------------ */

static struct dl_record
rec_put(const char *k, const char *v)
{
	struct dl_record r = { .type = DL_PUT };

	r.key = (const uint8_t *)k;
	r.klen = strlen(k);
	r.val = (const uint8_t *)v;
	r.vlen = strlen(v);
	return r;
}

static struct dl_record
rec_del(const char *k)
{
	struct dl_record r = { .type = DL_DEL };

	r.key = (const uint8_t *)k;
	r.klen = strlen(k);
	return r;
}

static struct dl_record
rec_send(const char *dst, uint64_t seq, const char *k, const char *v,
    const char *msg)
{
	struct dl_record r = rec_put(k, v);

	r.type = DL_SEND;
	r.peer = dst;
	r.seq = seq;
	r.msg = (const uint8_t *)msg;
	r.msglen = strlen(msg);
	return r;
}

static struct dl_record
rec_apply(const char *src, uint64_t seq, const char *k, const char *v)
{
	struct dl_record r = rec_put(k, v);

	r.type = DL_APPLY;
	r.peer = src;
	r.seq = seq;
	return r;
}

static struct dl_record
rec_dead(const char *src, uint64_t seq, const char *k, int64_t amount,
    int reason, const char *from)
{
	struct dl_record r = { .type = DL_DEAD };

	r.peer = src;
	r.seq = seq;
	r.key = (const uint8_t *)k;
	r.klen = strlen(k);
	r.amount = amount;
	r.code = (uint8_t)reason;
	r.from = (const uint8_t *)from;
	r.flen = strlen(from);
	return r;
}

static struct dl_record
rec_retry(const char *src, uint64_t seq, const char *k, const char *v)
{
	struct dl_record r = rec_put(k, v);

	r.type = DL_RESOLVE;
	r.peer = src;
	r.seq = seq;
	r.code = DL_RESOLVE_RETRY;
	return r;
}

static struct dl_record
rec_refund(const char *src, uint64_t seq, uint64_t sseq, const char *msg)
{
	struct dl_record r = { .type = DL_RESOLVE };

	r.peer = src;
	r.seq = seq;
	r.code = DL_RESOLVE_REFUND;
	r.sseq = sseq;
	r.msg = (const uint8_t *)msg;
	r.msglen = strlen(msg);
	return r;
}

static struct dl_record
rec_ack(const char *dst, uint64_t seq)
{
	struct dl_record r = { .type = DL_ACK };

	r.peer = dst;
	r.seq = seq;
	return r;
}

static void
put_header(struct wbuf *w)
{
	uint8_t h[DL_HEADER_LEN];

	memcpy(h, "CUTSNAPL", 8);
	buf_le32_put(h + 8, 2);
	buf_le32_put(h + 12, 0);
	wbuf_put_raw(w, h, sizeof(h));
}

/* A data file image of the records rs; offs[i] is where record i starts,
 * offs[n] the end. */
static void
build(struct wbuf *w, const struct dl_record *rs, size_t n, size_t *offs)
{
	size_t i;

	wbuf_init(w);
	put_header(w);
	for (i = 0; i < n; i++) {
		if (offs)
			offs[i] = w->len;
		dl_encode(w, &rs[i]);
	}
	if (offs)
		offs[n] = w->len;
	assert_int_equal(w->oom, 0);
}

static void
expect_val(const struct dl_state *st, const char *k, const char *want)
{
	const uint8_t *v;
	size_t n;

	assert_int_equal(kvmap_get(st->kv, k, strlen(k), &v, &n), 1);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(v, want, n);
}

static void
expect_absent(const struct dl_state *st, const char *k)
{
	const uint8_t *v;
	size_t n;

	assert_int_equal(kvmap_get(st->kv, k, strlen(k), &v, &n), 0);
}

/* The bank story used by several tests: A=100, B=50 on this agent's side,
 * a transfer of 10 to agent B, a credit applied from C, an ACK. */
static const struct dl_record *
bank(size_t *n)
{
	static struct dl_record rs[7];

	rs[0] = rec_put("a", "100");
	rs[1] = rec_put("tmp", "x");
	rs[2] = rec_send("B", 1, "a", "90", "msg-1");
	rs[3] = rec_del("tmp");
	rs[4] = rec_apply("C", 1, "a", "95");
	rs[5] = rec_send("B", 2, "a", "85", "msg-2");
	rs[6] = rec_ack("B", 1);
	*n = 7;
	return rs;
}

/* --- round trip and invariants ------------------------------------------- */

static void
replay_round_trips_every_record_type(void **state)
{
	const struct dl_record *rs;
	struct dl_state st;
	struct cs_err e;
	struct wbuf w;
	size_t n, valid = 0;

	(void)state;
	rs = bank(&n);
	build(&w, rs, n, NULL);
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(w.data, w.len, "img", 0, &st, &valid, &e),
	    0);
	assert_int_equal(valid, w.len);
	assert_int_equal(st.records, 7);
	assert_int_equal(kvmap_count(st.kv), 1);
	expect_val(&st, "a", "85");
	expect_absent(&st, "tmp");
	assert_int_equal(dl_wm_get(&st.sent, "B"), 2);
	assert_int_equal(dl_wm_get(&st.applied, "C"), 1);
	assert_int_equal(dl_wm_get(&st.acked, "B"), 1);
	assert_int_equal(dl_wm_get(&st.sent, "C"), 0);
	/* The ACK dropped send 1; send 2 is still unacknowledged. */
	assert_int_equal(st.nsends, 1);
	assert_string_equal(st.sends[0].peer, "B");
	assert_int_equal(st.sends[0].seq, 2);
	assert_int_equal(st.sends[0].len, 5);
	assert_memory_equal(st.sends[0].msg, "msg-2", 5);
	dl_state_free(&st);

	/* keep_all_sends keeps acknowledged sends too, in log order. */
	assert_int_equal(dl_state_init(&st, 1), 0);
	assert_int_equal(dl_replay(w.data, w.len, "img", 0, &st, NULL, &e), 0);
	assert_int_equal(st.nsends, 2);
	assert_int_equal(st.sends[0].seq, 1);
	assert_memory_equal(st.sends[0].msg, "msg-1", 5);
	assert_int_equal(st.sends[1].seq, 2);
	dl_state_free(&st);
	wbuf_free(&w);
}

static void
encoding_matches_the_documented_layout(void **state)
{
	struct dl_record r = rec_ack("B", 7);
	struct wbuf w;

	(void)state;
	wbuf_init(&w);
	dl_encode(&w, &r);
	/* len = type(1) + str "B"(4+1) + u64(8) = 14 */
	assert_int_equal(w.len, DL_REC_HDR_LEN + 14);
	assert_int_equal(buf_le32_get(w.data), 14);
	assert_int_equal(w.data[8], DL_ACK);
	assert_int_equal(buf_le32_get(w.data + 9), 1);
	assert_int_equal(w.data[13], 'B');
	assert_int_equal(w.data[14], 7);
	wbuf_free(&w);
}

static struct dl_record
rec_fence(int on, uint64_t snap)
{
	struct dl_record r = { .type = DL_FENCE };

	r.code = (uint8_t)on;
	r.seq = snap;
	return r;
}

/* FENCE: 18 bytes on disk (header, type, on, snapshot); a replay ends
 * with the last one's state; a state other than 0 or 1 is corruption. */
static void
fence_record_round_trips(void **state)
{
	struct dl_record rs[3] = { rec_put("a", "1"), rec_fence(1, 7),
	    rec_fence(0, 0) };
	struct dl_state st;
	struct cs_err e;
	struct wbuf w;
	size_t offs[4];

	(void)state;
	build(&w, rs, 3, offs);
	assert_int_equal(offs[2] - offs[1], 18);
	assert_int_equal(w.data[offs[1] + DL_REC_HDR_LEN], DL_FENCE);
	/* The prefix that ends with the fence on: fenced from snapshot 7. */
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(w.data, offs[2], "img", 1, &st, NULL, &e),
	    0);
	assert_int_equal(st.fenced, 1);
	assert_int_equal(st.fence_snap, 7);
	dl_state_free(&st);
	/* The whole file: lifted. */
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(w.data, w.len, "img", 1, &st, NULL, &e), 0);
	assert_int_equal(st.fenced, 0);
	assert_int_equal(st.fence_snap, 0);
	assert_int_equal(st.records, 3);
	dl_state_free(&st);
	wbuf_free(&w);
}

/* Replay a two-record image and expect the second to be rejected. */
static void
expect_second_rejected(struct dl_record a, struct dl_record b,
    const char *reason)
{
	struct dl_record rs[2] = { a, b };
	struct dl_state st;
	struct cs_err e;
	struct wbuf w;
	size_t offs[3];
	char want[1024];

	build(&w, rs, 2, offs);
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(w.data, w.len, "x.data", 1, &st, NULL, &e),
	    -1);
	snprintf(want, sizeof(want), "x.data: corrupt record at offset %zu "
	    "(invalid record: %s)", offs[1], reason);
	assert_string_equal(e.msg, want);
	dl_state_free(&st);
	wbuf_free(&w);
}

static void
replay_rejects_seq_violations(void **state)
{
	(void)state;
	expect_second_rejected(rec_send("B", 1, "a", "1", "m"),
	    rec_send("B", 3, "a", "1", "m"), "send seq 3 to B, expected 2");
	expect_second_rejected(rec_apply("C", 1, "a", "1"),
	    rec_apply("C", 1, "a", "2"), "apply seq 1 from C, expected 2");
	expect_second_rejected(rec_put("a", "1"),
	    rec_send("B", 2, "a", "1", "m"), "send seq 2 to B, expected 1");
	expect_second_rejected(rec_send("B", 1, "a", "1", "m"),
	    rec_ack("B", 2), "ack seq 2 from B beyond sent seq 1");
	expect_second_rejected(rec_put("a", "1"),
	    rec_apply("bad/name", 1, "a", "1"), "invalid peer name");
	expect_second_rejected(rec_put("a", "1"), rec_fence(2, 1),
	    "fence record with state 2");
}

static void
state_check_enforces_names_and_caps(void **state)
{
	static uint8_t big[WIRE_MAX_VALUE + 1];
	char name64[65];
	struct dl_record r;
	struct dl_state st;
	struct cs_err e;

	(void)state;
	assert_int_equal(dl_state_init(&st, 0), 0);
	memset(name64, 'n', 64);
	name64[64] = '\0';
	r = rec_ack(name64, 0);
	assert_int_equal(dl_state_check(&st, &r, &e), -1);
	assert_string_equal(e.msg, "invalid peer name");
	name64[63] = '\0';		/* 63 chars: the longest valid name */
	r = rec_send(name64, 1, "k", "1", "m");
	assert_int_equal(dl_state_check(&st, &r, &e), 0);
	r = rec_send("", 1, "k", "1", "m");
	assert_int_equal(dl_state_check(&st, &r, &e), -1);

	r = rec_put("k", "v");
	r.val = big;
	r.vlen = WIRE_MAX_VALUE;
	assert_int_equal(dl_state_check(&st, &r, &e), 0);
	r.vlen = WIRE_MAX_VALUE + 1;
	assert_int_equal(dl_state_check(&st, &r, &e), -1);
	r = rec_del("k");
	r.key = big;
	r.klen = WIRE_MAX_KEY;
	assert_int_equal(dl_state_check(&st, &r, &e), 0);
	r.klen = WIRE_MAX_KEY + 1;
	assert_int_equal(dl_state_check(&st, &r, &e), -1);

	/* A rejected record leaves the state as it was. */
	r = rec_apply("C", 2, "k", "1");
	assert_int_equal(dl_state_apply(&st, &r, &e), -1);
	assert_int_equal(st.records, 0);
	assert_int_equal(kvmap_count(st.kv), 0);
	assert_int_equal(dl_wm_get(&st.applied, "C"), 0);
	dl_state_free(&st);
}

static void
older_ack_is_accepted_and_ignored(void **state)
{
	struct dl_record r;
	struct dl_state st;
	struct cs_err e;
	uint64_t i;

	(void)state;
	assert_int_equal(dl_state_init(&st, 0), 0);
	for (i = 1; i <= 3; i++) {
		r = rec_send("B", i, "a", "1", "m");
		assert_int_equal(dl_state_apply(&st, &r, &e), 0);
	}
	r = rec_ack("B", 2);
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);
	assert_int_equal(st.nsends, 1);
	assert_int_equal(st.sends[0].seq, 3);
	r = rec_ack("B", 1);
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);
	assert_int_equal(dl_wm_get(&st.acked, "B"), 2);
	assert_int_equal(st.nsends, 1);
	assert_int_equal(st.records, 5);
	dl_state_free(&st);
}

/* --- dl_int_add ------------------------------------------------------------ */

static void
expect_add(struct dl_state *st, const char *val, int64_t delta,
    const char *want)
{
	struct dl_record r;
	struct cs_err e;
	char out[24];
	int64_t res = 12345;

	if (val != NULL) {
		r = rec_put("bal", val);
		assert_int_equal(dl_state_apply(st, &r, &e), 0);
	} else {
		r = rec_del("bal");
		assert_int_equal(dl_state_apply(st, &r, &e), 0);
	}
	if (want == NULL) {
		assert_int_equal(dl_int_add(st, "bal", 3, delta, out, &res,
		    &e), -1);
		return;
	}
	assert_int_equal(dl_int_add(st, "bal", 3, delta, out, &res, &e), 0);
	assert_string_equal(out, want);
	assert_true(res == strtoll(want, NULL, 10));
}

static void
int_add_parses_strictly_and_checks_overflow(void **state)
{
	struct dl_record r;
	struct dl_state st;
	struct cs_err e;
	char out[24];

	(void)state;
	assert_int_equal(dl_state_init(&st, 0), 0);
	expect_add(&st, NULL, 0, "0");
	expect_add(&st, NULL, -7, "-7");
	expect_add(&st, "100", -30, "70");
	expect_add(&st, "-5", 5, "0");
	expect_add(&st, "-0", 1, "1");
	expect_add(&st, "007", 1, "8");
	expect_add(&st, "00000000000000000001", 1, "2");	/* 20 chars */
	expect_add(&st, "9223372036854775807", 0, "9223372036854775807");
	expect_add(&st, "-9223372036854775808", 0, "-9223372036854775808");
	expect_add(&st, "9223372036854775806", 1, "9223372036854775807");

	expect_add(&st, "9223372036854775807", 1, NULL);
	r = rec_put("bal", "9223372036854775807");
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);
	assert_int_equal(dl_int_add(&st, "bal", 3, 1, out, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "integer overflow"));
	r = rec_put("bal", "-9223372036854775808");
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);
	assert_int_equal(dl_int_add(&st, "bal", 3, -1, out, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "integer overflow"));

	expect_add(&st, "9223372036854775808", 0, NULL);
	expect_add(&st, "-9223372036854775809", 0, NULL);
	expect_add(&st, "000000000000000000001", 0, NULL);	/* 21 chars */
	expect_add(&st, "", 1, NULL);
	expect_add(&st, "-", 1, NULL);
	expect_add(&st, "+1", 1, NULL);
	expect_add(&st, " 1", 1, NULL);
	expect_add(&st, "1 ", 1, NULL);
	expect_add(&st, "1.0", 1, NULL);
	expect_add(&st, "0x10", 1, NULL);
	expect_add(&st, "--1", 1, NULL);
	r = rec_put("bal", "ten");
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);
	assert_int_equal(dl_int_add(&st, "bal", 3, 1, out, NULL, &e), -1);
	assert_string_equal(e.msg, "value of key 'bal' is not an integer");
	dl_state_free(&st);
}

/* --- replay errors and recovery ------------------------------------------- */

static void
replay_checks_the_header(void **state)
{
	struct dl_state st;
	struct cs_err e;
	struct wbuf w;

	(void)state;
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay((const uint8_t *)"", 0, "f", 1, &st, NULL,
	    &e), -1);
	assert_string_equal(e.msg, "f: empty file");
	wbuf_init(&w);
	put_header(&w);
	w.data[0] = 'X';
	assert_int_equal(dl_replay(w.data, w.len, "f", 1, &st, NULL, &e), -1);
	assert_string_equal(e.msg, "f: not a cutsnap data file");
	w.data[0] = 'C';
	w.data[8] = 3;
	assert_int_equal(dl_replay(w.data, w.len, "f", 1, &st, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "f: unsupported version 3"));
	w.data[8] = 0;
	assert_int_equal(dl_replay(w.data, w.len, "f", 1, &st, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "f: unsupported version 0"));
	/* Version 2 (with dead letters) and version 1 both read. */
	w.data[8] = 2;
	assert_int_equal(dl_replay(w.data, w.len, "f", 0, &st, NULL, &e), 0);
	w.data[8] = 1;
	assert_int_equal(dl_replay(w.data, w.len, "f", 0, &st, NULL, &e), 0);
	assert_int_equal(st.records, 0);
	/* Too short to be anything: not a data file, torn or not. */
	assert_int_equal(dl_replay((const uint8_t *)"hello", 5, "f", 1, &st,
	    NULL, &e), -1);
	assert_string_equal(e.msg, "f: not a cutsnap data file");
	dl_state_free(&st);
	wbuf_free(&w);
}

/* A torn tail at every byte offset inside the final record: the live open
 * cuts exactly that record and keeps the rest; offline strict replay
 * refuses it. */
static void
torn_tail_at_every_offset_is_cut(void **state)
{
	struct dl_record rs[4];
	const struct dl_state *st;
	struct datalog *dl;
	struct dl_state off_st;
	struct cs_err e;
	struct wbuf w;
	size_t offs[5], L, valid;
	const char *path = unit_path("torn.data");

	(void)state;
	rs[0] = rec_put("a", "100");
	rs[1] = rec_send("B", 1, "a", "90", "add a 10");
	rs[2] = rec_apply("B", 1, "b", "5");
	rs[3] = rec_put("last", "a value long enough to tear in many places");
	build(&w, rs, 4, offs);
	for (L = offs[3] + 1; L < offs[4]; L++) {
		unit_write_file(path, w.data, L);
		assert_int_equal(datalog_open(path, &dl, &e), 0);
		assert_int_equal(datalog_end(dl), offs[3]);
		assert_int_equal(datalog_synced(dl), offs[3]);
		assert_int_equal(datalog_cut_bytes(dl), L - offs[3]);
		assert_int_equal(unit_file_size(path), offs[3]);
		st = datalog_state(dl);
		assert_int_equal(st->records, 3);
		expect_val(st, "a", "90");
		expect_val(st, "b", "5");
		expect_absent(st, "last");
		assert_int_equal(dl_wm_get(&st->sent, "B"), 1);
		datalog_close(dl);

		assert_int_equal(dl_state_init(&off_st, 0), 0);
		assert_int_equal(dl_replay(w.data, L, "t", 0, &off_st, NULL,
		    &e), -1);
		assert_non_null(strstr(e.msg, "incomplete record at offset"));
		dl_state_free(&off_st);
		assert_int_equal(dl_state_init(&off_st, 0), 0);
		assert_int_equal(dl_replay(w.data, L, "t", 1, &off_st, &valid,
		    &e), 0);
		assert_int_equal(valid, offs[3]);
		dl_state_free(&off_st);
	}
	/* A complete final record whose checksum fails is torn as well. */
	w.data[offs[4] - 1] ^= 0x01;
	unit_write_file(path, w.data, w.len);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	assert_int_equal(datalog_cut_bytes(dl), offs[4] - offs[3]);
	assert_int_equal(unit_file_size(path), offs[3]);
	datalog_close(dl);
	/* After the cut the file appends and reopens cleanly. */
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	assert_int_equal(datalog_cut_bytes(dl), 0);
	rs[3] = rec_put("last", "again");
	assert_int_equal(datalog_append(dl, &rs[3], &e), 0);
	datalog_close(dl);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	expect_val(datalog_state(dl), "last", "again");
	assert_int_equal(datalog_state(dl)->records, 4);
	datalog_close(dl);
	unlink(path);
	wbuf_free(&w);
}

/* A PUT larger than the staging buffer and the replay window is written
 * from the caller's value and recovered a window at a time: the file is
 * byte for byte what dl_encode writes, the value is read back by
 * reference, a flipped byte inside it is corruption and a record torn
 * inside it is cut. */
static void
large_put_in_place_and_recovered_in_windows(void **state)
{
	static uint8_t big[3 * (1u << 20) + 7];
	const struct kv_entry *ent;
	struct dl_record rs[3];
	struct datalog *dl;
	struct cs_err e;
	struct wbuf w;
	uint8_t *got;
	size_t offs[4], i, mid;
	const char *path = unit_path("large.data");

	(void)state;
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 131 + i / 4099);
	rs[0] = rec_put("s", "1");
	rs[1] = rec_put("big", "");
	rs[1].val = big;
	rs[1].vlen = sizeof(big);
	rs[2] = rec_put("t", "2");
	build(&w, rs, 3, offs);
	unlink(path);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(datalog_append(dl, &rs[i], &e), 0);
	assert_int_equal(datalog_sync(dl, &e), 0);
	assert_int_equal(datalog_end(dl), w.len);
	datalog_close(dl);
	assert_int_equal(unit_file_size(path), w.len);
	assert_int_equal(fs_read_file(path, 1u << 24, &got, &i, &e), 0);
	assert_int_equal(i, w.len);
	assert_memory_equal(got, w.data, w.len);
	free(got);

	assert_int_equal(datalog_open(path, &dl, &e), 0);
	assert_int_equal(datalog_state(dl)->records, 3);
	expect_val(datalog_state(dl), "s", "1");
	expect_val(datalog_state(dl), "t", "2");
	ent = kvmap_entry(datalog_state(dl)->kv, "big", 3);
	assert_non_null(ent);
	assert_null(ent->val);
	assert_int_equal(datalog_read_value(dl, ent, &got, &e), 0);
	assert_memory_equal(got, big, sizeof(big));
	free(got);
	datalog_close(dl);

	/* A flipped byte in the middle of the value, a record after it. */
	mid = offs[1] + (offs[2] - offs[1]) / 2;
	w.data[mid] ^= 0x40;
	unit_write_file(path, w.data, w.len);
	assert_int_equal(datalog_open(path, &dl, &e), -1);
	assert_non_null(strstr(e.msg, "checksum mismatch"));
	w.data[mid] ^= 0x40;

	/* Torn inside the value: cut back to the record's start. */
	unit_write_file(path, w.data, mid);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	assert_int_equal(datalog_end(dl), offs[1]);
	assert_int_equal(datalog_cut_bytes(dl), mid - offs[1]);
	expect_val(datalog_state(dl), "s", "1");
	expect_absent(datalog_state(dl), "big");
	datalog_close(dl);
	unlink(path);
	wbuf_free(&w);
}

static void
all_zero_tail_is_cut(void **state)
{
	static const size_t tails[] = { 1, 7, 8, 9, 4096 };
	struct dl_record rs[2];
	struct datalog *dl;
	struct cs_err e;
	struct wbuf w;
	size_t offs[3], i, full;
	const char *path = unit_path("zero.data");

	(void)state;
	rs[0] = rec_put("a", "1");
	rs[1] = rec_put("b", "2");
	build(&w, rs, 2, offs);
	full = w.len;
	for (i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		w.len = full;
		while (w.len < full + tails[i])
			wbuf_put_u8(&w, 0);
		unit_write_file(path, w.data, w.len);
		assert_int_equal(datalog_open(path, &dl, &e), 0);
		assert_int_equal(datalog_cut_bytes(dl), tails[i]);
		assert_int_equal(datalog_end(dl), full);
		assert_int_equal(unit_file_size(path), full);
		assert_int_equal(datalog_state(dl)->records, 2);
		datalog_close(dl);
	}
	unlink(path);
	wbuf_free(&w);
}

/* A damaged byte anywhere in a record that has records after it is
 * corruption: reported with the record's offset, the file untouched. */
static void
flipped_byte_in_middle_record_is_corruption(void **state)
{
	struct dl_record rs[6];
	struct datalog *dl;
	struct cs_err e;
	struct wbuf w;
	uint8_t *img;
	size_t offs[7], b;
	char want[1024];
	const char *path = unit_path("flip.data");

	(void)state;
	rs[0] = rec_put("a", "100");
	rs[1] = rec_send("B", 1, "a", "90", "add a 10");
	rs[2] = rec_apply("B", 1, "b", "5");
	rs[3] = rec_put("c", "a middle value");
	rs[4] = rec_put("d", "4");
	rs[5] = rec_ack("B", 1);
	build(&w, rs, 6, offs);
	assert_non_null(img = malloc(w.len));
	for (b = offs[1]; b < offs[2]; b++) {
		memcpy(img, w.data, w.len);
		img[b] ^= 0xff;
		unit_write_file(path, img, w.len);
		assert_int_equal(datalog_open(path, &dl, &e), -1);
		assert_null(dl);
		snprintf(want, sizeof(want), "%s: corrupt record at offset %zu",
		    path, offs[1]);
		assert_memory_equal(e.msg, want, strlen(want));
		assert_int_equal(unit_file_size(path), w.len);
	}
	/* Each kind of damage names itself. */
	memcpy(img, w.data, w.len);
	img[offs[3] + 3] = 0x7f;		/* length beyond any record */
	unit_write_file(path, img, w.len);
	assert_int_equal(datalog_open(path, &dl, &e), -1);
	snprintf(want, sizeof(want), "%s: corrupt record at offset %zu (bad "
	    "length)", path, offs[3]);
	assert_string_equal(e.msg, want);
	memcpy(img, w.data, w.len);
	img[offs[3] + 1] ^= 0x01;		/* length past EOF */
	unit_write_file(path, img, w.len);
	assert_int_equal(datalog_open(path, &dl, &e), -1);
	assert_string_equal(e.msg, want);
	memcpy(img, w.data, w.len);
	img[offs[4] - 1] ^= 0x01;		/* payload */
	unit_write_file(path, img, w.len);
	assert_int_equal(datalog_open(path, &dl, &e), -1);
	snprintf(want, sizeof(want), "%s: corrupt record at offset %zu "
	    "(checksum mismatch)", path, offs[3]);
	assert_string_equal(e.msg, want);
	assert_int_equal(unit_file_size(path), w.len);
	free(img);
	unlink(path);
	wbuf_free(&w);
}

/* Every prefix that ends on a record boundary is a valid data file
 * holding exactly the records before it; no other prefix is. */
static void
every_record_boundary_prefix_replays(void **state)
{
	const struct dl_record *rs;
	struct dl_state st;
	struct cs_err e;
	struct wbuf w;
	size_t n, i, L, offs[8];

	(void)state;
	rs = bank(&n);
	build(&w, rs, n, offs);
	for (i = 0; i <= n; i++) {
		assert_int_equal(dl_state_init(&st, 0), 0);
		assert_int_equal(dl_replay(w.data, offs[i], "p", 0, &st, NULL,
		    &e), 0);
		assert_int_equal(st.records, i);
		dl_state_free(&st);
	}
	for (i = 0; i < n; i++) {
		for (L = offs[i] + 1; L < offs[i + 1]; L++) {
			assert_int_equal(dl_state_init(&st, 0), 0);
			assert_int_equal(dl_replay(w.data, L, "p", 0, &st,
			    NULL, &e), -1);
			dl_state_free(&st);
		}
	}
	/* The state at the boundary after the first SEND. */
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(w.data, offs[3], "p", 0, &st, NULL, &e), 0);
	expect_val(&st, "a", "90");
	expect_val(&st, "tmp", "x");
	assert_int_equal(dl_wm_get(&st.sent, "B"), 1);
	assert_int_equal(st.nsends, 1);
	dl_state_free(&st);
	wbuf_free(&w);
}

/* The image held in separate pieces of psize bytes each, as verify holds
 * a recorded file in chunk buffers: piece_view gives the bytes in place
 * when one piece holds them, piece_read copies them across pieces. */
struct pieces {
	uint8_t *p[64];
	size_t n, psize, len;
	size_t views, reads;
	int no_view;		/* piece_view always declines */
};

static const uint8_t *
piece_view(void *ctx, uint64_t off, size_t n)
{
	struct pieces *ps = ctx;
	size_t k = (size_t)off / ps->psize;

	if (ps->no_view || n == 0 || off + n > (k + 1) * ps->psize)
		return NULL;
	ps->views++;
	return ps->p[k] + (off - k * ps->psize);
}

static int
piece_read(void *ctx, uint64_t off, size_t n, uint8_t *dst)
{
	struct pieces *ps = ctx;
	size_t k, at, take;

	ps->reads++;
	if (off + n > ps->len) {
		errno = EIO;
		return -1;
	}
	while (n > 0) {
		k = (size_t)off / ps->psize;
		at = (size_t)off - k * ps->psize;
		take = ps->psize - at < n ? ps->psize - at : n;
		memcpy(dst, ps->p[k] + at, take);
		dst += take;
		off += take;
		n -= take;
	}
	return 0;
}

/* dl_replay_read with a view replays the same state as dl_replay of the
 * whole image, whatever the pieces: records within a piece are taken in
 * place (a wrong offset into the piece would fail their checksums), the
 * others through the window; with one piece nothing is copied, and a
 * view that declines everything leaves it all to the reads. */
static void
replay_read_takes_bytes_in_place_or_through_the_window(void **state)
{
	static const size_t sizes[] = { 8, 16, 33, 64, 4096 };
	const struct dl_record *rs;
	struct pieces ps;
	struct dl_state st;
	struct cs_err e;
	struct wbuf w;
	size_t n, i, k, runs = 0;

	(void)state;
	rs = bank(&n);
	build(&w, rs, n, NULL);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]) * 2; i++) {
		memset(&ps, 0, sizeof(ps));
		ps.psize = sizes[i / 2];
		ps.no_view = i % 2;
		ps.len = w.len;
		ps.n = (w.len + ps.psize - 1) / ps.psize;
		assert_true(ps.n <= 64);
		for (k = 0; k < ps.n; k++) {
			assert_non_null(ps.p[k] = malloc(ps.psize));
			memset(ps.p[k], 0xee, ps.psize);
			memcpy(ps.p[k], w.data + k * ps.psize,
			    w.len - k * ps.psize < ps.psize ?
			    w.len - k * ps.psize : ps.psize);
		}
		assert_int_equal(dl_state_init(&st, 0), 0);
		assert_int_equal(dl_replay_read(w.len, "v", piece_read,
		    piece_view, NULL, &ps, &st, NULL, &e), 0);
		assert_int_equal(st.records, 7);
		expect_val(&st, "a", "85");
		expect_absent(&st, "tmp");
		assert_int_equal(st.nsends, 1);
		assert_memory_equal(st.sends[0].msg, "msg-2", 5);
		if (ps.no_view) {
			assert_int_equal(ps.views, 0);
			assert_true(ps.reads > 0);
		} else {
			assert_true(ps.views > 0);
		}
		if (!ps.no_view && ps.n == 1)
			assert_int_equal(ps.reads, 0);
		dl_state_free(&st);
		for (k = 0; k < ps.n; k++)
			free(ps.p[k]);
		runs++;
	}
	assert_int_equal(runs, 10);
	wbuf_free(&w);
}

/* A reader that tells payload checksums (as verify does from its chunks'
 * block checksums): mode 0 the true one, 1 a wrong one, 2 none. */
struct crcsrc {
	struct pieces ps;
	int mode;
	size_t asked, viewed;	/* crc calls; bytes given by view */
	uint64_t minread;	/* the lowest offset read (copied) */
};

static int
crc_of_pieces(void *ctx, uint64_t off, size_t n, uint32_t *out)
{
	struct crcsrc *c = ctx;
	uint8_t *tmp;

	c->asked++;
	if (c->mode == 2)
		return -1;
	assert_non_null(tmp = malloc(n));
	assert_int_equal(piece_read(&c->ps, off, n, tmp), 0);
	c->ps.reads--;
	*out = crcblk_bytes(0, tmp, n) ^ (c->mode == 1 ? 1u : 0u);
	free(tmp);
	return 0;
}

static const uint8_t *
crc_view(void *ctx, uint64_t off, size_t n)
{
	struct crcsrc *c = ctx;
	const uint8_t *p = piece_view(&c->ps, off, n);

	if (p != NULL)
		c->viewed += n;
	return p;
}

static int
crc_read(void *ctx, uint64_t off, size_t n, uint8_t *dst)
{
	struct crcsrc *c = ctx;

	if (off < c->minread)
		c->minread = off;
	return piece_read(&c->ps, off, n, dst);
}

static int
keep_only_a(void *ctx, const uint8_t *key, size_t klen)
{
	(void)ctx;
	return klen == 1 && key[0] == 'a';
}

/* Replaying large PUTs with a reader that tells their checksums: the
 * state is the same as reading them; with the true checksum a PUT whose
 * value is not kept is applied from its head (its value's bytes never
 * given), a kept one is read; a wrong or missing checksum makes the
 * replay read the record as ever; a damaged record is still caught. */
static void
replay_read_takes_checksums_from_the_reader(void **state)
{
	static struct dl_record rs[4];
	struct dl_state st;
	struct crcsrc c;
	struct cs_err e;
	struct wbuf w;
	size_t offs[5], k, mode, flip, runs = 0;
	char *big = malloc(300000), *big2 = malloc(200000);

	(void)state;
	assert_non_null(big);
	assert_non_null(big2);
	memset(big, 'x', 300000 - 1);
	big[300000 - 1] = '\0';
	memset(big2, 'y', 200000 - 1);
	big2[200000 - 1] = '\0';
	rs[0] = rec_put("a", "100");
	rs[1] = rec_put("t1", big);
	rs[2] = rec_put("a", big2);
	rs[3] = rec_put("t2", "small");
	build(&w, rs, 4, offs);
	for (flip = 0; flip < 2; flip++)
		for (mode = 0; mode < 3; mode++) {
			memset(&c, 0, sizeof(c));
			c.mode = (int)mode;
			c.minread = UINT64_MAX;
			c.ps.psize = 65536;
			c.ps.len = w.len;
			c.ps.n = (w.len + c.ps.psize - 1) / c.ps.psize;
			assert_true(c.ps.n <= 64);
			for (k = 0; k < c.ps.n; k++) {
				assert_non_null(c.ps.p[k] = calloc(1,
				    c.ps.psize));
				memcpy(c.ps.p[k], w.data + k * c.ps.psize,
				    w.len - k * c.ps.psize < c.ps.psize ?
				    w.len - k * c.ps.psize : c.ps.psize);
			}
			if (flip) {	/* a bit of t1's value */
				k = (offs[1] + 150000) / c.ps.psize;
				c.ps.p[k][(offs[1] + 150000) % c.ps.psize] ^= 1;
			}
			assert_int_equal(dl_state_init(&st, 0), 0);
			st.keep = keep_only_a;
			if (flip) {
				assert_int_equal(dl_replay_read(w.len, "v",
				    crc_read, crc_view, crc_of_pieces, &c, &st,
				    NULL, &e), -1);
				assert_non_null(strstr(e.msg, "checksum "
				    "mismatch"));
			} else {
				assert_int_equal(dl_replay_read(w.len, "v",
				    crc_read, crc_view, crc_of_pieces, &c, &st,
				    NULL, &e), 0);
				assert_int_equal(st.records, 4);
				expect_val(&st, "a", big2);
				expect_absent(&st, "t1");
				/* Asked for both large PUTs, not the small. */
				assert_int_equal(c.asked, 2);
				/* t1's value never given with the true
				 * checksum (the kept one from offs[2] on is
				 * read across pieces); read otherwise. */
				if (mode == 0) {
					assert_true(c.viewed < 10000);
					assert_true(c.minread >= offs[2]);
				} else {
					assert_true(c.minread < offs[2]);
				}
			}
			dl_state_free(&st);
			for (k = 0; k < c.ps.n; k++)
				free(c.ps.p[k]);
			runs++;
		}
	assert_int_equal(runs, 6);
	wbuf_free(&w);
	free(big);
	free(big2);
}

/* --- the live file ------------------------------------------------------- */

struct seen {
	uint64_t seq[8];
	size_t n;
};

static int
note_send(void *ctx, uint64_t seq, const uint8_t *msg, size_t len,
    const uint8_t *chain)
{
	struct seen *s = ctx;

	(void)msg;
	(void)len;
	(void)chain;
	assert_true(s->n < 8);
	s->seq[s->n++] = seq;
	return 0;
}

/* Reading back from the first unacknowledged send's offset finds exactly
 * the sends to dst with seq >= from (here: lo..hi), in order. */
static void
expect_sends_read_back(struct datalog *dl, const char *dst, uint64_t lo,
    uint64_t hi)
{
	const struct dl_state *st = datalog_state(dl);
	uint64_t off = dl_wm_get(&st->sendoff, dst), seq;
	struct seen s = { { 0 }, 0 };
	struct cs_err e;

	assert_true(off >= DL_HEADER_LEN);
	assert_int_equal(datalog_read_sends(dl, dst, &off, lo, note_send, &s,
	    &e), 0);
	assert_int_equal(off, datalog_synced(dl));
	assert_int_equal(s.n, hi - lo + 1);
	for (seq = lo; seq <= hi; seq++)
		assert_int_equal(s.seq[seq - lo], seq);
}

static void
expect_prefix_sha_is_file_sha(struct datalog *dl, const char *path)
{
	uint8_t *data, want[SHA_LEN], got[SHA_LEN];
	struct cs_err e;
	size_t len;

	assert_int_equal(fs_read_file(path, 1u << 24, &data, &len, &e), 0);
	assert_int_equal(len, datalog_end(dl));
	assert_int_equal(sha256_buf(data, len, want), 0);
	assert_int_equal(datalog_prefix_sha(dl, got), 0);
	assert_memory_equal(got, want, SHA_LEN);
	free(data);
}

static void
live_appends_sync_reopen_and_hash(void **state)
{
	const struct dl_record *rs;
	struct dl_record bad;
	struct datalog *dl;
	const struct dl_state *st;
	struct cs_err e;
	struct stat sb;
	struct wbuf w;
	size_t n, i, offs[8];
	const char *path = unit_path("live.data");

	(void)state;
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(datalog_end(dl), DL_HEADER_LEN);
	assert_int_equal(datalog_synced(dl), DL_HEADER_LEN);
	expect_prefix_sha_is_file_sha(dl, path);

	rs = bank(&n);
	build(&w, rs, n, offs);
	for (i = 0; i < n; i++) {
		assert_int_equal(datalog_append(dl, &rs[i], &e), 0);
		assert_int_equal(datalog_end(dl), offs[i + 1]);
		/* Staged in memory until a flush writes it. */
		assert_int_equal(unit_file_size(path), offs[i]);
		assert_int_equal(datalog_flush(dl, &e), 0);
		assert_int_equal(unit_file_size(path), offs[i + 1]);
		expect_prefix_sha_is_file_sha(dl, path);
	}
	/* Appends are written but not yet durable until the sync. */
	assert_int_equal(datalog_synced(dl), DL_HEADER_LEN);
	assert_int_equal(datalog_sync(dl, &e), 0);
	assert_int_equal(datalog_synced(dl), w.len);

	/* The file holds exactly what dl_encode produces. */
	{
		uint8_t *data;
		size_t len;

		assert_int_equal(fs_read_file(path, 1u << 20, &data, &len, &e),
		    0);
		assert_int_equal(len, w.len);
		assert_memory_equal(data, w.data, len);
		free(data);
	}

	/* An invalid record changes neither file nor state. */
	bad = rec_send("B", 5, "a", "0", "m");
	assert_int_equal(datalog_append(dl, &bad, &e), -1);
	assert_string_equal(e.msg, "send seq 5 to B, expected 3");
	assert_int_equal(datalog_end(dl), w.len);
	assert_int_equal(unit_file_size(path), w.len);
	assert_int_equal(datalog_state(dl)->records, n);
	datalog_close(dl);

	/* Reopening rebuilds the same state. */
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	st = datalog_state(dl);
	assert_int_equal(datalog_cut_bytes(dl), 0);
	assert_int_equal(datalog_end(dl), w.len);
	assert_int_equal(st->records, n);
	expect_val(st, "a", "85");
	assert_int_equal(dl_wm_get(&st->sent, "B"), 2);
	assert_int_equal(dl_wm_get(&st->applied, "C"), 1);
	/* A live file keeps no sends in memory: they are read back. */
	assert_int_equal(st->nsends, 0);
	expect_sends_read_back(dl, "B", 2, 2);
	expect_prefix_sha_is_file_sha(dl, path);
	datalog_close(dl);
	datalog_close(NULL);
	unlink(path);
	wbuf_free(&w);
}

struct stop_at {
	uint64_t seq[16];
	size_t n, stop;		/* stop after this many (0: never) */
};

static int
note_until(void *ctx, uint64_t seq, const uint8_t *msg, size_t len,
    const uint8_t *chain)
{
	struct stop_at *s = ctx;

	assert_null(chain);	/* these test records carry none */
	assert_true(s->n < 16);
	assert_int_equal(len, 5);
	assert_memory_equal(msg, "msg-", 4);
	s->seq[s->n++] = seq;
	return s->stop != 0 && s->n == s->stop;
}

/* A live file keeps no sends in memory; they are read back from the
 * file: only durable ones, to one peer, from a cursor that goes on where
 * the last read stopped, with each record's checksum checked. */
static void
sends_are_read_back_from_the_file(void **state)
{
	const char *path = unit_path("sends.data");
	struct dl_record r;
	struct datalog *dl;
	struct stop_at s;
	struct cs_err e;
	uint64_t off, mid;
	char m[16];
	int fd, i;

	(void)state;
	unlink(path);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	r = rec_put("a", "100");
	assert_int_equal(datalog_append(dl, &r, &e), 0);
	for (i = 1; i <= 4; i++) {
		snprintf(m, sizeof(m), "msg-%d", i);
		r = rec_send("B", (uint64_t)i, "a", "90", m);
		assert_int_equal(datalog_append(dl, &r, &e), 0);
		r = rec_send("C", (uint64_t)i, "a", "80", m);
		assert_int_equal(datalog_append(dl, &r, &e), 0);
	}
	off = dl_wm_get(&datalog_state(dl)->sendoff, "B");
	assert_int_equal(datalog_state(dl)->nsends, 0);

	/* Not durable yet: nothing is read, the cursor stays. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(datalog_read_sends(dl, "B", &off, 1, note_until, &s,
	    &e), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(off, dl_wm_get(&datalog_state(dl)->sendoff, "B"));

	/* Durable: B's sends from 2 on, two at a time. */
	assert_int_equal(datalog_sync(dl, &e), 0);
	memset(&s, 0, sizeof(s));
	s.stop = 2;
	assert_int_equal(datalog_read_sends(dl, "B", &off, 2, note_until, &s,
	    &e), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.seq[0], 2);
	assert_int_equal(s.seq[1], 3);
	mid = off;
	memset(&s, 0, sizeof(s));
	assert_int_equal(datalog_read_sends(dl, "B", &off, 4, note_until, &s,
	    &e), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.seq[0], 4);
	assert_int_equal(off, datalog_synced(dl));

	/* An ACK moves the first unacknowledged send; the next SEND after
	 * a full ACK is where the cursor starts again. */
	r = rec_ack("B", 4);
	assert_int_equal(datalog_append(dl, &r, &e), 0);
	r = rec_send("B", 5, "a", "70", "msg-5");
	assert_int_equal(datalog_append(dl, &r, &e), 0);
	assert_int_equal(datalog_sync(dl, &e), 0);
	assert_int_equal(dl_wm_get(&datalog_state(dl)->sendoff, "B"),
	    datalog_last_off(dl));

	/* A damaged record is an error, never skipped. */
	assert_true((fd = open(path, O_RDWR)) >= 0);
	assert_int_equal(pwrite(fd, "X", 1, (off_t)mid + DL_REC_HDR_LEN + 3),
	    1);
	close(fd);
	off = mid;
	memset(&s, 0, sizeof(s));
	assert_int_equal(datalog_read_sends(dl, "B", &off, 1, note_until, &s,
	    &e), -1);
	assert_non_null(strstr(e.msg, "corrupt record"));
	datalog_close(dl);
	unlink(path);
}

/* A live file keeps no SENDs in memory, yet the history check at a
 * WELCOME needs the chain at any unacknowledged seq: it is read back from
 * the SEND record; an ACK record carries the chain at its seq. */
static void
chains_of_unacknowledged_sends_are_read_back(void **state)
{
	const char *path = unit_path("chains.data");
	uint8_t ch[6][DL_CHAIN_LEN];
	const uint8_t *got;
	struct dl_record r;
	struct datalog *dl;
	struct cs_err e;
	char m[16];
	int i;

	(void)state;
	unlink(path);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	for (i = 1; i <= 5; i++) {
		memset(ch[i], 0x10 * i, DL_CHAIN_LEN);
		snprintf(m, sizeof(m), "msg-%d", i);
		r = rec_send("B", (uint64_t)i, "a", "90", m);
		r.chain = ch[i];
		assert_int_equal(datalog_append(dl, &r, &e), 0);
	}
	r = rec_ack("B", 2);
	r.chain = ch[2];
	assert_int_equal(datalog_append(dl, &r, &e), 0);
	assert_int_equal(datalog_sync(dl, &e), 0);
	assert_memory_equal(dl_wm_chain(&datalog_state(dl)->acked, "B"), ch[2],
	    DL_CHAIN_LEN);
	for (i = 2; i <= 5; i++) {
		assert_int_equal(chain_sent_at(datalog_state(dl), "B",
		    (uint64_t)i, &got), 1);
		assert_non_null(got);
		assert_memory_equal(got, ch[i], DL_CHAIN_LEN);
	}
	/* Before the acknowledged seq: no longer held. */
	assert_int_equal(chain_sent_at(datalog_state(dl), "B", 1, &got), 0);
	datalog_close(dl);

	/* Reopened, the ACK record's chain comes back with it. */
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	assert_memory_equal(dl_wm_chain(&datalog_state(dl)->acked, "B"), ch[2],
	    DL_CHAIN_LEN);
	assert_int_equal(chain_sent_at(datalog_state(dl), "B", 3, &got), 1);
	assert_memory_equal(got, ch[3], DL_CHAIN_LEN);
	datalog_close(dl);
	unlink(path);
}

static void
lock_excludes_a_second_open(void **state)
{
	struct datalog *dl, *dl2 = (struct datalog *)1;
	struct cs_err e;
	char want[1024];
	const char *p = unit_path("lock.data");
	char path[512];

	(void)state;
	snprintf(path, sizeof(path), "%s", p);
	assert_int_equal(datalog_check_unlocked(path, &e), 0);	/* absent */
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	assert_int_equal(datalog_open(path, &dl2, &e), -1);
	assert_null(dl2);
	snprintf(want, sizeof(want), "data file %s is locked by another "
	    "process (is its agent running?)", path);
	assert_string_equal(e.msg, want);
	assert_int_equal(datalog_check_unlocked(path, &e), -1);
	snprintf(want, sizeof(want), "agent running: data file %s is locked",
	    path);
	assert_string_equal(e.msg, want);
	datalog_close(dl);
	assert_int_equal(datalog_check_unlocked(path, &e), 0);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	datalog_close(dl);
	unlink(path);
}

static void
open_refuses_symlinks_and_foreign_files(void **state)
{
	struct datalog *dl;
	struct cs_err e;
	char target[512];

	(void)state;
	snprintf(target, sizeof(target), "%s", unit_path("target.data"));
	unit_write_file(target, "", 0);
	assert_int_equal(symlink(target, unit_path("link.data")), 0);
	assert_int_equal(datalog_open(unit_path("link.data"), &dl, &e), -1);
	assert_non_null(strstr(e.msg, "is a symbolic link"));
	assert_non_null(strstr(e.msg, "real path"));
	unlink(unit_path("link.data"));

	unit_write_file(target, "#!/bin/sh\necho not a data file\n", 31);
	assert_int_equal(datalog_open(target, &dl, &e), -1);
	assert_non_null(strstr(e.msg, "not a cutsnap data file"));
	assert_int_equal(unit_file_size(target), 31);

	/* A header torn short is a file whose creation was cut short. */
	unit_write_file(target, "CUTSN", 5);
	assert_int_equal(datalog_open(target, &dl, &e), 0);
	assert_int_equal(datalog_end(dl), DL_HEADER_LEN);
	assert_int_equal(unit_file_size(target), DL_HEADER_LEN);
	datalog_close(dl);
	unlink(target);
}

/* --- dead letters ------------------------------------------------------- */

/* A dead letter story: C's seq 1 applied, seq 2 dead (text), seq 3 dead
 * (overflow), seq 2 retried, seq 3 refunded as message 1 on self->C. */
static const struct dl_record *
dead_story(size_t *n)
{
	static struct dl_record rs[7];

	rs[0] = rec_put("s", "text");
	rs[1] = rec_apply("C", 1, "a", "5");
	rs[2] = rec_dead("C", 2, "s", 7, DL_DEAD_NOT_INT, "bal");
	rs[3] = rec_dead("C", 3, "a", 9, DL_DEAD_OVERFLOW, "");
	rs[4] = rec_put("s", "0");
	rs[5] = rec_retry("C", 2, "s", "7");
	rs[6] = rec_refund("C", 3, 1, "refund-msg");
	*n = 7;
	return rs;
}

static void
dead_letters_round_trip_and_replay(void **state)
{
	const struct dl_record *rs;
	const struct dl_dead *d;
	struct dl_state st;
	struct cs_err e;
	struct wbuf w;
	size_t n, offs[8], k;

	(void)state;
	rs = dead_story(&n);
	build(&w, rs, n, offs);
	for (k = 0; k <= n; k++) {
		/* Every prefix replays, with the dead letters so far. */
		assert_int_equal(dl_state_init(&st, 0), 0);
		assert_int_equal(dl_replay(w.data, offs[k], "d", 0, &st, NULL,
		    &e), 0);
		assert_int_equal(st.ndead, k < 3 ? 0 : k < 4 ? 1 : 2);
		assert_int_equal(st.nopen, k < 3 ? 0 : k < 4 ? 1 : k < 6 ? 2 :
		    k < 7 ? 1 : 0);
		assert_int_equal(dl_wm_get(&st.applied, "C"),
		    k < 2 ? 0 : k < 3 ? 1 : k < 4 ? 2 : 3);
		dl_state_free(&st);
	}
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(w.data, w.len, "d", 0, &st, NULL, &e), 0);
	assert_int_equal(st.records, 7);
	expect_val(&st, "s", "7");
	expect_val(&st, "a", "5");
	d = dl_dead_find(&st, "C", 2);
	assert_non_null(d);
	assert_int_equal(d->reason, DL_DEAD_NOT_INT);
	assert_int_equal(d->resolved, DL_RESOLVE_RETRY);
	assert_int_equal(d->amount, 7);
	assert_int_equal(d->klen, 1);
	assert_memory_equal(d->key, "s", 1);
	assert_int_equal(d->flen, 3);
	assert_memory_equal(d->from, "bal", 3);
	d = dl_dead_find(&st, "C", 3);
	assert_non_null(d);
	assert_int_equal(d->reason, DL_DEAD_OVERFLOW);
	assert_int_equal(d->resolved, DL_RESOLVE_REFUND);
	assert_int_equal(d->refund_seq, 1);
	assert_int_equal(d->flen, 0);
	assert_null(dl_dead_find(&st, "C", 1));
	assert_null(dl_dead_find(&st, "B", 2));
	/* The refund is a send on self->C, kept until acknowledged. */
	assert_int_equal(dl_wm_get(&st.sent, "C"), 1);
	assert_int_equal(st.nsends, 1);
	assert_string_equal(st.sends[0].peer, "C");
	assert_int_equal(st.sends[0].seq, 1);
	assert_memory_equal(st.sends[0].msg, "refund-msg", 10);
	assert_string_equal(dl_dead_reason_name(DL_DEAD_OVERFLOW),
	    "integer overflow");
	assert_string_equal(dl_resolve_name(0), "open");
	dl_state_free(&st);
	wbuf_free(&w);
}

static void
dead_letter_records_check_their_invariants(void **state)
{
	struct dl_record bad;

	(void)state;
	expect_second_rejected(rec_apply("C", 1, "a", "1"),
	    rec_dead("C", 3, "a", 1, DL_DEAD_NOT_INT, ""),
	    "dead letter seq 3 from C, expected 2");
	expect_second_rejected(rec_dead("C", 1, "a", 1, DL_DEAD_NOT_INT, ""),
	    rec_apply("C", 1, "a", "1"), "apply seq 1 from C, expected 2");
	expect_second_rejected(rec_put("a", "1"),
	    rec_dead("C", 1, "a", 1, 9, ""), "dead letter with unknown "
	    "reason 9");
	expect_second_rejected(rec_apply("C", 1, "a", "1"),
	    rec_retry("C", 1, "a", "2"), "no dead letter C seq 1 to resolve");
	expect_second_rejected(rec_dead("C", 1, "a", 1, DL_DEAD_NOT_INT, ""),
	    rec_retry("C", 1, "b", "1"), "retry of dead letter C seq 1 names "
	    "another key");
	expect_second_rejected(rec_dead("C", 1, "a", 1, DL_DEAD_NOT_INT, ""),
	    rec_refund("C", 1, 2, "m"), "refund seq 2 to C, expected 1");
	bad = rec_retry("C", 1, "a", "1");
	bad.code = 5;
	expect_second_rejected(rec_dead("C", 1, "a", 1, DL_DEAD_NOT_INT, ""),
	    bad, "dead letter resolved in unknown way 5");
}

static void
a_dead_letter_resolves_once(void **state)
{
	struct dl_record rs[3];
	struct dl_state st;
	struct cs_err e;
	struct wbuf w;

	(void)state;
	rs[0] = rec_dead("C", 1, "a", 4, DL_DEAD_NOT_INT, "bal");
	rs[1] = rec_retry("C", 1, "a", "4");
	rs[2] = rec_refund("C", 1, 1, "m");
	build(&w, rs, 3, NULL);
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(w.data, w.len, "x", 0, &st, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "dead letter C seq 1 is already "
	    "retried"));
	dl_state_free(&st);
	wbuf_free(&w);
}

/* A kill at any byte of a DEAD or a RESOLVE record: the live open cuts
 * the torn record, so the dead letter is either not consumed (the sender
 * resends it) or still open (the operator resolves it again). */
static void
torn_dead_letter_records_are_cut(void **state)
{
	const struct dl_record *rs;
	const struct dl_state *st;
	struct datalog *dl;
	struct cs_err e;
	struct wbuf w;
	size_t n, offs[8], L;
	int which;
	const char *path = unit_path("torndead.data");

	(void)state;
	rs = dead_story(&n);
	build(&w, rs, n, offs);
	for (which = 2; which <= 6; which += 4) {	/* DEAD, then RESOLVE */
		for (L = offs[which] + 1; L < offs[which + 1]; L++) {
			unit_write_file(path, w.data, L);
			assert_int_equal(datalog_open(path, &dl, &e), 0);
			assert_int_equal(datalog_end(dl), offs[which]);
			st = datalog_state(dl);
			if (which == 2) {
				assert_int_equal(st->ndead, 0);
				assert_int_equal(dl_wm_get(&st->applied, "C"),
				    1);
			} else {
				assert_int_equal(st->ndead, 2);
				assert_int_equal(st->nopen, 1);
				assert_int_equal(dl_dead_find(st, "C",
				    3)->resolved, 0);
				assert_int_equal(dl_wm_get(&st->sent, "C"), 0);
			}
			datalog_close(dl);
		}
	}
	/* The cut file takes the record again and reopens with it. */
	unit_write_file(path, w.data, offs[6] + 3);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	assert_int_equal(datalog_append(dl, &rs[6], &e), 0);
	assert_int_equal(datalog_sync(dl, &e), 0);
	datalog_close(dl);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	assert_int_equal(datalog_state(dl)->nopen, 0);
	assert_int_equal(datalog_end(dl), w.len);
	datalog_close(dl);
	unlink(path);
	wbuf_free(&w);
}

/* DEAD consumes a message as APPLY does and a REFUND sends one as SEND
 * does: both carry the channel's history chain after that message. */
static void
dead_letter_records_carry_the_chain(void **state)
{
	uint8_t c1[DL_CHAIN_LEN], c2[DL_CHAIN_LEN];
	struct dl_record rs[2];
	struct dl_state st;
	struct cs_err e;
	struct wbuf w;
	size_t offs[3];

	(void)state;
	memset(c1, 0xa1, sizeof(c1));
	memset(c2, 0xb2, sizeof(c2));
	rs[0] = rec_dead("C", 1, "k", 5, DL_DEAD_NOT_INT, "bal");
	rs[0].chain = c1;
	rs[1] = rec_refund("C", 1, 1, "refund");
	rs[1].chain = c2;
	build(&w, rs, 2, offs);
	/* The chain is the record's last 32 bytes. */
	assert_memory_equal(w.data + offs[1] - DL_CHAIN_LEN, c1, DL_CHAIN_LEN);
	assert_memory_equal(w.data + offs[2] - DL_CHAIN_LEN, c2, DL_CHAIN_LEN);
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(w.data, w.len, "c", 0, &st, NULL, &e), 0);
	assert_non_null(dl_wm_chain(&st.applied, "C"));
	assert_memory_equal(dl_wm_chain(&st.applied, "C"), c1, DL_CHAIN_LEN);
	assert_non_null(dl_wm_chain(&st.sent, "C"));
	assert_memory_equal(dl_wm_chain(&st.sent, "C"), c2, DL_CHAIN_LEN);
	assert_int_equal(st.sends[0].chain_known, 1);
	dl_state_free(&st);
	/* Without it (as an older writer would), the chain is unknown. */
	rs[0].chain = NULL;
	wbuf_free(&w);
	build(&w, rs, 1, NULL);
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(w.data, w.len, "c", 0, &st, NULL, &e), 0);
	assert_null(dl_wm_chain(&st.applied, "C"));
	dl_state_free(&st);
	wbuf_free(&w);
}

/* A live file keeps no sends in memory: a refund's message is read back
 * from its RESOLVE record like a SEND's, also after a reopen. */
static void
live_file_reads_a_refund_back(void **state)
{
	struct dl_record d, r;
	struct datalog *dl;
	struct seen sn;
	struct cs_err e;
	uint64_t off = DL_HEADER_LEN;
	const char *path = unit_path("refund.data");

	memset(&sn, 0, sizeof(sn));

	(void)state;
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	d = rec_dead("C", 1, "k", 5, DL_DEAD_NOT_INT, "bal");
	r = rec_refund("C", 1, 1, "refund");
	assert_int_equal(datalog_append(dl, &d, &e), 0);
	assert_int_equal(datalog_append(dl, &r, &e), 0);
	assert_int_equal(datalog_sync(dl, &e), 0);
	assert_int_equal(dl_wm_get(&datalog_state(dl)->sent, "C"), 1);
	assert_int_equal(datalog_read_sends(dl, "C", &off, 1, note_send, &sn,
	    &e), 0);
	assert_int_equal(sn.n, 1);
	assert_int_equal(sn.seq[0], 1);
	datalog_close(dl);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	assert_int_equal(datalog_state(dl)->nopen, 0);
	off = dl_wm_get(&datalog_state(dl)->sendoff, "C");
	assert_true(off >= DL_HEADER_LEN);
	sn.n = 0;
	assert_int_equal(datalog_read_sends(dl, "C", &off, 1, note_send, &sn,
	    &e), 0);
	assert_int_equal(sn.n, 1);
	assert_int_equal(sn.seq[0], 1);
	datalog_close(dl);
	unlink(path);
}

/* Encode a channel message crediting amount to key (sent from key
 * "src") and run the credit rule on st. */
static int
credit(const struct dl_state *st, const char *key, int64_t amount,
    struct dl_record *out, struct dl_credit_buf *buf)
{
	static const uint8_t id[CHMSG_ID_LEN] = { 7 };
	static struct wbuf w;
	struct cs_err e;

	wbuf_free(&w);
	wbuf_init(&w);
	chmsg_encode_from(&w, key, strlen(key), amount, id, "src", 3);
	return dl_credit(st, "C", 4, w.data, w.len, out, buf, &e);
}

static void
credit_rule_applies_or_dead_letters(void **state)
{
	struct dl_credit_buf buf;
	struct dl_record r, out;
	struct dl_state st;
	struct cs_err e;

	(void)state;
	assert_int_equal(dl_state_init(&st, 0), 0);
	r = rec_put("n", "40");
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);
	r = rec_put("t", "hello");
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);
	r = rec_put("big", "9223372036854775800");
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);

	assert_int_equal(credit(&st, "n", 2, &out, &buf), 0);
	assert_int_equal(out.type, DL_APPLY);
	assert_string_equal(out.peer, "C");
	assert_int_equal(out.seq, 4);
	assert_int_equal(out.vlen, 2);
	assert_memory_equal(out.val, "42", 2);
	/* The message has an id: the record carries the chain after it. */
	assert_ptr_equal(out.chain, buf.chain);
	assert_int_equal(credit(&st, "absent", 5, &out, &buf), 0);
	assert_int_equal(out.type, DL_APPLY);
	assert_memory_equal(out.val, "5", 1);

	assert_int_equal(credit(&st, "t", 2, &out, &buf), 0);
	assert_int_equal(out.type, DL_DEAD);
	assert_int_equal(out.code, DL_DEAD_NOT_INT);
	assert_int_equal(out.amount, 2);
	assert_int_equal(out.flen, 3);
	assert_memory_equal(out.from, "src", 3);
	assert_ptr_equal(out.chain, buf.chain);
	assert_int_equal(credit(&st, "big", 8, &out, &buf), 0);
	assert_int_equal(out.type, DL_DEAD);
	assert_int_equal(out.code, DL_DEAD_OVERFLOW);
	assert_int_equal(credit(&st, "big", 7, &out, &buf), 0);
	assert_int_equal(out.type, DL_APPLY);
	/* The record it builds is the one the state accepts next. */
	assert_int_equal(credit(&st, "t", 1, &out, &buf), 0);
	out.seq = 1;
	assert_int_equal(dl_state_apply(&st, &out, &e), 0);
	assert_int_equal(st.nopen, 1);
	/* A malformed message is an error, not a dead letter. */
	assert_int_equal(dl_credit(&st, "C", 2, (const uint8_t *)"xx", 2, &out,
	    &buf, &e), -1);
	assert_non_null(strstr(e.msg, "not a valid channel message"));
	dl_state_free(&st);
}

static void
new_files_are_version_2(void **state)
{
	struct datalog *dl;
	struct cs_err e;
	uint8_t hdr[DL_HEADER_LEN];
	FILE *f;
	const char *path = unit_path("v2.data");

	(void)state;
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	datalog_close(dl);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(hdr, 1, sizeof(hdr), f), sizeof(hdr));
	fclose(f);
	assert_memory_equal(hdr, "CUTSNAPL", 8);
	assert_int_equal(buf_le32_get(hdr + 8), 2);
	unlink(path);
}

/* A version-1 file (written before dead letters existed) opens, takes
 * dead letter records, and reopens with them. */
static void
version_1_files_open_and_take_dead_letters(void **state)
{
	const struct dl_record *rs;
	struct dl_record d;
	struct datalog *dl;
	struct cs_err e;
	struct wbuf w;
	size_t n;
	const char *path = unit_path("v1.data");

	(void)state;
	rs = bank(&n);
	build(&w, rs, n, NULL);
	w.data[8] = 1;
	unit_write_file(path, w.data, w.len);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	expect_val(datalog_state(dl), "a", "85");
	d = rec_dead("C", 2, "a", 3, DL_DEAD_OVERFLOW, "k");
	assert_int_equal(datalog_append(dl, &d, &e), 0);
	assert_int_equal(datalog_sync(dl, &e), 0);
	datalog_close(dl);
	assert_int_equal(datalog_open(path, &dl, &e), 0);
	assert_int_equal(datalog_state(dl)->nopen, 1);
	assert_int_equal(dl_wm_get(&datalog_state(dl)->applied, "C"), 2);
	assert_int_equal(datalog_state(dl)->records, n + 1);
	datalog_close(dl);
	unlink(path);
	wbuf_free(&w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(replay_round_trips_every_record_type),
		cmocka_unit_test(encoding_matches_the_documented_layout),
		cmocka_unit_test(fence_record_round_trips),
		cmocka_unit_test(replay_rejects_seq_violations),
		cmocka_unit_test(state_check_enforces_names_and_caps),
		cmocka_unit_test(older_ack_is_accepted_and_ignored),
		cmocka_unit_test(int_add_parses_strictly_and_checks_overflow),
		cmocka_unit_test(replay_checks_the_header),
		cmocka_unit_test(replay_read_takes_bytes_in_place_or_through_the_window),
		cmocka_unit_test(replay_read_takes_checksums_from_the_reader),
		cmocka_unit_test(dead_letters_round_trip_and_replay),
		cmocka_unit_test(dead_letter_records_check_their_invariants),
		cmocka_unit_test(a_dead_letter_resolves_once),
		cmocka_unit_test(torn_dead_letter_records_are_cut),
		cmocka_unit_test(dead_letter_records_carry_the_chain),
		cmocka_unit_test(live_file_reads_a_refund_back),
		cmocka_unit_test(credit_rule_applies_or_dead_letters),
		cmocka_unit_test(new_files_are_version_2),
		cmocka_unit_test(version_1_files_open_and_take_dead_letters),
		cmocka_unit_test(torn_tail_at_every_offset_is_cut),
		cmocka_unit_test(all_zero_tail_is_cut),
		cmocka_unit_test(large_put_in_place_and_recovered_in_windows),
		cmocka_unit_test(flipped_byte_in_middle_record_is_corruption),
		cmocka_unit_test(every_record_boundary_prefix_replays),
		cmocka_unit_test(live_appends_sync_reopen_and_hash),
		cmocka_unit_test(sends_are_read_back_from_the_file),
		cmocka_unit_test(chains_of_unacknowledged_sends_are_read_back),
		cmocka_unit_test(lock_excludes_a_second_open),
		cmocka_unit_test(open_refuses_symlinks_and_foreign_files),
	};

	umask(022);
	return cmocka_run_group_tests(tests, unit_setup, unit_teardown);
}
