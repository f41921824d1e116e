/* ratelimit.h - pace work to a number of bytes per second: the copy and
 * hashing of a snapshot (snapshot --max-rate, [cluster] snapshot_max_rate;
 * the syntax of a rate is cfg_parse_rate's, config.h).
 *
 * A token bucket without a burst: every caller reserves its bytes on one
 * virtual clock before doing the work, which starts no earlier than the
 * moment the bytes before it, at the rate, have been paid for. Idle time
 * is not saved up, so over any stretch in which the work is paced, n
 * bytes take at least n / rate seconds, however many threads share the
 * limiter. Thread-safe. */
#ifndef CUTSNAP_RATELIMIT_H
#define CUTSNAP_RATELIMIT_H

#include <pthread.h>
#include <stdint.h>

struct ratelimit {
	pthread_mutex_t mu;
	uint64_t rate;		/* bytes per second; 0: no limit */
	int64_t next_ns;	/* CLOCK_MONOTONIC: when the bytes reserved
				 * so far have been paid for */
};

/* 0 / -1 (out of resources). rate 0: take never waits. */
int ratelimit_init(struct ratelimit *rl, uint64_t rate);
void ratelimit_destroy(struct ratelimit *rl);
/* Reserve n bytes and sleep until they may be worked on. */
void ratelimit_take(struct ratelimit *rl, uint64_t n);

#endif
