/* test_coordinator.c - marker reachability over configured channels, and
 * the coordinator's refusals: an unknown initiator, an unreachable
 * agent, and agents that are not running (recorded as aborted). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../coordinator/coordinator.h"
#include "../../store/store.h"
#include "unit.h"

static struct cfg *
parse(const char *text)
{
	struct cfg *c;
	struct cs_err e;

	if (cfg_parse(text, unit_path("c.conf"), &c, &e) < 0)
		fail_msg("%s", e.msg);
	return c;
}

static void
reachability(void **state)
{
	struct cfg *c;

	(void)state;
	c = parse("[agent A]\ndata = a\n[agent B]\ndata = b\n"
	    "[agent C]\ndata = c\n");
	assert_true(coord_reachable(c, 0));
	assert_true(coord_reachable(c, 2));
	assert_false(coord_reachable(c, 3));
	assert_false(coord_reachable(c, -1));
	cfg_free(c);
	/* A chain reaches forward only. */
	c = parse("[cluster]\nchannels = A>B B>C\n[agent A]\ndata = a\n"
	    "[agent B]\ndata = b\n[agent C]\ndata = c\n");
	assert_true(coord_reachable(c, 0));
	assert_false(coord_reachable(c, 1));
	assert_false(coord_reachable(c, 2));
	cfg_free(c);
	c = parse("[cluster]\nchannels = A>B B>C C>A\n[agent A]\ndata = a\n"
	    "[agent B]\ndata = b\n[agent C]\ndata = c\n");
	assert_true(coord_reachable(c, 1));
	cfg_free(c);
	c = parse("[agent A]\ndata = a\n");
	assert_true(coord_reachable(c, 0));
	cfg_free(c);
}

static void
refusals_before_any_snapshot(void **state)
{
	char repo[128];
	struct coord_opts o = { .repo = repo,
	    .initiator = "Z", .timeout_s = 5, .recheck_age_s = -1 };
	struct cfg *c;
	struct cs_err e;
	uint64_t id = 7;

	(void)state;
	snprintf(repo, sizeof(repo), "%s", unit_path("none"));
	c = parse("[cluster]\nchannels = A>B\n[agent A]\ndata = a\n"
	    "[agent B]\ndata = b\n[agent C]\ndata = c\n");
	assert_int_equal(coord_snapshot(c, &o, &id, &e), -1);
	assert_int_equal(id, 0);
	assert_string_equal(e.msg, "unknown agent Z");
	o.initiator = NULL;
	assert_int_equal(coord_snapshot(c, &o, &id, &e), -1);
	assert_int_equal(id, 0);
	assert_string_equal(e.msg, "markers from A cannot reach C over the "
	    "configured channels");
	o.initiator = "B";
	assert_int_equal(coord_snapshot(c, &o, &id, &e), -1);
	assert_string_equal(e.msg, "markers from B cannot reach A, C over "
	    "the configured channels");
	cfg_free(c);
}

static void
agents_not_running_create_nothing(void **state)
{
	char dir[64], repo[128], conf[128];
	struct coord_opts o = { .repo = repo, .timeout_s = 5,
	    .recheck_age_s = -1 };
	struct cfg *c;
	struct cs_err e;
	uint64_t id;

	(void)state;
	assert_int_equal(unit_mkdtemp(dir, sizeof(dir)), 0);
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	snprintf(conf, sizeof(conf), "%s/c.conf", dir);
	assert_int_equal(cfg_parse("[agent A]\ndata = a\n[agent B]\n"
	    "data = b\n", conf, &c, &e), 0);
	assert_int_equal(coord_snapshot(c, &o, &id, &e), -1);
	/* Nothing is created: no snapshot, not even the repository. */
	assert_int_equal(id, 0);
	assert_non_null(strstr(e.msg, "agent A is not running"));
	assert_int_equal(access(repo, F_OK), -1);
	cfg_free(c);
	assert_int_equal(unit_rmtree(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reachability),
		cmocka_unit_test(refusals_before_any_snapshot),
		cmocka_unit_test(agents_not_running_create_nothing),
	};

	return cmocka_run_group_tests(tests, unit_setup, unit_teardown);
}
