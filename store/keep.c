/* keep.c - the retention decision of forget (keep.h), in UTC: the
 * manifest's times are UTC, so a day or a week is the same whatever the
 * time zone of the machine that runs forget. */
#include <stdlib.h>
#include <time.h>

#include "keep.h"

int64_t
keep_bucket(int r, int64_t t, size_t nr)
{
	time_t tt = (time_t)t;
	struct tm tm;
	char w[16];
	int64_t y;

	if (r == STORE_KEEP_LAST)
		return (int64_t)nr;
	if (t < 0 || gmtime_r(&tt, &tm) == NULL)
		return -1;
	y = (int64_t)tm.tm_year + 1900;
	switch (r) {
	case STORE_KEEP_HOURLY:
		return y * 1000000 + (tm.tm_mon + 1) * 10000 +
		    tm.tm_mday * 100 + tm.tm_hour;
	case STORE_KEEP_DAILY:
		return y * 10000 + (tm.tm_mon + 1) * 100 + tm.tm_mday;
	case STORE_KEEP_WEEKLY:
		/* ISO 8601 week: Monday to Sunday, numbered in the year of
		 * its Thursday (2021-01-03 is in week 53 of 2020). */
		if (strftime(w, sizeof(w), "%G%V", &tm) == 0)
			return -1;
		return (int64_t)strtoll(w, NULL, 10);
	case STORE_KEEP_MONTHLY:
		return y * 100 + tm.tm_mon + 1;
	case STORE_KEEP_YEARLY:
		return y;
	}
	return -1;
}

/* The count rules on complete snapshot v[i], the nr-th complete one;
 * oldest: it is the oldest complete snapshot. */
static unsigned
count_rules(const struct keep_snap *s, size_t nr, int oldest,
    int64_t left[STORE_KEEP_NRULES], int64_t last[STORE_KEEP_NRULES])
{
	unsigned why = 0;
	int64_t val;
	int r;

	for (r = 0; r < STORE_KEEP_NRULES; r++) {
		if (left[r] <= 0 || (val = keep_bucket(r, s->started, nr)) < 0)
			continue;
		if (val != last[r])
			why |= STORE_WHY_RULE(r);
		else if (oldest)
			why |= STORE_WHY_OLDEST(r);
		else
			continue;
		last[r] = val;
		if (left[r] != STORE_KEEP_ALL)
			left[r]--;
	}
	return why;
}

void
keep_decide(const struct store_forget_policy *p, struct keep_snap *v,
    size_t n, int64_t now)
{
	int64_t left[STORE_KEEP_NRULES], last[STORE_KEEP_NRULES];
	size_t i, oldest = n, nr = 0;
	int r;

	for (r = 0; r < STORE_KEEP_NRULES; r++) {
		left[r] = p->keep[r];
		last[r] = -1;
	}
	for (i = 0; i < n; i++)
		if (v[i].state == KEEP_COMPLETE)
			oldest = i;
	for (i = 0; i < n; i++) {
		v[i].why = 0;
		if (v[i].state == KEEP_RUNNING)
			v[i].why |= STORE_WHY_RUNNING;
		if (p->keep_within_s >= 0 && v[i].started >= 0 &&
		    now - v[i].started <= p->keep_within_s)
			v[i].why |= STORE_WHY_WITHIN;
		if (v[i].state != KEEP_COMPLETE)
			continue;
		v[i].why |= count_rules(&v[i], nr++, i == oldest, left, last);
	}
}
