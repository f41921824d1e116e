/* upload_pipe.h - chunk objects uploaded while the writer goes on: a
 * queue of objects, each a copy in memory, put create-only through a
 * backend by worker threads (as many as the backend's parallel says),
 * so a snapshot's wall time is about the longer of its copy and its
 * upload, not their sum, and its memory is bounded whatever it writes
 * (upload_pipe.c). */
#ifndef CUTSNAP_STORE_UPLOAD_PIPE_H
#define CUTSNAP_STORE_UPLOAD_PIPE_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "../lib/err.h"

/* The bodies queued or in flight hold at most this much (one body
 * always fits, whatever its size). */
#define STORE_PIPE_MEM (64u << 20)

struct store_pipe;	/* opaque */

struct store_pipe_stats {
	uint64_t put, bytes;	/* created, their body bytes */
	uint64_t had;		/* were there already (CS_E_EXISTS) */
};

/* Starts the workers over b (borrowed: it must outlive the pipe). */
int store_pipe_start(struct store_backend *b, struct store_pipe **out,
    struct cs_err *e);
/* Queues the create-only put of len bytes of data (copied) as key;
 * waits while the bodies held would pass STORE_PIPE_MEM. -1 with e set
 * (the pipe's first failure, naming the key) once an upload failed: the
 * caller stops what it was doing. */
int store_pipe_put(struct store_pipe *p, const char *key, const void *data,
    size_t len, struct cs_err *e);
/* Waits until every queued upload got its answer: 0 when each was
 * stored (or there already); -1 with e set at the first failure. st
 * (may be NULL) gets the counts so far. The pipe takes more after. */
int store_pipe_drain(struct store_pipe *p, struct store_pipe_stats *st,
    struct cs_err *e);
/* Stops the workers once their current put ends, abandoning what is
 * queued, and frees the pipe. */
void store_pipe_stop(struct store_pipe *p);	/* accepts NULL */

#endif
