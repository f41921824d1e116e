/* verify.c - the integrity half of verify: the manifest database, the
 * recorded files' chunks, the messages' hashes and the snapshot's digest. The consistency
 * of the cut is in store_verify_cut.c. Every problem is one line; nothing in a
 * tampered repository may crash it. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_int.h"
#include "../lib/bigbuf.h"
#include "../log/crcblk.h"
#include "../log/datalog.h"
#include "../lib/fsutil.h"
#include "../lib/util.h"

void
store_vproblem(struct vrun *v, const char *fmt, ...)
{
	char msg[700], line[800];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "snapshot %llu: %s",
	    (unsigned long long)v->id, msg);
	v->nproblems++;
	if (v->fn != NULL)
		v->fn(v->ctx, line);
}

/* PRAGMA integrity_check and foreign_key_check over the whole file. */
void
store_verify_db(struct vrun *v)
{
	sqlite3_stmt *s = NULL;
	int step;

	if (sqlite3_prepare_v2(v->st->db, "PRAGMA integrity_check", -1, &s,
	    NULL) != SQLITE_OK) {
		store_vproblem(v, "manifest integrity_check failed: %s",
		    sqlite3_errmsg(v->st->db));
		goto fk;
	}
	while ((step = sqlite3_step(s)) == SQLITE_ROW)
		if (strcmp(store_col_text(s, 0), "ok") != 0)
			store_vproblem(v, "manifest integrity_check: %s",
			    store_col_text(s, 0));
	if (step != SQLITE_DONE)
		store_vproblem(v, "manifest integrity_check failed: %s",
		    sqlite3_errmsg(v->st->db));
fk:
	sqlite3_finalize(s);
	s = NULL;
	if (sqlite3_prepare_v2(v->st->db, "PRAGMA foreign_key_check", -1, &s,
	    NULL) != SQLITE_OK) {
		store_vproblem(v, "manifest foreign_key_check failed: %s",
		    sqlite3_errmsg(v->st->db));
		goto out;
	}
	while ((step = sqlite3_step(s)) == SQLITE_ROW)
		store_vproblem(v,
		    "manifest: row %lld of table %s has no matching "
		    "row in table %s", (long long)sqlite3_column_int64(s, 1),
		    store_col_text(s, 0), store_col_text(s, 2));
	if (step != SQLITE_DONE)
		store_vproblem(v, "manifest foreign_key_check failed: %s",
		    sqlite3_errmsg(v->st->db));
out:
	sqlite3_finalize(s);
}

/* Check agent row i's chunk rows; its chunks are read later, in the
 * pool, one at a time into a worker's buffer: neither verify nor restore
 * keeps a whole file in memory. */
static void
open_file(struct vrun *v, size_t i)
{
	const struct row_agent *a = &v->rows.agents[i];
	struct fcheck *f = &v->fc[i];
	struct cs_err e;
	uint64_t off = 0;
	size_t k;

	if (!a->ok) {
		store_vproblem(v,
		    "agent %.64s: malformed manifest row (name, size "
		    "or sha256)", a->name);
		return;
	}
	if (a->nchunks == 0) {
		store_vproblem(v,
		    "agent %s: no chunks recorded for its %llu-byte "
		    "file", a->name, (unsigned long long)a->size);
		return;
	}
	if (store_need_key(v->st, &e) < 0) {
		store_vproblem(v, "agent %s: %s", a->name, e.msg);
		return;
	}
	if (a->size > SIZE_MAX / 2) {
		store_vproblem(v,
		    "agent %s: recorded file of %llu bytes is too "
		    "large", a->name, (unsigned long long)a->size);
		return;
	}
	for (k = 0; k < a->nchunks; k++) {
		if (!store_fview_row_ok(a, k, off)) {
			store_vproblem(v,
			    "agent %s: chunk %llu (%.*s): malformed chunk "
			    "row (idx, offset, size or sha256)", a->name,
			    (unsigned long long)a->chunks[k].idx,
			    SHORT_SHA(a->chunks[k].sha));
			return;
		}
		off += a->chunks[k].size;
	}
	if (off != a->size) {
		store_vproblem(v,
		    "agent %s: chunks cover %llu bytes, expected %llu",
		    a->name, (unsigned long long)off,
		    (unsigned long long)a->size);
		return;
	}
	if ((f->bad = calloc(a->nchunks, 1)) == NULL ||
	    (f->lerr = calloc(a->nchunks, sizeof(*f->lerr))) == NULL) {
		store_vproblem(v, "agent %s: out of memory", a->name);
		return;
	}
	f->mapped = 1;
}

/* A write to the restore's temp file failed: keep the first error. */
static void
sink_failed(struct fcheck *f, const char *what)
{
	if (atomic_exchange(&f->wfailed, 1) == 0)
		snprintf(f->werr, sizeof(f->werr), "write %s: %s",
		    f->sinkname, what);
}

/* Write a verified chunk to the restore's temp file. A whole number of
 * pages at a page offset from a page-aligned buffer (every chunk but a
 * file's last: chunks are a power of two of at least a page, and the
 * chunk buffers page-aligned) goes through the O_DIRECT descriptor,
 * straight from the buffer it was checked in: no copy into the page
 * cache, no dirty pages left to writeback, and the replay reads the
 * chunks from memory, not from the temp file. The rest, and a direct
 * write the filesystem refuses (EINVAL), is written buffered with its
 * write-back started at once (sync_file_range, which does not wait for
 * it), so the final fsync has little left to do. 0, or -1 with errno
 * set. */
static int
sink_write(struct fcheck *f, const uint8_t *p, size_t len, uint64_t off)
{
	const size_t pg = 4096;

	if (f->dsink >= 0 && len % pg == 0 && off % pg == 0 &&
	    (uintptr_t)p % pg == 0) {
		if (pwrite_all(f->dsink, p, len, (off_t)off) == 0)
			return 0;
		if (errno != EINVAL)
			return -1;
	}
	if (pwrite_all(f->sink, p, len, (off_t)off) < 0)
		return -1;
	(void)sync_file_range(f->sink, (off_t)off, (off_t)len,
	    SYNC_FILE_RANGE_WRITE);
	return 0;
}

/* Test hook: CUTSNAP_FAULT=restore-kill-after-chunks:N makes restore
 * exit with status 99 once N chunks were written to its temp files, so
 * the tests can prove that a restore killed in the middle of its one
 * pass leaves every data file as it was. */
static void
fault_after_chunks(struct vrun *v)
{
	char n[32];

	if (cs_fault_value("restore-kill-after-chunks", n, sizeof(n)) != NULL &&
	    (long)atomic_fetch_add(&v->nwritten, 1) + 1 >= atol(n))
		_exit(99);
}

/* Under restore: chunk c of the file f, its bytes at p just hashed to
 * its name, written to the temp file at its offset from the buffer it
 * was read (and decoded) into, by the thread that checked it. */
static void
write_chunk(struct vrun *v, struct fcheck *f, const struct row_chunk *c,
    const uint8_t *p)
{
	if (sink_write(f, p, (size_t)c->size, c->off) < 0)
		sink_failed(f, strerror(errno));
	fault_after_chunks(v);
}

/* CUTSNAP_FAULT=verify-slow-chunks:MS (tests only): every chunk check
 * of verify and restore first sleeps MS ms, so that the tests can make
 * the replay of a file meet a chunk a task is still checking. */
static void
fault_slow_chunk(void)
{
	cs_sleep_ms(cs_fault_ms("verify-slow-chunks", 1000));
}

/* Plain verify hands the chunks its tasks decode to the replay of their
 * file, so that each chunk is read and decoded once (see "handoff" in
 * docs/INTERNALS.md). Per chunk, under the file's mu: */
enum {
	HO_FREE,	/* nobody read it yet */
	HO_BUSY,	/* a task or the replay reads and checks it */
	HO_READY,	/* decoded, in held[k], for the replay to take */
	HO_TAKEN,	/* the replay has it in held[k] (NULL once passed) */
	HO_DROPPED,	/* decoded after the replay ended: not kept */
	HO_BAD		/* unreadable: the replay fails on it, as before */
};
/* How many decoded chunks a file's tasks may keep ready for its replay
 * beyond those it reads now: a task with one more waits. With the
 * chunks under the replay's window and one per worker, verify holds a
 * few chunks per file, whatever its size. */
#define HANDOFF_READY 4

/* After a chunk buffer's csz bytes: the block checksums of the chunk it
 * holds, taken with its hash (crcblk.h), for the replay's record
 * checksums (crc_at): valid only once the chunk is hashed, and only for
 * that chunk; and the worker that last wrote the buffer. */
struct ctail {
	size_t agent, chunk;
	int valid;
	int owner;
	uint32_t crc[];
};

static struct ctail *
ctail_of(const struct vrun *v, const uint8_t *buf)
{
	return (struct ctail *)(void *)(buf + v->csz);
}

/* A chunk buffer for worker w, or NULL: a spare one (those the replay
 * passed, up to VERIFY_SPARE_MAX, are kept for the next chunks), else a
 * new one (a bigbuf: page-aligned, in huge pages where the kernel gives
 * them), as large as the snapshot's largest chunk. Writing into a buffer
 * whose lines another core holds is what costs here: decompressing into
 * the buffer another worker wrote last took 2-3x the CPU (docs/
 * INTERNALS.md, performance IX and XI). So the newest spare w wrote
 * itself (still in its own cache; the replay reads little of a chunk),
 * else the oldest spare. */
static uint8_t *
buf_get(struct vrun *v, int w)
{
	void *p = NULL;
	size_t j;

	pthread_mutex_lock(&v->smu);
	if (v->nspare > 0) {
		for (j = v->nspare; j-- > 0;)
			if (ctail_of(v, v->spare[j])->owner == w)
				break;
		if (j >= v->nspare)
			j = 0;
		p = v->spare[j];
		memmove(&v->spare[j], &v->spare[j + 1],
		    (v->nspare - j - 1) * sizeof(v->spare[0]));
		v->nspare--;
	}
	pthread_mutex_unlock(&v->smu);
	if (p == NULL)
		p = bigbuf_alloc(v->bufsz);
	return p;
}

/* Keep buffer p (a chunk's, or NULL) as a spare, oldest first, or free
 * it when VERIFY_SPARE_MAX are kept. */
static void
buf_put(struct vrun *v, uint8_t *p)
{
	pthread_mutex_lock(&v->smu);
	if (p != NULL && v->nspare < VERIFY_SPARE_MAX) {
		v->spare[v->nspare++] = p;
		p = NULL;
	}
	pthread_mutex_unlock(&v->smu);
	bigbuf_free(p, v->bufsz);
}

/* Chunk k of agent i: read (and decoded, in a framed repository: on the
 * pool's threads) into worker w's buffer and checked against its
 * recorded sha256 (f->bad[k] says how it fared). Every byte of a
 * recorded file is in exactly one chunk (open_file checked the tiling),
 * and the chunk list is covered by the snapshot's digest, so this checks
 * the whole file; unlike one SHA-256 over the file, it runs on every
 * core. Progress counts each chunk once it is hashed. 0: its bytes are
 * in v->wbuf[w] (whether or not they hash to its name), or -1: they
 * could not be read. */
static int
check_chunk(struct vrun *v, size_t i, size_t k, int w)
{
	const struct row_agent *a = &v->rows.agents[i];
	const struct row_chunk *c = &a->chunks[k];
	struct fcheck *f = &v->fc[i];
	char hex[SHA_HEX_LEN];
	uint8_t sha[SHA_LEN];
	struct ctail *t;
	struct cs_err e;
	int rc;

	if (v->wbuf[w] == NULL && (v->wbuf[w] = buf_get(v, w)) == NULL) {
		f->hash_failed = 1;	/* a benign race: only ever set */
		return -1;
	}
	t = ctail_of(v, v->wbuf[w]);
	t->valid = 0;
	t->owner = w;
	fault_slow_chunk();
	rc = store_fview_read_chunk(v->st, c, v->wbuf[w], &v->bufs[w], &e);
	if (rc == -1) {
		if ((f->lerr[k] = strdup(e.msg)) == NULL)
			f->hash_failed = 1;
		f->bad[k] = 3;
		return -1;
	}
	if (rc == -2) {
		f->bad[k] = 2;	/* its object does not decode */
		store_progress_add(v->st, a->name, c->size);
		return -1;
	}
	if (crcblk_sha(v->wbuf[w], (size_t)c->size, t->crc, sha) < 0) {
		f->hash_failed = 1;
		return -1;
	}
	t->agent = i;
	t->chunk = k;
	t->valid = 1;
	store_name_hex(v->st, sha, hex);
	if (strcmp(hex, c->sha) != 0)
		f->bad[k] = 1;
	else if (f->sink >= 0 && !atomic_load(&f->wfailed))
		write_chunk(v, f, c, v->wbuf[w]);
	store_progress_add(v->st, a->name, c->size);
	return 0;
}

/* Chunk k of agent i checked by worker w for the replay of its file
 * (plain verify): a chunk the replay took or is reading is skipped; a
 * checked one is handed over, once fewer than HANDOFF_READY wait there
 * or the replay reads it now, or dropped when the replay has ended. The
 * replay never waits on a task that waits on it: a chunk it reads now
 * is always taken. */
static void
offer_chunk(struct vrun *v, size_t i, size_t k, int w)
{
	const struct row_chunk *c = &v->rows.agents[i].chunks[k];
	struct fcheck *f = &v->fc[i];
	int ok;

	pthread_mutex_lock(&f->mu);
	if (f->cstate[k] != HO_FREE) {
		pthread_mutex_unlock(&f->mu);
		return;
	}
	f->cstate[k] = HO_BUSY;
	pthread_mutex_unlock(&f->mu);
	ok = check_chunk(v, i, k, w) == 0;
	pthread_mutex_lock(&f->mu);
	while (ok && !f->rdone && c->off >= f->rneed &&
	    f->nready >= HANDOFF_READY)
		pthread_cond_wait(&f->cv, &f->mu);
	if (!ok) {
		f->cstate[k] = HO_BAD;
	} else if (f->rdone) {
		f->cstate[k] = HO_DROPPED;
	} else {
		f->held[k] = v->wbuf[w];
		v->wbuf[w] = NULL;
		f->cstate[k] = HO_READY;
		f->nready++;
	}
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* Whether restore wrote every chunk of agent row i to its temp file
 * (after the chunk pass only): then the file's bytes are there,
 * verified, to be read back. */
static int
sink_complete(const struct vrun *v, size_t i)
{
	const struct fcheck *f = &v->fc[i];
	size_t k;

	if (f->sink < 0 || atomic_load(&f->wfailed) || f->hash_failed)
		return 0;
	for (k = 0; k < v->rows.agents[i].nchunks; k++)
		if (f->bad[k] != 0)
			return 0;
	return 1;
}

/* dl_replay_read's reader of agent row i's recorded file: under restore,
 * when the temp file holds every verified chunk, the temp file read back
 * (no blob decoded twice); in plain verify, the chunks its tasks decoded
 * and handed over, or those it reads and checks itself, the few it reads
 * now held (handoff); otherwise the chunk holding each byte, read from
 * its blob when first needed, one in memory at a time. */
struct reader {
	struct vrun *v;
	size_t i;
	int fd;			/* the temp file, or -1: the blobs */
	int handoff;		/* the chunks come through fc[i].held */
	int worker;		/* the pool's worker running the replay */
	size_t lo;		/* handoff: the chunks below lo were passed */
	uint8_t *buf;		/* chunk k, if have */
	size_t cap;
	size_t k;
	int have;
	struct objbuf ob;
	/* The chunk view_at gave bytes of last, [cur_off, cur_end) at cur,
	 * or cur NULL: the replay reads most records inside one chunk, so
	 * view_at answers those without the handoff's lock and search. Only
	 * reader_at and reader_load let go of a chunk's buffer; both clear
	 * it first. */
	const uint8_t *cur;
	uint64_t cur_off, cur_end;
};

/* The index of the chunk holding byte off (the chunks tile the file in
 * order). */
static size_t
chunk_at(const struct row_agent *a, uint64_t off)
{
	size_t lo = 0, hi = a->nchunks, mid;

	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (a->chunks[mid].off <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Make chunk k the one in r->buf. 0, or -1 with errno set. */
static int
reader_load(struct reader *r, size_t k)
{
	const struct row_chunk *c = &r->v->rows.agents[r->i].chunks[k];
	struct cs_err e;
	uint8_t *p;

	if (r->have && r->k == k)
		return 0;
	r->have = 0;
	r->cur = NULL;
	if (r->cap < (size_t)c->size) {
		if ((p = realloc(r->buf, (size_t)c->size)) == NULL) {
			errno = ENOMEM;
			return -1;
		}
		r->buf = p;
		r->cap = (size_t)c->size;
	}
	if (store_fview_read_chunk(r->v->st, c, r->buf, &r->ob, &e) != 0) {
		errno = EIO;
		return -1;
	}
	r->k = k;
	r->have = 1;
	return 0;
}

/* Handoff: the replay reads from byte off to end now. The chunks wholly
 * before off are passed (the replay reads on from the start of a record
 * it already read: never before off again), their buffers spare. */
static void
reader_at(struct reader *r, uint64_t off, uint64_t end)
{
	struct fcheck *f = &r->v->fc[r->i];
	size_t k = chunk_at(&r->v->rows.agents[r->i], off);

	r->cur = NULL;
	pthread_mutex_lock(&f->mu);
	for (; r->lo < k; r->lo++)
		if (f->cstate[r->lo] == HO_TAKEN && f->held[r->lo] != NULL) {
			buf_put(r->v, f->held[r->lo]);
			f->held[r->lo] = NULL;
		}
	f->rneed = end;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* Handoff: the replay needs the bytes up to end (a record's checksum
 * from crc_at), passing nothing: its header, before them, may still be
 * read again (when the checksum does not match). */
static void
reader_need(struct reader *r, uint64_t end)
{
	struct fcheck *f = &r->v->fc[r->i];

	pthread_mutex_lock(&f->mu);
	if (end > f->rneed)
		f->rneed = end;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* Handoff, under f->mu: while chunk k is being checked by a task, the
 * replay checks a later chunk nobody took yet (the first free one after
 * k) and hands it over to itself, rather than wait: the pool's tasks
 * take the chunks in file order, just ahead of the replay, so without
 * this the replay's thread would idle while one task decodes. At most
 * HANDOFF_READY chunks wait decoded, as with the tasks. 1 if it checked
 * one (f->mu released in between), 0 if there was none to check. */
static int
reader_help(struct reader *r, size_t k)
{
	struct fcheck *f = &r->v->fc[r->i];
	size_t j, n = r->v->rows.agents[r->i].nchunks;
	int ok;

	if (f->nready >= HANDOFF_READY)
		return 0;
	for (j = k + 1; j < n && f->cstate[j] != HO_FREE; j++)
		;
	if (j >= n)
		return 0;
	f->cstate[j] = HO_BUSY;
	pthread_mutex_unlock(&f->mu);
	atomic_fetch_add(&r->v->nahead, 1);
	ok = check_chunk(r->v, r->i, j, r->worker) == 0;
	pthread_mutex_lock(&f->mu);
	if (ok) {
		f->held[j] = r->v->wbuf[r->worker];
		r->v->wbuf[r->worker] = NULL;
		f->cstate[j] = HO_READY;
		f->nready++;
	} else {
		f->cstate[j] = HO_BAD;
	}
	pthread_cond_broadcast(&f->cv);
	return 1;
}

/* Handoff: chunk k's bytes for the replay: the decoded ones a task
 * handed over, else read and checked here (for the verdict, as a task
 * would: each chunk is decoded once), or NULL with errno set. */
static const uint8_t *
reader_take(struct reader *r, size_t k)
{
	struct fcheck *f = &r->v->fc[r->i];
	int was, ok;

	pthread_mutex_lock(&f->mu);
	while (f->cstate[k] == HO_BUSY)
		if (!reader_help(r, k))
			pthread_cond_wait(&f->cv, &f->mu);
	was = f->cstate[k];
	if (was == HO_FREE) {
		f->cstate[k] = HO_BUSY;
	} else if (was == HO_READY) {
		f->cstate[k] = HO_TAKEN;
		f->nready--;
		pthread_cond_broadcast(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	switch (was) {
	case HO_READY:
		return f->held[k];
	case HO_TAKEN:
		/* Only the replay moves a chunk from HO_TAKEN; held[k] is
		 * NULL once passed (not expected): then read it again. */
		if (f->held[k] != NULL)
			return f->held[k];
		if (reader_load(r, k) < 0)
			return NULL;
		return r->buf;
	case HO_FREE:
		ok = check_chunk(r->v, r->i, k, r->worker) == 0;
		pthread_mutex_lock(&f->mu);
		if (ok) {
			f->held[k] = r->v->wbuf[r->worker];
			r->v->wbuf[r->worker] = NULL;
		}
		f->cstate[k] = ok ? HO_TAKEN : HO_BAD;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		if (ok)
			return f->held[k];
		break;
	default:
		break;
	}
	errno = EIO;
	return NULL;
}

/* Handoff: the replay of agent row i no longer reads: what a task
 * handed over and the replay did not take is freed, and the tasks still
 * to come check their chunks without keeping them. */
static void
reader_end(struct vrun *v, size_t i)
{
	struct fcheck *f = &v->fc[i];
	size_t k;

	pthread_mutex_lock(&f->mu);
	f->rdone = 1;
	f->nready = 0;
	for (k = 0; k < v->rows.agents[i].nchunks; k++)
		if (f->held[k] != NULL) {
			buf_put(v, f->held[k]);
			f->held[k] = NULL;
		}
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

static int
read_at(void *ctx, uint64_t off, size_t n, uint8_t *dst)
{
	struct reader *r = ctx;
	const struct row_agent *a = &r->v->rows.agents[r->i];
	const struct row_chunk *c;
	const uint8_t *p;
	size_t k, take;

	if (r->fd >= 0)
		return fs_pread_all(r->fd, dst, n, (off_t)off);
	if (r->handoff)
		reader_at(r, off, off + n);
	while (n > 0) {
		k = chunk_at(a, off);
		if (r->handoff)
			p = reader_take(r, k);
		else
			p = reader_load(r, k) < 0 ? NULL : r->buf;
		if (p == NULL)
			return -1;
		c = &a->chunks[k];
		take = (size_t)(c->off + c->size - off);
		if (take > n)
			take = n;
		memcpy(dst, p + (off - c->off), take);
		dst += take;
		off += take;
		n -= take;
	}
	return 0;
}

/* dl_crc_fn of the replay: the checksum of the n bytes at off, through
 * the handoff as read_at, from the block checksums of the chunks holding
 * them (taken when each was hashed, on the core that decoded it), their
 * unaligned ends read: the replay leaves most of a large record's bytes
 * where its chunk's decoder wrote them. -1 when not replaying from the
 * handoff, or a chunk cannot be read (read_at then says why). */
static int
crc_at(void *ctx, uint64_t off, size_t n, uint32_t *out)
{
	struct reader *r = ctx;
	const struct row_agent *a = &r->v->rows.agents[r->i];
	const struct row_chunk *c;
	const struct ctail *t;
	const uint8_t *p;
	uint32_t crc = 0;
	size_t k, at, take;

	if (r->fd >= 0 || !r->handoff)
		return -1;
	reader_need(r, off + n);
	while (n > 0) {
		k = chunk_at(a, off);
		if ((p = reader_take(r, k)) == NULL)
			return -1;
		c = &a->chunks[k];
		at = (size_t)(off - c->off);
		take = (size_t)(c->off + c->size - off);
		if (take > n)
			take = n;
		/* r->buf (read again here) has no block checksums. */
		t = p != r->buf ? ctail_of(r->v, p) : NULL;
		if (t != NULL && t->valid && t->agent == r->i && t->chunk == k)
			crc = crcblk_range(crc, p, (size_t)c->size, t->crc,
			    at, at + take);
		else
			crc = crcblk_bytes(crc, p + at, take);
		off += take;
		n -= take;
	}
	*out = crc;
	return 0;
}

/* dl_view_fn of the replay: the n bytes at off in place, in the buffer of
 * the chunk holding them all (through the handoff as read_at), so that
 * the replay copies nothing into its window; NULL when they span two
 * chunks, or when the chunk cannot be read (read_at then says why), or
 * when the replay reads restore's temp file. */
static const uint8_t *
view_at(void *ctx, uint64_t off, size_t n)
{
	struct reader *r = ctx;
	const struct row_agent *a = &r->v->rows.agents[r->i];
	const struct row_chunk *c;
	const uint8_t *p;
	size_t k;

	if (r->fd >= 0 || n == 0)
		return NULL;
	/* Inside the chunk of the last view: the handoff has nothing to
	 * learn (the replay's need moves within a chunk it holds). */
	if (r->cur != NULL && off >= r->cur_off && off < r->cur_end &&
	    n <= r->cur_end - off)
		return r->cur + (off - r->cur_off);
	k = chunk_at(a, off);
	c = &a->chunks[k];
	if (off < c->off || n > c->off + c->size - off)
		return NULL;
	if (r->handoff) {
		reader_at(r, off, off + n);
		p = reader_take(r, k);
	} else {
		p = reader_load(r, k) < 0 ? NULL : r->buf;
	}
	if (p == NULL)
		return NULL;
	r->cur = p;
	r->cur_off = c->off;
	r->cur_end = c->off + c->size;
	return p + (off - c->off);
}

/* Replay agent row i's recorded file into st, streamed a window at a
 * time (keeping only the values the recorded messages to it add to, and
 * the sends as from says: NULL keeps those not acknowledged yet, see
 * dl_state): from the chunks the pool's tasks check (the handoff) when
 * run as the file's task (worker >= 0), else from restore's complete
 * temp file, else from the blobs. 0, or -1 with err. */
static int
replay_into(struct vrun *v, size_t i, int worker, const struct wm_set *from,
    struct dl_state *st, char *err, size_t errsz)
{
	const struct row_agent *a = &v->rows.agents[i];
	struct fcheck *f = &v->fc[i];
	struct reader r;
	char what[128];
	struct cs_err e;
	int rc = -1;

	memset(&r, 0, sizeof(r));
	r.v = v;
	r.i = i;
	r.handoff = worker >= 0;
	r.fd = !r.handoff && sink_complete(v, i) ? f->sink : -1;
	r.worker = worker;
	if (dl_state_init(st, from != NULL) < 0) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	st->send_from = from;
	st->keep = store_keyset_has;
	st->keep_ctx = &f->ks;
	snprintf(what, sizeof(what), "recorded file of agent %s", a->name);
	if (dl_replay_read(a->size, what, read_at, view_at, crc_at, &r, st,
	    NULL, &e) < 0) {
		snprintf(err, errsz, "%s", e.msg);
		dl_state_free(st);
		goto out;
	}
	st->send_from = NULL;
	rc = 0;
out:
	free(r.buf);
	store_objbuf_free(&r.ob);
	return rc;
}

/* Replay the recorded file for the cut check and the message replay;
 * whether it may be used is decided once its chunks are checked. Its
 * sends are kept only while not acknowledged, so that memory does not
 * grow with the file's history; store_verify_resend brings back older
 * ones the cut needs. */
static void
replay_file(struct vrun *v, size_t i, int worker)
{
	struct fcheck *f = &v->fc[i];

	/* A replay that fails is store_verify_cut's problem ("unreadable"). */
	if (replay_into(v, i, worker, NULL, &f->st, f->err,
	    sizeof(f->err)) == 0)
		f->have = 1;
	reader_end(v, i);
}

int
store_verify_resend(struct vrun *v, size_t i, const struct wm_set *from)
{
	struct fcheck *f = &v->fc[i];
	struct dl_state st;

	if (replay_into(v, i, -1, from, &st, f->err,
	    sizeof(f->err)) < 0)
		return -1;
	dl_state_free(&f->st);
	f->st = st;
	return 0;
}

/* pool.c tasks of the list built by plan_tasks: the replays (the first
 * nfiletasks), then the chunks. */
static void
file_task(void *ctx, size_t t, int worker)
{
	struct vrun *v = ctx;

	replay_file(v, v->tasks[t].agent, worker);
}

static void
chunk_task(void *ctx, size_t t, int worker)
{
	struct vrun *v = ctx;
	const struct vtask *task = &v->tasks[v->nfiletasks + t];

	offer_chunk(v, task->agent, (size_t)task->chunk, worker);
}

static void
any_task(void *ctx, size_t t, int worker)
{
	struct vrun *v = ctx;

	if (t < v->nfiletasks)
		file_task(ctx, t, worker);
	else
		chunk_task(ctx, t - v->nfiletasks, worker);
}

static int
cmp_task(const void *x, const void *y)
{
	const struct vtask *a = x, *b = y;

	/* The replays first, longest first: in verify they run beside the
	 * chunks, and the longest one bounds the run. Then the chunks in
	 * file order. */
	if ((a->chunk < 0) != (b->chunk < 0))
		return a->chunk < 0 ? -1 : 1;
	if (a->chunk < 0 && a->len != b->len)
		return a->len > b->len ? -1 : 1;
	if (a->agent != b->agent)
		return a->agent < b->agent ? -1 : 1;
	return (a->chunk > b->chunk) - (a->chunk < b->chunk);
}

/* The pool's tasks: per mapped file its replay, and one task per chunk. */
static int
plan_tasks(struct vrun *v)
{
	size_t i, k, n = 0;

	for (i = 0; i < v->rows.nagents; i++)
		if (v->fc[i].mapped) {
			n += 1 + v->rows.agents[i].nchunks;
			for (k = 0; k < v->rows.agents[i].nchunks; k++)
				if (v->rows.agents[i].chunks[k].size >
				    v->bufsz)
					v->bufsz = (size_t)
					    v->rows.agents[i].chunks[k].size;
		}
	/* Each buffer ends in the block checksums of its chunk. */
	v->csz = (v->bufsz + 7) / 8 * 8;
	v->bufsz = v->csz + sizeof(struct ctail) +
	    crcblk_count(v->csz) * sizeof(uint32_t);
	if ((v->tasks = calloc(n + 1, sizeof(*v->tasks))) == NULL)
		return -1;
	for (i = 0; i < v->rows.nagents; i++) {
		const struct row_agent *a = &v->rows.agents[i];

		if (!v->fc[i].mapped)
			continue;
		v->tasks[v->ntasks++] = (struct vtask){ i, TASK_REPLAY,
		    a->size };
		v->nfiletasks++;
		for (k = 0; k < a->nchunks; k++)
			v->tasks[v->ntasks++] = (struct vtask){ i,
			    (int64_t)k, a->chunks[k].size };
	}
	qsort(v->tasks, v->ntasks, sizeof(*v->tasks), cmp_task);
	return 0;
}

static void
report_file(struct vrun *v, size_t i)
{
	const struct row_agent *a = &v->rows.agents[i];
	struct fcheck *f = &v->fc[i];
	char what[CS_ERR_MAX + 32];
	struct cs_err e;
	size_t k, nbad = 0;

	if (!f->mapped)
		return;
	if (f->hash_failed) {
		store_vproblem(v,
		    "agent %s: sha256 of the recorded file failed",
		    a->name);
		return;
	}
	for (k = 0; k < a->nchunks; k++)
		if (f->bad[k] == 3) {
			/* Not its bytes: the chunk could not be read. */
			store_vproblem(v, "agent %s: chunk %zu (%.*s): %s",
			    a->name, k, SHORT_SHA(a->chunks[k].sha),
			    f->lerr[k]);
			nbad++;
		}
	if (nbad > 0)
		return;
	for (k = 0; k < a->nchunks; k++) {
		if (!f->bad[k])
			continue;
		nbad++;
		/* Keep what was learnt: the next snapshot stores the chunk
		 * again from the live file (quarantine.c). */
		if (store_blob_quarantine(v->st, a->chunks[k].sha, &e) == 0)
			snprintf(what, sizeof(what), "moved to %.300s/quarantine/; "
			    "the next snapshot stores it again from the live "
			    "file", v->st->repo);
		else
			snprintf(what, sizeof(what), "not quarantined: %s",
			    e.msg);
		store_vproblem(v, "agent %s: chunk %zu (%.*s) %s; blob %s %s",
		    a->name, k, SHORT_SHA(a->chunks[k].sha),
		    f->bad[k] == 2 ? "damaged: its object no longer decodes" :
		    "sha256 mismatch: its bytes no longer hash to its name",
		    a->chunks[k].sha, what);
	}
	f->ok = nbad == 0;
}

static void
check_msgs(struct vrun *v)
{
	const struct row_msg *m;
	char hex[SHA_HEX_LEN];
	uint8_t sha[SHA_LEN];
	size_t i;

	for (i = 0; i < v->rows.nmsgs; i++) {
		m = &v->rows.msgs[i];
		if (!m->ok) {
			store_vproblem(v,
			    "message row %lld: malformed (src %.64s, "
			    "dst %.64s, seq)", (long long)m->rowid, m->src,
			    m->dst);
			continue;
		}
		if (m->damaged) {
			store_vproblem(v, "channel %s->%s: message seq %llu "
			    "damaged: its sealed payload does not open",
			    m->src, m->dst, (unsigned long long)m->seq);
			continue;
		}
		if (sha256_buf(m->data ? m->data : (const uint8_t *)"",
		    m->len, sha) < 0) {
			store_vproblem(v,
			    "channel %s->%s: message seq %llu: sha256 "
			    "failed", m->src, m->dst,
			    (unsigned long long)m->seq);
			continue;
		}
		store_name_hex(v->st, sha, hex);
		if (strcmp(hex, m->sha) != 0)
			store_vproblem(v,
			    "channel %s->%s: message seq %llu sha256 "
			    "mismatch: expected %.64s, found %s", m->src,
			    m->dst, (unsigned long long)m->seq, m->sha, hex);
	}
}

int
store_verify_status(struct vrun *v, const char *status)
{
	if (strcmp(status, "complete") == 0)
		return 1;
	store_vproblem(v, "status is %s, not complete",
	    status[0] ? status : "empty");
	return 0;
}

void
store_verify_digest(struct vrun *v, const char *want)
{
	char hex[SHA_HEX_LEN];
	struct cs_err e;

	if (store_digest(v->st, v->id, hex, &e) < 0)
		store_vproblem(v, "manifest digest could not be computed: %s",
		    e.msg);
	else if (strcmp(hex, want) != 0)
		store_vproblem(v,
		    "manifest digest mismatch: rows were edited or "
		    "deleted (expected %.64s, found %s)",
		    want[0] ? want : "none", hex);
}

/* A note of the replay: "snapshot N: ..." to the store's notes. */
static void
replay_note(void *ctx, const char *line)
{
	struct vrun *v = ctx;
	char buf[900];

	snprintf(buf, sizeof(buf), "snapshot %llu: %s",
	    (unsigned long long)v->id, line);
	v->st->nfn(v->st->nctx, buf);
}

/* Run restore's replay of the recorded messages onto each replayed file,
 * in memory: a message it cannot replay is a problem (restore would
 * fail), one it dead-letters a note. Under restore, restore's own replay
 * gives the notes. Last, as it moves the files' applied seqs. */
static void
replay_all(struct vrun *v)
{
	const struct row_agent *a;
	struct cs_err e;
	problem_fn note = NULL;
	size_t i;

	if (v->st->nfn != NULL && !v->st->pnested)
		note = replay_note;
	for (i = 0; i < v->rows.nagents; i++) {
		a = &v->rows.agents[i];
		if (!v->fc[i].have)
			continue;
		/* Under restore, a file it writes gets the records here, and
		 * restore's notes as restore gives them. */
		if (v->fc[i].tail != NULL ? store_replay_msgs(&v->fc[i].st,
		    &v->rows, a->name, v->fc[i].tail, v->st->nfn, v->st->nctx,
		    &e) < 0 : store_replay_msgs(&v->fc[i].st, &v->rows, a->name,
		    NULL, note, v, &e) < 0)
			store_vproblem(v,
			    "agent %s: the replay of its recorded "
			    "messages fails: %s", a->name, e.msg);
	}
}

static void
bad_key(void *ctx, int64_t id)
{
	store_vproblem(ctx,
	    "key %lld damaged: its row no longer matches its check "
	    "(remove it with cutsnap key remove)", (long long)id);
}

/* An encrypted repository's key rows, each checked under the master key:
 * a flipped bit in the sealed copy of another password's key shows. */
static void
check_keys(struct vrun *v)
{
	struct cs_err e;

	if (store_crypt_check_keys(v->st, bad_key, v, &e) < 0)
		store_vproblem(v, "keys: %s", e.msg);
}

static int run(struct store *st, uint64_t id, uint64_t *resolved,
    const struct vsink *sinks, problem_fn fn, void *ctx, struct cs_err *e);

void
store_verify_work(const struct store *st, uint64_t *chunks, uint64_t *reads)
{
	*chunks = st->vchunks;
	*reads = st->vreads;
}

uint64_t
store_verify_ahead(const struct store *st)
{
	return st->vahead;
}

/* The handoff of agent row i's chunks (plain verify). 0 / -1. */
static int
handoff_init(struct vrun *v, size_t i)
{
	struct fcheck *f = &v->fc[i];
	size_t n = v->rows.agents[i].nchunks;

	if ((f->cstate = calloc(n, 1)) == NULL ||
	    (f->held = calloc(n, sizeof(*f->held))) == NULL)
		return -1;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	f->hinit = 1;
	return 0;
}

static void
handoff_free(struct vrun *v, size_t i)
{
	struct fcheck *f = &v->fc[i];
	size_t k;

	for (k = 0; f->held != NULL && k < v->rows.agents[i].nchunks; k++)
		bigbuf_free(f->held[k], v->bufsz);
	free(f->held);
	free(f->cstate);
	if (f->hinit) {
		pthread_mutex_destroy(&f->mu);
		pthread_cond_destroy(&f->cv);
	}
}

int
store_verify(struct store *st, uint64_t id, uint64_t *resolved,
    problem_fn fn, void *ctx, struct cs_err *e)
{
	return run(st, id, resolved, NULL, fn, ctx, e);
}

int
store_verify_restore(struct store *st, uint64_t id, const struct vsink *sinks,
    problem_fn fn, void *ctx, struct cs_err *e)
{
	return run(st, id, NULL, sinks, fn, ctx, e);
}

/* A failed write to a temp file fails the restore, not the snapshot. */
static int
sink_error(const struct vrun *v, struct cs_err *e)
{
	size_t i;

	for (i = 0; i < v->rows.nagents; i++)
		if (atomic_load(&v->fc[i].wfailed))
			return cs_errf(e, "%s", v->fc[i].werr);
	return 0;
}

static int
run(struct store *st, uint64_t id, uint64_t *resolved,
    const struct vsink *sinks, problem_fn fn, void *ctx, struct cs_err *e)
{
	struct vrun v;
	uint64_t rid, reads0;
	size_t i, k;
	int rc = -1;

	memset(&v, 0, sizeof(v));
	pthread_mutex_init(&v.smu, NULL);
	if (resolved != NULL)
		*resolved = 0;
	if (sinks == NULL)
		st->vchunks = st->vreads = 0;
	if (store_snap_resolve(st, id, &rid, e) < 0)
		return -1;
	if (resolved != NULL)
		*resolved = rid;
	v.st = st;
	v.id = rid;
	v.fn = fn;
	v.ctx = ctx;
	atomic_init(&v.nwritten, 0);
	atomic_init(&v.nahead, 0);
	if (store_rows_load(st, rid, &v.rows, e) < 0)
		return -1;
	if (!store_verify_status(&v, v.rows.status)) {
		rc = v.nproblems;
		goto out;
	}
	if ((v.fc = calloc(v.rows.nagents + 1, sizeof(*v.fc))) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < v.rows.nagents; i++) {
		v.fc[i].sink = sinks != NULL ? sinks[i].fd : -1;
		v.fc[i].dsink = v.fc[i].sink >= 0 ? sinks[i].dfd : -1;
		v.fc[i].sinkname = sinks != NULL ? sinks[i].name : NULL;
		v.fc[i].tail = sinks != NULL && sinks[i].fd >= 0 ?
		    sinks[i].tail : NULL;
		atomic_init(&v.fc[i].wfailed, 0);
	}
	store_verify_db(&v);
	store_rows_auth_check(&v);
	for (i = 0; i < v.rows.nagents; i++)
		open_file(&v, i);
	/* Under restore a chunk is hashed and written in one pass: one
	 * count. */
	if (!st->pnested)
		store_progress_start(st, 0);
	for (i = 0; i < v.rows.nagents; i++)
		store_progress_grow(st, v.rows.agents[i].size);
	if (plan_tasks(&v) < 0) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		rc = -1;
		goto out;
	}
	for (i = 0; i < v.rows.nagents; i++)
		if (v.fc[i].mapped && store_keyset_build(&v.fc[i].ks, &v.rows,
		    v.rows.agents[i].name) < 0) {
			cs_errc(e, CS_E_NOMEM, "out of memory");
			rc = -1;
			goto out;
		}
	for (i = 0; i < v.rows.nagents; i++)
		if (v.fc[i].mapped && handoff_init(&v, i) < 0) {
			cs_errc(e, CS_E_NOMEM, "out of memory");
			rc = -1;
			goto out;
		}
	reads0 = atomic_load(&st->nchunk_reads);
	/* The replays run beside the chunks, in one pass, each chunk read
	 * once for both (the handoff): the pool takes its tasks in order,
	 * so every replay has started before the first chunk task, and a
	 * chunk task that waits for its replay waits on a running one.
	 * Under restore, whoever checks a chunk also writes it, on more
	 * threads than cores: a direct write blocks its thread. */
	if (sinks != NULL)
		store_pool_run_writing(v.ntasks, any_task, &v);
	else
		store_pool_run(v.ntasks, any_task, &v);
	if (sinks == NULL) {
		st->vreads = atomic_load(&st->nchunk_reads) - reads0;
		st->vahead = atomic_load(&v.nahead);
		for (st->vchunks = 0, i = 0; i < v.rows.nagents; i++)
			if (v.fc[i].mapped)
				st->vchunks += v.rows.agents[i].nchunks;
	}
	if (sink_error(&v, e) < 0)
		goto out;
	for (i = 0; i < v.rows.nagents; i++)
		report_file(&v, i);
	check_msgs(&v);
	check_keys(&v);
	store_verify_digest(&v, v.rows.digest);
	store_auth_check(&v);
	store_verify_cut(&v);
	replay_all(&v);
	rc = v.nproblems;
out:
	for (i = 0; v.fc != NULL && i < v.rows.nagents; i++) {
		for (k = 0; v.fc[i].lerr != NULL &&
		    k < v.rows.agents[i].nchunks; k++)
			free(v.fc[i].lerr[k]);
		free(v.fc[i].lerr);
		if (v.fc[i].have)
			dl_state_free(&v.fc[i].st);
		free(v.fc[i].bad);
		store_keyset_free(&v.fc[i].ks);
		handoff_free(&v, i);
	}
	free(v.fc);
	free(v.tasks);
	for (i = 0; i < POOL_MAX_THREADS; i++) {
		store_objbuf_free(&v.bufs[i]);
		bigbuf_free(v.wbuf[i], v.bufsz);
	}
	for (i = 0; i < v.nspare; i++)
		bigbuf_free(v.spare[i], v.bufsz);
	pthread_mutex_destroy(&v.smu);
	store_rows_free(&v.rows);
	return rc;
}
