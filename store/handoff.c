/* handoff.c - the replay's window onto a recorded file during verify:
 * the chunks the pool's tasks check are handed to the replay of their
 * file (a few held at a time), so that each chunk is read and decoded
 * once; under restore the replay reads the complete temp file, else the
 * blobs, one chunk in memory at a time. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "verify_int.h"
#include "../lib/bigbuf.h"
#include "../log/crcblk.h"
#include "../log/datalog.h"
#include "../lib/fsutil.h"

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

/* Chunk k of agent i checked by worker w for the replay of its file
 * (plain verify): a chunk the replay took or is reading is skipped; a
 * checked one is handed over, once fewer than HANDOFF_READY wait there
 * or the replay reads it now, or dropped when the replay has ended. The
 * replay never waits on a task that waits on it: a chunk it reads now
 * is always taken. */
void
store_handoff_offer(struct vrun *v, size_t i, size_t k, int w)
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
	ok = store_vchunk_check(v, i, k, w) == 0;
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
			store_vbuf_put(r->v, f->held[r->lo]);
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
	ok = store_vchunk_check(r->v, r->i, j, r->worker) == 0;
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
		ok = store_vchunk_check(r->v, r->i, k, r->worker) == 0;
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
void
store_handoff_end(struct vrun *v, size_t i)
{
	struct fcheck *f = &v->fc[i];
	size_t k;

	pthread_mutex_lock(&f->mu);
	f->rdone = 1;
	f->nready = 0;
	for (k = 0; k < v->rows.agents[i].nchunks; k++)
		if (f->held[k] != NULL) {
			store_vbuf_put(v, f->held[k]);
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
		t = p != r->buf ? store_vchunk_tail(r->v, p) : NULL;
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
int
store_handoff_replay(struct vrun *v, size_t i, int worker,
    const struct wm_set *from, struct dl_state *st, char *err, size_t errsz)
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
	r.fd = !r.handoff && store_vsink_complete(v, i) ? f->sink : -1;
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

/* The handoff of agent row i's chunks (plain verify). 0 / -1. */
int
store_handoff_init(struct vrun *v, size_t i)
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

void
store_handoff_free(struct vrun *v, size_t i)
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
