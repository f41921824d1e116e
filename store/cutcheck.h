/* cutcheck.h - is a recorded cut consistent? Pure logic, no I/O. */
#ifndef CUTSNAP_CUTCHECK_H
#define CUTSNAP_CUTCHECK_H

#include <stddef.h>
#include <stdint.h>
#include "store.h"

/* One channel S->D of a snapshot. sent is read from S's recorded file,
 * applied from D's; seqs are the recorded messages' seqs as stored. */
struct cut_channel {
	const char *src;
	const char *dst;
	uint64_t sent;
	uint64_t applied;
	const uint64_t *seqs;
	size_t nseqs;
};

/* Checks applied <= sent and that seqs are exactly applied+1..sent, each
 * once (any order). Reports each problem through fn; returns how many. */
int store_cut_check(const struct cut_channel *ch, problem_fn fn, void *ctx);

/* A pair S->D of the cut's agents that is not one of its channels: no
 * message may be in flight on it, since the cut records none there (a
 * channel dropped from the config while it held messages). Checks
 * applied == sent; one problem, or 0. */
int store_cut_check_unlisted(const char *src, const char *dst, uint64_t sent,
    uint64_t applied, problem_fn fn, void *ctx);

#endif
