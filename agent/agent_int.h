/* agent_int.h - the agent daemon's internal structures, shared by the agent/ files.
 *
 * Invariants (INTERNALS.md, "Agent"):
 * - Every byte queued on a connection carries the log offset it depends on;
 *   it is written only once datalog_synced() >= that offset, and bytes on
 *   one connection leave in the order they were queued.
 * - An outgoing channel's queue is [written | unwritten]; only its head
 *   unwritten entry may be written, and only once the log is durable up to
 *   the entry's offset, the channel is up (WELCOME seen) and not held.
 * - An incoming channel applies seq applied+1 only; later seqs wait in a
 *   hold-back ring, earlier ones are duplicates and are only re-acked.
 *   While the inbox holds inbox_max bytes or more, an application message
 *   at applied+1 waits in the ring too, unapplied and unacknowledged, and
 *   everything behind it on its channel with it (inch.c).
 * - Up to SNAP_MAX snapshots are in progress at once, one struct snap
 *   (recording) each, told apart by their identities (snapuid.h); a slot
 *   is free iff its phase is SNAP_NONE. */
#ifndef CUTSNAP_AGENT_INT_H
#define CUTSNAP_AGENT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../lib/buf.h"
#include "../lib/config.h"
#include "../log/datalog.h"
#include "../log/dlfile.h"
#include "../lib/err.h"
#include "../proto/chmsg.h"
#include "../proto/report.h"
#include "../net/conn.h"
#include "../net/role_policy.h"
#include "../proto/snapuid.h"
#include "../lib/util.h"
#include "../net/wire.h"

#define OUT_HIGH_WATER	(64u << 20)	/* stop reading a client above this */
#define CH_PUMP_LIMIT	(1u << 20)	/* channel bytes buffered per socket */
#define HOLD_CAP	65536u		/* held-back messages per channel */
/* Entries an outgoing channel keeps in memory; the rest of its backlog is
 * read back from the data file as the window drains. */
#define OUT_WINDOW	4096u
/* release --reverse delivers in reversed windows of at most this many
 * entries, so the receiver never holds back HOLD_CAP messages. */
#define REV_WINDOW	4096u
/* A receiver acknowledges what it applied at most ACK_DELAY_MS after the
 * first message it owes an ACK for, or at once when ACK_EVERY are owed:
 * one ACK record for many batches under load, and the sender's window
 * (OUT_WINDOW) never waits for one. */
#define ACK_DELAY_MS	10
#define ACK_EVERY	(OUT_WINDOW / 4)
#define BACKOFF_MIN_MS	50
#define BACKOFF_MAX_MS	1000
#define IN_CAP		(WIRE_MAX_FRAME + WIRE_HDR_LEN)
/* An application message's payload cap (a TXN's send): the 16 MiB the
 * frame and record formats allow. What a channel keeps in memory is
 * bounded in bytes, not by this: a sender refuses sends to a peer with
 * more than the peer's inbox_max_bytes unacknowledged (txn.c), and a
 * receiver holds back at most what its sender has written. */
#define APP_PAYLOAD_MAX	CHMSG_APP_MAX

enum conn_role {
	ROLE_NEW,		/* accepted, no frame yet */
	ROLE_CLIENT,		/* CLI or coordinator */
	ROLE_PEER_IN,		/* channel peer->self, accepted here */
	ROLE_PEER_OUT,		/* channel self->peer, connected from here */
};

/* Bytes of conn.out up to end wait until the log is durable up to off. */
struct out_mark {
	uint64_t off;
	size_t end;
};

struct conn {
	int fd;
	enum conn_role role;
	int peer;		/* PEER_IN: src index; PEER_OUT: dst; else -1 */
	uint8_t *in;		/* unparsed input, heap */
	size_t inoff;		/* first unparsed byte */
	size_t inlen;		/* end of received bytes */
	size_t incap;
	struct wbuf out;	/* frames queued for writing */
	size_t outoff;		/* bytes of out already written */
	size_t rel;		/* bytes of out released (durable deps) */
	struct out_mark *marks;	/* FIFO of unreleased frames */
	size_t mhead, mtail, mcap;
	uint32_t events;	/* current epoll interest */
	int connecting;		/* PEER_OUT: connect() in progress */
	int eof;		/* peer closed its side; close once flushed */
	int ack_due;		/* PEER_IN: send an ACK after this batch */
	int is_coord;		/* joined a snapshot on this connection
				 * (one per connection) */
	int compact_wait;	/* asked for a compaction: answered when
				 * the rewrite is durable */
	int dead;		/* closed; freed by agent_conn_reap */
	/* Its transport (net/conn.h): plain on a Unix socket, TLS over
	 * TCP (agents with an addr). Over TLS nothing is read or written
	 * before the handshake is done and the peer's CN is accepted. */
	struct netconn *nc;
	int hs;			/* handshake under way */
	uint32_t hs_want;	/* its epoll interest */
	int64_t hs_deadline;	/* monotonic ms: closed then if not done */
	int rd_want_w;		/* a TLS read waits for writability */
	int wr_want_r;		/* a TLS write waits for readability */
	char cn[NAME_MAX_LEN + 8];	/* accepted: the peer's CN */
	enum cs_role crole;	/* what its certificate may ask (role.h):
				 * admin on a Unix socket, none for an
				 * agent's certificate */
	int denied;		/* a refusal of its role was logged */
	/* Accepted and not yet authenticated (admit.c): in agent's queue
	 * of them, oldest first, with the source address it came from. */
	struct conn *aq_prev, *aq_next;
	int in_aq;
	uint8_t src[16];
	uint8_t srclen;
	int in_dirty;		/* in agent.dirty */
	int in_tlsp;		/* in agent.tlsp */
	/* Large values (bigval.c): a put's value being spooled, whose
	 * frame's head was consumed from in; a get's value being sent from
	 * the data file, its bytes due at offset vs_at of out (input waits
	 * meanwhile: one at a time). */
	struct spool *sp;
	struct vstream *vs;
	size_t vs_at;
	/* A W_REQ_RECV parked until a message arrives (inbox.c): its
	 * deadline, monotonic ms (0: none parked). Input waits meanwhile,
	 * so that replies keep their requests' order. */
	int64_t recv_at;
	struct conn *next;
};

enum qkind { Q_MSG, Q_MARKER };

/* An outgoing channel queue entry. */
struct qent {
	enum qkind kind;
	uint64_t seq;		/* MSG: its seq; MARKER: s (sent in the cut) */
	struct snapuid snap;	/* MARKER: the snapshot's identity */
	uint64_t off;		/* log offset it waits for (0: durable) */
	uint8_t *payload;	/* MSG: chmsg bytes, heap */
	size_t len;
	int arranged;		/* placed by a reversed window */
	uint8_t chain[DL_CHAIN_LEN];	/* MSG: the channel's chain after
					 * it, for the ACK record of it */
	int chain_known;
};

/* Channel self->dst. */
struct outch {
	int configured;		/* the config has this channel */
	struct conn *conn;	/* NULL while disconnected */
	int up;			/* WELCOME received on conn */
	int held;		/* channel hold: write nothing */
	int64_t stall_ms;	/* monotonic ms since which entries have
				 * waited with no acknowledgement moving:
				 * set when the channel stops being empty
				 * and on each ack that advances; status
				 * reports its age while work waits */
	struct qent *q;		/* live entries are q[qh, qt) */
	size_t qh, qt, qcap;
	size_t w;		/* q[qh, qh+w) are written */
	/* The backlog beyond the window (INTERNALS.md, "Channels"):
	 * messages f_lo..f_hi (f_lo == 0: none) are only in the data file,
	 * from the record boundary f_off on; markers queued behind them wait
	 * in fm[0, nfm), each to go right after message fm[i].seq. The
	 * queue's order is q[qh, qt), then that file part. */
	uint64_t f_lo, f_hi, f_off;
	struct qent *fm;
	size_t nfm, capfm;
	uint64_t rev_upto;	/* release --reverse: unwritten messages up
				 * to this seq go in reversed windows */
	int64_t retry_at;	/* monotonic ms of the next connect, 0: none */
	int backoff_ms;
	int logged_down;	/* "down" logged since the last "up" */
	int refused;		/* conn is refused (histories differ): idle */
	int vrefused;		/* the peer refused our protocol version;
				 * logged, not again until the channel is up */
	int diverged;		/* the last check refused: transfers fail */
	char why[160];		/* diverged: the reason (chain_check) */
	int fence_ok;		/* its check accepted in this run (fence.c) */
	/* Application messages sent and not acknowledged, oldest first:
	 * ap[aph, apt), and the sum of their lengths, which a TXN's send
	 * to dst is refused beyond (REPLY_BUSY, txn.c). */
	struct app_unacked *ap;
	size_t aph, apt, apcap;
	uint64_t app_bytes;
};

/* One application message on an outgoing channel, not acknowledged. */
struct app_unacked {
	uint64_t seq;
	size_t len;		/* its chmsg bytes */
};

/* A message that arrived before its turn. */
struct held {
	uint64_t seq;		/* 0: slot empty */
	uint8_t *p;		/* chmsg bytes, heap */
	size_t n;
};

/* Channel src->self. */
struct inch {
	int configured;
	struct conn *conn;	/* the current peer connection, or NULL */
	struct held *ring;	/* HOLD_CAP slots indexed by seq, lazily */
	size_t nheld;
	int diverged;		/* the sender refused our history (VERDICT) */
	int fence_ok;		/* the sender accepted it in this run */
	/* Delayed ACK: applied as last acknowledged on conn, and when the
	 * next ACK is due (0: none owed). */
	uint64_t acked;
	int64_t ack_at;
	int withhold;		/* test hook: no ACK but the WELCOME's */
	int full;		/* an application message waits for room in
				 * the inbox (logged once per wait) */
};

/* One incoming channel as it is being recorded. */
struct rec_chan {
	int src;		/* agent index */
	uint64_t a;		/* applied when recording started */
	uint64_t s;		/* from the marker, once have_s */
	int have_s;
	int closed;
	struct rep_msg *msgs;	/* applied seqs > a, in order */
	size_t n, cap;
};

enum snap_phase {
	SNAP_NONE,
	SNAP_JOINED,		/* coordinator joined, not recording yet */
	SNAP_RECORDING,		/* state recorded, channels still open */
	SNAP_RECORDED,		/* all closed, waiting for the log to sync */
	SNAP_REPORTED,		/* report sent, waiting for SNAP_DONE */
};

/* One snapshot in progress here: its recording. */
struct snap {
	enum snap_phase phase;	/* SNAP_NONE: the slot is free */
	struct snapuid id;	/* what markers, JOIN, START, DONE carry */
	uint64_t label;		/* its id in the repository, or 0 */
	struct conn *coord;	/* JOIN connection */
	uint64_t L;		/* recorded prefix of the data file */
	uint8_t sha[32];
	/* The prefix's chunks: the first nfull are the datalog's finished
	 * ones (they never change), then the partial one, if any. */
	size_t nfull;
	uint8_t partial[32];
	struct wm_set sent;	/* watermarks in the recorded state */
	struct wm_set applied;
	struct rec_chan *ch;	/* one per configured incoming channel */
	size_t nch;
	size_t nopen;
	int64_t deadline;	/* monotonic ms: forget it then (0: none) */
	int64_t rec_ms;		/* monotonic ms when its state was recorded */
	uint32_t timeout_s;	/* the coordinator's; the deadline is this
				 * plus a grace past its last word */
};

/* How many snapshots an agent takes part in at once; a JOIN beyond it is
 * refused (the others go on). Markers of a snapshot this agent never
 * joined take no slot: they are forwarded at once. */
#define SNAP_MAX	8
/* Identities of finished snapshots remembered, so that their late
 * markers are ignored rather than forwarded again. */
#define SNAP_DONE_RING	64

/* A snapshot's lifetime at an agent when no JOIN said otherwise; an agent
 * waits this long past the coordinator's own timeout before it gives up,
 * so that the coordinator, not the agent, normally decides. */
#define SNAP_DEFAULT_TIMEOUT_S	60
#define SNAP_GRACE_MS		2000

/* Counts since the agent started, for /metrics (metrics.c). */
struct agent_counters {
	uint64_t transfers;	/* transfers debited here */
	uint64_t acks_sent;	/* ACK frames sent to senders */
	uint64_t dead;		/* dead letters recorded */
	uint64_t snaps;		/* snapshots recorded and reported */
	uint64_t snap_bytes;	/* their recorded prefixes, summed */
	uint64_t snap_ms;	/* their times from recording to report */
	uint64_t snaps_done;	/* snapshots its coordinator committed */
	uint64_t snaps_failed;	/* aborted, timed out or left */
};

struct agent {
	const struct cfg *c;
	int self;
	const char *name;
	int n;			/* c->nagents */
	struct datalog *dl;
	int ep;			/* epoll */
	int lfd;		/* listening socket */
	int tcp;		/* lfd is TCP + TLS (the agent has an addr) */
	struct xport_ctx *tls;	/* this agent's TLS identity, when the
				 * cluster has a tls_dir and any addr */
	int sfd;		/* signalfd */
	int spare;		/* reserve fd for EMFILE */
	ino_t sock_ino;		/* our socket file, unlinked at exit */
	int bound;
	struct conn *conns;
	/* What a loop iteration looks at, so that it costs the connections
	 * with work, not all of them (INTERNALS.md, "TLS throughput"). Both
	 * arrays have room for every connection (made in agent_conn_new). */
	struct conn **dirty;	/* frames queued and not all written yet */
	size_t ndirty, dirtycap;
	struct conn **tlsp;	/* TLS used since looked at: may hold
				 * bytes that epoll cannot see */
	size_t ntlsp, tlspcap;
	int flushing;		/* agent_conn_commit's pass over dirty is
				 * under way (conn.c: when EPOLLOUT is
				 * asked for) */
	int lists_lost;		/* out of memory growing them: scan every
				 * connection instead, for good */
	size_t nconns;		/* in conns, dead ones included */
	size_t ndead;		/* closed, not reaped yet */
	size_t nhs;		/* TLS handshakes under way */
	/* Admission (admit.c): accepted connections not yet authenticated,
	 * oldest first, their caps (0: not set yet), the refusals logged
	 * and not logged in the current window, those queued since the
	 * last malloc_trim and when that was. */
	struct conn *aq_old, *aq_new;
	size_t naq, aq_cap, aq_src_cap, aq_admitted;
	int64_t aq_trim_ms;
	int64_t rl_start;
	unsigned rl_logged, rl_dropped;
	struct outch *out;	/* n entries, by dst index */
	struct inch *in;	/* n entries, by src index */
	struct snap snaps[SNAP_MAX];
	struct snapuid done[SNAP_DONE_RING];	/* finished, newest at
						 * done[(ndone - 1) % RING] */
	uint64_t ndone;
	int64_t start_ms;
	uint64_t writes;	/* client write requests (put, del, add,
				 * transfer) since start: with
				 * datalog_syncs(), fsyncs per request */
	/* Compaction (compact.c). */
	struct dl_rewrite *rw;	/* the rewrite under way, or NULL */
	int64_t rw_start_ms;	/* when it started */
	uint64_t compact_ref;	/* the file's size after the last rewrite
				 * (at start: its live size); automatic
				 * once the file is twice as large */
	uint64_t compactions;	/* rewrites since start */
	uint64_t cbefore, cafter, cms;	/* the last one */
	/* A snapshot's chunks going up to an object store (upload.c). */
	struct upload *up;	/* the upload under way, or NULL */
	int stop;		/* shut down cleanly */
	int fatal;		/* shut down with an error */
	long drop_replies;	/* test hook drop-reply (client_req.c) */
	/* systemd (sdnotify.c): notifications on, the watchdog's ping
	 * interval (0: none) and the next ping (monotonic ms). */
	int sd_on;
	int64_t wd_ms, wd_next;
	const char *log_file;	/* --log FILE (SIGHUP reopens it), or NULL */
	/* What metrics.c exposes: counts since start. */
	struct agent_counters ct;
	uint64_t *sent_to;	/* n entries: messages emitted to each peer */
	uint64_t *applied_from;	/* n entries: applied from each peer */
	uint64_t *acked_by;	/* n entries: acknowledged by each peer */
	struct metrics *mx;	/* the /metrics listener, or NULL */
	size_t nrecv;		/* connections with a parked W_REQ_RECV */
};

/* Append r; any failure is fatal for the agent (logged). 0 / -1. */
int agent_append(struct agent *a, const struct dl_record *r);
/* Append r, a record that emits message seq with payload msg[0, len) on
 * self->d (a SEND, or a refund), then queue the message behind it. Any
 * failure is fatal for the agent (logged). 0 / -1. */
int agent_append_send(struct agent *a, int d, const struct dl_record *r,
    uint64_t seq, const uint8_t *msg, size_t len);
/* One group commit: sync the log, then release and flush what waited for
 * it (called once per loop iteration; the fuzz target drives it too). */
void agent_commit(struct agent *a);

/* client_req.c: request ids (reqtab.h) */
/* Answer a request whose id was seen: with the first outcome (the same
 * request), or refuse it (another one). 1 answered, 0 a new id (or id
 * NULL). */
int agent_req_seen(struct agent *a, struct conn *c, const uint8_t *id,
    uint64_t digest);
/* The OK reply, body val[0, vlen), of a request that may carry an id,
 * once its record is durable (the drop-reply test hook applies). */
void agent_req_reply_ok(struct agent *a, struct conn *c, const uint8_t *id,
    const void *val, size_t vlen);

/* txn.c */
/* W_REQ_TXN, its whole payload p[0, n); W_REQ_GETV. Each answers. */
void agent_txn_request(struct agent *a, struct conn *c, const uint8_t *p,
    size_t n);
void agent_getv_request(struct agent *a, struct conn *c, struct rbuf *r);

/* inbox.c: W_REQ_RECV. Answer it now (a message, or timeout 0), or park
 * c until a message arrives or the timeout passes. */
void agent_recv_request(struct agent *a, struct conn *c, struct rbuf *r);
/* Answer the parked requests that can be (a message arrived, a deadline
 * passed); ms until the next deadline (0: one can be answered now), or
 * -1 when none is parked. */
void agent_recv_timers(struct agent *a, int64_t now);
int agent_recv_timeout(struct agent *a, int64_t now);
/* c is closing: forget its parked request. */
void agent_recv_closed(struct agent *a, struct conn *c);
/* W_REQ_INBOX: list the inbox (wire.h). */
void agent_inbox_list(struct agent *a, struct conn *c);

/* listen.c */
int agent_listen_open(struct agent *a, struct cs_err *e);
void agent_listen_accept(struct agent *a);
void agent_listen_close(struct agent *a);	/* idempotent */

/* version.c: W_HELLO's answer; a frame in protocol v (not ours) at the
 * start of c's input refused by name, then c closed. */
void agent_hello(struct agent *a, struct conn *c, struct rbuf *r);
void agent_version_refuse(struct agent *a, struct conn *c, unsigned v);

/* conn.c */
struct conn *agent_conn_new(struct agent *a, int fd, enum conn_role role,
    int connecting);
void agent_conn_close(struct agent *a, struct conn *c, const char *why);
void agent_conn_reap(struct agent *a);
void agent_conn_lists_free(struct agent *a);
/* Queue a frame that may leave once the log is durable up to off. */
void agent_conn_send(struct agent *a, struct conn *c, uint8_t type,
    const void *payload, size_t plen, uint64_t off);
/* agent_conn_reply(REPLY_OK, the value of ent) with the value read from the
 * data file straight into the output buffer (one copy of a large value,
 * not three). */
void agent_conn_reply_value(struct agent *a, struct conn *c,
    const struct kv_entry *ent, uint64_t off);
/* Queue a frame of pre then len bytes of the data file from off (written,
 * and durable: the frame leaves at once), sent from the file as the
 * socket drains (agent_stream_range); 0 if queued so, -1 when it must be
 * built in memory instead (c streams already, or memory is short). */
int agent_conn_send_range(struct agent *a, struct conn *c, uint8_t type,
    const uint8_t *pre, size_t prelen, uint64_t off, size_t len);
void agent_conn_reply(struct agent *a, struct conn *c, uint8_t code,
    const void *body, size_t blen, uint64_t off);
void agent_conn_replyf(struct agent *a, struct conn *c, uint8_t code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* agent_conn_reply of w's bytes once the log is durable, or REPLY_FAIL
 * "out of memory" when building w ran out; the caller frees w. */
void agent_conn_reply_wbuf(struct agent *a, struct conn *c, uint8_t code,
    const struct wbuf *w);
size_t agent_conn_pending(const struct conn *c);
void agent_conn_release(struct agent *a, struct conn *c, uint64_t synced);
void agent_conn_flush(struct agent *a, struct conn *c);
/* Go on with c's buffered input after a pause (a parked RECV answered). */
void agent_conn_resume(struct agent *a, struct conn *c);
/* Release (at synced) and write out what the connections with queued
 * frames hold: only those, not every connection. */
void agent_conn_commit(struct agent *a, uint64_t synced);
void agent_conn_event(struct agent *a, struct conn *c, uint32_t ev);
/* Make c a TLS connection (server: accepted here); 0 / -1 (closed). */
int agent_conn_tls(struct agent *a, struct conn *c, int server);
/* Close handshakes past their deadline; ms until the next, or -1. */
int agent_conn_hs_timeout(struct agent *a, int64_t now);
/* Read what TLS holds decrypted (epoll cannot see it); 1 if some is
 * still held after that (budget), so the loop must not sleep. */
int agent_conn_tls_pending(struct agent *a);

/* admit.c: bounds on accepted connections that have not authenticated
 * (a TLS handshake under way): at most aq_cap of them, and aq_src_cap
 * from one source address; beyond either the oldest is closed. */
#define ADMIT_MAX	256	/* pending handshakes, at most */
#define ADMIT_SRC_MAX	64	/* of them from one address */
#define ADMIT_LOG_BURST	5	/* refusal lines per window, then counted */
#define ADMIT_LOG_MS	10000	/* the window */
/* Queue the accepted c (a TLS handshake follows), closing the oldest
 * pending ones beyond the caps. */
void agent_admit(struct agent *a, struct conn *c);
/* c authenticated or closed: out of the queue. */
void agent_admit_done(struct agent *a, struct conn *c);
/* accept failed for want of descriptors: free one by closing the oldest
 * pending connection; 0 if one was closed, -1 if none is pending. */
int agent_admit_evict_oldest(struct agent *a, const char *why);
/* A refused connection's log line, at most ADMIT_LOG_BURST a window;
 * the rest are counted and the count logged once the window ends. */
void agent_admit_log(struct agent *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The count of lines not logged, once their window ended; ms until it
 * ends (-1: nothing counted). Then, after a flood, memory back to the
 * system. */
int agent_admit_tick(struct agent *a, int64_t now);

/* bigval.c: values of BIGVAL_MIN bytes or more. A frame below it is
 * buffered whole: at most that much per connection, from the heap. */
#define BIGVAL_MIN	(256u << 10)
/* The frame at c->in + c->inoff is a put of a large value whose head (up
 * to the value) is in: consume the head and start spooling the value; 1
 * if so, 0 if not (or not yet), -1 if c was closed. */
int agent_spool_begin(struct agent *a, struct conn *c);
/* Move the value's bytes buffered in c->in to the spool; once all are
 * in, append the record and queue the reply (c->sp is then NULL). */
void agent_spool_feed(struct agent *a, struct conn *c);
/* Queue the head of a get's reply of a large value ent, its bytes to be
 * sent from the data file; 1 if so, 0 to build the reply in memory. */
int agent_stream_value(struct agent *a, struct conn *c,
    const struct kv_entry *ent);
/* Queue the head of a frame of the given type whose payload is the prelen
 * bytes at pre followed by len bytes of the data file from off, those to
 * be sent from the file (the caller knows them written); 1 if so, 0 to
 * build the frame in memory. */
int agent_stream_range(struct agent *a, struct conn *c, uint8_t type,
    const uint8_t *pre, size_t prelen, uint64_t off, size_t len);
/* Send more of c->vs: 1 all sent, 0 the socket is full, -1 c closed. */
int agent_stream_send(struct agent *a, struct conn *c);
/* Bytes of c->vs not sent yet (0: none). */
size_t agent_stream_left(const struct conn *c);
/* Release c's spool and stream (c is closed). */
void agent_bigval_drop(struct conn *c);

/* client_req.c */
void agent_client_frame(struct agent *a, struct conn *c, uint8_t type,
    const uint8_t *p, size_t n);

/* deadletter.c: W_REQ_DEAD_LIST and W_REQ_DEAD_RESOLVE */
void agent_dead_list_reply(struct agent *a, struct conn *c, struct rbuf *r);
void agent_dead_resolve(struct agent *a, struct conn *c, struct rbuf *r);

/* compact.c */
void agent_compact_init(struct agent *a);
/* Start an automatic rewrite when due; finish one whose thread is done
 * once no snapshot's recorded prefix is being read. */
void agent_compact_tick(struct agent *a);
/* The epoll tag of a rewrite's wake-up descriptor. */
void agent_compact_event(struct agent *a);
void agent_compact_request(struct agent *a, struct conn *c);
void agent_compact_free(struct agent *a);
/* 1 while a snapshot holds a recorded prefix of the data file. */
int agent_snap_holds_prefix(const struct agent *a);

/* upload.c: W_SNAP_UPLOAD. One upload at a time, on a thread of its
 * own; its answer is sent from the loop once the thread is done. */
void agent_snap_upload(struct agent *a, struct conn *c, struct rbuf *r);
/* The epoll tag of the upload's wake-up descriptor (&a->up). */
void agent_upload_event(struct agent *a);
/* Stops and joins a running upload (shutdown). */
void agent_upload_free(struct agent *a);
/* snapshot.c: snapshot id when it has reported on connection c (the only
 * state in which its recorded prefix may be read), its recorded length
 * in *L; else NULL. */
struct snap *agent_snap_reported(struct agent *a, struct conn *c,
    const struct snapuid *id, uint64_t *L);

/* status.c */
void agent_status_reply(struct agent *a, struct conn *c);
/* A channel of this agent, either way, whose two ends come from different
 * histories: 1 with a one-line description in why, else 0. */
int agent_diverged(const struct agent *a, char *why, size_t whysz);

/* fence.c: an agent restored alone (its data file's FENCE record). */
int agent_fenced(const struct agent *a);
/* 1 with a one-line reason in why while fenced, else 0. */
int agent_fence_why(const struct agent *a, char *why, size_t whysz);
/* At start: say the agent is fenced, and why. */
void agent_fence_start(struct agent *a);
/* After a channel's check: lift the fence once every channel passed. */
void agent_fence_check(struct agent *a);

/* dropped.c: 0, or -1 with e set when st holds unacknowledged sends to a
 * peer that c gives agent self no channel to (a channel dropped from the
 * config with messages in flight). */
int agent_check_dropped(const struct cfg *c, int self,
    const struct dl_state *st, struct cs_err *e);

/* outch.c */
int agent_outch_init(struct agent *a, struct cs_err *e);
void agent_outch_free(struct agent *a);
int agent_outch_enqueue(struct agent *a, int dst, enum qkind kind, uint64_t seq,
    const struct snapuid *snap, uint64_t off, const uint8_t *payload,
    size_t len);
/* Message seq to dst, just queued, has chain after it (one of a
 * transaction's several sends to dst, which agent_outch_enqueue cannot
 * tell from the log's watermark); nothing when it waits in the file. */
void agent_outch_set_chain(struct agent *a, int dst, uint64_t seq,
    const uint8_t chain[DL_CHAIN_LEN]);
void agent_outch_pump(struct agent *a, int dst);
void agent_outch_frame(struct agent *a, struct conn *c, uint8_t type,
    const uint8_t *p, size_t n);
/* Peer d connected to us: retry a channel to it that waits for backoff. */
void agent_outch_peer_alive(struct agent *a, int d);
void agent_outch_connected(struct agent *a, struct conn *c);
void agent_outch_closed(struct agent *a, struct conn *c);
void agent_outch_timers(struct agent *a, int64_t now);
int agent_outch_timeout(struct agent *a, int64_t now);
/* Hold, or release with mode (enum release_mode); -1 out of memory. */
int agent_outch_hold(struct agent *a, int dst, int hold, int mode);
size_t agent_outch_queued(const struct agent *a, int dst);
size_t agent_outch_unacked(const struct agent *a, int dst);	/* messages */
/* Bytes of application messages sent to dst and not acknowledged. */
uint64_t agent_outch_app_bytes(const struct agent *a, int dst);
/* How long channel self->dst has had entries waiting with no ack
 * progress, in ms; 0 when nothing waits. */
uint64_t agent_outch_stalled_ms(const struct agent *a, int dst);

/* inch.c */
int agent_inch_init(struct agent *a);
void agent_inch_free(struct agent *a);
void agent_inch_hello(struct agent *a, struct conn *c, const uint8_t *p,
    size_t n);
void agent_inch_frame(struct agent *a, struct conn *c, uint8_t type,
    const uint8_t *p, size_t n);
void agent_inch_closed(struct agent *a, struct conn *c);
void agent_inch_batch_done(struct agent *a, struct conn *c);
/* 1 when the inbox holds its cap (inbox_max_bytes) or more. */
int agent_inbox_full(const struct agent *a);
/* The inbox shrank: apply what waited for room in it, in seq order. */
void agent_inch_admit(struct agent *a);
/* Delayed ACKs: send those due by now (all: every one owed, at
 * shutdown); ms until the next is due, -1 for none. */
void agent_inch_timers(struct agent *a, int64_t now, int all);
int agent_inch_timeout(struct agent *a, int64_t now);

/* snapshot.c */
/* timeout_s: the coordinator's; 0 for the default. label: the snapshot's
 * id in its repository, for messages (0: unknown). */
void agent_snap_join(struct agent *a, struct conn *c, const struct snapuid *id,
    uint32_t timeout_s, uint64_t label);
void agent_snap_start(struct agent *a, const struct snapuid *id);
void agent_snap_done(struct agent *a, const struct snapuid *id, int committed);
/* W_SNAP_FETCH on c: bytes [off, off + len) of the recorded prefix of a
 * snapshot c coordinates and that is reported, as W_SNAP_DATA. */
void agent_snap_fetch(struct agent *a, struct conn *c, const struct snapuid *id,
    uint64_t off, uint32_t len);
void agent_snap_marker(struct agent *a, int src, const struct snapuid *id,
    uint64_t s);
/* A message seq from src was applied (its chmsg bytes p[0, n)): recorded
 * in every snapshot whose window on src->self holds it. */
int agent_snap_applied(struct agent *a, int src, uint64_t seq, const uint8_t *p,
    size_t n);
/* Messages from src that arrived and wait in its hold-back ring: those
 * next in seq order recorded as agent_snap_applied does (an arrival is
 * what closes a channel's recording, applied or not). -1 out of memory. */
int agent_snap_arrived(struct agent *a, int src);
void agent_snap_conn_closed(struct agent *a, struct conn *c);
void agent_snap_tick(struct agent *a);
/* Forget snapshots past their deadline; ms until the next, or -1. */
int agent_snap_timeout(struct agent *a, int64_t now);
/* W_SNAP_ALIVE on c: the coordinator of snapshot id goes on; its
 * deadline counts from now. No reply; ignored for a snapshot c does not
 * drive (one already forgotten). */
void agent_snap_alive(struct agent *a, struct conn *c,
    const struct snapuid *id);
void agent_snap_free(struct agent *a);
const char *agent_snap_phase_name(enum snap_phase p);	/* "recording" */

/* sdnotify.c: notifications to systemd, when it asked for them. */
void agent_sd_init(struct agent *a);
/* Send state (e.g. "READY=1"); nothing when systemd did not ask. */
void agent_sd_notify(struct agent *a, const char *state);
/* Ping the watchdog when due; ms until the next ping, -1 for none. */
int agent_sd_watchdog(struct agent *a, int64_t now);

/* metrics.c: GET /metrics (Prometheus text format) on the agent's
 * metrics_addr, served from the event loop. */
int agent_metrics_open(struct agent *a, struct cs_err *e);
/* 1 if tag is one of the metrics sockets' epoll tags (then handled). */
int agent_metrics_event(struct agent *a, void *tag, uint32_t ev);
/* Close scrapers idle past their deadline; ms until the next, or -1. */
int agent_metrics_timeout(struct agent *a, int64_t now);
void agent_metrics_close(struct agent *a);

#endif
