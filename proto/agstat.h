/* agstat.h - an agent's STATUS reply: its fields, their text form, parsing. */
#ifndef CUTSNAP_AGSTAT_H
#define CUTSNAP_AGSTAT_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/buf.h"
#include "../lib/err.h"
#include "snapuid.h"
#include "../net/wire.h"

/* Cap on the text, far above what CFG_MAX_AGENTS channels each way need. */
#define AGSTAT_MAX_TEXT (256u << 10)

/* One channel as its agent sees it. */
struct agstat_ch {
	char peer[NAME_MAX_LEN + 1];	/* out: the dst; in: the src */
	uint64_t seq;		/* out: highest sent; in: highest applied */
	uint64_t acked;		/* out: highest acknowledged by dst; in: 0 */
	uint64_t queued;	/* out: entries (messages and markers) not
				 * yet written to the socket; in: messages
				 * held back, arrived before their turn */
	uint64_t unacked;	/* out: written, not yet acknowledged */
	int up;			/* connected (out: the peer said WELCOME) */
	int held;		/* out: "channel hold" in force; in: 0 */
	int diverged;		/* its two ends come from different
				 * histories (chain.h): refused */
	int checked;		/* its history check passed since the agent
				 * started (what a fenced agent waits for) */
	uint64_t stalled_ms;	/* out: how long entries have waited with
				 * no acknowledgement moving (0: nothing
				 * waits, or an agent too old to say) */
};

/* One snapshot in progress at the agent. */
struct agstat_snap {
	uint64_t id;		/* its id in its repository (0: not told) */
	char uid[SNAPUID_HEX_LEN];	/* its identity, hex */
	char phase[16];		/* joined|recording|recorded|reported */
};

/* Cap on the snapshots a reply lists (an agent runs at most 8). */
#define AGSTAT_MAX_SNAPS 64

struct agstat {
	int pid;
	int64_t uptime_s;
	uint64_t size;		/* data file bytes */
	uint64_t records;	/* records in the data file */
	uint64_t syncs;		/* fsyncs of the data file since start */
	uint64_t writes;	/* client write requests since start */
	/* Compaction (dlrewrite.h). */
	uint64_t live;		/* bytes the file would have rewritten now */
	uint64_t gen;		/* the file's generation: rewrites so far */
	uint64_t compacted_at;	/* unix time of the last rewrite, 0: none */
	uint64_t compactions;	/* rewrites since start */
	uint64_t cbefore;	/* the last of them: old size, new size, */
	uint64_t cafter;	/* milliseconds it took (0 when none since */
	uint64_t cms;		/* start) */
	int compacting;		/* a rewrite is under way */
	uint64_t snap_id;	/* 0: no snapshot in progress; else the
				 * first of snaps[] */
	char phase[16];		/* "none", or joined|recording|recorded|reported */
	struct agstat_snap snaps[AGSTAT_MAX_SNAPS];	/* every one */
	size_t nsnaps;
	struct agstat_ch *out;	/* heap, nout entries */
	size_t nout;
	struct agstat_ch *in;	/* heap, nin entries */
	size_t nin;
	uint64_t dead;		/* dead letters not yet resolved */
	uint64_t fenced;	/* 0, or the snapshot the agent was restored
				 * alone from: fenced until every channel is
				 * checked (agent/fence.c) */
	/* The inbox: unconsumed application messages, their bytes, the
	 * cap (inbox_max_bytes; 0: an agent too old to say) and the
	 * W_REQ_RECVs parked waiting for a message. */
	uint64_t inbox_msgs;
	uint64_t inbox_bytes;
	uint64_t inbox_max;
	uint64_t recv_parked;
};

/* The text form, one line of space-separated key=value fields:
 *   pid=1 uptime_s=5 size=1234 records=10 syncs=4 writes=9 snapshot=none
 *   snapshots=3:recording:UID;1:joined:UID held=A>B
 *   out=A>B:sent=3,acked=2,queued=1,unacked=0,up=1,held=1,diverged=0;...
 *   in=B>A:applied=4,queued=0,up=1,diverged=0 dead=0
 *   live=200 gen=1 compacted_at=1700000000 compactions=1
 *   compact_before=5000 compact_after=210 compact_ms=12 compacting=0
 *   (the data file's live size and its compactions) fenced=0
 *   inbox_msgs=2 inbox_bytes=60 inbox_max=67108864 recv_parked=0
 * Each channel also carries checked=0|1, an outgoing one stalled_ms=N.
 * snapshot is "none" or "ID:PHASE" of the first snapshot in progress,
 * snapshots lists every one with its identity (32 hex digits); lists are ';'-separated, "none" when
 * empty; dead counts the open dead letters (W_REQ_DEAD_LIST lists them);
 * held repeats the held outgoing channels for a reader's eye.
 * Appends to w (check w->oom). */
void agstat_format(const struct agstat *st, const char *self,
    struct wbuf *w);
/* Parse the text form (n bytes) into st, which owns heap arrays
 * afterwards (agstat_free). Unknown keys are skipped, so older readers
 * accept newer agents. 0, or -1 with e set. */
int agstat_parse(const char *text, size_t n, struct agstat *st,
    struct cs_err *e);
void agstat_free(struct agstat *st);

#endif
