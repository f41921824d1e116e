/* keep.h - the retention decision (keep.c): which snapshots each rule of
 * a forget policy keeps, and why. Pure: no manifest, no clock, so the
 * unit tests can feed it any history. */
#ifndef CUTSNAP_STORE_KEEP_H
#define CUTSNAP_STORE_KEEP_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

enum keep_state { KEEP_COMPLETE, KEEP_ABORTED, KEEP_RUNNING };

/* One snapshot as the decision sees it. */
struct keep_snap {
	int64_t started;	/* seconds since the epoch (UTC); -1 unknown */
	int state;		/* enum keep_state */
	unsigned why;		/* out: STORE_WHY_* bits, 0 = forget it */
};

/* The bucket of time t for rule r (enum store_keep): YYYYMMDDHH, YYYYMMDD,
 * ISO YYYYWW, YYYYMM or YYYY of t in UTC; for STORE_KEEP_LAST, nr (every
 * snapshot a bucket of its own). -1 when t is -1. */
int64_t keep_bucket(int r, int64_t t, size_t nr);

/* Set why for each of v[0..n), which is sorted newest first, as restic
 * does: each count rule walks the complete snapshots newest first and
 * keeps the newest one of each new bucket until its count is used up;
 * when a rule still has counts left at the oldest complete snapshot, that
 * one is kept too ("oldest"). keep_within keeps any snapshot started at
 * most that long before now; a running one is always kept. Rules
 * combine as a union. */
void keep_decide(const struct store_forget_policy *p, struct keep_snap *v,
    size_t n, int64_t now);

#endif
