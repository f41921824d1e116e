/* dl_int.h - what datalog.c (records, state, replay) shares with
 * dlfile.c (the live file) and no other file: the replay engine, which
 * reads a memory image or an open file through a bounded window. */
#ifndef CUTSNAP_DL_INT_H
#define CUTSNAP_DL_INT_H

#include <stddef.h>
#include <stdint.h>
#include "datalog.h"

struct sha_ctx;
struct chunkhash;

/*
 * Where a replay reads from: a whole image in memory (offline tools), or
 * the open file through a bounded window (an agent's recovery), so that
 * replaying a large file needs memory for one record, not for the file.
 */
#define DL_SRC_WINDOW (1u << 20)

struct dl_src {
	const uint8_t *buf;	/* the image, or NULL: read fd */
	int fd;
	dl_read_fn read;	/* with fd -1: reads the image instead */
	dl_view_fn view;	/* with read: the bytes in place, or NULL */
	dl_crc_fn crc;		/* with read: a payload's checksum, or NULL */
	void *rctx;
	size_t len;		/* bytes in the image or file */
	size_t start;		/* 0, or a record boundary to start at (the
				 * state holds the replay of [0, start)) */
	uint8_t *win;		/* fd: window holding [woff, woff + wlen) */
	size_t woff, wlen, wcap;
	struct sha_ctx *sha;	/* fd: fed every accepted byte, or NULL */
	struct chunkhash *chunks;	/* the same for the chunk digests */
};

/* datalog.c */
uint32_t dl_rec_crc(const uint8_t *p, size_t n);
const uint8_t *dl_src_at(struct dl_src *s, size_t off, size_t n);
int dl_replay_src(struct dl_src *s, const char *what, int allow_torn,
    struct dl_state *st, size_t *valid_len, struct cs_err *e);
int dl_decode(const uint8_t *p, size_t n, struct dl_record *r,
    char peer[NAME_MAX_LEN + 1], struct cs_err *e);
/* Does the state keep key's value (it has a map, and keep wants it)? */
int dl_tracked(const struct dl_state *st, const uint8_t *key, size_t klen);

/* The rule for agent names in records (cfg_valid_name's). */
int dl_valid_name(const char *s);
/* Apply a message sent on self->r->peer as seq (r's msg and chain); a
 * SEND's key write too. -1 when out of memory. */
int dl_apply_send(struct dl_state *st, const struct dl_record *r,
    uint64_t seq);

/* dlinbox.c: the inbox and its INBOX and HELD records */
/* Append message seq from src (msg[0, len) copied); 0 / -1 (memory). */
int dl_inbox_add(struct dl_state *st, const char *src, uint64_t seq,
    const uint8_t *msg, size_t len);
/* Take out st->inbox[i]. */
void dl_inbox_remove(struct dl_state *st, size_t i);
void dl_inbox_free(struct dl_state *st);
/* The rules of an INBOX or HELD record (its peer checked already). */
int dl_inbox_check(const struct dl_state *st, const struct dl_record *r,
    struct cs_err *e);

/* dltxn.c: TXN and KVER records */
int dl_txn_check(const struct dl_state *st, const struct dl_record *r,
    struct cs_err *e);
/* Apply a checked record; -1 only when out of memory. */
int dl_txn_apply(struct dl_state *st, const struct dl_record *r);
/* Skip nops ops at rb's position (rb->err when malformed); the bytes
 * they take. */
size_t dl_txn_skip(struct rbuf *rb, uint32_t nops);

#endif
