/* coordinator.h - drives one Chandy-Lamport snapshot of a cluster. */
#ifndef CUTSNAP_COORDINATOR_H
#define CUTSNAP_COORDINATOR_H

#include <signal.h>
#include <stdint.h>
#include "../lib/config.h"
#include "../lib/err.h"

/* What storing the recorded files took (store.h's struct chunk_stats). */
struct coord_copy {
	uint64_t chunks;	/* chunks of the recorded files */
	uint64_t copied;	/* new ones this snapshot copied */
	uint64_t shared;	/* new ones another snapshot copied meanwhile */
	uint64_t bytes;		/* bytes this snapshot copied */
	uint64_t extended;	/* of the copied, chunks stored as the previous
				 * snapshot's object of them plus the bytes
				 * added since (store/chunkdelta.c) */
	uint64_t streamed;	/* of those, bytes agents sent over their
				 * connections (files on other hosts) */
	uint64_t put;		/* of the copied, chunks agents on other
				 * hosts uploaded to the object store */
	uint64_t put_bytes;	/* and their bytes */
	uint64_t rechecked;	/* stored chunks hashed again before reuse
				 * (changed since their check, or checked
				 * longer ago than the recheck age) */
	uint64_t healed;	/* of those, found bad: quarantined, copied */
	/* When an agent could not upload its chunks and they came through
	 * the coordinator instead: which and why (one line); else "". */
	char note[CS_ERR_MAX];
	/* After an abort: the blobs this snapshot wrote that it removed,
	 * kept (a committed snapshot refers to them) or left for prune
	 * (another process held the repository); store_drop_written. */
	uint64_t removed, removed_bytes, kept, left, left_bytes;
};

struct coord_opts {
	const char *repo;
	/* How the repository is opened (store_open_with): its password,
	 * and the blob sink and target of one on an object store. NULL:
	 * none. */
	const struct store_opts *store;
	const char *initiator;	/* NULL: the config's first agent */
	int timeout_s;		/* default 60 */
	/* When non-NULL and set non-zero (by a signal handler installed
	 * without SA_RESTART), the snapshot is aborted as interrupted. */
	volatile sig_atomic_t *interrupted;
	/* When non-NULL, the commit also stores an HMAC-SHA256 tag under
	 * this key (store_set_key); keylen bytes. */
	const uint8_t *key;
	size_t keylen;
	/* When non-NULL, told of the bytes copied into the repository (see
	 * store_set_progress). */
	void (*progress)(void *ctx, const char *agent, uint64_t done,
	    uint64_t total);
	void *progress_ctx;
	/* Hash a reused chunk again when its last check is older than this
	 * (store_set_recheck_age; 0: always); negative: the default. */
	int64_t recheck_age_s;
	/* Pace the copy and hashing of the recorded files to this many
	 * bytes per second (store_set_max_rate); 0: no limit. */
	uint64_t max_rate;
	/* When non-NULL, filled in once the snapshot is complete. */
	struct coord_copy *copy;
	/* When non-NULL, told when snapshot id has been joined by all n
	 * agents (just before the initiator is told to record: a script can
	 * wait for it), and when agent has reported, the k-th of n. */
	void (*joined)(void *ctx, uint64_t id, int n, const char *initiator);
	void (*reported)(void *ctx, uint64_t id, const char *agent, int k,
	    int n);
	void *event_ctx;
};

/* Take a snapshot. Every agent is connected to first: when one does not
 * answer nothing is created, not even the repository. Returns 0 once it
 * is committed as complete; -1 with e set otherwise, or COORD_BAD_REPO
 * when the repository could not be opened or created (a bad -r). *id is
 * the snapshot's id when one was created (it is then recorded as aborted
 * on failure, and e's message starts "snapshot N aborted: " and says why,
 * ready to print), 0 if none was. */
#define COORD_BAD_REPO (-2)
int coord_snapshot(const struct cfg *c, const struct coord_opts *o,
    uint64_t *id, struct cs_err *e);

/* 1 if markers sent from agent `from` reach every agent over c's
 * channels. */
int coord_reachable(const struct cfg *c, int from);

#endif
