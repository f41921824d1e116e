/* report.h - what an agent reports to the coordinator when its part of a
 * snapshot is recorded (frame W_SNAP_REPORT).
 * Encoding: 16 raw bytes uid | u64 snap_id | str agent | u64 size | 32 raw bytes sha |
 *   u32 chunk_size | u32 nchunks {32 raw bytes}* |
 *   u32 nsent {str peer, u64 seq}* | u32 napplied {str peer, u64 seq}* |
 *   u32 nchannels {str src, u64 applied, u64 sent, u32 nmsgs
 *                  {u64 seq, bytes data}*}*   */
#ifndef CUTSNAP_REPORT_H
#define CUTSNAP_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/buf.h"
#include "../lib/err.h"
#include "chmsg.h"
#include "snapuid.h"
#include "../net/wire.h"

/* One recorded channel message's bytes at most: a credit, or an
 * application message (chmsg.h), the larger. */
#define REPORT_MSG_MAX	(CHMSG_APP_ENC_MAX > CHMSG_MAX ? \
			    CHMSG_APP_ENC_MAX : CHMSG_MAX)

/* A whole report's bytes at most, in W_SNAP_REPORT_PART pieces and its
 * W_SNAP_REPORT (wire.h): the messages in flight at a cut are bounded by
 * the senders' windows and the receivers' inbox_max_bytes, not by one
 * frame. */
#define REPORT_MAX_BYTES (1ull << 30)

struct rep_msg {
	uint64_t seq;
	uint8_t *data;		/* owned (after decode) */
	size_t len;
};

/* An incoming channel src -> agent as recorded. */
struct rep_channel {
	char src[NAME_MAX_LEN + 1];
	uint64_t applied;	/* a: applied seq when the agent recorded */
	uint64_t sent;		/* s: the seq the marker carried */
	size_t nmsgs;
	struct rep_msg *msgs;	/* seqs a+1..s in order */
};

struct rep_wm {
	char peer[NAME_MAX_LEN + 1];
	uint64_t seq;
};

struct report {
	struct snapuid uid;	/* the snapshot's identity */
	uint64_t snap_id;	/* its id in the repository (0: unknown) */
	char agent[NAME_MAX_LEN + 1];
	uint64_t size;		/* L: recorded prefix of the data file */
	uint8_t sha[32];	/* SHA-256 of that prefix */
	uint32_t chunk_size;	/* chunkhash.h: the prefix's chunking */
	size_t nchunks;		/* chunk_count(size, chunk_size) */
	uint8_t (*chunks)[32];	/* SHA-256 of each chunk, in order */
	size_t nsent;
	struct rep_wm *sent;
	size_t napplied;
	struct rep_wm *applied;
	size_t nchannels;
	struct rep_channel *channels;
};

void report_encode(struct wbuf *out, const struct report *r);
/* Decodes into r (zeroed first); free with report_free. Caps every count;
 * the chunk size must be valid and the chunks must cover exactly size. */
int report_decode(const uint8_t *p, size_t n, struct report *r,
    struct cs_err *e);
void report_free(struct report *r);	/* frees members, not r; NULL ok */

#endif
