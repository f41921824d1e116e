/* test_json.c - the JSON writer: commas, nesting, escaping, misuse. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../lib/json.h"

/* A writer on a memory stream. */
struct mem {
	struct json j;
	FILE *f;
	char *buf;
	size_t len;
};

static void
mem_open(struct mem *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	assert_non_null(m->f);
	json_init(&m->j, m->f);
}

/* Closes the stream and checks json_end's result and the text. */
static void
mem_check(struct mem *m, int want_rc, const char *want)
{
	int rc = json_end(&m->j);

	assert_int_equal(fclose(m->f), 0);
	assert_int_equal(rc, want_rc);
	if (want != NULL)
		assert_string_equal(m->buf, want);
	free(m->buf);
}

static void
test_nested_document(void **state)
{
	struct mem m;

	(void)state;
	mem_open(&m);
	json_obj(&m.j);
	json_kstr(&m.j, "name", "A");
	json_kint(&m.j, "delta", -10);
	json_kuint(&m.j, "big", UINT64_MAX);
	json_kbool(&m.j, "up", 1);
	json_key(&m.j, "list");
	json_arr(&m.j);
	json_int(&m.j, 1);
	json_obj(&m.j);
	json_obj_end(&m.j);
	json_arr(&m.j);
	json_arr_end(&m.j);
	json_null(&m.j);
	json_bool(&m.j, 0);
	json_arr_end(&m.j);
	json_key(&m.j, "none");
	json_str(&m.j, NULL);
	json_obj_end(&m.j);
	mem_check(&m, 0, "{\"name\":\"A\",\"delta\":-10,"
	    "\"big\":18446744073709551615,\"up\":true,"
	    "\"list\":[1,{},[],null,false],\"none\":null}\n");
}

static void
test_escapes_every_byte(void **state)
{
	static const uint8_t bytes[] = { 'a', '"', '\\', '\n', '\t', '\r',
	    0x01, 0x7f, 0xc3, 0xa9, 0x00, '/' };
	struct mem m;

	(void)state;
	mem_open(&m);
	json_strn(&m.j, bytes, sizeof(bytes));
	mem_check(&m, 0, "\"a\\\"\\\\\\n\\t\\r\\u0001\\u007f\\u00c3\\u00a9"
	    "\\u0000/\"\n");
	mem_open(&m);
	json_obj(&m.j);
	json_kstr(&m.j, "k\"ey", "");
	json_obj_end(&m.j);
	mem_check(&m, 0, "{\"k\\\"ey\":\"\"}\n");
}

static void
test_reals(void **state)
{
	struct mem m;

	(void)state;
	mem_open(&m);
	json_arr(&m.j);
	json_real(&m.j, 1.5);
	json_real(&m.j, 2.0);
	json_real(&m.j, 0.0004);
	json_real(&m.j, -3.25);
	json_real(&m.j, 1.0 / 0.0);
	json_arr_end(&m.j);
	mem_check(&m, 0, "[1.5,2,0,-3.25,null]\n");
}

static void
test_value_without_key_is_refused(void **state)
{
	struct mem m;

	(void)state;
	mem_open(&m);
	json_obj(&m.j);
	json_int(&m.j, 1);
	json_obj_end(&m.j);
	mem_check(&m, -1, NULL);
}

static void
test_unbalanced_and_mismatched(void **state)
{
	struct mem m;

	(void)state;
	mem_open(&m);
	json_arr(&m.j);
	mem_check(&m, -1, NULL);	/* never closed */

	mem_open(&m);
	json_arr(&m.j);
	json_obj_end(&m.j);		/* wrong kind */
	mem_check(&m, -1, NULL);

	mem_open(&m);
	json_obj(&m.j);
	json_key(&m.j, "k");
	json_obj_end(&m.j);		/* key without value */
	mem_check(&m, -1, NULL);

	mem_open(&m);
	json_int(&m.j, 1);
	json_int(&m.j, 2);		/* two top-level values */
	mem_check(&m, -1, NULL);

	mem_open(&m);
	mem_check(&m, -1, NULL);	/* nothing written */

	mem_open(&m);
	json_arr(&m.j);
	json_key(&m.j, "k");		/* key inside an array */
	json_arr_end(&m.j);
	mem_check(&m, -1, NULL);
}

static void
test_depth_limit(void **state)
{
	struct mem m;
	int i;

	(void)state;
	mem_open(&m);
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		json_arr(&m.j);
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		json_arr_end(&m.j);
	assert_int_equal(json_end(&m.j), 0);
	assert_int_equal(fclose(m.f), 0);
	free(m.buf);

	mem_open(&m);
	for (i = 0; i <= JSON_MAX_DEPTH; i++)
		json_arr(&m.j);
	for (i = 0; i <= JSON_MAX_DEPTH; i++)
		json_arr_end(&m.j);
	mem_check(&m, -1, NULL);
}

static void
test_write_error_is_reported(void **state)
{
	struct json j;
	FILE *f;

	(void)state;
	f = fopen("/dev/full", "w");
	if (f == NULL)
		skip();
	setvbuf(f, NULL, _IONBF, 0);
	json_init(&j, f);
	json_arr(&j);
	json_str(&j, "lost");
	json_arr_end(&j);
	assert_int_equal(json_end(&j), -1);
	fclose(f);
}

/* A versioned document: its top-level object, and only that one, opens
 * with "schema"; a top-level array carries none. */
static void
test_schema_member(void **state)
{
	struct mem m;

	(void)state;
	mem_open(&m);
	json_init_doc(&m.j, m.f, 7);
	json_obj(&m.j);
	json_key(&m.j, "inner");
	json_obj(&m.j);
	json_kint(&m.j, "n", 1);
	json_obj_end(&m.j);
	json_obj_end(&m.j);
	mem_check(&m, 0, "{\"schema\":7,\"inner\":{\"n\":1}}\n");

	mem_open(&m);
	json_init_doc(&m.j, m.f, 7);
	json_arr(&m.j);
	json_obj(&m.j);
	json_obj_end(&m.j);
	json_arr_end(&m.j);
	mem_check(&m, 0, "[{}]\n");
}

/* json_stdout_used says whether a value went to stdout, not whether a
 * writer was set up for it: a command that fails before its output
 * still reports the failure as JSON. */
static void
test_stdout_used_on_first_value(void **state)
{
	struct json j;

	(void)state;
	assert_int_equal(json_stdout_used(), 0);
	json_init(&j, stdout);
	assert_int_equal(json_stdout_used(), 0);
	json_arr(&j);
	assert_int_equal(json_stdout_used(), 1);
	json_arr_end(&j);
	assert_int_equal(json_end(&j), 0);	/* "[]", a line TAP ignores */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nested_document),
		cmocka_unit_test(test_escapes_every_byte),
		cmocka_unit_test(test_reals),
		cmocka_unit_test(test_value_without_key_is_refused),
		cmocka_unit_test(test_unbalanced_and_mismatched),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_write_error_is_reported),
		cmocka_unit_test(test_schema_member),
		cmocka_unit_test(test_stdout_used_on_first_value),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
