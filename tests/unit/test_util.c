/* test_util.c - the shared small helpers: cs_printable's two rules (the
 * agent's logs: ASCII only, "..." when cut; the commands: UTF-8 kept, cut
 * silently), the monotonic clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "../../common/util.h"
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(printable_rules),
		cmocka_unit_test(printable_cuts),
		cmocka_unit_test(clock_moves_forward),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
