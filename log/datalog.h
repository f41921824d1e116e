/* datalog.h - an agent's data file: a checksummed, append-only record log.
 *
 * File:   16-byte header "CUTSNAPL" | u32 version (2; 1 is read too) | u32 0
 * Record: u32 len | u32 CRC-32 (gzip/zlib polynomial, of type+payload) |
 *         u8 type | payload
 *         where len counts type+payload (1 .. DL_MAX_RECORD).
 * Payloads (buf.h encoding):
 *   PUT   bytes key, bytes value [, request]
 *   DEL   bytes key [, request]
 *   SEND  str dst, u64 seq, bytes key, bytes new_value, bytes msg (chmsg.h)
 *         [, 32 bytes chain] [, request]
 *         -- transfer: debit at this agent and emit msg on self->dst
 *   APPLY str src, u64 seq, bytes key, bytes new_value [, 32 bytes chain]
 *         -- a channel message from src applied here
 *   ACK   str dst, u64 seq [, 32 bytes chain]  -- dst acknowledged up to
 *         seq (a hint for recovery: a lost ACK record only causes a
 *         resend); the chain at seq, so that a live data file, which keeps
 *         no SENDs in memory, knows the acknowledged chain
 *   DEAD  str src, u64 seq, u8 reason, bytes key, i64 amount, bytes from
 *         [, 32 bytes chain]
 *         -- a channel message from src consumed as a dead letter: its
 *         credit of amount to key could not be applied (reason); from is
 *         the sending key, empty when the message did not name it
 *   RESOLVE str src, u64 seq, u8 how, then
 *         how RETRY:  bytes key, bytes new_value -- the dead letter's credit
 *                     applied to its key now
 *         how REFUND: u64 send_seq, bytes msg [, 32 bytes chain] -- the
 *                     credit sent back to src as message send_seq on
 *                     self->src, like a SEND
 *         -- dead letter (src, seq) resolved, with its effect, in one record
 *         (version 2; a version-1 file gains these records when a newer
 *         agent writes to it)
 *   GEN   u64 generation, 16 raw bytes id, u64 prev_size, u64 unix_time
 *         -- first record of a file a compaction wrote (dlrewrite.h): its
 *         generation (1, 2, ...), a random identity, the length of the old
 *         file when the rewrite began; opens the base section
 *   WM    u8 kind (1 sent, 2 applied, 3 acked), str peer, u64 seq
 *         [, 32 bytes chain]
 *         -- base section only: a watermark carried over, with the
 *         channel's history chain at it (absent: unknown)
 *   KEPT  str dst, u64 seq, bytes msg [, 32 bytes chain] -- base section
 *         only: a send not yet acknowledged, carried over with its chain
 *         (its effect on a key is in the values)
 *   LETTER str src, u64 seq, u8 reason, u8 how, i64 amount, bytes key,
 *         bytes from, u64 refund_seq -- base section only: a dead letter
 *         carried over with its resolution (how: 0 open, or enum
 *         dl_resolve_how); it does not move the applied seq (a WM does)
 *   FENCE u8 on, u64 snapshot
 *         -- on 1: this file was restored alone (restore --agent, without
 *         the rest of its cluster) from snapshot; the agent sends,
 *         applies and takes part in snapshots only once every channel's
 *         history has checked with its peer, then appends FENCE on 0
 *         (docs/INTERNALS.md, "Fencing a partial restore")
 *   REQS  u32 n, then n times {16 bytes id, u64 digest, bytes value}
 *         -- base section only: request ids carried over (reqtab.h),
 *         oldest first, each with its request's digest and reply value
 *   TXN   u32 n, then n ops, each u8 kind (enum dl_txn_kind) and
 *         PUT:  bytes key, bytes value
 *         DEL:  bytes key                 -- absent key: nothing
 *         ADD:  bytes key, bytes new_value -- an add's result (decimal),
 *               applied as a PUT and listed in the reply
 *         SEND: str dst, u64 seq, bytes msg (a CHMSG_APP), 32 bytes
 *               chain -- an application message emitted on self->dst
 *               as seq, as a SEND record emits a credit
 *         CONSUME: str src, u64 seq -- the inbox message (src, seq)
 *               leaves the inbox
 *         [, request]
 *         -- a client transaction (W_REQ_TXN) whose conditions held: its
 *         writes, in order, applied as one record
 *   KVER  bytes key, u64 version
 *         -- the key (held, and written by the record before) has this
 *         version: compaction writes one after a key's PUT when its
 *         version is above 1, so that versions survive the rewrite
 *   INBOX str src, u64 seq, bytes msg (a CHMSG_APP) [, 32 bytes chain]
 *         -- an application message from src consumed from the channel
 *         into this agent's inbox (as APPLY consumes a credit); it stays
 *         in the inbox until a TXN's CONSUME takes it out
 *   HELD  str src, u64 seq, bytes msg -- base section only: an inbox
 *         message carried over by a compaction, not yet consumed; it
 *         does not move the applied seq (a WM does)
 * The base section is GEN followed by WM, LETTER, KEPT, HELD and REQS
 * records;
 * the first record of another type closes it.
 *
 * Request: 16 bytes id, u64 digest -- the client request id (reqtab.h)
 * of the add (PUT), del (DEL), transfer (SEND) or transaction (TXN)
 * that wrote the record,
 * and the request's digest; the record's new value (none for DEL) is the
 * reply it got (a TXN's reply is built from its ADD ops: dl_txn_reply).
 * It follows the chain when both are there; absent in files written before
 * it and for records no client request id asked for. With it the value
 * is at most REQ_VAL_MAX bytes.
 * Invariants checked on replay: SEND seq (and a TXN's SEND op's) ==
 * sent[dst]+1, APPLY, DEAD and INBOX seq == applied[src]+1, a CONSUME
 * names a message in the inbox (once), HELD seq <= applied[src], ACK
 * seq <= sent[dst], RESOLVE names an open dead letter (a RETRY its key;
 * a REFUND send_seq == sent[src]+1); GEN first;
 * WM once per kind and peer, an acked WM <= sent; KEPT seq ==
 * sent[dst]+1; LETTER once per (src, seq), seq <= applied[src]. A
 * violation is corruption.
 *
 * History chain (chain.h): the optional trailing field of SEND and APPLY
 * is the channel's chain value after that message (of DEAD too, which
 * consumes a message as APPLY does, and of a REFUND, which sends one). Files written before
 * it existed lack it; a channel whose last SEND (or APPLY) lacks it has an
 * unknown chain (dl_wm_chain() == NULL) until its next message, whose chain
 * then starts again from the all-zero genesis value.
 *
 * Key versions: every write of a key (PUT, SEND's debit, APPLY, a RETRY,
 * a TXN's PUT or ADD) adds one to its version, a new key starts at 1, a
 * delete forgets it (0: absent); replay so rebuilds them, and KVER
 * carries them through compaction (kvmap.h keeps them).
 *
 * Every prefix [0, L) that ends on a record boundary is itself a valid data
 * file: a snapshot records an agent's state as such a prefix. The file is
 * only ever appended to, so the prefix never changes.
 *
 * Recovery on open: an incomplete final record (or a final record whose
 * checksum fails and which ends exactly at EOF, or an all-zero tail) is a
 * torn write and is cut off; a bad record followed by more data is
 * corruption, reported with the file and the offset, never dropped. */
#ifndef CUTSNAP_DATALOG_H
#define CUTSNAP_DATALOG_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/buf.h"
#include "../lib/err.h"
#include "chainhash.h"
#include "kvmap.h"
#include "reqtab.h"
#include "../net/wire.h"

#define DL_HEADER_LEN 16
#define DL_REC_HDR_LEN 8
#define DL_MAX_RECORD (WIRE_MAX_VALUE + 4 * WIRE_MAX_KEY + 4096u)

enum dl_type {
	DL_PUT = 1, DL_DEL = 2, DL_SEND = 3, DL_APPLY = 4, DL_ACK = 5,
	DL_DEAD = 6, DL_RESOLVE = 7, DL_GEN = 8, DL_WM = 9, DL_KEPT = 10,
	DL_LETTER = 11, DL_FENCE = 12, DL_REQS = 13, DL_TXN = 14,
	DL_KVER = 15, DL_INBOX = 16, DL_HELD = 17,
};

/* A TXN record's op kinds. */
enum dl_txn_kind {
	DL_TXN_PUT = 1, DL_TXN_DEL = 2, DL_TXN_ADD = 3, DL_TXN_SEND = 4,
	DL_TXN_CONSUME = 5,
};
/* Most ops in one TXN record (and in one W_REQ_TXN). */
#define DL_TXN_MAX_OPS 65536u

/* Why a credit became a dead letter (DEAD's reason). */
enum dl_dead_reason { DL_DEAD_NOT_INT = 1, DL_DEAD_OVERFLOW = 2 };
/* How a dead letter was resolved (RESOLVE's how). */
enum dl_resolve_how { DL_RESOLVE_RETRY = 1, DL_RESOLVE_REFUND = 2 };
/* "not an integer", "integer overflow"; "unknown" otherwise. */
const char *dl_dead_reason_name(int reason);
/* "retried", "refunded"; "open" for 0. */
const char *dl_resolve_name(int how);

/* WM's kind: which watermark set it belongs to. */
enum dl_wm_kind { DL_WM_SENT = 1, DL_WM_APPLIED = 2, DL_WM_ACKED = 3 };
#define DL_GEN_ID_LEN 16

/* A record to append or one being replayed; all pointers borrowed. */
struct dl_record {
	enum dl_type type;
	const char *peer;	/* SEND/ACK: dst; APPLY: src */
	uint64_t seq;		/* SEND, APPLY, ACK; FENCE: the snapshot */
	const uint8_t *key;	/* PUT, DEL, SEND, APPLY */
	size_t klen;
	const uint8_t *val;	/* PUT; SEND/APPLY: the key's new value */
	size_t vlen;
	const uint8_t *msg;	/* SEND, KEPT, RESOLVE refund: message bytes */
	size_t msglen;
	const uint8_t *chain;	/* SEND, APPLY, DEAD, RESOLVE refund, KEPT:
				 * DL_CHAIN_LEN bytes, the channel's chain
				 * after this message; ACK, WM: the chain at
				 * seq; NULL: absent (a file from an older
				 * version, or unknown) */
	uint8_t code;		/* DEAD, LETTER: enum dl_dead_reason;
				 * RESOLVE: enum dl_resolve_how;
				 * FENCE: 1 on, 0 lifted */
	uint8_t how;		/* LETTER: 0 or enum dl_resolve_how */
	int64_t amount;		/* DEAD: the credit */
	const uint8_t *from;	/* DEAD: the sending key (may be empty) */
	size_t flen;
	uint64_t sseq;		/* RESOLVE refund, LETTER: the refund's seq
				 * on self->peer */
	uint8_t wm_kind;	/* WM: enum dl_wm_kind */
	const uint8_t *gen_id;	/* GEN: DL_GEN_ID_LEN bytes; seq is the
				 * generation */
	uint64_t gen_prev;	/* GEN: the old file's length at the start */
	uint64_t gen_time;	/* GEN: unix time of the rewrite */
	/* PUT from a file (val NULL): the value's vlen bytes are at offset
	 * 0 of vsrc->fd, vsrc->crc the record's checksum over them
	 * (dl_put_head_crc continued over the value as it arrived). Only
	 * for a live data file (datalog_append), vlen > DL_INLINE_MAX. */
	const struct dl_vsrc *vsrc;
	const uint8_t *req_id;	/* PUT, DEL, SEND: REQ_ID_LEN bytes, the client
				 * request id, or NULL */
	uint64_t req_digest;	/* with req_id: the request's digest */
	const uint8_t *reqs;	/* REQS: its entries, as encoded */
	size_t reqslen;
	uint32_t nreqs;		/* REQS: how many */
	const uint8_t *ops;	/* TXN: its ops, as encoded */
	size_t opslen;
	uint32_t nops;		/* TXN: how many */
	/* KVER: key/klen and the version in seq */
};

/* One op of a TXN record; pointers borrow the record. */
struct dl_txn_op {
	int kind;		/* enum dl_txn_kind */
	const uint8_t *key;	/* PUT, DEL, ADD */
	size_t klen;
	const uint8_t *val;	/* PUT, ADD; SEND: the message */
	size_t vlen;
	char peer[NAME_MAX_LEN + 1];	/* SEND: dst; CONSUME: src */
	uint64_t seq;		/* SEND, CONSUME */
	const uint8_t *chain;	/* SEND: DL_CHAIN_LEN bytes */
};

/* The next op of a TXN's ops read by rb (rbuf_init over r->ops): 0 and
 * op filled, or -1 when it is malformed (an unknown kind, an empty or
 * oversized key or value, an ADD value that is not a decimal int64). */
int dl_txn_next(struct rbuf *rb, struct dl_txn_op *op);
/* A TXN's reply body {u32 n, n x i64}: the new values of its ADD ops in
 * order, appended to out. -1 when the record's ops are malformed. */
int dl_txn_reply(const struct dl_record *r, struct wbuf *out);

struct dl_vsrc {
	int fd;
	uint32_t crc;
};

/* A dead letter: a credit consumed without being applied. */
struct dl_dead {
	char peer[NAME_MAX_LEN + 1];	/* the channel's src */
	uint64_t seq;			/* the message's seq on src->self */
	int reason;			/* enum dl_dead_reason */
	int resolved;			/* 0 (open) or enum dl_resolve_how */
	int64_t amount;
	uint8_t *key;			/* owned */
	size_t klen;
	uint8_t *from;			/* owned, NULL when empty */
	size_t flen;
	uint64_t refund_seq;		/* REFUND: its seq on self->peer */
};

#define DL_CHAIN_LEN CHAIN_HASH_LEN

/* An application message in the inbox: received as seq on src->self
 * (an INBOX or HELD record), not yet consumed. */
struct dl_inmsg {
	char peer[NAME_MAX_LEN + 1];	/* src */
	uint64_t seq;
	uint8_t *msg;			/* owned: its CHMSG_APP bytes */
	size_t len;
};

/* Per-peer sequence numbers, and the channel's history chain at seq. */
struct wm {
	char peer[NAME_MAX_LEN + 1];
	uint64_t seq;
	uint8_t chain[DL_CHAIN_LEN];
	int chain_known;	/* 0: the record that set seq had no chain */
};
struct wm_set {
	struct wm *v;
	size_t n, cap;
};
uint64_t dl_wm_get(const struct wm_set *s,
    const char *peer);	/* 0 if absent */
int dl_wm_put(struct wm_set *s, const char *peer,
    uint64_t seq);	/* 0 / -1 */
/* The chain at the peer's seq: the all-zero genesis value for a peer not
 * in s (seq 0), NULL when unknown. Borrowed, valid until s changes. */
const uint8_t *dl_wm_chain(const struct wm_set *s, const char *peer);

/* A message this agent sent: kept while unacknowledged (or always, with
 * keep_all_sends, for verify's cross-check) by offline replays. A live
 * data file keeps none in memory (their number is only bounded by how
 * long a channel is down): datalog_read_sends reads them back. */
struct dl_send {
	char peer[NAME_MAX_LEN + 1];	/* dst */
	uint64_t seq;
	uint8_t *msg;			/* owned */
	size_t len;
	uint8_t chain[DL_CHAIN_LEN];	/* the channel's chain after it */
	int chain_known;		/* 0: the SEND record had none */
};

/* What replaying a data file yields. */
struct dl_state {
	struct kvmap *kv;	/* the values (only keep's keys, with keep) */
	struct wm_set sent;	/* highest seq sent per dst */
	struct wm_set applied;	/* highest seq applied per src */
	struct wm_set acked;	/* highest seq acknowledged per dst, with
				 * the chain at it */
	struct dl_send *sends;	/* in log order (not with no_sends) */
	size_t nsends, capsends;
	int keep_all_sends;
	/* With keep_all_sends, when set (borrowed): per dst, the lowest seq
	 * whose SEND is kept; a dst it does not name keeps none. An offline
	 * reader that needs only a window of sends (verify: a channel's
	 * messages in flight) so keeps memory independent of history. */
	const struct wm_set *send_from;
	/* Live data files: keep no sends; instead, per dst, sendoff holds a
	 * record boundary at or before its first unacknowledged SEND (the
	 * SEND's own offset when it was the first unacknowledged one). */
	int no_sends;
	struct wm_set sendoff;
	/* no_sends: reads the chain after SEND seq to dst back from the
	 * file into out; 1 found (out set), 0 found without a chain, -1 not
	 * found. Set by datalog_open (chain.h's chain_sent_at uses it). */
	int (*send_chain)(void *ctx, const char *dst, uint64_t seq,
	    uint8_t out[32]);
	void *send_chain_ctx;
	/* The inbox: unconsumed application messages in arrival order
	 * (dlinbox.c); inbox_bytes sums their lengths. */
	struct dl_inmsg *inbox;
	size_t ninbox, capinbox;
	uint64_t inbox_bytes;
	struct dl_dead *dead;	/* every dead letter, in log order */
	size_t ndead, capdead;
	size_t nopen;		/* dead letters not yet resolved */
	/* When set, only keys it returns 1 for are kept in kv (restore
	 * needs just the keys its replayed messages add to). */
	int (*keep)(void *ctx, const uint8_t *key, size_t klen);
	void *keep_ctx;
	uint64_t records;	/* records replayed/appended */
	/* Live data files keep PUT values longer than DL_INLINE_MAX in the
	 * file: the map holds their offset (kvmap_put_ref), read back with
	 * datalog_read. Offline replays keep every value in memory. */
	int by_ref;
	uint64_t rec_off;	/* file offset of the record being applied */
	/* The file's generation (GEN): 0 for a file never rewritten. */
	uint64_t gen;
	uint8_t gen_id[DL_GEN_ID_LEN];
	uint64_t gen_prev;	/* the old file's length when it began */
	uint64_t gen_time;	/* unix time of the rewrite */
	int base_open;		/* inside the base section (after GEN) */
	/* FENCE: restored alone and not yet checked with every peer. */
	int fenced;
	uint64_t fence_snap;	/* fenced: the snapshot it was restored from */
	/* With track_reqs, the request ids of the records and REQS replayed
	 * (live files and compaction); without, they are checked only. */
	int track_reqs;
	struct reqtab reqs;
};

/* Longest value a live data file's map keeps in memory; an integer (at
 * most 20 characters) is always inline. */
#define DL_INLINE_MAX 64

int dl_state_init(struct dl_state *st, int keep_all_sends);	/* 0 / -1 */
void dl_state_free(struct dl_state *st);
/* Check the record's invariants against st and apply it. 0, or -1 with e
 * set (and st unchanged) if it violates them. */
int dl_state_apply(struct dl_state *st, const struct dl_record *r,
    struct cs_err *e);
/* Only the check part of dl_state_apply. */
int dl_state_check(const struct dl_state *st, const struct dl_record *r,
    struct cs_err *e);

/* Integer value of key (absent: 0) plus delta, as decimal text in out.
 * -1 with e set if the value is not a decimal int64 or it overflows. */
int dl_int_add(const struct dl_state *st, const void *key, size_t klen,
    int64_t delta, char out[24], int64_t *result, struct cs_err *e);

/* The decimal int64 p[0, n) (an optional '-' and 1..19 digits, as
 * dl_int_add writes them) into *out. 0, or -1 when it is not one. */
int dl_int_parse(const uint8_t *p, size_t n, int64_t *out);

/* The dead letter (src, seq), or NULL. */
const struct dl_dead *dl_dead_find(const struct dl_state *st,
    const char *src, uint64_t seq);

/* The inbox message (src, seq): its index in st->inbox, or -1. */
long dl_inbox_find(const struct dl_state *st, const char *src,
    uint64_t seq);

/* Where dl_credit writes what its record points to. */
struct dl_credit_buf {
	char val[24];			/* APPLY: the key's new value */
	uint8_t chain[DL_CHAIN_LEN];	/* the channel's chain after it */
};

/* The dead-letter rule, shared by an agent, restore's replay and verify's:
 * fill out with the record that consumes message seq from src, whose
 * channel message is msg[0, n): an APPLY of its credit, or a DEAD record
 * when the key holds text or the sum would leave int64; either carries
 * the channel's history chain after the message (chain.h). Pointers in
 * out borrow msg, src and buf. An application message (CHMSG_APP) is
 * consumed into the inbox instead: an INBOX record, never a dead
 * letter. 0, or -1 with e set when msg is not a valid
 * channel message (never a dead letter: a protocol error) or hashing
 * failed. The state must track the message's key. */
int dl_credit(const struct dl_state *st, const char *src, uint64_t seq,
    const uint8_t *msg, size_t n, struct dl_record *out,
    struct dl_credit_buf *buf, struct cs_err *e);

/* Append a REQS record of the n entries of t from the i-th (oldest
 * first) to out. */
void dl_encode_reqs(struct wbuf *out, const struct reqtab *t, size_t i,
    size_t n);

/* The header every data file written now starts with. */
void dl_header(uint8_t hdr[DL_HEADER_LEN]);

/* Append the on-disk form (record header + payload) of r to out. */
void dl_encode(struct wbuf *out, const struct dl_record *r);
/* The same for a PUT record but for its value's r->vlen bytes, which
 * follow it in the file (r->val is not read): a large value is written
 * from where it lies, not copied. The header's length covers the value;
 * its checksum field holds the CRC-32 of the head's bytes after the
 * record header only: the writer continues it over the value
 * (dl_rec_crc_more) and stores the result there (le32, at offset 4). */
void dl_encode_put_head(struct wbuf *out, const struct dl_record *r);
/* The checksum dl_encode_put_head stores for a PUT of key[0, klen) and
 * a value of vlen bytes: the head's bytes after the record header. The
 * head is the type byte and then exactly a W_REQ_PUT frame's payload up
 * to its value, so the record's checksum is this continued
 * (dl_rec_crc_more) over the value's bytes as they arrive. */
uint32_t dl_put_head_crc(const uint8_t *key, size_t klen, size_t vlen);
/* The record checksum of the bytes before p and then p[0, n), crc being
 * that of the bytes before (0 for none). */
uint32_t dl_rec_crc_more(uint32_t crc, const uint8_t *p, size_t n);

/* Offline: replay a whole data file image buf[0, len) into st (initialised
 * by the caller). With allow_torn, a torn tail is ignored and its offset
 * returned in *valid_len; without, it is an error. Corruption is always an
 * error naming `what` (a file name or blob id) and the offset. */
int dl_replay(const uint8_t *buf, size_t len, const char *what,
    int allow_torn, struct dl_state *st, size_t *valid_len,
    struct cs_err *e);
/* The same for an image of len bytes that fn reads (n bytes at off into
 * dst: 0, or -1 with errno set), a window of at least 1 MiB at a time,
 * so that memory does not grow with len; every byte is fed to sha when
 * not NULL. A torn tail is an error. view, when not NULL, is asked first
 * for the bytes in place (a reader that holds the image in pieces, as
 * verify holds chunks): a pointer to the n bytes at off, valid until the
 * next call of view or fn, saves their copy into the window; NULL (not
 * in one piece, or not readable) sends the replay to fn. */
typedef int (*dl_read_fn)(void *ctx, uint64_t off, size_t n, uint8_t *dst);
typedef const uint8_t *(*dl_view_fn)(void *ctx, uint64_t off, size_t n);
/* crc, when not NULL (and sha is NULL), is asked for the checksum of a
 * large record's payload, n bytes at off (CRC-32 from 0, as records carry
 * it), by a reader that can tell it without reading them all (verify: the
 * chunks' block checksums): 0 with *out set, or -1 (then the bytes are
 * read). A PUT whose checksum matches is then applied from its head
 * alone, unless the state keeps its value. */
typedef int (*dl_crc_fn)(void *ctx, uint64_t off, size_t n, uint32_t *out);
struct sha_ctx;
int dl_replay_read(uint64_t len, const char *what, dl_read_fn fn,
    dl_view_fn view, dl_crc_fn crc, void *ctx, struct dl_state *st,
    struct sha_ctx *sha, struct cs_err *e);

#endif
