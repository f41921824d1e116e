/* dlfile.h - the live data file of one agent: open with recovery,
 * appends staged for a group commit, syncs, reads back from the file, and
 * what a compaction needs (dlrewrite.h). Only the agent and compaction
 * use it; the records and their replay are datalog.h's. */
#ifndef CUTSNAP_DLFILE_H
#define CUTSNAP_DLFILE_H

#include <stddef.h>
#include <stdint.h>
#include "datalog.h"

/* Live: an open, locked data file owned by one agent. */
struct datalog;

/* Open (creating if absent, mode 0600, O_NOFOLLOW), take an exclusive
 * flock (error if another process holds it: an agent is running), recover
 * (truncate a torn tail, fsync) and replay into the state. The replay
 * streams the file through a bounded window: memory does not grow with the
 * file, only with the largest record and the keys. */
int datalog_open(const char *path, struct datalog **out, struct cs_err *e);
void datalog_close(struct datalog *dl);			/* accepts NULL */
const struct dl_state *datalog_state(const struct datalog *dl);
/* Validate r, stage it (written to the file by the next flush or sync,
 * or at once when 1 MiB has gathered) and apply it to the state. */
int datalog_append(struct datalog *dl, const struct dl_record *r,
    struct cs_err *e);
/* Write the staged records to the file (not yet durable): what reads the
 * file from outside, such as a snapshot's copy of [0, end), needs it. A
 * write error is final, like an fsync error. */
int datalog_flush(struct datalog *dl, struct cs_err *e);
/* Flush, then fdatasync; afterwards datalog_synced() == datalog_end().
 * An fsync error is returned, never retried. */
int datalog_sync(struct datalog *dl, struct cs_err *e);
uint64_t datalog_end(const struct datalog *dl);		/* log length */
/* The prefix that must become durable before what depends on the state
 * is released: datalog_end() minus trailing ACK records, which are only
 * recovery hints and ride along with the next real batch's fsync (group
 * commit), or more after datalog_require(). */
uint64_t datalog_need(const struct datalog *dl);
/* Raise datalog_need() to off (<= datalog_end()): a snapshot prefix that
 * ends after a trailing ACK must still become durable. */
void datalog_require(struct datalog *dl, uint64_t off);
/* fdatasync calls made by datalog_sync since open (group-commit metric). */
uint64_t datalog_syncs(const struct datalog *dl);
uint64_t datalog_synced(const struct datalog *dl);	/* bytes durable */
uint64_t datalog_cut_bytes(const struct datalog *dl);	/* torn tail cut */
/* Read a value kept by reference (struct kv_entry with val == NULL) into
 * a malloc'ed buffer *out (caller frees). 0, or -1 with e set. */
int datalog_read_value(const struct datalog *dl, const struct kv_entry *ent,
    uint8_t **out, struct cs_err *e);
/* The same into dst, which holds ent->vlen bytes. */
int datalog_read_value_to(const struct datalog *dl,
    const struct kv_entry *ent, uint8_t *dst, struct cs_err *e);
/* A descriptor of its own (close it) in *fd on the data file as it is,
 * from which the value of ent (val == NULL) can be read at ent->voff for
 * as long as it stays open, even after a compaction switched files; *fd
 * is -1 while the value is still staged in memory. 0, or -1 with e set. */
int datalog_value_fd(const struct datalog *dl, const struct kv_entry *ent,
    int *fd, struct cs_err *e);
/* Start offset of the record appended last (a record boundary). */
uint64_t datalog_last_off(const struct datalog *dl);
/* Read the SEND records (the refunds of RESOLVE records, the KEPT
 * records of a compaction, the SEND ops of TXN records) to dst back
 * from the file: from the record boundary *off on, records ending at or
 * before datalog_synced() only, call fn for each of them to dst with seq
 * >= from, in log (= seq) order,
 * until fn returns 1 (stop after this one) or -1 (fail). *off is moved
 * past the last record read (left on a TXN record fn stopped inside),
 * so a later call goes on from there. Each
 * record's checksum is checked. 0, or -1 with e set (a read error,
 * corruption, or fn's failure). The msg bytes and the chain (NULL: the
 * record has none) are borrowed for the call. */
typedef int (*dl_send_fn)(void *ctx, uint64_t seq, const uint8_t *msg,
    size_t len, const uint8_t *chain);
int datalog_read_sends(struct datalog *dl, const char *dst, uint64_t *off,
    uint64_t from, dl_send_fn fn, void *ctx, struct cs_err *e);
/* SHA-256 of [0, datalog_end()) without rereading: O(1). */
int datalog_prefix_sha(const struct datalog *dl, uint8_t out[32]);
/* The chunk digests of [0, datalog_end()) (chunkhash.h), kept as records
 * are appended; borrowed, valid until the next append. */
struct chunkhash;
const struct chunkhash *datalog_chunks(const struct datalog *dl);

/* Try to take the data file's lock without opening it for writing: 0 if
 * free (the lock is released again), -1 with e set if an agent holds it. */
int datalog_check_unlocked(const char *path, struct cs_err *e);

/* For a compaction (dlrewrite.h); not for other callers. The new file is
 * written beside the data file under its name plus this suffix;
 * datalog_open removes one a killed compaction left. */
#define DL_REWRITE_SUFFIX ".compact"
struct sha_ctx;
int datalog_fd(const struct datalog *dl);
const char *datalog_path(const struct datalog *dl);
/* Replay fd's records [start, len) into st (which holds the replay of
 * [0, start); start 0: the header is checked first), feeding every byte
 * to sha and chunks when not NULL. A torn or bad record is an error. */
int dl_replay_fd(int fd, uint64_t start, uint64_t len, const char *what,
    struct dl_state *st, struct sha_ctx *sha, struct chunkhash *chunks,
    struct cs_err *e);
/* n bytes of fd at off into a malloc'ed *out (caller frees). 0 / -1. */
int dl_read_at(int fd, const char *what, uint64_t off, size_t n,
    uint8_t **out, struct cs_err *e);
/* Switch dl to fd, a whole, durable, locked file of length end already
 * renamed to dl's path, whose replay is st (made with no_sends) and whose
 * hashes are sha and chunks (all taken over; st is zeroed). Nothing may be
 * staged. The old descriptor is closed. */
void datalog_adopt(struct datalog *dl, int fd, struct dl_state *st,
    struct sha_ctx *sha, struct chunkhash *chunks, uint64_t end);
/* Refuse every later append and sync (the agent must restart). */
void datalog_fail(struct datalog *dl);
int datalog_failed(const struct datalog *dl);	/* 1 after that */

#endif
