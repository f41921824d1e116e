/* test_role.c - what each certificate role may send (role.h): admin
 * everything, backup snapshots and reads, read-only reads, an agent's
 * certificate (no role) and an unknown role nothing. */
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdarg.h>
#include <string.h>
#include <cmocka.h>

#include "../../net/role_policy.h"
#include "../../net/wire.h"

static const uint8_t reads[] = { W_REQ_STATUS, W_REQ_GET, W_REQ_DEAD_LIST };
static const uint8_t snaps[] = { W_SNAP_JOIN, W_SNAP_START, W_SNAP_DONE,
    W_SNAP_FETCH, W_SNAP_UPLOAD };
static const uint8_t writes[] = { W_REQ_PUT, W_REQ_DEL, W_REQ_ADD,
    W_REQ_TRANSFER, W_REQ_HOLD, W_REQ_RELEASE, W_REQ_STOP,
    W_REQ_DEAD_RESOLVE, W_REQ_COMPACT };

/* role r may send every type of t (want 1) or none (want 0). */
static void
check(enum cs_role r, const uint8_t *t, size_t n, int want)
{
	size_t i;

	for (i = 0; i < n; i++)
		assert_int_equal(cs_role_may(r, t[i]), want);
}

#define CHECK(r, t, want)	check(r, t, sizeof(t), want)

static void
each_role_may_what_it_should(void **state)
{
	(void)state;
	CHECK(CS_ROLE_ADMIN, reads, 1);
	CHECK(CS_ROLE_ADMIN, snaps, 1);
	CHECK(CS_ROLE_ADMIN, writes, 1);
	CHECK(CS_ROLE_BACKUP, reads, 1);
	CHECK(CS_ROLE_BACKUP, snaps, 1);
	CHECK(CS_ROLE_BACKUP, writes, 0);
	CHECK(CS_ROLE_READONLY, reads, 1);
	CHECK(CS_ROLE_READONLY, snaps, 0);
	CHECK(CS_ROLE_READONLY, writes, 0);
	CHECK(CS_ROLE_NONE, reads, 0);
	CHECK(CS_ROLE_NONE, writes, 0);
	CHECK(CS_ROLE_BAD, reads, 0);
	CHECK(CS_ROLE_BAD, snaps, 0);
	/* Peer frames are no client's to send but an admin's (whose
	 * handler refuses them as it always has). */
	assert_int_equal(cs_role_may(CS_ROLE_BACKUP, W_PEER_HELLO), 0);
	assert_int_equal(cs_role_may(CS_ROLE_READONLY, 99), 0);
}

static void
names_parse_back(void **state)
{
	enum cs_role r;

	(void)state;
	for (r = CS_ROLE_ADMIN; r <= CS_ROLE_READONLY; r++)
		assert_int_equal(cs_role_parse(cs_role_name(r)), r);
	assert_int_equal(cs_role_parse("none"), CS_ROLE_BAD);
	assert_int_equal(cs_role_parse("Admin"), CS_ROLE_BAD);
	assert_int_equal(cs_role_parse(""), CS_ROLE_BAD);
	assert_string_equal(cs_role_req_name(W_REQ_TRANSFER), "transfer");
	assert_string_equal(cs_role_req_name(W_SNAP_FETCH), "snapshot");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_role_may_what_it_should),
		cmocka_unit_test(names_parse_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
