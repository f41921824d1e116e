/* test_ratelimit.c - the rate syntax of --max-rate and snapshot_max_rate,
 * and the token bucket's pace: n bytes take at least n / rate, also when
 * threads share it (only lower bounds on time: a loaded machine can only
 * make a run longer). */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdarg.h>
#include <time.h>
#include <cmocka.h>

#include "../../common/ratelimit.h"

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
rates_parse_with_suffixes_and_bounds(void **state)
{
	static const struct {
		const char *s;
		int ok;
		uint64_t want;
	} cases[] = {
		{ "0", 1, 0 }, { "32K", 1, 32768 }, { "32k", 1, 32768 },
		{ "50M", 1, 50ull << 20 }, { "1G", 1, 1ull << 30 },
		{ "1024G", 1, 1ull << 40 }, { "1048576", 1, 1048576 },
		{ "32768", 1, 32768 },
		{ "31K", 0, 0 }, { "32767", 0, 0 }, { "1025G", 0, 0 },
		{ "1T", 0, 0 }, { "", 0, 0 }, { "M", 0, 0 }, { "5MB", 0, 0 },
		{ "1.5M", 0, 0 }, { "-1", 0, 0 }, { " 5M", 0, 0 },
		{ "5 M", 0, 0 }, { "00", 0, 0 }, { "0K", 0, 0 },
		{ "99999999999999999999", 0, 0 },
	};
	uint64_t v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = 12345;
		assert_int_equal(rate_parse(cases[i].s, &v),
		    cases[i].ok ? 0 : -1);
		assert_int_equal(v, cases[i].ok ? cases[i].want : 12345);
	}
	assert_int_equal(i, 22);
}

/* 10 takes of 64K at 1M/s: at least 625 ms, the first one included (no
 * burst). */
static void
takes_last_at_least_bytes_over_rate(void **state)
{
	struct ratelimit rl;
	int64_t t0;
	int i;

	(void)state;
	assert_int_equal(ratelimit_init(&rl, 1u << 20), 0);
	t0 = mono_ms();
	for (i = 0; i < 10; i++)
		ratelimit_take(&rl, 65536);
	assert_true(mono_ms() - t0 >= 625);
	ratelimit_destroy(&rl);
}

static void *
taker(void *arg)
{
	int i;

	for (i = 0; i < 8; i++)
		ratelimit_take(arg, 32768);
	return NULL;
}

/* Four threads of 8 takes of 32K share 2M/s: 1 MiB, at least 500 ms. */
static void
threads_share_one_pace(void **state)
{
	struct ratelimit rl;
	pthread_t th[4];
	int64_t t0;
	int i;

	(void)state;
	assert_int_equal(ratelimit_init(&rl, 2u << 20), 0);
	t0 = mono_ms();
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, taker, &rl), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_true(mono_ms() - t0 >= 500);
	ratelimit_destroy(&rl);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rates_parse_with_suffixes_and_bounds),
		cmocka_unit_test(takes_last_at_least_bytes_over_rate),
		cmocka_unit_test(threads_share_one_pace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
