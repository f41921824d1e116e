/* test_err.c - errors carry a kind: each setter's code and errno, cs_errctx
 * keeping them, and the names machine output uses. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "../../lib/err.h"

static void
test_setters(void **state)
{
	struct cs_err e;

	(void)state;
	assert_int_equal(cs_errf(&e, "plain %d", 1), -1);
	assert_int_equal(cs_err_code(&e), CS_E_FAILED);
	assert_int_equal(e.sys_errno, 0);
	assert_string_equal(e.msg, "plain 1");
	assert_int_equal(cs_errc(&e, CS_E_LOCKED, "held by %s", "x"), -1);
	assert_int_equal(cs_err_code(&e), CS_E_LOCKED);
	assert_string_equal(e.msg, "held by x");
	errno = ENOENT;
	assert_int_equal(cs_errno(&e, "open %s", "f"), -1);
	assert_int_equal(cs_err_code(&e), CS_E_IO);
	assert_int_equal(e.sys_errno, ENOENT);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(e.msg, "open f: No such file or directory");
	errno = ENOMEM;
	cs_errno(&e, "alloc");
	assert_int_equal(cs_err_code(&e), CS_E_NOMEM);
}

static void
test_ctx_keeps_kind(void **state)
{
	struct cs_err e;

	(void)state;
	errno = EACCES;
	cs_errno(&e, "open f");
	cs_errc(&e, CS_E_AUTH, "wrong password");
	assert_int_equal(cs_errctx(&e, "repository %s", "r"), -1);
	assert_int_equal(cs_err_code(&e), CS_E_AUTH);
	assert_string_equal(e.msg, "repository r: wrong password");
	errno = EIO;
	cs_errno(&e, "read");
	cs_errctx(&e, "manifest");
	assert_int_equal(cs_err_code(&e), CS_E_IO);
	assert_int_equal(e.sys_errno, EIO);
}

/* cs_errkind judges a lower layer's message: the kind changes, the words
 * and errno do not. */
static void
test_kind_keeps_words(void **state)
{
	struct cs_err e;

	(void)state;
	errno = EIO;
	cs_errno(&e, "read blob");
	assert_int_equal(cs_errkind(&e, CS_E_CORRUPT), -1);
	assert_int_equal(cs_err_code(&e), CS_E_CORRUPT);
	assert_int_equal(e.sys_errno, EIO);
	assert_string_equal(e.msg, "read blob: Input/output error");
	assert_int_equal(cs_errkind(NULL, CS_E_CORRUPT), -1);
}

static void
test_null_and_garbage(void **state)
{
	struct cs_err e;

	(void)state;
	assert_int_equal(cs_errc(NULL, CS_E_USAGE, "x"), -1);
	assert_int_equal(cs_err_code(NULL), CS_E_FAILED);
	memset(&e, 0, sizeof(e));
	assert_int_equal(cs_err_code(&e), CS_E_FAILED);
	e.code = 999;
	assert_int_equal(cs_err_code(&e), CS_E_FAILED);
}

static void
test_names(void **state)
{
	int c, n = 0;

	(void)state;
	assert_string_equal(cs_err_name(CS_E_LOCKED), "locked");
	assert_string_equal(cs_err_name(CS_E_NOREPO), "no-repository");
	assert_string_equal(cs_err_name(CS_E_AUTH), "auth");
	assert_string_equal(cs_err_name(CS_E_USAGE), "usage");
	assert_string_equal(cs_err_name((enum cs_errcode)0), "failed");
	/* Every code has a distinct name. */
	for (c = CS_E_FAILED; c <= CS_E_LAST; c++, n++)
		for (int d = CS_E_FAILED; d < c; d++)
			assert_string_not_equal(cs_err_name(
			    (enum cs_errcode)c), cs_err_name(
			    (enum cs_errcode)d));
	assert_int_equal(n, 12);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_setters),
		cmocka_unit_test(test_ctx_keeps_kind),
		cmocka_unit_test(test_kind_keeps_words),
		cmocka_unit_test(test_null_and_garbage),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
