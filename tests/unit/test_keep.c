/* test_keep.c - forget's retention decision (store/keep.c): restic's
 * bucket semantics for --keep-hourly/daily/weekly/monthly/yearly, ISO
 * weeks across new year, the "oldest" snapshot kept while a rule has
 * counts left, unlimited counts, the union of rules, and which states
 * count. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "../../store/keep.h"

#define MAXS 512

static int64_t
utc(const char *iso)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	assert_non_null(strptime(iso, "%Y-%m-%dT%H:%M:%SZ", &tm));
	return (int64_t)timegm(&tm);
}

static struct store_forget_policy
policy(void)
{
	struct store_forget_policy p;
	int r;

	memset(&p, 0, sizeof(p));
	for (r = 0; r < STORE_KEEP_NRULES; r++)
		p.keep[r] = -1;
	p.keep_within_s = -1;
	return p;
}

/* v newest first from times given oldest first (all complete). */
static size_t
history(struct keep_snap *v, const char *const *iso, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		v[n - 1 - i].started = utc(iso[i]);
		v[n - 1 - i].state = KEEP_COMPLETE;
		v[n - 1 - i].why = 0;
	}
	return n;
}

/* "1,1,0,..." of the kept flags, oldest first. */
static const char *
kept(const struct keep_snap *v, size_t n)
{
	static char out[MAXS + 1];
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = v[n - 1 - i].why ? 'k' : '-';
	out[n] = '\0';
	return out;
}

static void
buckets_are_utc_calendar_units(void **state)
{
	int64_t t = utc("2024-05-01T13:45:00Z");

	(void)state;
	assert_int_equal(keep_bucket(STORE_KEEP_HOURLY, t, 0), 2024050113);
	assert_int_equal(keep_bucket(STORE_KEEP_DAILY, t, 0), 20240501);
	assert_int_equal(keep_bucket(STORE_KEEP_WEEKLY, t, 0), 202418);
	assert_int_equal(keep_bucket(STORE_KEEP_MONTHLY, t, 0), 202405);
	assert_int_equal(keep_bucket(STORE_KEEP_YEARLY, t, 0), 2024);
	assert_int_equal(keep_bucket(STORE_KEEP_LAST, t, 7), 7);
	assert_int_equal(keep_bucket(STORE_KEEP_DAILY, -1, 0), -1);
}

static void
iso_weeks_cross_the_new_year(void **state)
{
	(void)state;
	/* Sunday 2021-01-03 ends week 53 of 2020; Monday starts week 1. */
	assert_int_equal(keep_bucket(STORE_KEEP_WEEKLY,
	    utc("2021-01-03T23:59:59Z"), 0), 202053);
	assert_int_equal(keep_bucket(STORE_KEEP_WEEKLY,
	    utc("2021-01-04T00:00:00Z"), 0), 202101);
	/* Monday 2019-12-30 is in week 1 of 2020. */
	assert_int_equal(keep_bucket(STORE_KEEP_WEEKLY,
	    utc("2019-12-30T00:00:00Z"), 0), 202001);
}

/* restic's documented example: one backup every Sunday for 12 weeks,
 * forget --keep-daily 4 keeps the last four Sundays. */
static void
restic_example_keep_daily_4(void **state)
{
	static const char *const t[] = { "2019-09-01T11:00:00Z",
	    "2019-09-08T11:00:00Z", "2019-09-15T11:00:00Z",
	    "2019-09-22T11:00:00Z", "2019-09-29T11:00:00Z",
	    "2019-10-06T11:00:00Z", "2019-10-13T11:00:00Z",
	    "2019-10-20T11:00:00Z", "2019-10-27T11:00:00Z",
	    "2019-11-03T11:00:00Z", "2019-11-10T11:00:00Z",
	    "2019-11-17T11:00:00Z" };
	struct store_forget_policy p = policy();
	struct keep_snap v[12];
	size_t n = history(v, t, 12);

	(void)state;
	p.keep[STORE_KEEP_DAILY] = 4;
	keep_decide(&p, v, n, utc("2019-11-18T00:00:00Z"));
	assert_string_equal(kept(v, n), "--------kkkk");
	assert_int_equal(v[0].why, STORE_WHY_RULE(STORE_KEEP_DAILY));
}

/* The newest of each hour; an older one of the same hour goes. */
static void
hourly_keeps_newest_of_each_hour(void **state)
{
	static const char *const t[] = { "2024-05-01T09:10:00Z",
	    "2024-05-01T10:05:00Z", "2024-05-01T10:40:00Z",
	    "2024-05-01T11:00:00Z", "2024-05-01T11:59:59Z",
	    "2024-05-01T12:30:00Z" };
	struct store_forget_policy p = policy();
	struct keep_snap v[6];
	size_t n = history(v, t, 6);

	(void)state;
	p.keep[STORE_KEEP_HOURLY] = 3;
	keep_decide(&p, v, n, utc("2024-05-01T13:00:00Z"));
	assert_string_equal(kept(v, n), "--k-kk");
}

/* Counts left at the oldest: it is kept as "oldest", as in restic. */
static void
oldest_kept_while_counts_left(void **state)
{
	static const char *const t[] = { "2024-05-01T08:00:00Z",
	    "2024-05-01T20:00:00Z", "2024-05-02T08:00:00Z" };
	struct store_forget_policy p = policy();
	struct keep_snap v[3];
	size_t n = history(v, t, 3);

	(void)state;
	p.keep[STORE_KEEP_DAILY] = 5;
	keep_decide(&p, v, n, utc("2024-05-03T00:00:00Z"));
	assert_string_equal(kept(v, n), "kkk");
	assert_int_equal(v[2].why, STORE_WHY_OLDEST(STORE_KEEP_DAILY));
	assert_int_equal(v[1].why, STORE_WHY_RULE(STORE_KEEP_DAILY));
	/* Used up at the second day: the oldest goes. */
	p.keep[STORE_KEEP_DAILY] = 2;
	keep_decide(&p, v, n, utc("2024-05-03T00:00:00Z"));
	assert_string_equal(kept(v, n), "-kk");
}

/* Weekly, monthly, yearly over three years of month-end snapshots. */
static void
weekly_monthly_yearly(void **state)
{
	static const char *const t[] = { "2021-06-30T12:00:00Z",
	    "2021-12-31T12:00:00Z", "2022-03-31T12:00:00Z",
	    "2022-12-31T12:00:00Z", "2023-01-31T12:00:00Z",
	    "2023-02-28T12:00:00Z", "2023-03-01T12:00:00Z",
	    "2023-03-02T12:00:00Z", "2023-03-08T12:00:00Z" };
	struct store_forget_policy p = policy();
	struct keep_snap v[9];
	size_t n = history(v, t, 9);
	int64_t now = utc("2023-03-09T00:00:00Z");

	(void)state;
	p.keep[STORE_KEEP_YEARLY] = 2;
	keep_decide(&p, v, n, now);
	assert_string_equal(kept(v, n), "---k----k");
	p = policy();
	p.keep[STORE_KEEP_MONTHLY] = 3;
	keep_decide(&p, v, n, now);
	assert_string_equal(kept(v, n), "----kk--k");
	/* 2023-02-28 (Tue) and 03-01, 03-02 share ISO week 9. */
	p = policy();
	p.keep[STORE_KEEP_WEEKLY] = 2;
	keep_decide(&p, v, n, now);
	assert_string_equal(kept(v, n), "-------kk");
	p = policy();
	p.keep[STORE_KEEP_YEARLY] = STORE_KEEP_ALL;
	keep_decide(&p, v, n, now);
	/* Unlimited never runs out: the oldest stays too, as in restic. */
	assert_string_equal(kept(v, n), "kk-k----k");
	assert_int_equal(v[8].why, STORE_WHY_OLDEST(STORE_KEEP_YEARLY));
}

/* Rules add up; each kept snapshot names every rule that keeps it. */
static void
rules_combine_as_a_union(void **state)
{
	static const char *const t[] = { "2024-03-15T12:00:00Z",
	    "2024-04-10T12:00:00Z", "2024-04-30T12:00:00Z",
	    "2024-05-01T06:00:00Z", "2024-05-01T18:00:00Z" };
	struct store_forget_policy p = policy();
	struct keep_snap v[5];
	size_t n = history(v, t, 5);

	(void)state;
	p.keep[STORE_KEEP_LAST] = 1;
	p.keep[STORE_KEEP_DAILY] = 2;
	p.keep[STORE_KEEP_MONTHLY] = 2;
	keep_decide(&p, v, n, utc("2024-05-02T00:00:00Z"));
	assert_string_equal(kept(v, n), "--k-k");
	assert_int_equal(v[0].why, STORE_WHY_RULE(STORE_KEEP_LAST) |
	    STORE_WHY_RULE(STORE_KEEP_DAILY) |
	    STORE_WHY_RULE(STORE_KEEP_MONTHLY));
	assert_int_equal(v[2].why, STORE_WHY_RULE(STORE_KEEP_DAILY) |
	    STORE_WHY_RULE(STORE_KEEP_MONTHLY));
}

/* Only complete snapshots count; running ones stay; keep_within keeps
 * aborted ones too, relative to now. */
static void
states_and_within(void **state)
{
	static const char *const t[] = { "2024-05-01T10:00:00Z",
	    "2024-05-02T10:00:00Z", "2024-05-03T10:00:00Z",
	    "2024-05-04T10:00:00Z" };
	struct store_forget_policy p = policy();
	struct keep_snap v[4];
	size_t n = history(v, t, 4);

	(void)state;
	v[0].state = KEEP_ABORTED;	/* 05-04 */
	v[1].state = KEEP_RUNNING;	/* 05-03 */
	p.keep[STORE_KEEP_DAILY] = 1;
	keep_decide(&p, v, n, utc("2024-05-05T00:00:00Z"));
	/* The daily one is 05-02, the newest complete; an aborted one
	 * takes no count. */
	assert_string_equal(kept(v, n), "-kk-");
	assert_int_equal(v[1].why, STORE_WHY_RUNNING);
	p.keep_within_s = 86400;
	keep_decide(&p, v, n, utc("2024-05-05T00:00:00Z"));
	assert_string_equal(kept(v, n), "-kkk");
	assert_int_equal(v[0].why, STORE_WHY_WITHIN);
}

/* restic's "one backup a day for years" example, shortened: daily for
 * 400 days with --keep-daily 7 --keep-weekly 5 --keep-monthly 12
 * --keep-yearly 3 keeps 7 dailies, 4 more weeklies, the monthlies not
 * already kept, and the oldest while the yearly rule has a count left. */
static void
daily_for_400_days(void **state)
{
	static struct keep_snap v[400];
	struct store_forget_policy p = policy();
	int64_t t0 = utc("2023-01-01T12:00:00Z");
	size_t i, nk = 0;

	(void)state;
	for (i = 0; i < 400; i++) {
		v[399 - i].started = t0 + (int64_t)i * 86400;
		v[399 - i].state = KEEP_COMPLETE;
	}
	p.keep[STORE_KEEP_DAILY] = 7;
	p.keep[STORE_KEEP_WEEKLY] = 5;
	p.keep[STORE_KEEP_MONTHLY] = 12;
	p.keep[STORE_KEEP_YEARLY] = 3;
	keep_decide(&p, v, 400, t0 + 400 * 86400);
	for (i = 0; i < 400; i++)
		nk += v[i].why != 0;
	/* Newest is 2024-02-04 (Sunday): the 7 days from 01-29 (01-31, a
	 * month end, among them), weeks ending 01-28, 01-21, 01-14, 01-07,
	 * month ends 2023-12-31 ... 2023-03-31 (10 more: February and
	 * January 2024 are dailies), the years 2024 and 2023 taken by
	 * then, and the oldest, 2023-01-01, as "oldest yearly" (a count
	 * left). */
	assert_int_equal(nk, 7 + 4 + 10 + 1);
	assert_int_equal(v[399 - 364].why, STORE_WHY_RULE(STORE_KEEP_MONTHLY) |
	    STORE_WHY_RULE(STORE_KEEP_YEARLY));	/* 2023-12-31 */
	assert_int_equal(v[399].why, STORE_WHY_OLDEST(STORE_KEEP_YEARLY));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(buckets_are_utc_calendar_units),
		cmocka_unit_test(iso_weeks_cross_the_new_year),
		cmocka_unit_test(restic_example_keep_daily_4),
		cmocka_unit_test(hourly_keeps_newest_of_each_hour),
		cmocka_unit_test(oldest_kept_while_counts_left),
		cmocka_unit_test(weekly_monthly_yearly),
		cmocka_unit_test(rules_combine_as_a_union),
		cmocka_unit_test(states_and_within),
		cmocka_unit_test(daily_for_400_days),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
