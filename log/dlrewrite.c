/* dlrewrite.c - compaction of a live data file (see dlrewrite.h). */
/*
 * Invariants:
 * - The thread reads only the old file's prefix [0, L), which never
 *   changes, and writes only the new file; it shares no memory with the
 *   caller but rw's own fields, and the caller reads those only after
 *   dl_rewrite_done() (an acquire of the thread's release).
 * - The new file is renamed over the data file only once it is whole:
 *   [base | old [L, end)], replayed without error and fdatasync'ed. Until
 *   then the data file is the old one, untouched.
 * - rw->st, sha and chunks are the replay of the new file's [0, len).
 */
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chunkhash.h"
#include "dlrewrite.h"
#include "../lib/fsutil.h"
#include "../crypto/sha.h"
#include "../lib/util.h"

/* The base is written through a buffer of about this size. */
#define RW_FLUSH (1u << 20)
/* The tail is copied in pieces of this size. */
#define RW_COPY (1u << 20)
/* Pacing of the thread (pace_step): after each RW_PACE bytes read or
 * written, it sleeps RW_PACE_NS if the agent appended to the old file
 * meanwhile; and it starts the writeback of each RW_SYNC bytes of the new
 * file, waiting for the piece before. */
#define RW_PACE (4u << 20)
#define RW_PACE_NS 4000000L
#define RW_SYNC (8u << 20)
/* Request ids in one REQS record (at most 4 + 4096 * 48 bytes). */
#define RW_REQS 4096u

/* The thread's pacing (pace_step): bytes since the last check, the old
 * file's size then. */
struct pace {
	int old_fd;
	uint64_t since;
	off_t size;
	atomic_int cancel;	/* set by dl_rewrite_abort: stop reading */
};

struct dl_rewrite {
	char path[PATH_MAX];	/* the data file */
	char tmp[PATH_MAX];	/* the new file until the rename */
	int old_fd;		/* the data file (dl's descriptor, borrowed) */
	int fd;			/* the new file, locked */
	int wake;		/* eventfd, written when the thread ends */
	uint64_t L;		/* prefix rewritten */
	uint64_t gen;		/* the new file's generation */
	uint64_t len;		/* new file's length so far */
	struct dl_state st;	/* replay of the new file's [0, len) */
	struct sha_ctx *sha;
	struct chunkhash *chunks;
	struct pace pace;	/* the thread's, but cancel */
	pthread_t th;
	int started;		/* th is running or joinable */
	atomic_int done;	/* the thread has ended */
	int rc;			/* the thread's result */
	struct cs_err err;	/* its error */
};

static void
fault_kill(const char *step)
{
	char v[32];
	const char *s = cs_fault_value("compact-kill", v, sizeof(v));

	if (s != NULL && strcmp(s, step) == 0)
		raise(SIGKILL);
}

/* --- pacing --------------------------------------------------------------- */

/* The thread yields to the agent's requests beyond its scheduling class
 * (lower_priority), in the way of a vacuum's cost delay: on a machine
 * with few cores every CPU cycle and every byte of memory bandwidth it
 * takes is one the requests do not get, whatever its priority, and on an
 * idle CPU nothing preempts it. So after each RW_PACE bytes read or
 * written it sleeps RW_PACE_NS if the agent appended to the data file
 * since its last check (its size grew: requests are being served), and
 * goes on at once otherwise. The sleeps are bounded per byte: under any
 * load the rewrite ends, at most about RW_PACE_NS per RW_PACE bytes
 * later than at full speed (4 ms per 4 MiB: about 1 s per GiB). */
static void
pace_step(struct pace *p, size_t n)
{
	static const struct timespec ts = { 0, RW_PACE_NS };
	struct stat sb;

	p->since += n;
	if (p->since < RW_PACE)
		return;
	p->since = 0;
	if (fstat(p->old_fd, &sb) == -1 || sb.st_size == p->size)
		return;
	p->size = sb.st_size;
	(void)nanosleep(&ts, NULL);
}

/* dl_read_fn of the thread's replay of the old prefix: pread, paced;
 * once the agent stops (dl_rewrite_abort), an error, so that its stop
 * does not wait for a rewrite it throws away. */
static int
paced_read(void *ctx, uint64_t off, size_t n, uint8_t *dst)
{
	struct pace *p = ctx;

	if (atomic_load_explicit(&p->cancel, memory_order_relaxed)) {
		errno = ECANCELED;
		return -1;
	}
	pace_step(p, n);
	return fs_pread_all(p->old_fd, dst, n, (off_t)off);
}

/* --- the base section ----------------------------------------------------- */

struct out {
	int fd;
	const char *what;
	struct wbuf b;
	uint64_t off;		/* bytes of the file written */
	uint64_t synced;	/* writeback started up to here (RW_SYNC) */
	struct pace *pace;	/* NULL: not paced */
};

/* n bytes were written at o->off: account them (o->off), pace, and once
 * RW_SYNC bytes are written since the last time, start their writeback
 * and wait for that of everything before them, so that the final
 * fdatasync finds little to write and the new file's pages reach the disk
 * in a stream, not in a burst that the requests' own syncs would queue
 * behind. Only a hint: an error is seen by that fdatasync. */
static void
out_wrote(struct out *o, size_t n)
{
	o->off += n;
	if (o->pace == NULL)
		return;
	pace_step(o->pace, n);
	if (o->off - o->synced < RW_SYNC)
		return;
	(void)sync_file_range(o->fd, (off64_t)o->synced,
	    (off64_t)(o->off - o->synced), SYNC_FILE_RANGE_WRITE);
	if (o->synced > 0)
		(void)sync_file_range(o->fd, 0, (off64_t)o->synced,
		    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
		    SYNC_FILE_RANGE_WAIT_AFTER);
	o->synced = o->off;
}

static int
out_flush(struct out *o, struct cs_err *e)
{
	size_t n = o->b.len;

	if (o->b.oom)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if (n > 0 && fs_write_all(o->fd, o->b.data, n) == -1)
		return cs_errno(e, "write %s", o->what);
	wbuf_reset(&o->b);
	out_wrote(o, n);
	return 0;
}

static int
out_rec(struct out *o, const struct dl_record *r, struct cs_err *e)
{
	dl_encode(&o->b, r);
	return o->b.len >= RW_FLUSH ? out_flush(o, e) : 0;
}

/* The sends kept for peer (contiguous, ending at its sent seq). */
static uint64_t
kept_for(const struct dl_state *st, const char *peer)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < st->nsends; i++)
		n += strcmp(st->sends[i].peer, peer) == 0;
	return n;
}

/* A watermark with the channel's history chain at it (NULL: unknown). */
static int
out_wm(struct out *o, int kind, const char *peer, uint64_t seq,
    const uint8_t *chain, struct cs_err *e)
{
	struct dl_record r;

	if (seq == 0)
		return 0;
	memset(&r, 0, sizeof(r));
	r.type = DL_WM;
	r.wm_kind = (uint8_t)kind;
	r.peer = peer;
	r.seq = seq;
	r.chain = chain;
	return out_rec(o, &r, e);
}

static const uint8_t *
chain_of(const struct wm *w)
{
	return w->chain_known ? w->chain : NULL;
}

/* The chain at the sent seq before peer's kept sends: the sent chain when
 * none is kept, else the acknowledged one (the kept sends follow the
 * acknowledged seq without a gap). */
static const uint8_t *
base_sent_chain(const struct dl_state *st, const struct wm *sent,
    uint64_t kept)
{
	size_t i;

	if (kept == 0)
		return chain_of(sent);
	for (i = 0; i < st->acked.n; i++)
		if (strcmp(st->acked.v[i].peer, sent->peer) == 0)
			return st->acked.v[i].seq == sent->seq - kept ?
			    chain_of(&st->acked.v[i]) : NULL;
	return NULL;
}

/* The request ids the state remembers, oldest first, RW_REQS a record,
 * so that a retry after the compaction is still answered once. */
static int
out_reqs(struct out *o, const struct dl_state *st, struct cs_err *e)
{
	size_t i, n;

	for (i = 0; i < st->reqs.n; i += n) {
		n = st->reqs.n - i < RW_REQS ? st->reqs.n - i : RW_REQS;
		dl_encode_reqs(&o->b, &st->reqs, i, n);
		if (o->b.len >= RW_FLUSH && out_flush(o, e) == -1)
			return -1;
	}
	return 0;
}

/* GEN, then the watermarks: sent as of before the kept sends, acked,
 * applied; then every dead letter; then the kept sends, which bring sent
 * to its value; then the fence, if the file has one. */
static int
out_marks(struct out *o, const struct dl_state *st, uint64_t gen,
    uint64_t prev_size, struct cs_err *e)
{
	uint8_t id[DL_GEN_ID_LEN];
	struct dl_record r;
	const struct wm *w;
	uint64_t k;
	size_t i;

	if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id))
		return cs_errno(e, "getrandom");
	memset(&r, 0, sizeof(r));
	r.type = DL_GEN;
	r.seq = gen;
	r.gen_id = id;
	r.gen_prev = prev_size;
	r.gen_time = (uint64_t)time(NULL);
	if (out_rec(o, &r, e) == -1)
		return -1;
	for (i = 0; i < st->sent.n; i++) {
		w = &st->sent.v[i];
		k = kept_for(st, w->peer);
		if (out_wm(o, DL_WM_SENT, w->peer, w->seq - k,
		    base_sent_chain(st, w, k), e) == -1)
			return -1;
	}
	for (i = 0; i < st->acked.n; i++)
		if (out_wm(o, DL_WM_ACKED, st->acked.v[i].peer,
		    st->acked.v[i].seq, chain_of(&st->acked.v[i]), e) == -1)
			return -1;
	for (i = 0; i < st->applied.n; i++)
		if (out_wm(o, DL_WM_APPLIED, st->applied.v[i].peer,
		    st->applied.v[i].seq, chain_of(&st->applied.v[i]),
		    e) == -1)
			return -1;
	for (i = 0; i < st->ndead; i++) {
		memset(&r, 0, sizeof(r));
		r.type = DL_LETTER;
		r.peer = st->dead[i].peer;
		r.seq = st->dead[i].seq;
		r.code = (uint8_t)st->dead[i].reason;
		r.how = (uint8_t)st->dead[i].resolved;
		r.amount = st->dead[i].amount;
		r.key = st->dead[i].key;
		r.klen = st->dead[i].klen;
		r.from = st->dead[i].from;
		r.flen = st->dead[i].flen;
		r.sseq = st->dead[i].refund_seq;
		if (out_rec(o, &r, e) == -1)
			return -1;
	}
	for (i = 0; i < st->nsends; i++) {
		memset(&r, 0, sizeof(r));
		r.type = DL_KEPT;
		r.peer = st->sends[i].peer;
		r.seq = st->sends[i].seq;
		r.msg = st->sends[i].msg;
		r.msglen = st->sends[i].len;
		r.chain = st->sends[i].chain_known ? st->sends[i].chain : NULL;
		if (out_rec(o, &r, e) == -1)
			return -1;
	}
	for (i = 0; i < st->ninbox; i++) {
		memset(&r, 0, sizeof(r));
		r.type = DL_HELD;
		r.peer = st->inbox[i].peer;
		r.seq = st->inbox[i].seq;
		r.msg = st->inbox[i].msg;
		r.msglen = st->inbox[i].len;
		if (out_rec(o, &r, e) == -1)
			return -1;
	}
	if (out_reqs(o, st, e) == -1)
		return -1;
	/* A fence outlives the rewrite (it closes the base section). */
	if (st->fenced) {
		memset(&r, 0, sizeof(r));
		r.type = DL_FENCE;
		r.code = 1;
		r.seq = st->fence_snap;
		if (out_rec(o, &r, e) == -1)
			return -1;
	}
	return 0;
}

/* A PUT of a value of at least RW_COPY bytes held by reference, at voff
 * in src_fd: its head (the checksum not known yet), then the value copied
 * through a buffer of RW_COPY bytes while its checksum is computed, then
 * the checksum written into the head. Never more than RW_COPY bytes of it
 * in memory. 0 / -1. */
static int
out_large_value(struct out *o, const struct dl_record *r, int src_fd,
    const char *src, uint64_t voff, struct cs_err *e)
{
	uint8_t *buf = NULL, crc[4];
	uint64_t head_off, done = 0;
	uint32_t sum;
	size_t n;
	int rc = -1;

	if (out_flush(o, e) == -1)
		goto out;
	head_off = o->off;
	dl_encode_put_head(&o->b, r);
	if (o->b.oom) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	sum = buf_le32_get(o->b.data + 4);
	if (out_flush(o, e) == -1)
		goto out;
	if ((buf = malloc(RW_COPY)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	while (done < r->vlen) {
		n = r->vlen - done < RW_COPY ? (size_t)(r->vlen - done) :
		    RW_COPY;
		if (fs_pread_all(src_fd, buf, n, (off_t)(voff + done)) == -1) {
			cs_errno(e, "read %s", src);
			goto out;
		}
		sum = dl_rec_crc_more(sum, buf, n);
		if (fs_write_all(o->fd, buf, n) == -1) {
			cs_errno(e, "write %s", o->what);
			goto out;
		}
		done += n;
		out_wrote(o, n);
	}
	buf_le32_put(crc, sum);
	if (pwrite_all(o->fd, crc, sizeof(crc), (off_t)(head_off + 4)) == -1) {
		cs_errno(e, "write %s", o->what);
		goto out;
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

/* The key's version when the PUT just written does not give it (it
 * starts the key at 1): a KVER record. */
static int
out_version(struct out *o, const struct kv_entry *ent, struct cs_err *e)
{
	struct dl_record r;

	if (ent->ver <= 1)
		return 0;
	memset(&r, 0, sizeof(r));
	r.type = DL_KVER;
	r.key = ent->key;
	r.klen = ent->klen;
	r.seq = ent->ver;
	return out_rec(o, &r, e);
}

/* One PUT per key, in key order (and its version, out_version); a large value held by reference is
 * copied a piece at a time (out_large_value). */
static int
out_values(struct out *o, const struct dl_state *st, int src_fd,
    const char *src, struct cs_err *e)
{
	const struct kv_entry **v = NULL;
	struct dl_record r;
	uint8_t *val = NULL;
	size_t i, n = 0;
	int rc = -1;

	if (kvmap_sorted(st->kv, &v, &n) == -1) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		memset(&r, 0, sizeof(r));
		r.type = DL_PUT;
		r.key = v[i]->key;
		r.klen = v[i]->klen;
		r.val = v[i]->val;
		r.vlen = v[i]->vlen;
		if (r.val == NULL && r.vlen >= RW_COPY) {
			if (out_large_value(o, &r, src_fd, src, v[i]->voff,
			    e) == -1)
				goto out;
		} else {
			if (r.val == NULL) {
				if (dl_read_at(src_fd, src, v[i]->voff,
				    v[i]->vlen, &val, e) == -1)
					goto out;
				r.val = val;
			}
			if (out_rec(o, &r, e) == -1)
				goto out;
			free(val);
			val = NULL;
		}
		if (out_version(o, v[i], e) == -1)
			goto out;
	}
	rc = 0;
out:
	free(val);
	free(v);
	return rc;
}

/* Write st as a base section of generation gen (header, GEN, WM, LETTER,
 * KEPT, HELD, REQS, PUTs) to fd from offset 0; values by reference are
 * read from src_fd (named src for messages). *len: bytes written. 0 /
 * -1. */
static int
dl_write_base(int fd, const char *what, const struct dl_state *st,
    int src_fd, const char *src, uint64_t gen, uint64_t prev_size,
    struct pace *pace, uint64_t *len, struct cs_err *e)
{
	uint8_t hdr[DL_HEADER_LEN];
	struct out o;
	int rc = -1;

	memset(&o, 0, sizeof(o));
	o.fd = fd;
	o.what = what;
	o.pace = pace;
	wbuf_init(&o.b);
	dl_header(hdr);
	wbuf_put_raw(&o.b, hdr, sizeof(hdr));
	if (out_marks(&o, st, gen, prev_size, e) == -1 ||
	    out_values(&o, st, src_fd, src, e) == -1 ||
	    out_flush(&o, e) == -1)
		goto out;
	*len = o.off;
	rc = 0;
out:
	wbuf_free(&o.b);
	return rc;
}

/* A channel message's usual length (chmsg.h: op, key, amount, id). */
#define LIVE_MSG_LEN 40

/* Record sizes as dl_encode writes them (header, type byte, fields), each
 * watermark and kept send counted with its chain. */
#define REC(n) ((uint64_t)DL_REC_HDR_LEN + 1 + (n))
#define STR(s) (4 + (uint64_t)strlen(s))

uint64_t
dl_live_size(const struct dl_state *st)
{
	uint64_t n = DL_HEADER_LEN + REC(8 + DL_GEN_ID_LEN + 8 + 8);
	size_t i;

	for (i = 0; i < st->sent.n; i++)
		n += REC(1 + STR(st->sent.v[i].peer) + 8 + DL_CHAIN_LEN);
	for (i = 0; i < st->acked.n; i++)
		n += REC(1 + STR(st->acked.v[i].peer) + 8 + DL_CHAIN_LEN);
	for (i = 0; i < st->applied.n; i++)
		n += REC(1 + STR(st->applied.v[i].peer) + 8 + DL_CHAIN_LEN);
	for (i = 0; i < st->nsends; i++)
		n += REC(STR(st->sends[i].peer) + 8 + 4 + st->sends[i].len +
		    DL_CHAIN_LEN);
	/* A live file keeps its unacknowledged sends on disk only: count
	 * them at a typical message's size. */
	for (i = 0; st->no_sends && i < st->sent.n; i++)
		n += (st->sent.v[i].seq - dl_wm_get(&st->acked,
		    st->sent.v[i].peer)) * REC(STR(st->sent.v[i].peer) + 8 +
		    4 + LIVE_MSG_LEN + DL_CHAIN_LEN);
	for (i = 0; i < st->ninbox; i++)
		n += REC(STR(st->inbox[i].peer) + 8 + 4 + st->inbox[i].len);
	for (i = 0; i < st->ndead; i++)
		n += REC(STR(st->dead[i].peer) + 8 + 1 + 1 + 8 + 4 +
		    st->dead[i].klen + 4 + st->dead[i].flen + 8);
	/* Each put record is REC(4 + klen + 4 + vlen): from the map's count
	 * and its running sum of lengths, with no pass over its entries
	 * (the agent asks at every doubling of its file, in its loop). */
	if (st->kv != NULL)
		n += kvmap_count(st->kv) * REC(4 + 4) + kvmap_bytes(st->kv);
	/* Request ids: REQS records, at about 40 bytes an entry. */
	n += st->reqs.n * (REQ_ID_LEN + 8 + 4 + 12);
	return n;
}

/* --- the thread ------------------------------------------------------------ */

static void
thread_end(struct dl_rewrite *rw, int rc)
{
	uint64_t one = 1;

	/* Test hook: compact-slow:MS holds the end of the rewrite. */
	cs_sleep_ms(cs_fault_ms("compact-slow", 60000));
	rw->rc = rc;
	atomic_store_explicit(&rw->done, 1, memory_order_release);
	(void)write(rw->wake, &one, sizeof(one));
}

/* Linux's ioprio_set(2) has no libc wrapper; these are its ABI values. */
#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_CLASS_BE 2
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_BE_LOWEST 7

/* The rewrite is background work: the thread yields the CPU and the disk
 * to the agent's requests and to every other process on the machine.
 * SCHED_IDLE, not only nice 19: an agent runs in a session (and so an
 * autogroup) of its own, where a nice value only weighs the thread
 * against the agent's own loop, while the loop sleeps in epoll the
 * autogroup's whole share went to the rewrite, against the clients and
 * the other agents; a SCHED_IDLE thread is preempted by any other
 * thread's wakeup on its CPU, and that CPU counts as idle when the
 * scheduler places a waking thread. It still runs (at the lowest
 * weight), so it ends under sustained load. Its I/O is best-effort at
 * the lowest level, not the idle class: the switch waits for its
 * writes. Each step is only a hint, per thread; a failure (a kernel
 * without SCHED_IDLE) falls back to nice 19 and changes nothing else. */
static void
lower_priority(void)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	struct sched_param sp = { .sched_priority = 0 };

	(void)pthread_setname_np(pthread_self(), "cs-compact");
	(void)setpriority(PRIO_PROCESS, (id_t)tid, 19);
	(void)sched_setscheduler(tid, SCHED_IDLE, &sp);
	(void)syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, (int)tid,
	    IOPRIO_CLASS_BE << IOPRIO_CLASS_SHIFT | IOPRIO_BE_LOWEST);
}

static void *
thread_main(void *arg)
{
	struct dl_rewrite *rw = arg;
	struct dl_state old;
	int rc = -1;

	lower_priority();
	if (dl_state_init(&old, 0) == -1) {
		cs_errc(&rw->err, CS_E_NOMEM, "out of memory");
		goto out;
	}
	old.by_ref = 1;
	old.track_reqs = 1;	/* carried over (REQS) */
	rw->pace.old_fd = rw->old_fd;
	rw->pace.size = (off_t)rw->L;
	if (dl_replay_read(rw->L, rw->path, paced_read, NULL, NULL, &rw->pace,
	    &old, NULL, &rw->err) == -1 ||
	    dl_write_base(rw->fd, rw->tmp, &old, rw->old_fd, rw->path,
	    old.gen + 1, rw->L, &rw->pace, &rw->len, &rw->err) == -1)
		goto out;
	if (fdatasync(rw->fd) == -1) {
		cs_errno(&rw->err, "fdatasync %s", rw->tmp);
		goto out;
	}
	rw->gen = old.gen + 1;
	/* What the switch takes over, and a check of what was written. */
	if (dl_replay_fd(rw->fd, 0, rw->len, rw->tmp, &rw->st, rw->sha,
	    rw->chunks, &rw->err) == -1)
		goto out;
	if (kvmap_count(rw->st.kv) != kvmap_count(old.kv) ||
	    rw->st.ndead != old.ndead || rw->st.nopen != old.nopen ||
	    rw->st.sent.n != old.sent.n || rw->st.acked.n != old.acked.n ||
	    rw->st.applied.n != old.applied.n ||
	    rw->st.ninbox != old.ninbox ||
	    rw->st.reqs.n != old.reqs.n) {
		cs_errf(&rw->err, "%s: the rewritten state differs from the "
		    "old one", rw->tmp);
		goto out;
	}
	rc = 0;
out:
	dl_state_free(&old);
	thread_end(rw, rc);
	return NULL;
}

/* --- start, finish, abort ------------------------------------------------- */

static void
rw_free(struct dl_rewrite *rw)
{
	if (rw == NULL)
		return;
	if (rw->fd != -1) {
		close(rw->fd);
		(void)unlink(rw->tmp);
	}
	if (rw->wake != -1)
		close(rw->wake);
	dl_state_free(&rw->st);
	sha_free(rw->sha);
	chunkhash_free(rw->chunks);
	free(rw);
}

int
dl_rewrite_start(struct datalog *dl, struct dl_rewrite **out,
    struct cs_err *e)
{
	struct dl_rewrite *rw;
	const char *path = datalog_path(dl);
	int rc = -1;

	*out = NULL;
	if ((rw = calloc(1, sizeof(*rw))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	rw->fd = rw->wake = -1;
	if (snprintf(rw->path, sizeof(rw->path), "%s", path) >=
	    (int)sizeof(rw->path) || snprintf(rw->tmp, sizeof(rw->tmp),
	    "%s%s", path, DL_REWRITE_SUFFIX) >= (int)sizeof(rw->tmp)) {
		cs_errf(e, "%s: path too long", path);
		goto out;
	}
	if (dl_state_init(&rw->st, 0) == -1 ||
	    (rw->sha = sha_new()) == NULL ||
	    (rw->chunks = chunkhash_new(chunk_size_default())) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	rw->st.by_ref = 1;
	rw->st.no_sends = 1;	/* as a live data file's (datalog_open) */
	rw->st.track_reqs = 1;
	/* The prefix the thread reads must be in the file. */
	if (datalog_flush(dl, e) == -1)
		goto out;
	rw->L = datalog_end(dl);
	rw->old_fd = datalog_fd(dl);
	(void)unlink(rw->tmp);
	rw->fd = open(rw->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
	if (rw->fd == -1) {
		cs_errno(e, "create %s", rw->tmp);
		goto out;
	}
	if (flock(rw->fd, LOCK_EX | LOCK_NB) == -1) {
		cs_errno(e, "lock %s", rw->tmp);
		goto out;
	}
	if ((rw->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1) {
		cs_errno(e, "eventfd");
		goto out;
	}
	if (pthread_create(&rw->th, NULL, thread_main, rw) != 0) {
		cs_errf(e, "cannot start the compaction thread");
		goto out;
	}
	rw->started = 1;
	*out = rw;
	rw = NULL;
	rc = 0;
out:
	rw_free(rw);
	return rc;
}

int
dl_rewrite_wait_fd(const struct dl_rewrite *rw)
{
	return rw->wake;
}

int
dl_rewrite_done(const struct dl_rewrite *rw)
{
	return atomic_load_explicit(&rw->done, memory_order_acquire);
}

void
dl_rewrite_abort(struct dl_rewrite *rw)
{
	if (rw == NULL)
		return;
	if (rw->started) {
		atomic_store_explicit(&rw->pace.cancel, 1,
		    memory_order_relaxed);
		pthread_join(rw->th, NULL);
	}
	rw_free(rw);
}

/* Copy the old file's [L, end) behind the base and replay it there. */
static int
copy_tail(struct dl_rewrite *rw, uint64_t end, struct cs_err *e)
{
	uint8_t *buf;
	uint64_t off = rw->L, start = rw->len;
	size_t n;
	int rc = -1;

	if ((buf = malloc(RW_COPY)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	while (off < end) {
		n = end - off < RW_COPY ? (size_t)(end - off) : RW_COPY;
		if (fs_pread_all(rw->old_fd, buf, n, (off_t)off) == -1) {
			cs_errno(e, "read %s", rw->path);
			goto out;
		}
		if (pwrite(rw->fd, buf, n, (off_t)(rw->len + off - rw->L)) !=
		    (ssize_t)n) {
			cs_errno(e, "write %s", rw->tmp);
			goto out;
		}
		off += n;
	}
	rw->len += end - rw->L;
	if (dl_replay_fd(rw->fd, start, rw->len, rw->tmp, &rw->st, rw->sha,
	    rw->chunks, e) == -1)
		goto out;
	rc = 0;
out:
	free(buf);
	return rc;
}

int
dl_rewrite_finish(struct datalog *dl, struct dl_rewrite *rw,
    struct dl_rewrite_result *res, struct cs_err *e)
{
	char dir[PATH_MAX];
	uint64_t end;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	pthread_join(rw->th, NULL);
	rw->started = 0;
	if (rw->rc == -1) {
		*e = rw->err;
		goto out;
	}
	res->base = rw->len;
	if (datalog_flush(dl, e) == -1)
		goto out;
	end = datalog_end(dl);
	fault_kill("base");
	if (copy_tail(rw, end, e) == -1)
		goto out;
	if (fdatasync(rw->fd) == -1) {
		cs_errno(e, "fdatasync %s", rw->tmp);
		goto out;
	}
	fault_kill("tail");
	if (rename(rw->tmp, rw->path) == -1) {
		cs_errno(e, "rename %s", rw->tmp);
		goto out;
	}
	/* The data file is the new one now: whatever happens next, dl must
	 * not write to the old one again. */
	datalog_adopt(dl, rw->fd, &rw->st, rw->sha, rw->chunks, rw->len);
	rw->fd = -1;
	rw->sha = NULL;
	rw->chunks = NULL;
	fault_kill("rename");
	fs_path_dirname(rw->path, dir, sizeof(dir));
	if (fs_fsync_dir(dir, e) == -1) {
		datalog_fail(dl);
		goto out;
	}
	fault_kill("dir");
	res->before = end;
	res->after = rw->len;
	res->gen = rw->gen;
	rc = 0;
out:
	rw_free(rw);
	return rc;
}
