/* ratelimit.c - pacing work to bytes per second (ratelimit.h). */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "ratelimit.h"

#define NS 1000000000ll

static int64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

int
ratelimit_init(struct ratelimit *rl, uint64_t rate)
{
	memset(rl, 0, sizeof(*rl));
	rl->rate = rate;
	return pthread_mutex_init(&rl->mu, NULL) == 0 ? 0 : -1;
}

void
ratelimit_destroy(struct ratelimit *rl)
{
	pthread_mutex_destroy(&rl->mu);
}

void
ratelimit_take(struct ratelimit *rl, uint64_t n)
{
	struct timespec ts;
	int64_t now, start, cost;

	if (rl->rate == 0 || n == 0)
		return;
	cost = (int64_t)((double)n * (double)NS / (double)rl->rate);
	pthread_mutex_lock(&rl->mu);
	now = mono_ns();
	if (rl->next_ns < now)
		rl->next_ns = now;	/* idle time is not saved up */
	rl->next_ns += cost;
	start = rl->next_ns;
	pthread_mutex_unlock(&rl->mu);
	ts.tv_sec = (time_t)(start / NS);
	ts.tv_nsec = (long)(start % NS);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	    EINTR)
		;
}

int
rate_parse(const char *s, uint64_t *out)
{
	static const char units[] = "KMG";
	const char *suf;
	uint64_t v = 0, mul = 1;
	size_t i;

	if (strcmp(s, "0") == 0) {
		*out = 0;
		return 0;
	}
	for (i = 0; s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > RATE_MAX)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0)
		return -1;
	if (s[i] != '\0') {
		if ((s[i] & ~0x20) == 0 ||
		    (suf = strchr(units, s[i] & ~0x20)) == NULL ||
		    s[i + 1] != '\0')
			return -1;
		mul = 1ull << (10 * (suf - units + 1));
	}
	if (v > RATE_MAX / mul || v * mul < RATE_MIN)
		return -1;
	*out = v * mul;
	return 0;
}
