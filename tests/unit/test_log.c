/* test_log.c - daemon log lines: format, level filter, one line per event. */
#include <fcntl.h>
#include <regex.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../lib/log.h"
#include "unit.h"

/* Runs fn with stderr sent to a temp file; returns what it wrote. */
static char *
capture(void (*fn)(void))
{
	const char *path = unit_path("stderr");
	static char out[4096];
	int fd, saved;
	ssize_t n;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd != -1);
	unlink(path);
	fflush(stderr);
	saved = dup(2);
	assert_true(saved != -1);
	assert_int_equal(dup2(fd, 2), 2);
	fn();
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	n = pread(fd, out, sizeof(out) - 1, 0);
	assert_true(n >= 0);
	out[n] = '\0';
	close(fd);
	return out;
}

static void
emit_levels(void)
{
	log_init("A", LOG_INFO);
	log_error("disk %s", "full");
	log_warn("slow fsync");
	log_info("listening on %s", "run/A.sock");
	log_debug("not shown");
}

static void
emit_newline(void)
{
	log_init("B", LOG_DEBUG);
	log_debug("key \"a\nb\"");
}

static void
lines_have_timestamp_who_level(void **state)
{
	regex_t re;
	char *out;

	(void)state;
	out = capture(emit_levels);
	assert_int_equal(regcomp(&re,
	    "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
	    "A error: disk full\n"
	    "[0-9-]{10}T[0-9:]{8}\\.[0-9]{3}Z A warn: slow fsync\n"
	    "[0-9-]{10}T[0-9:]{8}\\.[0-9]{3}Z A info: listening on run/A.sock\n$",
	    REG_EXTENDED), 0);
	assert_int_equal(regexec(&re, out, 0, NULL, 0), 0);
	regfree(&re);
	assert_null(strstr(out, "not shown"));
}

static void
control_characters_cannot_split_a_line(void **state)
{
	char *out, *nl;

	(void)state;
	out = capture(emit_newline);
	nl = strchr(out, '\n');
	assert_non_null(nl);
	assert_int_equal(nl[1], '\0');
	assert_non_null(strstr(out, "B debug: key \"a?b\""));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lines_have_timestamp_who_level),
		cmocka_unit_test(control_characters_cannot_split_a_line),
	};

	return cmocka_run_group_tests(tests, unit_setup, unit_teardown);
}
