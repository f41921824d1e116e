/* ratelimit.c - pacing work to bytes per second (ratelimit.h). */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "ratelimit.h"
#include "util.h"

#define NS 1000000000ll

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
	now = cs_now_ns();
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
