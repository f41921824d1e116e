/* coord_int.h - what the coordinator's files share; not a public API. */
#ifndef CUTSNAP_COORD_INT_H
#define CUTSNAP_COORD_INT_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "coordinator.h"
#include "../proto/snapuid.h"

/* A run's deadline (CLOCK_MONOTONIC ms): --timeout past the last
 * progress (a report, bytes copied), moved forward by the run's thread
 * while the copy's threads read it. */
typedef _Atomic int64_t coord_deadline;

/* Mark in seen[] (nagents bytes) every agent that markers sent from
 * `from` reach over c's channels, `from` included. 0, or -1 on OOM. */
int coord_reach_mark(const struct cfg *c, int from, unsigned char *seen);

/* stream.c: fetching recorded files over the snapshot's connections
 * (fds: per agent, borrowed for the stream's life). NULL on OOM. */
struct stream;
int coord_stream_new(const struct cfg *c, const int *fds,
    const struct snapuid *uid, const coord_deadline *deadline,
    volatile sig_atomic_t *interrupted, struct stream **out);
void coord_stream_free(struct stream *s);	/* NULL ok */
/* A chunk_fetch_fn (store.h) whose ctx is a struct stream. */
int coord_stream_fetch(void *ctx, size_t i, uint64_t off, uint8_t *buf,
    size_t len, struct cs_err *e);
/* upload.c: agents put their own chunks into the object store t
 * (store_set_put); *out stays NULL when t is NULL (the repository is not
 * on one: store_blob_target). note (notesz bytes) gets the first
 * fallback to the coordinator's own fetch. -1 on OOM. */
struct upctx;
struct blob_target;
int coord_upload_new(const struct cfg *c, const struct blob_target *t,
    const int *fds, const uint8_t *caps, const int *streamed,
    const struct snapuid *uid, const coord_deadline *deadline, char *note,
    size_t notesz, struct upctx **out);
void coord_upload_free(struct upctx *u);	/* NULL ok */
struct chunk_put;
/* A chunk_put_fn (store.h) whose ctx is a struct upctx. */
int coord_upload(void *ctx, struct chunk_put *v, size_t n, int compressed,
    struct cs_err *e);

/* held.c: the held channels ("channel hold") into the agents marked in
 * waiting[] (nagents bytes), asked of their sources: "A->B, C->B" into
 * out; their count (0 when none is held or no source answered). */
int coord_held_into(const struct cfg *c, const unsigned char *waiting,
    char *out, size_t outsz);

/* alive.c: while the run waits for reports and copies, W_SNAP_ALIVE once
 * a second to each agent whose connection no other thread writes (not
 * streamed[i]; streamed may be NULL: none is), as long as the deadline
 * has not passed: each agent's own deadline is then counted from there.
 * NULL in *out on OOM or when the thread cannot start (agents then keep
 * their deadline from the JOIN). */
struct alive;
void coord_alive_start(const struct cfg *c, const int *fds,
    const int *streamed, const struct snapuid *uid,
    const coord_deadline *deadline, struct alive **out);
void coord_alive_stop(struct alive *a);	/* NULL ok */

#endif
