/* test_agstat.c - the STATUS text: written, parsed back, bad input refused. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../proto/agstat.h"

static void
test_round_trip(void **state)
{
	struct agstat st, got;
	struct agstat_ch out[2], in[1];
	struct wbuf w;
	struct cs_err e;

	(void)state;
	memset(&st, 0, sizeof(st));
	memset(out, 0, sizeof(out));
	memset(in, 0, sizeof(in));
	st.pid = 4242;
	st.uptime_s = 3725;
	st.size = 123456789012ULL;
	st.records = 77;
	st.syncs = 5;
	st.writes = 6;
	st.snap_id = 9;
	strcpy(st.phase, "recording");
	st.snaps[0].id = 9;
	strcpy(st.snaps[0].phase, "recording");
	strcpy(st.snaps[0].uid, "00112233445566778899aabbccddeeff");
	st.snaps[1].id = 2;
	strcpy(st.snaps[1].phase, "joined");
	strcpy(st.snaps[1].uid, "ffeeddccbbaa99887766554433221100");
	st.nsnaps = 2;
	strcpy(out[0].peer, "B");
	out[0].seq = 12;
	out[0].acked = 10;
	out[0].queued = 3;
	out[0].unacked = 2;
	out[0].up = 1;
	out[0].held = 1;
	strcpy(out[1].peer, "C.2");
	out[1].seq = 5;
	strcpy(in[0].peer, "B");
	in[0].seq = 8;
	in[0].queued = 4;
	in[0].up = 1;
	in[0].diverged = 1;
	out[1].diverged = 1;
	st.live = 321;
	st.gen = 2;
	st.compacted_at = 1700000000;
	st.compactions = 1;
	st.cbefore = 5000;
	st.cafter = 210;
	st.cms = 12;
	st.compacting = 1;
	st.out = out;
	st.nout = 2;
	st.in = in;
	st.nin = 1;
	st.dead = 3;
	st.fenced = 7;
	st.inbox_msgs = 2;
	st.inbox_bytes = 60;
	st.inbox_max = 67108864;
	st.recv_parked = 1;
	out[0].checked = 1;
	out[0].stalled_ms = 61000;
	wbuf_init(&w);
	agstat_format(&st, "A", &w);
	assert_false(w.oom);
	wbuf_put_u8(&w, 0);
	assert_string_equal((char *)w.data, "pid=4242 uptime_s=3725 "
	    "size=123456789012 records=77 syncs=5 writes=6 "
	    "snapshot=9:recording "
	    "snapshots=9:recording:00112233445566778899aabbccddeeff;"
	    "2:joined:ffeeddccbbaa99887766554433221100 held=A>B "
	    "out=A>B:sent=12,acked=10,queued=3,unacked=2,up=1,held=1,"
	    "diverged=0,checked=1,stalled_ms=61000;"
	    "A>C.2:sent=5,acked=0,queued=0,unacked=0,up=0,held=0,diverged=1,"
	    "checked=0,stalled_ms=0 "
	    "in=B>A:applied=8,queued=4,up=1,diverged=1,checked=0 dead=3 "
	    "live=321 gen=2 compacted_at=1700000000 compactions=1 "
	    "compact_before=5000 compact_after=210 compact_ms=12 "
	    "compacting=1 fenced=7 inbox_msgs=2 inbox_bytes=60 "
	    "inbox_max=67108864 recv_parked=1");
	assert_int_equal(agstat_parse((char *)w.data, w.len - 1, &got, &e),
	    0);
	assert_int_equal(got.pid, 4242);
	assert_int_equal(got.uptime_s, 3725);
	assert_true(got.size == 123456789012ULL);
	assert_int_equal(got.records, 77);
	assert_int_equal(got.syncs, 5);
	assert_int_equal(got.writes, 6);
	assert_int_equal(got.dead, 3);
	assert_int_equal(got.fenced, 7);
	assert_int_equal(got.inbox_msgs, 2);
	assert_int_equal(got.inbox_bytes, 60);
	assert_int_equal(got.inbox_max, 67108864);
	assert_int_equal(got.recv_parked, 1);
	assert_int_equal(got.out[0].checked, 1);
	assert_int_equal(got.out[1].checked, 0);
	assert_int_equal(got.out[0].stalled_ms, 61000);
	assert_int_equal(got.out[1].stalled_ms, 0);
	assert_int_equal(got.snap_id, 9);
	assert_string_equal(got.phase, "recording");
	assert_int_equal(got.nsnaps, 2);
	assert_int_equal(got.snaps[1].id, 2);
	assert_string_equal(got.snaps[1].phase, "joined");
	assert_string_equal(got.snaps[1].uid,
	    "ffeeddccbbaa99887766554433221100");
	assert_int_equal(got.nout, 2);
	assert_string_equal(got.out[0].peer, "B");
	assert_int_equal(got.out[0].seq, 12);
	assert_int_equal(got.out[0].acked, 10);
	assert_int_equal(got.out[0].queued, 3);
	assert_int_equal(got.out[0].unacked, 2);
	assert_int_equal(got.out[0].up, 1);
	assert_int_equal(got.out[0].held, 1);
	assert_string_equal(got.out[1].peer, "C.2");
	assert_int_equal(got.out[1].held, 0);
	assert_int_equal(got.out[0].diverged, 0);
	assert_int_equal(got.out[1].diverged, 1);
	assert_int_equal(got.in[0].diverged, 1);
	assert_int_equal(got.nin, 1);
	assert_int_equal(got.live, 321);
	assert_int_equal(got.gen, 2);
	assert_int_equal(got.compacted_at, 1700000000);
	assert_int_equal(got.compactions, 1);
	assert_int_equal(got.cbefore, 5000);
	assert_int_equal(got.cafter, 210);
	assert_int_equal(got.cms, 12);
	assert_int_equal(got.compacting, 1);
	assert_string_equal(got.in[0].peer, "B");
	assert_int_equal(got.in[0].seq, 8);
	assert_int_equal(got.in[0].queued, 4);
	agstat_free(&got);
	wbuf_free(&w);
}

static void
test_empty_lists_and_unknown_keys(void **state)
{
	static const char text[] = "pid=1 uptime_s=0 size=16 records=0 "
	    "snapshot=none held=none out=none in=none future=x:y";
	struct agstat got;
	struct cs_err e;

	(void)state;
	assert_int_equal(agstat_parse(text, strlen(text), &got, &e), 0);
	assert_int_equal(got.pid, 1);
	assert_int_equal(got.snap_id, 0);
	assert_string_equal(got.phase, "none");
	assert_int_equal(got.nsnaps, 0);
	assert_int_equal(got.nout, 0);
	assert_int_equal(got.nin, 0);
	agstat_free(&got);
}

static void
test_bad_text_is_refused(void **state)
{
	static const char *const bad[] = {
		"pid",				/* no '=' */
		"pid=x",			/* not a number */
		"pid=99999999999",		/* too large */
		"size=-1",
		"snapshot=7",			/* no phase */
		"snapshot=0:joined",		/* id 0 */
		"snapshot=1:averyveryverylongphase",
		"snapshots=1:joined",		/* no identity */
		"snapshots=1:joined:00112233",	/* short identity */
		"snapshots=x:joined:00112233445566778899aabbccddeeff",
		"snapshots=1::00112233445566778899aabbccddeeff",
		"out=A>B",			/* no fields */
		"out=AB:sent=1",		/* no '>' */
		"out=A>B:sent=1x",
		"out=A>B:sent",
		"in=B>A:applied=1 in=B>A:applied=2",	/* twice */
	};
	struct agstat got;
	struct cs_err e;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e.msg[0] = '\0';
		assert_int_equal(agstat_parse(bad[i], strlen(bad[i]), &got, &e),
		    -1);
		assert_true(strncmp(e.msg, "status reply", 12) == 0);
		assert_null(got.out);
		assert_null(got.in);
	}
	/* An embedded NUL. */
	assert_int_equal(agstat_parse("pid=1\0x", 7, &got, &e), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_empty_lists_and_unknown_keys),
		cmocka_unit_test(test_bad_text_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
