/* test_cutcheck.c - the cut rule on hand-made channels: consistent cuts,
 * the 160 (receive without send), the 140 (in-flight message dropped),
 * duplicates, gaps and seqs out of range, with the exact problem lines. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "../../store/cutcheck.h"
#include "unit.h"

/* Run store_cut_check on A->B and check the count it returns equals the lines
 * it reported. */
static int
check(uint64_t sent, uint64_t applied, const uint64_t *seqs, size_t n,
    struct unit_probs *p)
{
	struct cut_channel ch = { "A", "B", sent, applied, seqs, n };
	int rc;

	memset(p, 0, sizeof(*p));
	rc = store_cut_check(&ch, unit_collect, p);
	assert_int_equal(rc, p->n);
	return rc;
}

static void
consistent_empty_channel(void **state)
{
	struct unit_probs p;

	(void)state;
	assert_int_equal(check(0, 0, NULL, 0, &p), 0);
	assert_int_equal(check(7, 7, NULL, 0, &p), 0);
}

static void
consistent_with_in_flight_messages(void **state)
{
	const uint64_t one[] = { 1 }, three[] = { 5, 3, 4 };
	struct unit_probs p;

	(void)state;
	/* The seed: A sent 1, B applied 0, seq 1 recorded in flight. */
	assert_int_equal(check(1, 0, one, 1, &p), 0);
	/* Any order is fine. */
	assert_int_equal(check(5, 2, three, 3, &p), 0);
}

static void
receive_without_send_is_the_160(void **state)
{
	struct unit_probs p;

	(void)state;
	/* A recorded before its debit (sent 0), B after the credit. */
	assert_int_equal(check(0, 1, NULL, 0, &p), 1);
	assert_string_equal(p.line[0],
	    "channel A->B: applied 1 > sent 0 (receive without send)");
	assert_int_equal(check(2, 3, NULL, 0, &p), 1);
	assert_string_equal(p.line[0],
	    "channel A->B: applied 3 > sent 2 (receive without send)");
}

static void
missing_in_flight_message_is_the_140(void **state)
{
	struct unit_probs p;

	(void)state;
	assert_int_equal(check(1, 0, NULL, 0, &p), 1);
	assert_string_equal(p.line[0], "channel A->B: message seq 1 missing "
	    "(expected seqs 1..1, in flight)");
	assert_int_equal(check(4, 0, NULL, 0, &p), 1);
	assert_string_equal(p.line[0], "channel A->B: message seqs 1..4 "
	    "missing (expected seqs 1..4, in flight)");
}

static void
duplicated_message(void **state)
{
	const uint64_t seqs[] = { 1, 2, 2, 3 };
	struct unit_probs p;

	(void)state;
	assert_int_equal(check(3, 0, seqs, 4, &p), 1);
	assert_string_equal(p.line[0],
	    "channel A->B: message seq 2 recorded 2 times");
}

static void
gaps_in_seqs(void **state)
{
	const uint64_t seqs[] = { 7, 3, 5 };
	struct unit_probs p;

	(void)state;
	/* Expected 3..8: 4 and 6 are missing, and 8 at the end. */
	assert_int_equal(check(8, 2, seqs, 3, &p), 3);
	assert_string_equal(p.line[0], "channel A->B: message seq 4 missing "
	    "(expected seqs 3..8, in flight)");
	assert_string_equal(p.line[1], "channel A->B: message seq 6 missing "
	    "(expected seqs 3..8, in flight)");
	assert_string_equal(p.line[2], "channel A->B: message seq 8 missing "
	    "(expected seqs 3..8, in flight)");
}

static void
seqs_out_of_range(void **state)
{
	const uint64_t seqs[] = { 1, 2, 3, 5 }, old[] = { 1 };
	struct unit_probs p;

	(void)state;
	assert_int_equal(check(3, 0, seqs, 4, &p), 1);
	assert_string_equal(p.line[0], "channel A->B: unexpected message seq 5 "
	    "(expected seqs 1..3)");
	/* Already applied: recording it would apply it twice on restore. */
	assert_int_equal(check(1, 1, old, 1, &p), 1);
	assert_string_equal(p.line[0], "channel A->B: unexpected message seq 1 "
	    "(expected seqs none)");
}

static void
mixed_moments_and_extremes(void **state)
{
	const uint64_t seqs[] = { UINT64_MAX, 0 };
	struct unit_probs p;

	(void)state;
	/* applied > sent and a recorded message: two problems. */
	assert_int_equal(check(1, 2, seqs + 1, 1, &p), 2);
	/* A tampered file's nonsense must not overflow or loop. */
	assert_int_equal(check(UINT64_MAX, UINT64_MAX - 1, seqs, 1, &p), 0);
	assert_int_equal(check(UINT64_MAX, 0, seqs, 2, &p), 2);
	assert_int_equal(check(0, UINT64_MAX, NULL, 0, &p), 1);
	/* No callback: still counted. */
	{
		struct cut_channel ch = { "A", "B", 1, 0, NULL, 0 };

		assert_int_equal(store_cut_check(&ch, NULL, NULL), 1);
	}
}

/* A pair without a channel: nothing may be in flight on it. */
static void
unlisted_pair(void **state)
{
	struct unit_probs p;

	(void)state;
	memset(&p, 0, sizeof(p));
	assert_int_equal(store_cut_check_unlisted("A", "B", 0, 0, unit_collect,
	    &p), 0);
	assert_int_equal(store_cut_check_unlisted("A", "B", 4, 4, unit_collect,
	    &p), 0);
	assert_int_equal(p.n, 0);
	assert_int_equal(store_cut_check_unlisted("A", "B", 1, 0, unit_collect,
	    &p), 1);
	assert_string_equal(p.line[0], "channel A->B: not a channel of the "
	    "config, but 1 message is in flight on it (sent 1, applied 0) "
	    "that the cut does not hold: restore the channel in the config, "
	    "or drain it first");
	assert_int_equal(store_cut_check_unlisted("A", "B", 5, 2, unit_collect,
	    &p), 1);
	assert_string_equal(p.line[1], "channel A->B: not a channel of the "
	    "config, but 3 messages are in flight on it (sent 5, applied 2) "
	    "that the cut does not hold: restore the channel in the config, "
	    "or drain it first");
	assert_int_equal(store_cut_check_unlisted("A", "B", 0, 2, unit_collect,
	    &p), 1);
	assert_string_equal(p.line[2], "channel A->B: not a channel of the "
	    "config, but applied 2 > sent 0 (receive without send)");
	assert_int_equal(p.n, 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(consistent_empty_channel),
		cmocka_unit_test(consistent_with_in_flight_messages),
		cmocka_unit_test(receive_without_send_is_the_160),
		cmocka_unit_test(missing_in_flight_message_is_the_140),
		cmocka_unit_test(duplicated_message),
		cmocka_unit_test(gaps_in_seqs),
		cmocka_unit_test(seqs_out_of_range),
		cmocka_unit_test(mixed_moments_and_extremes),
		cmocka_unit_test(unlisted_pair),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
