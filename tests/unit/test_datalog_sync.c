/* test_datalog_sync.c - group commit accounting of the data file: which
 * prefix must be made durable (ACK hints ride along) and the fsync count. */
#include <sys/stat.h>

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
#include "unit.h"
#include "../../log/dlfile.h"

static void
append(struct datalog *dl, const struct dl_record *r)
{
	struct cs_err e;

	if (datalog_append(dl, r, &e) == -1)
		fail_msg("append: %s", e.msg);
}

static void
sync_ok(struct datalog *dl)
{
	struct cs_err e;

	if (datalog_sync(dl, &e) == -1)
		fail_msg("sync: %s", e.msg);
}

/* A SEND, then ACKs: the ACK records are written but need no fsync of
 * their own; the next real record's sync covers them. */
static void
ack_records_do_not_raise_the_durable_need(void **state)
{
	struct dl_record send = { .type = DL_SEND }, ack = { .type = DL_ACK };
	struct dl_record put = { .type = DL_PUT };
	struct datalog *dl;
	struct cs_err e;
	uint64_t after_send;

	(void)state;
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	assert_int_equal(datalog_need(dl), DL_HEADER_LEN);
	assert_int_equal(datalog_syncs(dl), 0);

	send.peer = "B";
	send.seq = 1;
	send.key = (const uint8_t *)"bal";
	send.klen = 3;
	send.val = (const uint8_t *)"90";
	send.vlen = 2;
	send.msg = (const uint8_t *)"m";
	send.msglen = 1;
	append(dl, &send);
	after_send = datalog_end(dl);
	assert_int_equal(datalog_need(dl), after_send);
	sync_ok(dl);
	assert_int_equal(datalog_syncs(dl), 1);
	assert_int_equal(datalog_synced(dl), after_send);

	ack.peer = "B";
	ack.seq = 1;
	append(dl, &ack);
	assert_true(datalog_end(dl) > after_send);
	assert_int_equal(datalog_need(dl), after_send);
	assert_true(datalog_synced(dl) >= datalog_need(dl));

	/* A snapshot prefix that ends after the ACK must become durable. */
	datalog_require(dl, datalog_end(dl));
	assert_int_equal(datalog_need(dl), datalog_end(dl));

	put.key = (const uint8_t *)"k";
	put.klen = 1;
	put.val = (const uint8_t *)"v";
	put.vlen = 1;
	append(dl, &put);
	assert_int_equal(datalog_need(dl), datalog_end(dl));
	sync_ok(dl);
	assert_int_equal(datalog_syncs(dl), 2);
	assert_int_equal(datalog_synced(dl), datalog_end(dl));
	/* Nothing new: a sync is a no-op and not counted. */
	sync_ok(dl);
	assert_int_equal(datalog_syncs(dl), 2);
	datalog_close(dl);
}

/* Many appends, one sync: the count is of fdatasync calls, not records. */
static void
one_sync_covers_a_batch(void **state)
{
	struct dl_record put = { .type = DL_PUT };
	struct datalog *dl;
	struct cs_err e;
	int i;

	(void)state;
	unlink(unit_data);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	put.key = (const uint8_t *)"k";
	put.klen = 1;
	put.val = (const uint8_t *)"v";
	put.vlen = 1;
	for (i = 0; i < 100; i++)
		append(dl, &put);
	sync_ok(dl);
	assert_int_equal(datalog_syncs(dl), 1);
	assert_int_equal(datalog_state(dl)->records, 100);
	datalog_close(dl);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ack_records_do_not_raise_the_durable_need),
		cmocka_unit_test(one_sync_covers_a_batch),
	};

	return cmocka_run_group_tests(tests, unit_setup_data, unit_teardown);
}
