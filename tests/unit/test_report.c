/* test_report.c - snapshot report codec: round trip, truncation, caps. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../log/chunkhash.h"
#include "../../proto/chmsg.h"
#include "../../proto/report.h"

/* A report with two watermark lists and three channels: one with two
 * messages (one of them empty), one empty, one with a single message. */
static void
sample(struct report *r, struct rep_wm *sent, struct rep_wm *applied,
    struct rep_channel *ch, struct rep_msg *msgs)
{
	int i;

	memset(r, 0, sizeof(*r));
	r->snap_id = 0x1122334455667788ull;
	memset(r->uid.b, 0xa5, sizeof(r->uid.b));
	r->uid.b[15] = 0x01;
	strcpy(r->agent, "A");
	static uint8_t chunks[3][32];

	r->size = 10000;
	for (i = 0; i < 32; i++)
		r->sha[i] = (uint8_t)(i * 3 + 1);
	for (i = 0; i < 3 * 32; i++)
		chunks[i / 32][i % 32] = (uint8_t)(i * 7 + 5);
	r->chunk_size = 4096;	/* 10000 bytes: two full chunks and a part */
	r->nchunks = 3;
	r->chunks = chunks;
	memset(sent, 0, 2 * sizeof(*sent));
	strcpy(sent[0].peer, "B");
	sent[0].seq = 7;
	strcpy(sent[1].peer, "C");
	sent[1].seq = 0;
	memset(applied, 0, sizeof(*applied));
	strcpy(applied[0].peer, "B");
	applied[0].seq = 3;
	r->sent = sent;
	r->nsent = 2;
	r->applied = applied;
	r->napplied = 1;

	msgs[0].seq = 4;
	msgs[0].data = (uint8_t *)"add10";
	msgs[0].len = 5;
	msgs[1].seq = 5;
	msgs[1].data = (uint8_t *)"";
	msgs[1].len = 0;
	msgs[2].seq = 1;
	msgs[2].data = (uint8_t *)"x";
	msgs[2].len = 1;
	memset(ch, 0, 3 * sizeof(*ch));
	strcpy(ch[0].src, "B");
	ch[0].applied = 3;
	ch[0].sent = 5;
	ch[0].nmsgs = 2;
	ch[0].msgs = msgs;
	strcpy(ch[1].src, "C");
	ch[1].applied = 9;
	ch[1].sent = 9;
	memset(ch[2].src, 'p', NAME_MAX_LEN);	/* the longest legal name */
	ch[2].src[NAME_MAX_LEN] = '\0';
	ch[2].applied = 0;
	ch[2].sent = 1;
	ch[2].nmsgs = 1;
	ch[2].msgs = msgs + 2;
	r->channels = ch;
	r->nchannels = 3;
}

static void
encode_sample(struct wbuf *w)
{
	struct rep_wm sent[2], applied[1];
	struct rep_channel ch[3];
	struct rep_msg msgs[3];
	struct report r;

	sample(&r, sent, applied, ch, msgs);
	wbuf_init(w);
	report_encode(w, &r);
	assert_int_equal(w->oom, 0);
}

static void
roundtrip_preserves_every_field(void **state)
{
	struct rep_wm sent[2], applied[1];
	struct rep_channel ch[3];
	struct rep_msg msgs[3];
	struct report in, out;
	struct cs_err e;
	struct wbuf w;
	size_t i, j;

	(void)state;
	sample(&in, sent, applied, ch, msgs);
	wbuf_init(&w);
	report_encode(&w, &in);
	assert_int_equal(report_decode(w.data, w.len, &out, &e), 0);
	assert_true(out.snap_id == in.snap_id);
	assert_true(snapuid_eq(&out.uid, &in.uid));
	assert_string_equal(out.agent, "A");
	assert_true(out.size == 10000);
	assert_memory_equal(out.sha, in.sha, 32);
	assert_int_equal(out.chunk_size, 4096);
	assert_int_equal(out.nchunks, 3);
	assert_memory_equal(out.chunks, in.chunks, 3 * 32);
	assert_int_equal(out.nsent, 2);
	assert_string_equal(out.sent[1].peer, "C");
	assert_true(out.sent[0].seq == 7);
	assert_int_equal(out.napplied, 1);
	assert_true(out.applied[0].seq == 3);
	assert_int_equal(out.nchannels, 3);
	for (i = 0; i < 3; i++) {
		assert_string_equal(out.channels[i].src, in.channels[i].src);
		assert_true(out.channels[i].applied == in.channels[i].applied);
		assert_true(out.channels[i].sent == in.channels[i].sent);
		assert_int_equal(out.channels[i].nmsgs, in.channels[i].nmsgs);
		for (j = 0; j < in.channels[i].nmsgs; j++) {
			assert_true(out.channels[i].msgs[j].seq ==
			    in.channels[i].msgs[j].seq);
			assert_int_equal(out.channels[i].msgs[j].len,
			    in.channels[i].msgs[j].len);
			assert_memory_equal(out.channels[i].msgs[j].data,
			    in.channels[i].msgs[j].data,
			    in.channels[i].msgs[j].len);
		}
	}
	assert_null(out.channels[1].msgs);
	/* Decoded messages are owned copies, not pointers into w. */
	assert_true(out.channels[0].msgs[0].data < w.data ||
	    out.channels[0].msgs[0].data >= w.data + w.len);
	report_free(&out);
	assert_int_equal(out.nchannels, 0);
	report_free(&out);	/* twice is harmless */
	report_free(NULL);
	wbuf_free(&w);
}

static void
empty_report_roundtrips(void **state)
{
	struct report in, out;
	struct cs_err e;
	struct wbuf w;

	(void)state;
	memset(&in, 0, sizeof(in));
	strcpy(in.agent, "solo");
	in.chunk_size = CHUNK_SIZE_DEFAULT;
	wbuf_init(&w);
	report_encode(&w, &in);
	assert_int_equal(w.len, 16 + 8 + 8 + 8 + 32 + 8 + 12);
	assert_int_equal(report_decode(w.data, w.len, &out, &e), 0);
	assert_string_equal(out.agent, "solo");
	assert_int_equal(out.nsent + out.napplied + out.nchannels, 0);
	report_free(&out);
	wbuf_free(&w);
}

static void
every_truncation_fails_cleanly(void **state)
{
	struct report out;
	struct cs_err e;
	struct wbuf w;
	uint8_t *copy;
	size_t i;

	(void)state;
	encode_sample(&w);
	for (i = 0; i < w.len; i++) {
		/* An exact-size heap copy so an overread is a real error
		 * under valgrind or ASan. */
		copy = malloc(i ? i : 1);
		assert_non_null(copy);
		memcpy(copy, w.data, i);
		e.msg[0] = '\0';
		assert_int_equal(report_decode(copy, i, &out, &e), -1);
		assert_non_null(strstr(e.msg, "malformed snapshot report"));
		assert_null(out.channels);
		assert_null(out.sent);
		assert_int_equal(out.nchannels, 0);
		free(copy);
	}
	wbuf_free(&w);
}

static void
trailing_byte_fails(void **state)
{
	struct report out;
	struct cs_err e;
	struct wbuf w;

	(void)state;
	encode_sample(&w);
	wbuf_put_u8(&w, 0);
	assert_int_equal(report_decode(w.data, w.len, &out, &e), -1);
	assert_non_null(strstr(e.msg, "1 trailing bytes"));
	wbuf_free(&w);
}

/* Header fields of a report up to and including the sha. */
static void
put_head(struct wbuf *w)
{
	uint8_t sha[32] = { 0 };

	wbuf_put_raw(w, "0123456789abcdef", 16);	/* the identity */
	wbuf_put_u64(w, 1);
	wbuf_put_str(w, "A");
	wbuf_put_u64(w, 0);
	wbuf_put_raw(w, sha, sizeof(sha));
	wbuf_put_u32(w, 4096);	/* chunk size; no chunks for 0 bytes */
	wbuf_put_u32(w, 0);
}

/* The chunk list must have a valid chunk size and cover exactly the
 * recorded size: one chunk too many or too few, or a chunk size that is
 * not a power of two in range, is malformed. */
static void
bad_chunk_lists_are_rejected(void **state)
{
	static const struct {
		uint32_t size, n;
	} bad[] = { { 4096, 2 }, { 4096, 4 }, { 4095, 3 }, { 0, 0 },
	    { 2048, 5 }, { 128u << 20, 1 } };
	uint8_t zero[5 * 32] = { 0 };
	struct report out;
	struct cs_err e;
	struct wbuf w;
	size_t i;

	(void)state;
	wbuf_init(&w);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wbuf_reset(&w);
		wbuf_put_raw(&w, zero, 16);
		wbuf_put_u64(&w, 1);
		wbuf_put_str(&w, "A");
		wbuf_put_u64(&w, 10000);
		wbuf_put_raw(&w, zero, 32);
		wbuf_put_u32(&w, bad[i].size);
		wbuf_put_u32(&w, bad[i].n);
		wbuf_put_raw(&w, zero, bad[i].n * 32);
		wbuf_put_u32(&w, 0);
		wbuf_put_u32(&w, 0);
		wbuf_put_u32(&w, 0);
		e.msg[0] = '\0';
		assert_int_equal(report_decode(w.data, w.len, &out, &e), -1);
		assert_non_null(strstr(e.msg, "malformed snapshot report"));
		assert_null(out.chunks);
	}
	/* The same with 3 chunks of 4096 decodes. */
	wbuf_reset(&w);
	wbuf_put_raw(&w, zero, 16);
	wbuf_put_u64(&w, 1);
	wbuf_put_str(&w, "A");
	wbuf_put_u64(&w, 10000);
	wbuf_put_raw(&w, zero, 32);
	wbuf_put_u32(&w, 4096);
	wbuf_put_u32(&w, 3);
	wbuf_put_raw(&w, zero, 3 * 32);
	wbuf_put_u32(&w, 0);
	wbuf_put_u32(&w, 0);
	wbuf_put_u32(&w, 0);
	assert_int_equal(report_decode(w.data, w.len, &out, &e), 0);
	assert_int_equal(out.nchunks, 3);
	report_free(&out);
	wbuf_free(&w);
}

static void
huge_counts_are_rejected(void **state)
{
	struct report out;
	struct cs_err e;
	struct wbuf w;

	(void)state;
	wbuf_init(&w);
	/* nsent far above the cap. */
	put_head(&w);
	wbuf_put_u32(&w, 0xffffffffu);
	assert_int_equal(report_decode(w.data, w.len, &out, &e), -1);
	/* nsent within the cap but more than the bytes could hold. */
	wbuf_reset(&w);
	put_head(&w);
	wbuf_put_u32(&w, 4000);
	wbuf_put_str(&w, "B");
	wbuf_put_u64(&w, 1);
	assert_int_equal(report_decode(w.data, w.len, &out, &e), -1);
	/* nchannels above 4096. */
	wbuf_reset(&w);
	put_head(&w);
	wbuf_put_u32(&w, 0);
	wbuf_put_u32(&w, 0);
	wbuf_put_u32(&w, 4097);
	assert_int_equal(report_decode(w.data, w.len, &out, &e), -1);
	/* nmsgs above 1,000,000. */
	wbuf_reset(&w);
	put_head(&w);
	wbuf_put_u32(&w, 0);
	wbuf_put_u32(&w, 0);
	wbuf_put_u32(&w, 1);
	wbuf_put_str(&w, "B");
	wbuf_put_u64(&w, 0);
	wbuf_put_u64(&w, 0);
	wbuf_put_u32(&w, 1000001);
	assert_int_equal(report_decode(w.data, w.len, &out, &e), -1);
	assert_null(out.channels);
	wbuf_free(&w);
}

static void
oversized_message_and_bad_names_are_rejected(void **state)
{
	char name[NAME_MAX_LEN + 2];
	struct report out;
	struct cs_err e;
	struct wbuf w;
	uint8_t *big;
	size_t mark;

	(void)state;
	big = calloc(1, REPORT_MSG_MAX + 1);
	assert_non_null(big);
	wbuf_init(&w);
	put_head(&w);
	wbuf_put_u32(&w, 0);
	wbuf_put_u32(&w, 0);
	wbuf_put_u32(&w, 1);
	wbuf_put_str(&w, "B");
	wbuf_put_u64(&w, 0);
	wbuf_put_u64(&w, 1);
	wbuf_put_u32(&w, 1);
	wbuf_put_u64(&w, 1);
	mark = w.len;
	wbuf_put_bytes(&w, big, REPORT_MSG_MAX + 1);
	assert_int_equal(report_decode(w.data, w.len, &out, &e), -1);
	/* An application message's size, above a credit's, is taken. */
	w.len = mark;
	wbuf_put_bytes(&w, big, CHMSG_MAX + 1);
	assert_int_equal(report_decode(w.data, w.len, &out, &e), 0);
	assert_int_equal(out.channels[0].msgs[0].len, CHMSG_MAX + 1);
	report_free(&out);
	free(big);

	/* An agent name longer than NAME_MAX_LEN. */
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	wbuf_reset(&w);
	wbuf_put_raw(&w, "0123456789abcdef", 16);
	wbuf_put_u64(&w, 1);
	wbuf_put_str(&w, name);
	assert_int_equal(report_decode(w.data, w.len, &out, &e), -1);

	/* A name with a NUL inside. */
	wbuf_reset(&w);
	wbuf_put_raw(&w, "0123456789abcdef", 16);
	wbuf_put_u64(&w, 1);
	wbuf_put_bytes(&w, "A\0B", 3);
	assert_int_equal(report_decode(w.data, w.len, &out, &e), -1);
	wbuf_free(&w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(roundtrip_preserves_every_field),
		cmocka_unit_test(empty_report_roundtrips),
		cmocka_unit_test(every_truncation_fails_cleanly),
		cmocka_unit_test(trailing_byte_fails),
		cmocka_unit_test(huge_counts_are_rejected),
		cmocka_unit_test(bad_chunk_lists_are_rejected),
		cmocka_unit_test(oversized_message_and_bad_names_are_rejected),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
