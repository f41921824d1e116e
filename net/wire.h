/* wire.h - the framed, versioned protocol spoken on every socket.
 *
 * Frame: u32 len (little-endian; counts version+type+payload, so >= 2)
 *        u8 version (WIRE_VERSION) | u8 type | payload.
 * len above WIRE_MAX_FRAME, len < 2 or an unknown type is malformed: the
 * receiver logs one line and closes that connection. A frame of another
 * version is refused by name (wire_other_version): a client is answered
 * REPLY_VERSION in its own version, a peer is logged and closed.
 * Payloads are encoded with buf.h; the field lists are next to each type.
 * docs/PROTOCOL.md describes what an application may send.
 *
 * Bump WIRE_VERSION whenever a frame or a record format changes. */
#ifndef CUTSNAP_WIRE_H
#define CUTSNAP_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/buf.h"
#include "../lib/err.h"
#include "../lib/names.h"

#define WIRE_VERSION 4
#define WIRE_HDR_LEN 6
#define WIRE_MAX_VALUE (16u << 20)		/* put VALUE cap: 16 MiB */
#define WIRE_MAX_FRAME (WIRE_MAX_VALUE + 4096u)	/* value + key + fields */
#define WIRE_MAX_KEY 4096u
#define WIRE_MAX_PIECE (1u << 20)	/* bytes of one W_SNAP_DATA */
#define WIRE_PIECE_WINDOW 4u		/* W_SNAP_FETCH requests in flight */
#define DEAD_LIST_MAX 1000u	/* dead letters in one W_REQ_DEAD_LIST reply */

enum wire_type {
	/* client -> agent; the agent answers every request with one REPLY */
	W_REQ_STATUS = 1,	/* {} -> body: u32 pid, bytes text (one line) */
	W_REQ_PUT = 2,		/* {bytes key, bytes value} */
	W_REQ_GET = 3,		/* {bytes key} -> body: value, or REPLY_NOTFOUND */
	W_REQ_DEL = 4,		/* {bytes key} -> REPLY_NOTFOUND if absent */
	/* DEL, ADD and TRANSFER may end in a client request id (reqtab.h):
	 * [, 16 bytes id]; absent, the request is applied as before */
	W_REQ_ADD = 5,		/* {bytes key, i64 delta} -> body: decimal */
	W_REQ_TRANSFER = 6,	/* {bytes srckey, str dst, bytes dstkey, i64 n}
				 * -> body: srckey's new value */
	W_REQ_HOLD = 7,		/* {str dst}: hold channel self->dst */
	W_REQ_RELEASE = 8,	/* {str dst, u8 mode}: enum release_mode */
	W_REQ_STOP = 9,		/* {} -> REPLY, then the agent exits */
	/* {u8 all} -> body: u32 total (open ones, or all with all=1),
	 * u32 n, then n entries (the first DEAD_LIST_MAX, log order):
	 * str src, u64 seq, u8 reason, u8 resolved, i64 amount, bytes key,
	 * bytes from, u64 refund_seq (datalog.h's struct dl_dead) */
	W_REQ_DEAD_LIST = 16,
	/* {str src, u64 seq, u8 how (enum dl_resolve_how)} -> body: retry:
	 * the key's new value; refund: u64 the refund's seq on self->src */
	W_REQ_DEAD_RESOLVE = 17,
	/* {} -> once the rewrite is durable, body: u64 before, u64 after,
	 * u64 live (the base section), u64 generation, u64 ms */
	W_REQ_COMPACT = 18,
	/* coordinator -> agent, on one connection kept open for the snapshot */
	/* {uid id [, u32 timeout_s [, u64 label]]} -> REPLY ok, or
	 * REPLY_FAIL when the agent already takes part in SNAP_MAX
	 * snapshots. uid: SNAPUID_LEN raw bytes (snapuid.h), the snapshot's
	 * identity, which markers carry too; label the snapshot's id in its
	 * repository, for messages. timeout_s is the coordinator's
	 * --timeout: the agent forgets the snapshot on its own a little
	 * after it (0 or absent: SNAP_DEFAULT_TIMEOUT_S). One snapshot per
	 * connection. */
	W_SNAP_JOIN = 20,
	W_SNAP_START = 21,	/* {uid id}: no reply; record now (initiator) */
	W_SNAP_DONE = 22,	/* {uid id, u8 committed}: no reply; forget it */
	/* agent -> coordinator on the JOIN connection */
	W_SNAP_REPORT = 23,	/* report.h encoding */
	/* A report larger than WIRE_MAX_PIECE goes as pieces of at most that
	 * many bytes: W_SNAP_REPORT_PART {the piece to the frame's end} for
	 * all but the last, which is the W_SNAP_REPORT; the coordinator
	 * joins them (at most REPORT_MAX_BYTES, report.h). Application
	 * messages in flight at a cut can outgrow one frame. */
	W_SNAP_REPORT_PART = 29,
	/* coordinator -> agent, after the report, on the JOIN connection:
	 * {uid id, u64 off, u32 len}, len <= WIRE_MAX_PIECE, off + len
	 * within the recorded prefix. The agent answers each in order with
	 * W_SNAP_DATA {u64 off, the len bytes to the frame's end}, or with
	 * REPLY_FAIL and a message (the coordinator then aborts). The
	 * coordinator keeps at most WIRE_PIECE_WINDOW requests unanswered:
	 * that bounds what either end buffers. */
	W_SNAP_FETCH = 24,
	W_SNAP_DATA = 25,
	/* coordinator -> agent, after the report, on the JOIN connection, only
	 * to an agent whose JOIN reply carried SNAP_CAP_UPLOAD: {uid id, str
	 * url (s3://BUCKET/PREFIX), str endpoint (empty; older coordinators
	 * sent theirs, which agents ignore: they upload only to their own
	 * AWS_ENDPOINT_URL), str region (may be empty; the agent's own
	 * AWS_REGION comes first),
	 * u8 form (enum upload_form), u32 n <= UPLOAD_MAX_BATCH, then n times
	 * {u64 off, u32 len, 32 bytes sha256}}: upload these chunks of the
	 * recorded prefix as the blobs named by their sha256, in that form,
	 * create-only, with the agent's own credentials. The agent answers, once every upload got its answer,
	 * with W_SNAP_UPLOADED {u32 n, n times u8 (enum upload_status), str
	 * the first failure's message}, or with REPLY_FAIL and a message (no
	 * credentials, busy, a bad range): the coordinator then fetches the
	 * chunks itself (W_SNAP_FETCH). */
	W_SNAP_UPLOAD = 26,
	W_SNAP_UPLOADED = 27,
	/* coordinator -> agent, on the JOIN connection, once a second while
	 * the snapshot makes progress: {uid id}, no reply. The agent counts
	 * its own timeout for the snapshot from the last one (as from each
	 * W_SNAP_FETCH), so --timeout bounds a stall, not a long copy. */
	W_SNAP_ALIVE = 28,
	/* {16 bytes request id (all zero: none), u32 n, n ops (enum
	 * txn_op)}: conditions first, then the writes as one record; ->
	 * body {u32 n, n x i64}: each TXN_ADD's new value, in op order;
	 * REPLY_CONFLICT {u32 op index, str reason} when a condition
	 * failed; any failure changes nothing (docs/PROTOCOL.md) */
	W_REQ_TXN = 50,
	/* {u32 timeout_ms (0: do not wait)} -> body {str from, u64 seq,
	 * 16 bytes message id, bytes payload}: the inbox's oldest message,
	 * again until a TXN_CONSUME takes it; REPLY_TIMEOUT (empty body)
	 * when none arrived within timeout_ms */
	W_REQ_RECV = 51,
	/* {bytes key} -> body {u64 version, bytes value}, or
	 * REPLY_NOTFOUND (datalog.h: what a key's version counts) */
	W_REQ_GETV = 52,
	/* {} -> body {u64 bytes, u32 total, u32 n, n x {str from, u64 seq,
	 * 16 bytes message id, u32 payload size}}: the inbox, oldest first,
	 * its first n (at most INBOX_LIST_MAX) of total messages, bytes
	 * their payloads' sum (what `cutsnap inbox` prints) */
	W_REQ_INBOX = 53,
	W_REPLY = 30,		/* {u8 code (enum reply_code), bytes body} */
	/* peer S -> D on the channel S->D (S connects to D) */
	W_PEER_HELLO = 40,	/* {str src}: first frame on a peer connection */
	/* D -> S {u64 applied [, u8 known, 32 bytes chain]}: D's applied
	 * seq from S and the channel's history chain at it (chain.h; known
	 * 0: D's file has none yet); older agents send only applied */
	W_PEER_WELCOME = 41,
	W_PEER_MSG = 42,	/* {u64 seq, bytes payload (chmsg.h)} */
	W_PEER_MARKER = 43,	/* {uid snapshot, u64 s = sent seq in cut} */
	W_PEER_ACK = 44,	/* D -> S {u64 applied}: cumulative, durable */
	/* S -> D {u8 accepted, bytes reason}: S's answer to a WELCOME with a
	 * chain. Refused (0): the ends come from different histories; S
	 * keeps the connection open and idle, writes nothing on it, and
	 * checks again only on a new connection */
	W_PEER_VERDICT = 45,
	/* client -> agent, optionally the first frame of a client
	 * connection: {u32 protocol, str client_name} -> REPLY_OK {u32
	 * protocol, str agent_name}, or REPLY_VERSION (then the agent closes
	 * the connection) when protocol is not the agent's */
	W_HELLO = 60,
};

/* Most messages one W_REQ_INBOX reply lists. */
#define INBOX_LIST_MAX 10000u

/* The ops of a W_REQ_TXN, each u8 kind and its fields. */
enum txn_op {
	TXN_EXPECT_EQ = 1,	/* {bytes key, bytes value} */
	TXN_EXPECT_ABSENT = 2,	/* {bytes key} */
	TXN_EXPECT_VERSION = 3,	/* {bytes key, u64 version (0: absent)} */
	TXN_PUT = 10,		/* {bytes key, bytes value} */
	TXN_DEL = 11,		/* {bytes key}: an absent key is no error */
	TXN_ADD = 12,		/* {bytes key, i64 delta} */
	TXN_SEND = 13,		/* {str peer, bytes payload}: an application
				 * message on the channel self->peer */
	TXN_CONSUME = 14,	/* {str from, u64 seq}: takes that message
				 * out of the inbox */
};

/* How W_REQ_RELEASE delivers what the channel queued while held: in
 * order; reversed, markers first (a non-FIFO drill the snapshot survives);
 * or with the first message after each marker moved before it (a message
 * overtaking its marker, which the commit's cut check must refuse). */
enum release_mode {
	RELEASE_FIFO = 0,
	RELEASE_REVERSE = 1,
	RELEASE_OVERTAKE = 2,
};

/* The body of an agent's REPLY_OK to W_SNAP_JOIN: {u8 caps}, a set of
 * these bits (an older agent's reply is empty: none). */
#define SNAP_CAP_UPLOAD 1u	/* it understands W_SNAP_UPLOAD */
#define UPLOAD_MAX_BATCH 65536u	/* chunks in one W_SNAP_UPLOAD */

/* What W_SNAP_UPLOAD's agent puts as each chunk's blob. */
enum upload_form {
	UPLOAD_RAW = 0,		/* the chunk's bytes */
	UPLOAD_ZSTD = 1,	/* its framed object, zstd (chunkobj.h) */
};

enum upload_status {
	UPLOAD_CREATED = 0,	/* uploaded now */
	UPLOAD_HAD = 1,		/* the bucket had it (412) */
	UPLOAD_FAILED = 2,	/* not stored: the coordinator must */
};

enum reply_code {
	REPLY_OK = 0,
	REPLY_FAIL = 1,		/* the operation failed; body is a message */
	REPLY_BADREQ = 2,		/* malformed or invalid request; body message */
	REPLY_NOTFOUND = 3,		/* key absent */
	/* a condition failed; nothing changed: a TXN's (body {u32 op
	 * index, str reason}) or a TRANSFER's balance below the amount
	 * (body a message) */
	REPLY_CONFLICT = 4,
	REPLY_TIMEOUT = 5,	/* W_REQ_RECV found nothing in time */
	REPLY_BUSY = 6,		/* reserved: a channel is over its limit */
	/* the connection's certificate role may not make this request
	 * (role.h); body is a message; nothing was done */
	REPLY_DENIED = 14,
	/* the request's protocol version is not the agent's; body is "agent
	 * A speaks protocol X, this client Y"; the agent closes the
	 * connection after it */
	REPLY_VERSION = 15,
};

/* The version this process speaks: WIRE_VERSION, or N under the test
 * hook CUTSNAP_FAULT=wire-version:N (an old or future build, for tests). */
unsigned wire_version(void);

/* When buf[0, len) starts with a whole header of a well-formed length
 * whose version byte is not wire_version(): that version; else -1. A
 * receiver calls it on a frame wire_parse refused, to name the mismatch
 * rather than call the frame malformed. */
int wire_other_version(const uint8_t *buf, size_t len);

/* Try to parse one frame from the start of buf[0, len).
 * Returns 1 and fills type/payload/plen/consumed when a whole frame is
 * there, 0 when more bytes are needed, -1 (e set) when malformed. */
int wire_parse(const uint8_t *buf, size_t len, uint8_t *type,
    const uint8_t **payload, size_t *plen, size_t *consumed,
    struct cs_err *e);

/* Write the 6-byte header for a frame with a payload of plen bytes. */
void wire_header(uint8_t hdr[WIRE_HDR_LEN], uint8_t type, size_t plen);

/* Append a whole frame (header + payload) to out. */
void wire_frame(struct wbuf *out, uint8_t type, const void *payload,
    size_t plen);

/* Blocking helpers for short-lived clients (cmd/, coordinator).
 * wire_send writes one frame; wire_recv reads one frame into a malloc'ed
 * payload (caller frees) waiting at most timeout_ms (-1: forever).
 * Both return 0, or -1 with e set (timeout, EOF, malformed frame). */
int wire_send(int fd, uint8_t type, const void *payload, size_t plen,
    struct cs_err *e);
int wire_recv(int fd, uint8_t *type, uint8_t **payload, size_t *plen,
    int timeout_ms, struct cs_err *e);

#endif
