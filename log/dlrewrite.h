/* dlrewrite.h - compaction: rewrite a live data file to its live state.
 *
 * A rewrite of the open datalog dl runs in two parts:
 * 1. dl_rewrite_start (under the caller's loop) takes L = datalog_end(),
 *    creates PATH.compact (DL_REWRITE_SUFFIX), locks it and starts a
 *    thread that replays the prefix [0, L) of the data file (it never
 *    changes: the file is append-only) and writes its state as a base
 *    section (GEN, WM, LETTER, KEPT, REQS records, then one PUT per key,
 *    values read back from the old file) into the new file, fsyncs it and
 *    replays it.
 *    The caller keeps appending to dl meanwhile.
 * 2. dl_rewrite_finish (under the loop again, once dl_rewrite_done) copies
 *    the records appended since, [L, end), behind the base, replays them,
 *    fsyncs, renames the new file over the data file, fsyncs the directory
 *    and switches dl to it (datalog_adopt).
 * A kill at any moment leaves the old file (the new one is still under
 * its temporary name, removed by the next datalog_open) or the new one,
 * whole and durable: the rename comes after its fsync.
 *
 * Test hook: CUTSNAP_FAULT=compact-kill:STEP kills the process with
 * SIGKILL at STEP: "base" (base written, before the tail), "tail" (new file
 * whole and fsynced, before the rename), "rename" (after the rename, before
 * the directory's fsync), "dir" (after it);
 * compact-slow:MS makes the thread sleep MS milliseconds before it ends. */
#ifndef CUTSNAP_DLREWRITE_H
#define CUTSNAP_DLREWRITE_H

#include <stdint.h>
#include "datalog.h"
#include "dlfile.h"
#include "../lib/err.h"

struct dl_rewrite;

/* What a finished rewrite did. */
struct dl_rewrite_result {
	uint64_t before;	/* old file's length at the switch */
	uint64_t after;		/* new file's length */
	uint64_t base;		/* of which the base section (live state as
				 * of the start) */
	uint64_t gen;		/* the new file's generation */
};

/* Start a rewrite of dl; *out is freed by finish or abort. 0 / -1. */
int dl_rewrite_start(struct datalog *dl, struct dl_rewrite **out,
    struct cs_err *e);
/* A descriptor that becomes readable when the thread has ended (for
 * epoll); borrowed. */
int dl_rewrite_wait_fd(const struct dl_rewrite *rw);
/* 1 once the thread has ended (successfully or not). */
int dl_rewrite_done(const struct dl_rewrite *rw);
/* Finish (only once done): switch dl to the new file. Frees rw whatever
 * the outcome. -1 with e set: the old file stays in use, unless dl has
 * been marked failed (an fsync of the directory failed after the rename,
 * or the switch could not be completed): the caller must then stop. */
int dl_rewrite_finish(struct datalog *dl, struct dl_rewrite *rw,
    struct dl_rewrite_result *res, struct cs_err *e);
/* Stop and forget a rewrite (waits for the thread; removes the new file).
 * Accepts NULL. */
void dl_rewrite_abort(struct dl_rewrite *rw);

/* Bytes the state would take as a base section: the size of a data file
 * rewritten now (header included), each watermark and kept send counted
 * with a history chain (at most that: an unknown chain takes none). A live
 * data file's unacknowledged sends are not in memory (no_sends): they
 * count at a typical message's size, so the figure is an estimate. */
uint64_t dl_live_size(const struct dl_state *st);


#endif
