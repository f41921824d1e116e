/* test_chain.c - one history per channel: the chain's definition, its
 * place in SEND/APPLY records (with and without it), what a replay keeps,
 * and the sender's accept/refuse decision table. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <isa-l/crc.h>

#include "../../log/chain.h"
#include "../../proto/chmsg.h"
#include "../../log/datalog.h"
#include "../../crypto/sha.h"

static const uint8_t zeros[DL_CHAIN_LEN];

/* A data file image: the header, then records appended by add_*. */
static void
image_init(struct wbuf *w)
{
	wbuf_init(w);
	wbuf_put_raw(w, "CUTSNAPL", 8);
	wbuf_put_u32(w, 1);
	wbuf_put_u32(w, 0);
}

/* A message with a fixed id (the id's first byte is tag). */
static void
msg(struct wbuf *m, const char *key, int64_t amount, uint8_t tag)
{
	uint8_t id[CHMSG_ID_LEN];

	memset(id, 0, sizeof(id));
	id[0] = tag;
	wbuf_reset(m);
	chmsg_encode_id(m, key, strlen(key), amount, id);
	assert_false(m->oom);
}

static void
add_send(struct wbuf *w, const char *dst, uint64_t seq, const struct wbuf *m,
    const uint8_t *chain)
{
	struct dl_record r = { .type = DL_SEND };

	r.peer = dst;
	r.seq = seq;
	r.key = (const uint8_t *)"bal";
	r.klen = 3;
	r.val = (const uint8_t *)"1";
	r.vlen = 1;
	r.msg = m->data;
	r.msglen = m->len;
	r.chain = chain;
	dl_encode(w, &r);
}

static void
add_apply(struct wbuf *w, const char *src, uint64_t seq, const uint8_t *chain)
{
	struct dl_record r = { .type = DL_APPLY };

	r.peer = src;
	r.seq = seq;
	r.key = (const uint8_t *)"bal";
	r.klen = 3;
	r.val = (const uint8_t *)"1";
	r.vlen = 1;
	r.chain = chain;
	dl_encode(w, &r);
}

static void
add_ack(struct wbuf *w, const char *dst, uint64_t seq)
{
	struct dl_record r = { .type = DL_ACK };

	r.peer = dst;
	r.seq = seq;
	dl_encode(w, &r);
}

/* Sends 1..n to B with chains c[1..n] (c[0] genesis), each message's id
 * tagged with its seq plus tag. */
static void
add_sends(struct wbuf *w, struct wbuf *m, uint8_t (*c)[DL_CHAIN_LEN],
    uint64_t n, uint8_t tag)
{
	uint64_t s;

	memcpy(c[0], zeros, DL_CHAIN_LEN);
	for (s = 1; s <= n; s++) {
		msg(m, "bal", 1, (uint8_t)(tag + s));
		assert_int_equal(chain_next(c[s - 1], s, m->data, m->len, c[s]),
		    0);
		add_send(w, "B", s, m, c[s]);
	}
}

static void
replay(const struct wbuf *w, struct dl_state *st)
{
	struct cs_err e;

	assert_false(w->oom);
	assert_int_equal(dl_state_init(st, 0), 0);
	if (dl_replay(w->data, w->len, "image", 0, st, NULL, &e) != 0)
		fail_msg("replay: %s", e.msg);
}

/* chain_n = SHA-256(chain_{n-1} | le64 n | message), genesis all zeros. */
static void
chain_is_sha256_of_prev_seq_and_message(void **state)
{
	uint8_t buf[DL_CHAIN_LEN + 8 + 3], want[DL_CHAIN_LEN], got[DL_CHAIN_LEN];
	uint8_t prev[DL_CHAIN_LEN];

	(void)state;
	memset(prev, 0xab, sizeof(prev));
	memcpy(buf, prev, DL_CHAIN_LEN);
	memcpy(buf + DL_CHAIN_LEN, "\x05\x01\0\0\0\0\0\0", 8);
	memcpy(buf + DL_CHAIN_LEN + 8, "xyz", 3);
	assert_int_equal(sha256_buf(buf, sizeof(buf), want), 0);
	assert_int_equal(chain_next(prev, 0x105, (const uint8_t *)"xyz", 3,
	    got), 0);
	assert_memory_equal(got, want, DL_CHAIN_LEN);
	/* An unknown predecessor (NULL) counts as genesis. */
	memcpy(buf, zeros, DL_CHAIN_LEN);
	assert_int_equal(sha256_buf(buf, sizeof(buf), want), 0);
	assert_int_equal(chain_next(NULL, 0x105, (const uint8_t *)"xyz", 3,
	    got), 0);
	assert_memory_equal(got, want, DL_CHAIN_LEN);
}

/* The id makes equal transfers on two histories differ. */
static void
equal_transfers_with_other_ids_differ(void **state)
{
	uint8_t c1[DL_CHAIN_LEN], c2[DL_CHAIN_LEN];
	uint8_t id1[CHMSG_ID_LEN], id2[CHMSG_ID_LEN];
	struct wbuf m1, m2;
	struct chmsg d;

	(void)state;
	assert_int_equal(chmsg_new_id(id1), 0);
	assert_int_equal(chmsg_new_id(id2), 0);
	assert_memory_not_equal(id1, id2, CHMSG_ID_LEN);
	wbuf_init(&m1);
	wbuf_init(&m2);
	chmsg_encode_id(&m1, "bal", 3, 10, id1);
	chmsg_encode_id(&m2, "bal", 3, 10, id2);
	assert_int_equal(chmsg_decode(m1.data, m1.len, &d), 0);
	assert_int_equal(d.op, CHMSG_ADD_ID);
	assert_true(d.amount == 10);
	assert_memory_equal(d.id, id1, CHMSG_ID_LEN);
	assert_int_equal(chain_next(zeros, 1, m1.data, m1.len, c1), 0);
	assert_int_equal(chain_next(zeros, 1, m2.data, m2.len, c2), 0);
	assert_memory_not_equal(c1, c2, DL_CHAIN_LEN);
	/* A message with an id cut short, or one byte too many, is refused. */
	assert_int_equal(chmsg_decode(m1.data, m1.len - 1, &d), -1);
	wbuf_put_u8(&m1, 0);
	assert_int_equal(chmsg_decode(m1.data, m1.len, &d), -1);
	wbuf_free(&m1);
	wbuf_free(&m2);
}

/* SEND and APPLY carry the chain; a replay keeps it per channel. */
static void
records_carry_the_chain(void **state)
{
	uint8_t c1[DL_CHAIN_LEN], c2[DL_CHAIN_LEN], r1[DL_CHAIN_LEN];
	struct dl_state st;
	struct wbuf w, m;

	(void)state;
	image_init(&w);
	wbuf_init(&m);
	msg(&m, "bal", 1, 1);
	assert_int_equal(chain_next(NULL, 1, m.data, m.len, c1), 0);
	add_send(&w, "B", 1, &m, c1);
	msg(&m, "bal", 1, 2);
	assert_int_equal(chain_next(c1, 2, m.data, m.len, c2), 0);
	add_send(&w, "B", 2, &m, c2);
	memset(r1, 0x77, sizeof(r1));
	add_apply(&w, "C", 1, r1);
	replay(&w, &st);
	assert_memory_equal(dl_wm_chain(&st.sent, "B"), c2, DL_CHAIN_LEN);
	assert_memory_equal(dl_wm_chain(&st.applied, "C"), r1, DL_CHAIN_LEN);
	/* A channel without records is at its genesis. */
	assert_memory_equal(dl_wm_chain(&st.sent, "Z"), zeros, DL_CHAIN_LEN);
	assert_memory_equal(dl_wm_chain(&st.applied, "Z"), zeros, DL_CHAIN_LEN);
	assert_int_equal(st.nsends, 2);
	assert_memory_equal(st.sends[0].chain, c1, DL_CHAIN_LEN);
	dl_state_free(&st);
	wbuf_free(&w);
	wbuf_free(&m);
}

/* Files from before the chain still open; their channels' chain is
 * unknown until the next message, which starts again from genesis. */
static void
old_records_without_chain_still_open(void **state)
{
	uint8_t c2[DL_CHAIN_LEN];
	struct dl_state st;
	struct wbuf w, m;

	(void)state;
	image_init(&w);
	wbuf_init(&m);
	wbuf_reset(&m);
	chmsg_encode(&m, "bal", 3, 1);		/* the older encoding */
	add_send(&w, "B", 1, &m, NULL);
	add_apply(&w, "C", 1, NULL);
	replay(&w, &st);
	assert_null(dl_wm_chain(&st.sent, "B"));
	assert_null(dl_wm_chain(&st.applied, "C"));
	assert_int_equal(dl_wm_get(&st.sent, "B"), 1);
	dl_state_free(&st);
	/* The next SEND, with a chain from genesis, makes it known again. */
	msg(&m, "bal", 1, 9);
	assert_int_equal(chain_next(NULL, 2, m.data, m.len, c2), 0);
	add_send(&w, "B", 2, &m, c2);
	replay(&w, &st);
	assert_memory_equal(dl_wm_chain(&st.sent, "B"), c2, DL_CHAIN_LEN);
	dl_state_free(&st);
	wbuf_free(&w);
	wbuf_free(&m);
}

/* A SEND record whose payload ends in tail bytes of zeros after the
 * message, with a right length and checksum, appended to w. */
static void
add_send_tail(struct wbuf *w, const struct wbuf *m, size_t tail)
{
	struct dl_record r = { .type = DL_SEND };
	struct wbuf p;
	uint8_t hdr[DL_REC_HDR_LEN];
	size_t n;

	r.peer = "B";
	r.seq = 1;
	r.key = (const uint8_t *)"bal";
	r.klen = 3;
	r.val = (const uint8_t *)"1";
	r.vlen = 1;
	r.msg = m->data;
	r.msglen = m->len;
	wbuf_init(&p);
	dl_encode(&p, &r);
	while (tail-- > 0)
		wbuf_put_u8(&p, 0);
	assert_false(p.oom);
	n = p.len - DL_REC_HDR_LEN;
	buf_le32_put(hdr, (uint32_t)n);
	buf_le32_put(hdr + 4, crc32_gzip_refl(0, p.data + DL_REC_HDR_LEN, n));
	wbuf_put_raw(w, hdr, sizeof(hdr));
	wbuf_put_raw(w, p.data + DL_REC_HDR_LEN, n);
	wbuf_free(&p);
}

/* A trailing field of any length but DL_CHAIN_LEN is corruption, not a
 * chain; exactly DL_CHAIN_LEN bytes are the chain. */
static void
trailing_bytes_other_than_a_chain_are_corrupt(void **state)
{
	static const size_t bad[] = { 1, DL_CHAIN_LEN - 1, DL_CHAIN_LEN + 1 };
	struct dl_state st;
	struct cs_err e;
	struct wbuf w, m;
	size_t i;

	(void)state;
	wbuf_init(&m);
	msg(&m, "bal", 1, 1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		image_init(&w);
		add_send_tail(&w, &m, bad[i]);
		add_ack(&w, "B", 1);	/* so the bad record is not the tail */
		assert_int_equal(dl_state_init(&st, 0), 0);
		assert_int_equal(dl_replay(w.data, w.len, "image", 1, &st,
		    NULL, &e), -1);
		assert_non_null(strstr(e.msg, "trailing bytes"));
		dl_state_free(&st);
		wbuf_free(&w);
	}
	image_init(&w);
	add_send_tail(&w, &m, DL_CHAIN_LEN);
	replay(&w, &st);
	assert_memory_equal(dl_wm_chain(&st.sent, "B"), zeros, DL_CHAIN_LEN);
	dl_state_free(&st);
	wbuf_free(&w);
	wbuf_free(&m);
}

/* An ACK moves the chain at the acknowledged seq into acked; the sender
 * then holds acked..sent and nothing before. */
static void
ack_keeps_the_chain_at_the_acknowledged_seq(void **state)
{
	uint8_t c[4][DL_CHAIN_LEN];
	const uint8_t *got;
	struct dl_state st;
	struct wbuf w, m;
	uint64_t s;

	(void)state;
	image_init(&w);
	wbuf_init(&m);
	add_sends(&w, &m, c, 3, 0);
	add_ack(&w, "B", 1);
	replay(&w, &st);
	assert_int_equal(st.nsends, 2);
	assert_memory_equal(dl_wm_chain(&st.acked, "B"), c[1], DL_CHAIN_LEN);
	assert_int_equal(chain_sent_at(&st, "B", 0, &got), 0);
	for (s = 1; s <= 3; s++) {
		assert_int_equal(chain_sent_at(&st, "B", s, &got), 1);
		assert_memory_equal(got, c[s], DL_CHAIN_LEN);
	}
	assert_int_equal(chain_sent_at(&st, "B", 4, &got), 0);
	dl_state_free(&st);
	/* Everything acknowledged: only the sent seq is held. */
	add_ack(&w, "B", 3);
	replay(&w, &st);
	assert_int_equal(st.nsends, 0);
	assert_int_equal(chain_sent_at(&st, "B", 2, &got), 0);
	assert_int_equal(chain_sent_at(&st, "B", 3, &got), 1);
	assert_memory_equal(got, c[3], DL_CHAIN_LEN);
	dl_state_free(&st);
	wbuf_free(&w);
	wbuf_free(&m);
}

/* The receiver's chain, carried message by message as restore's replay
 * and the live agent do, meets the sender's. */
static void
receiver_replay_meets_the_sender(void **state)
{
	uint8_t sc[DL_CHAIN_LEN], rc[DL_CHAIN_LEN];
	struct dl_state snd, rcv;
	struct wbuf ws, wr, m;
	char why[160];
	uint64_t s;

	(void)state;
	image_init(&ws);
	image_init(&wr);
	wbuf_init(&m);
	memcpy(sc, zeros, DL_CHAIN_LEN);
	memcpy(rc, zeros, DL_CHAIN_LEN);
	for (s = 1; s <= 5; s++) {
		msg(&m, "bal", (int64_t)s, (uint8_t)(40 + s));
		assert_int_equal(chain_next(sc, s, m.data, m.len, sc), 0);
		add_send(&ws, "B", s, &m, sc);
		if (s <= 3) {	/* the receiver applied 1..3 */
			assert_int_equal(chain_next(rc, s, m.data, m.len, rc),
			    0);
			add_apply(&wr, "A", s, rc);
		}
	}
	replay(&ws, &snd);
	replay(&wr, &rcv);
	assert_int_equal(chain_check(&snd, "B", dl_wm_get(&rcv.applied, "A"),
	    dl_wm_chain(&rcv.applied, "A"), why, sizeof(why)), CHAIN_OK);
	dl_state_free(&snd);
	dl_state_free(&rcv);
	wbuf_free(&ws);
	wbuf_free(&wr);
	wbuf_free(&m);
}

/* An upgrade in the middle of a channel: the sender's last old SEND (no
 * id, no chain) is applied by an upgraded receiver, then new messages
 * flow. Both ends leave the old message's chain unknown and restart from
 * genesis after it, so they meet again at the first new message. */
static void
upgrade_mid_channel_ends_agree(void **state)
{
	uint8_t s3[DL_CHAIN_LEN], r2[DL_CHAIN_LEN], r3[DL_CHAIN_LEN];
	struct dl_state snd, rcv;
	struct wbuf ws, wr, old, m;
	char why[160];
	int known;

	(void)state;
	image_init(&ws);
	image_init(&wr);
	wbuf_init(&old);
	wbuf_init(&m);
	chmsg_encode(&old, "bal", 3, 1);		/* seqs 1, 2: old sender */
	add_send(&ws, "B", 1, &old, NULL);
	add_send(&ws, "B", 2, &old, NULL);
	add_apply(&wr, "A", 1, NULL);			/* seq 1: old receiver */
	/* Upgraded: the receiver applies seq 2 (no id): chain unknown. */
	assert_int_equal(chain_after(NULL, 2, old.data, old.len, r2, &known),
	    0);
	assert_int_equal(known, 0);
	add_apply(&wr, "A", 2, NULL);
	/* The upgraded sender sends seq 3 with an id, chained from genesis. */
	msg(&m, "bal", 1, 3);
	assert_int_equal(chain_next(NULL, 3, m.data, m.len, s3), 0);
	add_send(&ws, "B", 3, &m, s3);
	assert_int_equal(chain_after(NULL, 3, m.data, m.len, r3, &known), 0);
	assert_int_equal(known, 1);
	assert_memory_equal(r3, s3, DL_CHAIN_LEN);
	add_apply(&wr, "A", 3, r3);
	replay(&ws, &snd);
	replay(&wr, &rcv);
	assert_int_equal(chain_check(&snd, "B", dl_wm_get(&rcv.applied, "A"),
	    dl_wm_chain(&rcv.applied, "A"), why, sizeof(why)), CHAIN_OK);
	dl_state_free(&snd);
	dl_state_free(&rcv);
	wbuf_free(&ws);
	wbuf_free(&wr);
	wbuf_free(&old);
	wbuf_free(&m);
}

/* The decision table, for a sender that sent 1..5 and has 2 acknowledged. */
static void
decision_table(void **state)
{
	uint8_t c[6][DL_CHAIN_LEN], other[DL_CHAIN_LEN];
	struct dl_state st, fresh, legacy;
	struct wbuf w, m;
	char why[160];
	uint64_t s;

	(void)state;
	image_init(&w);
	wbuf_init(&m);
	add_sends(&w, &m, c, 5, 0);
	add_ack(&w, "B", 2);
	replay(&w, &st);
	/* Same history at every seq it holds: acked (2) .. sent (5). */
	for (s = 2; s <= 5; s++)
		assert_int_equal(chain_check(&st, "B", s, c[s], why,
		    sizeof(why)), CHAIN_OK);
	/* The receiver is ahead of what this file sent. */
	assert_int_equal(chain_check(&st, "B", 6, c[5], why, sizeof(why)),
	    CHAIN_AHEAD);
	assert_non_null(strstr(why, "applied seq 6"));
	/* Behind the acknowledged seq: a lost or older receiver file. */
	assert_int_equal(chain_check(&st, "B", 1, c[1], why, sizeof(why)),
	    CHAIN_GONE);
	assert_int_equal(chain_check(&st, "B", 0, zeros, why, sizeof(why)),
	    CHAIN_GONE);
	/* Same seq, another history. */
	memset(other, 0x5a, sizeof(other));
	assert_int_equal(chain_check(&st, "B", 4, other, why, sizeof(why)),
	    CHAIN_DIFFER);
	assert_non_null(strstr(why, "histories differ"));
	/* A receiver without a chain (an older file) is let in unchecked. */
	assert_int_equal(chain_check(&st, "B", 3, NULL, why, sizeof(why)),
	    CHAIN_UNCHECKED);
	/* ... but not when its seq is impossible. */
	assert_int_equal(chain_check(&st, "B", 9, NULL, why, sizeof(why)),
	    CHAIN_AHEAD);
	assert_true(chain_accepts(CHAIN_OK));
	assert_true(chain_accepts(CHAIN_UNCHECKED));
	assert_false(chain_accepts(CHAIN_AHEAD));
	assert_false(chain_accepts(CHAIN_GONE));
	assert_false(chain_accepts(CHAIN_DIFFER));
	/* A brand-new channel: both ends at 0 and genesis. */
	wbuf_free(&w);
	image_init(&w);
	replay(&w, &fresh);
	assert_int_equal(chain_check(&fresh, "B", 0, zeros, why, sizeof(why)),
	    CHAIN_OK);
	assert_int_equal(chain_check(&fresh, "B", 1, c[1], why, sizeof(why)),
	    CHAIN_AHEAD);
	/* A sender whose last SEND has no chain (an older file). */
	wbuf_reset(&m);
	chmsg_encode(&m, "bal", 3, 1);
	add_send(&w, "B", 1, &m, NULL);
	replay(&w, &legacy);
	assert_int_equal(chain_check(&legacy, "B", 1, c[1], why, sizeof(why)),
	    CHAIN_UNCHECKED);
	dl_state_free(&st);
	dl_state_free(&fresh);
	dl_state_free(&legacy);
	wbuf_free(&w);
	wbuf_free(&m);
}

static int
cmp_id(const void *a, const void *b)
{
	return memcmp(a, b, CHMSG_ID_LEN);
}

/* Ids come from a pool refilled a page at a time: a run across several
 * refills never repeats one, and a forked child never hands out the ids
 * its parent has yet to hand out. */
static void
message_ids_never_repeat(void **state)
{
	enum { N = 2000 };
	static uint8_t ids[N + 1][CHMSG_ID_LEN];
	uint8_t child_id[CHMSG_ID_LEN];
	int fds[2], status, i;
	pid_t pid;

	(void)state;
	for (i = 0; i < N; i++)
		assert_int_equal(chmsg_new_id(ids[i]), 0);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		_exit(chmsg_new_id(child_id) == 0 &&
		    write(fds[1], child_id, CHMSG_ID_LEN) == CHMSG_ID_LEN ?
		    0 : 1);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], child_id, CHMSG_ID_LEN), CHMSG_ID_LEN);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(chmsg_new_id(ids[N]), 0);
	assert_memory_not_equal(child_id, ids[N], CHMSG_ID_LEN);
	qsort(ids, N + 1, CHMSG_ID_LEN, cmp_id);
	for (i = 1; i <= N; i++)
		assert_memory_not_equal(ids[i - 1], ids[i], CHMSG_ID_LEN);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(chain_is_sha256_of_prev_seq_and_message),
		cmocka_unit_test(equal_transfers_with_other_ids_differ),
		cmocka_unit_test(records_carry_the_chain),
		cmocka_unit_test(old_records_without_chain_still_open),
		cmocka_unit_test(trailing_bytes_other_than_a_chain_are_corrupt),
		cmocka_unit_test(ack_keeps_the_chain_at_the_acknowledged_seq),
		cmocka_unit_test(receiver_replay_meets_the_sender),
		cmocka_unit_test(upgrade_mid_channel_ends_agree),
		cmocka_unit_test(decision_table),
		cmocka_unit_test(message_ids_never_repeat),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
