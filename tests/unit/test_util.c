/* test_util.c - the shared small helpers: cs_printable's two rules (the
 * agent's logs: ASCII only, "..." when cut; the commands: UTF-8 kept, cut
 * silently), the monotonic clock, the test hooks' CUTSNAP_FAULT parser,
 * cs_all_zero. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../lib/util.h"
#include "unit.h"

static void
printable_rules(void **state)
{
	static const char in[] = "k\x01\xc3\xa9\x7f\x80z";
	char out[64];

	(void)state;
	cs_printable(in, sizeof(in) - 1, out, sizeof(out), 0);
	assert_string_equal(out, "k?\xc3\xa9?\x80z");
	cs_printable(in, sizeof(in) - 1, out, sizeof(out), CS_PRINT_ASCII);
	assert_string_equal(out, "k?????z");
	cs_printable(in, sizeof(in) - 1, out, sizeof(out),
	    CS_PRINT_ASCII | CS_PRINT_ELLIPSIS);
	assert_string_equal(out, "k?????z");
}

static void
printable_cuts(void **state)
{
	char out[6];

	(void)state;
	cs_printable("abcdefgh", 8, out, sizeof(out), 0);
	assert_string_equal(out, "abcde");
	cs_printable("abcdefgh", 8, out, sizeof(out), CS_PRINT_ELLIPSIS);
	assert_string_equal(out, "ab...");
	cs_printable("abcde", 5, out, sizeof(out), CS_PRINT_ELLIPSIS);
	assert_string_equal(out, "abcde");
	cs_printable("abc", 3, out, 0, 0);	/* no room: untouched */
	cs_printable("abc", 3, out, 1, CS_PRINT_ELLIPSIS);
	assert_string_equal(out, "");
}

static void
clock_moves_forward(void **state)
{
	int64_t a, b;

	(void)state;
	a = cs_now_ms();
	b = cs_now_ms();
	assert_true(a > 0 && b >= a);
}

/* CUTSNAP_FAULT: comma-separated hooks, each name or name:VALUE; a hook
 * is found by its whole name, wherever it is in the list. */
static void
fault_hooks(void **state)
{
	char v[8];

	(void)state;
	assert_int_equal(unsetenv("CUTSNAP_FAULT"), 0);
	assert_null(cs_fault_value("x", v, sizeof(v)));
	assert_false(cs_fault_on("x"));
	assert_int_equal(setenv("CUTSNAP_FAULT",
	    "flag,slow:250,slower:7,empty:,long:123456789", 1), 0);
	assert_true(cs_fault_on("flag"));
	assert_null(cs_fault_value("flag", v, sizeof(v)));	/* no value */
	assert_false(cs_fault_on("fla"));			/* a prefix */
	assert_false(cs_fault_on("flags"));
	assert_string_equal(cs_fault_value("slow", v, sizeof(v)), "250");
	assert_string_equal(cs_fault_value("slower", v, sizeof(v)), "7");
	assert_string_equal(cs_fault_value("empty", v, sizeof(v)), "");
	assert_null(cs_fault_value("long", v, sizeof(v)));	/* too long */
	assert_int_equal(cs_fault_ms("slow", 1000), 250);
	assert_int_equal(cs_fault_ms("slow", 100), 0);		/* above max */
	assert_int_equal(cs_fault_ms("flag", 1000), 0);
	assert_int_equal(cs_fault_ms("absent", 1000), 0);
	assert_int_equal(unsetenv("CUTSNAP_FAULT"), 0);
}

/* cs_all_zero sees a non-zero byte wherever it stands, and only there. */
static void
all_zero_finds_any_byte(void **state)
{
	uint8_t buf[64];
	size_t i, checked = 0;

	(void)state;
	memset(buf, 0, sizeof(buf));
	assert_int_equal(cs_all_zero(buf, 0), 1);
	assert_int_equal(cs_all_zero(buf, sizeof(buf)), 1);
	for (i = 0; i < sizeof(buf); i++, checked++) {
		buf[i] = 0x80;
		assert_int_equal(cs_all_zero(buf, sizeof(buf)), 0);
		assert_int_equal(cs_all_zero(buf, i), 1);	/* before it */
		buf[i] = 0;
	}
	assert_int_equal(checked, sizeof(buf));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(printable_rules),
		cmocka_unit_test(printable_cuts),
		cmocka_unit_test(clock_moves_forward),
		cmocka_unit_test(fault_hooks),
		cmocka_unit_test(all_zero_finds_any_byte),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
