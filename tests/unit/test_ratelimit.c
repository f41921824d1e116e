/* test_ratelimit.c - the token bucket's pace: n bytes take at least
 * n / rate, also when threads share it: the bucket's schedule (next_ns)
 * reaches at least the run's start plus n / rate, and the takes return
 * only once it is paid for. On wall time only a loose upper bound
 * (8x), which a loaded machine keeps but a limiter charging twice or in
 * the wrong unit does not. The rate syntax is test_config.c's. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdarg.h>
#include <time.h>
#include <cmocka.h>

#include "../../lib/ratelimit.h"
#include "../../lib/util.h"

#define MS 1000000ll

/* 10 takes of 64K at 1M/s: at least 625 ms, the first one included (no
 * burst); the schedule as far, and paid for by the run's end. */
static void
takes_last_at_least_bytes_over_rate(void **state)
{
	struct ratelimit rl;
	int64_t t0, t1;
	int i;

	(void)state;
	assert_int_equal(ratelimit_init(&rl, 1u << 20), 0);
	t0 = cs_now_ns();
	for (i = 0; i < 10; i++)
		ratelimit_take(&rl, 65536);
	t1 = cs_now_ns();
	assert_true(t1 - t0 >= 625 * MS);
	assert_true(rl.next_ns - t0 >= 625 * MS);
	assert_true(rl.next_ns <= t1);
	assert_true(t1 - t0 < 8 * 625 * MS);
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

/* Four threads of 8 takes of 32K share 2M/s: 1 MiB, at least 500 ms, the
 * schedule past it and over by the run's end, under 8x on the wall. */
static void
threads_share_one_pace(void **state)
{
	struct ratelimit rl;
	pthread_t th[4];
	int64_t t0, t1;
	int i;

	(void)state;
	assert_int_equal(ratelimit_init(&rl, 2u << 20), 0);
	t0 = cs_now_ns();
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, taker, &rl), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	t1 = cs_now_ns();
	assert_true(t1 - t0 >= 500 * MS);
	assert_true(rl.next_ns - t0 >= 500 * MS);
	assert_true(rl.next_ns <= t1);
	assert_true(t1 - t0 < 8 * 500 * MS);
	ratelimit_destroy(&rl);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(takes_last_at_least_bytes_over_rate),
		cmocka_unit_test(threads_share_one_pace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
