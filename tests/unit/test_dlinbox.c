/* test_dlinbox.c - a data file's inbox: application messages consumed
 * from a channel into INBOX records, a TXN's SEND op (read back as the
 * channel's next message) and CONSUME op, HELD records through a
 * compaction, and the records that break the inbox's rules refused
 * before they change anything. */
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

#include "../../log/chainhash.h"
#include "../../log/datalog.h"
#include "../../log/dlfile.h"
#include "../../log/dlrewrite.h"
#include "../../proto/chmsg.h"
#include "unit.h"

/* An application message whose id is all n and payload text. */
static void
app(struct wbuf *w, uint8_t n, const char *text)
{
	uint8_t id[CHMSG_ID_LEN];

	memset(id, n, sizeof(id));
	wbuf_reset(w);
	chmsg_encode_app(w, id, text, strlen(text));
	assert_false(w->oom);
}

/* Message seq from src, consumed as dl_credit makes it: an INBOX. */
static int
receive(struct datalog *dl, const char *src, uint64_t seq, const char *text)
{
	struct dl_credit_buf buf;
	struct dl_record r;
	struct cs_err e;
	struct wbuf w;
	int rc;

	wbuf_init(&w);
	app(&w, (uint8_t)seq, text);
	assert_int_equal(dl_credit(datalog_state(dl), src, seq, w.data, w.len,
	    &r, &buf, &e), 0);
	assert_int_equal(r.type, DL_INBOX);
	assert_non_null(r.chain);
	rc = datalog_append(dl, &r, &e);
	wbuf_free(&w);
	return rc;
}

static void
op_send(struct wbuf *ops, const char *dst, uint64_t seq, const char *text)
{
	uint8_t chain[CHAIN_HASH_LEN];
	struct wbuf m;

	wbuf_init(&m);
	app(&m, 0x70 + (uint8_t)seq, text);
	assert_int_equal(chain_next(NULL, seq, m.data, m.len, chain), 0);
	wbuf_put_u8(ops, DL_TXN_SEND);
	wbuf_put_str(ops, dst);
	wbuf_put_u64(ops, seq);
	wbuf_put_bytes(ops, m.data, m.len);
	wbuf_put_raw(ops, chain, sizeof(chain));
	wbuf_free(&m);
}

static void
op_consume(struct wbuf *ops, const char *src, uint64_t seq)
{
	wbuf_put_u8(ops, DL_TXN_CONSUME);
	wbuf_put_str(ops, src);
	wbuf_put_u64(ops, seq);
}

static void
op_put(struct wbuf *ops, const char *k, const char *v)
{
	wbuf_put_u8(ops, DL_TXN_PUT);
	wbuf_put_bytes(ops, k, strlen(k));
	wbuf_put_bytes(ops, v, strlen(v));
}

static int
append_txn(struct datalog *dl, const struct wbuf *ops, uint32_t n)
{
	struct dl_record r = { .type = DL_TXN };
	struct cs_err e;

	assert_false(ops->oom);
	r.ops = ops->data;
	r.opslen = ops->len;
	r.nops = n;
	return datalog_append(dl, &r, &e);
}

/* The inbox holds exactly the messages (src, seq) given, in order. */
static void
inbox_is(const struct datalog *dl, size_t n, ...)
{
	const struct dl_state *st = datalog_state(dl);
	struct chmsg_app m;
	va_list ap;
	size_t i;

	assert_int_equal(st->ninbox, n);
	va_start(ap, n);
	for (i = 0; i < n; i++) {
		assert_string_equal(st->inbox[i].peer, va_arg(ap, char *));
		assert_int_equal(st->inbox[i].seq, va_arg(ap, int));
		assert_int_equal(chmsg_decode_app(st->inbox[i].msg,
		    st->inbox[i].len, &m), 0);
		assert_int_equal(m.id[0], (uint8_t)st->inbox[i].seq);
	}
	va_end(ap);
}

struct got {
	uint64_t seq[4];
	char text[4][16];
	int chained;
	size_t n;
};

static int
got_send(void *ctx, uint64_t seq, const uint8_t *msg, size_t len,
    const uint8_t *chain)
{
	struct got *g = ctx;
	struct chmsg_app m;

	assert_true(g->n < 4);
	assert_int_equal(chmsg_decode_app(msg, len, &m), 0);
	assert_true(m.plen < sizeof(g->text[0]));
	g->seq[g->n] = seq;
	memcpy(g->text[g->n], m.payload, m.plen);
	g->text[g->n][m.plen] = '\0';
	g->chained += chain != NULL;
	g->n++;
	return 0;
}

/* Messages from A (1..3) into the inbox; a TXN sends two to C, consumes
 * A 1 and puts a key; another consumes A 3. */
static void
build(struct datalog *dl)
{
	struct wbuf w;

	assert_int_equal(receive(dl, "A", 1, "one"), 0);
	assert_int_equal(receive(dl, "A", 2, "two"), 0);
	assert_int_equal(receive(dl, "B", 1, "b-one"), 0);
	assert_int_equal(receive(dl, "A", 3, "three"), 0);
	inbox_is(dl, 4, "A", 1, "A", 2, "B", 1, "A", 3);
	assert_int_equal(datalog_state(dl)->inbox_bytes,
	    4 * (1 + CHMSG_ID_LEN + 4) + 3 + 3 + 5 + 5);
	wbuf_init(&w);
	op_consume(&w, "A", 1);
	op_send(&w, "C", 1, "to-c-1");
	op_put(&w, "k", "v");
	op_send(&w, "C", 2, "to-c-2");
	assert_int_equal(append_txn(dl, &w, 4), 0);
	wbuf_reset(&w);
	op_consume(&w, "A", 3);
	assert_int_equal(append_txn(dl, &w, 1), 0);
	wbuf_free(&w);
}

static void
check_state(struct datalog *dl)
{
	const struct dl_state *st = datalog_state(dl);
	struct cs_err e;
	struct got g;
	uint64_t off;

	inbox_is(dl, 2, "A", 2, "B", 1);
	assert_int_equal(dl_wm_get(&st->applied, "A"), 3);
	assert_int_equal(dl_wm_get(&st->applied, "B"), 1);
	assert_int_equal(dl_wm_get(&st->sent, "C"), 2);
	assert_non_null(dl_wm_chain(&st->sent, "C"));
	assert_int_equal(dl_inbox_find(st, "A", 1), -1);
	assert_int_equal(dl_inbox_find(st, "B", 1), 1);
	/* The channel to C reads its two messages back from the TXN. */
	memset(&g, 0, sizeof(g));
	assert_int_equal(datalog_sync(dl, &e), 0);
	/* From the first unacknowledged send's record: the TXN. */
	off = dl_wm_get(&st->sendoff, "C");
	assert_int_equal(datalog_read_sends(dl, "C", &off, 1, got_send, &g,
	    &e), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.seq[0], 1);
	assert_string_equal(g.text[0], "to-c-1");
	assert_int_equal(g.seq[1], 2);
	assert_string_equal(g.text[1], "to-c-2");
	assert_int_equal(g.chained, 2);
}

static void
test_inbox_replays(void **state)
{
	struct datalog *dl;
	struct cs_err e;

	(void)state;
	(void)unlink(unit_data);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	build(dl);
	check_state(dl);
	datalog_close(dl);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	check_state(dl);
	datalog_close(dl);
	(void)unlink(unit_data);
}

static void
compact(struct datalog *dl)
{
	struct timespec ts = { 0, 1000000L };
	struct dl_rewrite_result res;
	struct dl_rewrite *rw;
	struct cs_err e;
	int i;

	assert_int_equal(datalog_sync(dl, &e), 0);
	assert_int_equal(dl_rewrite_start(dl, &rw, &e), 0);
	for (i = 0; i < 20000 && !dl_rewrite_done(rw); i++)
		nanosleep(&ts, NULL);
	assert_true(dl_rewrite_done(rw));
	assert_int_equal(dl_rewrite_finish(dl, rw, &res, &e), 0);
}

/* The unconsumed messages are carried over as HELD records, in order;
 * they can still be consumed, and the next message follows on. */
static void
test_inbox_survives_compaction(void **state)
{
	struct datalog *dl;
	struct cs_err e;
	struct wbuf w;

	(void)state;
	(void)unlink(unit_data);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	build(dl);
	compact(dl);
	inbox_is(dl, 2, "A", 2, "B", 1);
	datalog_close(dl);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	assert_int_equal(datalog_state(dl)->gen, 1);
	check_state(dl);
	wbuf_init(&w);
	op_consume(&w, "B", 1);
	assert_int_equal(append_txn(dl, &w, 1), 0);
	wbuf_free(&w);
	assert_int_equal(receive(dl, "A", 4, "four"), 0);
	inbox_is(dl, 2, "A", 2, "A", 4);
	compact(dl);
	datalog_close(dl);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	inbox_is(dl, 2, "A", 2, "A", 4);
	assert_int_equal(dl_wm_get(&datalog_state(dl)->applied, "A"), 4);
	datalog_close(dl);
	(void)unlink(unit_data);
}

/* Each record that breaks the inbox's rules is refused and changes
 * nothing. */
static void
test_malformed_refused(void **state)
{
	static const uint8_t zero[CHAIN_HASH_LEN];
	struct dl_record r = { .type = DL_HELD };
	struct datalog *dl;
	struct cs_err e;
	struct wbuf w, m;
	uint64_t end;

	(void)state;
	(void)unlink(unit_data);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	assert_int_equal(receive(dl, "A", 1, "one"), 0);
	end = datalog_end(dl);
	wbuf_init(&w);
	wbuf_init(&m);
	/* An INBOX out of seq order (a gap, a repeat). */
	assert_int_equal(receive(dl, "A", 1, "again"), -1);
	app(&m, 3, "gap");
	r.type = DL_INBOX;
	r.peer = "A";
	r.seq = 3;
	r.msg = m.data;
	r.msglen = m.len;
	assert_int_equal(datalog_append(dl, &r, &e), -1);
	/* An INBOX of a credit, not an application message. */
	wbuf_reset(&m);
	chmsg_encode(&m, "k", 1, 5);
	r.seq = 2;
	r.msg = m.data;
	r.msglen = m.len;
	assert_int_equal(datalog_append(dl, &r, &e), -1);
	/* A HELD record outside the base section. */
	app(&m, 1, "one");
	r.type = DL_HELD;
	r.seq = 1;
	r.msg = m.data;
	r.msglen = m.len;
	assert_int_equal(datalog_append(dl, &r, &e), -1);
	/* Consumes of a message not in the inbox, or of one twice. */
	op_consume(&w, "A", 2);
	assert_int_equal(append_txn(dl, &w, 1), -1);
	wbuf_reset(&w);
	op_consume(&w, "A", 1);
	op_consume(&w, "A", 1);
	assert_int_equal(append_txn(dl, &w, 2), -1);
	/* A send that skips a seq, or repeats one. */
	wbuf_reset(&w);
	op_send(&w, "C", 2, "skip");
	assert_int_equal(append_txn(dl, &w, 1), -1);
	wbuf_reset(&w);
	op_send(&w, "C", 1, "x");
	op_send(&w, "C", 1, "x");
	assert_int_equal(append_txn(dl, &w, 2), -1);
	/* A send whose message is a credit. */
	wbuf_reset(&w);
	wbuf_reset(&m);
	chmsg_encode(&m, "k", 1, 5);
	wbuf_put_u8(&w, DL_TXN_SEND);
	wbuf_put_str(&w, "C");
	wbuf_put_u64(&w, 1);
	wbuf_put_bytes(&w, m.data, m.len);
	wbuf_put_raw(&w, zero, sizeof(zero));
	assert_int_equal(append_txn(dl, &w, 1), -1);
	assert_int_equal(datalog_end(dl), end);
	inbox_is(dl, 1, "A", 1);
	assert_int_equal(dl_wm_get(&datalog_state(dl)->sent, "C"), 0);
	wbuf_free(&w);
	wbuf_free(&m);
	datalog_close(dl);
	(void)unlink(unit_data);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inbox_replays),
		cmocka_unit_test(test_inbox_survives_compaction),
		cmocka_unit_test(test_malformed_refused),
	};

	return cmocka_run_group_tests(tests, unit_setup_data, unit_teardown);
}
