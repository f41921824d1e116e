/* chunkstore.c - storing a snapshot's recorded files as chunks: each
 * agent's prefix [0, L) is cut into the fixed-size chunks its report
 * lists, and only the chunks whose digest is not yet a blob are copied.
 *
 * An agent's data file is append-only, so a later snapshot shares every
 * chunk but the last few with the one before: it copies O(change), not
 * O(file). Each copied chunk is read once, hashed and written from the
 * same buffer, checked against the reported digest, written to a temp
 * file; once all are written, each is fdatasync'ed and renamed to its
 * name, so a name only ever refers to complete, checked, durable bytes.
 * The copies run on every core (pool.c); the fsyncs of pass 2 and of the
 * directories (once each, at the end, before the commit makes the rows
 * refer to them) on more threads than cores (store_pool_run_io), as they
 * wait on the disk's cache flushes, which the block layer merges when
 * they are asked for together.
 * A recorded file the coordinator cannot read (an agent on another host:
 * no path) comes through the fetch function (store_set_fetch) instead,
 * chunk by chunk, only the chunks planned for copying, and is checked the
 * same way: a chunk damaged on the way fails the run before any temp file
 * of it exists. A blob stream (store_opts.blob_stream: an object store's
 * uploads) gets each chunk object once its bytes are checked and
 * encoded, instead of a temp file: nothing of it is written here, and
 * the upload runs alongside the rest of the copy. A chunk not
 * stored here that the blob target (store_opts.blob_target: an object
 * store, whose listing it consults once) has already is neither read
 * nor sent: a writer whose local copy of the repository is new or was
 * collected does not upload the repository again.
 * A chunk already stored is reused by its name, but a blob's bytes can
 * change after they were checked: a reused chunk is read back and hashed
 * first when its blob is not the file that was last hashed (its size,
 * inode or ctime differ from its record in blobchecks.db, blobcheck.c:
 * an edit in place, a copy put over it) or when that check is older than
 * the recheck age (store_set_recheck_age, default 7 days), for the rot a
 * disk does silently. A blob is recorded when it is written from checked
 * bytes and again by each recheck that finds it good; its mtime means
 * nothing here, as anyone can set it. A blob found bad (here or by
 * verify) is quarantined
 * (quarantine.c) and copied again from the live file, which still has
 * the good bytes, or the snapshot fails: it is never committed over a
 * blob known bad.
 *
 * The copy is background work (store_pool_run_background): the agents keep
 * serving requests, each waiting for an fdatasync, while it runs. So the
 * temp files are written with O_DIRECT, in pieces of DIRECT_PIECE bytes:
 * buffered writes would leave hundreds of MiB to the kernel's writeback,
 * whose journal commits (ext4, data=ordered) and full device queue the
 * agents' fdatasyncs then wait behind, and writeback ignores the copy's
 * idle I/O class, which direct writes, issued by the copying thread,
 * carry. It also keeps the repository's bytes out of the page cache.
 * Filesystems that refuse O_DIRECT (tmpfs) get buffered writes.
 *
 * Snapshots taken at the same time into one repository share the copy
 * work: before copying a chunk, a run claims it with an OFD write lock on
 * one byte of REPO/locks/chunks.claims (at an offset taken from the
 * digest), held until its chunks are renamed into place (the repository
 * lock made locks/ already). A chunk claimed by
 * another run is not copied: once its own chunks are in place and its
 * claims dropped, this run waits for the other claim to go (the other
 * renamed it, failed or died: the kernel drops the lock), holding no
 * claim while it waits, so two runs never wait for each other; then it
 * finds the blob stored, or, rarely, copies it itself. Two digests may
 * share a byte; that only makes one wait for the other. A claim held for
 * longer than CLAIM_WAIT_MS (a stopped process) is not waited for: the
 * chunk is copied again, which is safe, as the bytes are the same.
 *
 * store_set_max_rate paces the run (snapshot --max-rate): each copy and
 * each recheck reserves its chunk's bytes on one token bucket shared by
 * the workers (ratelimit.h) before it reads them, so reading, hashing,
 * compressing and writing together stay under the rate. Chunks another
 * run copies for this one cost nothing here: that run pays for them. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"
#include "claims.h"
#include "direct.h"
#include "../lib/bigbuf.h"
#include "../log/chunkhash.h"
#include "../lib/fsutil.h"
#include "../lib/ratelimit.h"
#include "crun.h"

static void
crun_fail(struct crun *r, const struct cs_err *e)
{
	pthread_mutex_lock(&r->mu);
	if (!r->failed) {
		r->failed = 1;
		r->err = *e;
	}
	pthread_mutex_unlock(&r->mu);
}

/* Has the run failed, or been asked to stop (store_set_stop)? A stop
 * becomes the run's failure, so the chunks not begun yet are skipped. */
static int
crun_failed(struct crun *r)
{
	struct cs_err e;
	int f;

	if (r->st->stop != NULL && *r->st->stop != 0) {
		cs_errf(&e, "interrupted");
		crun_fail(r, &e);
	}
	pthread_mutex_lock(&r->mu);
	f = r->failed;
	pthread_mutex_unlock(&r->mu);
	return f;
}

/* The temp name of job j: jobs are distinct digests, so it is ours
 * alone; a leftover with it from a killed run with our pid is garbage. */
static int
tmp_path(const struct crun *r, const struct cjob *j, char *out, size_t sz,
    struct cs_err *e)
{
	char hex[SHA_HEX_LEN];

	sha_hex(j->name, hex);
	if (snprintf(out, sz, "%s/.tmp.%ld.%s", r->st->blobs, (long)getpid(),
	    hex) >= (int)sz)
		return cs_errf(e, "repository path too long: %s", r->st->repo);
	return 0;
}

/* The SHA-256 of chunk j's bytes in into got. For a chunk the agent's
 * previous snapshot had shorter, the digest of its first plen bytes comes
 * out of the same pass (sha_peek), and *grew says whether they have that
 * chunk's name: the chunk only grew, and its object may be built on the
 * previous one (chunkdelta.c). */
static int
hash_chunk(const struct store *st, const struct cjob *j, const uint8_t *in,
    uint8_t got[SHA_LEN], int *grew)
{
	uint8_t pre[SHA_LEN], name[SHA_LEN];
	struct sha_ctx *c;
	int rc = -1;

	*grew = 0;
	if (j->plen == 0 || j->plen >= j->len)
		return sha256_buf(in, (size_t)j->len, got);
	if ((c = sha_new()) == NULL)
		return -1;
	if (sha_update(c, in, (size_t)j->plen) == 0 &&
	    sha_peek(c, pre) == 0 &&
	    sha_update(c, in + j->plen, (size_t)(j->len - j->plen)) == 0 &&
	    sha_final(c, got) == 0) {
		store_name(st, pre, name);
		*grew = memcmp(name, j->pname, SHA_LEN) == 0;
		rc = 0;
	}
	sha_free(c);
	return rc;
}

/* Pass 1 for chunk j: read it, check its digest, write it as a temp file,
 * so that the disk works while the next chunks are hashed. buf holds
 * store_direct_align(maxchunk) bytes, aligned for O_DIRECT. */
static int
copy_chunk(struct crun *r, struct cjob *j, uint8_t *buf, uint8_t *obuf,
    uint8_t *dbuf, struct cs_err *e)
{
	const char *path = r->paths[j->src];
	char tmp[PATH_MAX];
	uint8_t got[SHA_LEN];
	uint8_t *blob = buf, *in = buf;
	size_t bloblen = (size_t)j->len;
	int tfd = -1, rc = -1, direct, grew = 0, ext;

	/* A framed chunk is read straight to its place in the object, so
	 * that one stored as it is (random data) is never copied; buf then
	 * takes zstd's output. */
	if (obuf != NULL)
		in = obuf + store_obj_frame_off(r->st) + OBJ_HDR_LEN;
	ratelimit_take(&r->pace, j->len);
	if (path == NULL) {
		if (r->st->ffn(r->st->fctx, (size_t)j->src, j->off, in,
		    (size_t)j->len, e) < 0)
			goto out;
	} else if (fs_pread_all(r->fds[j->src], in, (size_t)j->len,
	    (off_t)j->off) < 0) {
		cs_errno(e, "read %s at %llu", path,
		    (unsigned long long)j->off);
		goto out;
	}
	if (hash_chunk(r->st, j, in, got, &grew) < 0) {
		cs_errf(e, "sha256 of chunk %zu failed", j->idx);
		goto out;
	}
	if (memcmp(got, j->sha, SHA_LEN) != 0 && path == NULL) {
		cs_errf(e, "chunk %zu (bytes %llu..%llu) arrived damaged: "
		    "sha256 mismatch; refused", j->idx,
		    (unsigned long long)j->off,
		    (unsigned long long)(j->off + j->len));
		goto out;
	}
	if (memcmp(got, j->sha, SHA_LEN) != 0) {
		cs_errf(e, "data file %s changed under the snapshot: chunk %zu "
		    "(bytes %llu..%llu) sha256 mismatch", path, j->idx,
		    (unsigned long long)j->off,
		    (unsigned long long)(j->off + j->len));
		goto out;
	}
	if (obuf != NULL && dbuf != NULL && grew &&
	    (ext = store_delta_encode(r->st, j->pname, (size_t)j->plen,
	    j->name, obuf, (size_t)j->len, buf, r->bufsz, dbuf, &bloblen,
	    e)) != 0) {
		if (ext < 0)
			goto out;
		blob = obuf;
		pthread_mutex_lock(&r->mu);
		r->extended++;
		pthread_mutex_unlock(&r->mu);
	} else if (obuf != NULL) {
		if (store_obj_encode_in_place(r->st, j->name, (size_t)j->len,
		    obuf, store_obj_bound(r->st, r->maxchunk), buf,
		    store_direct_align(r->maxchunk), &bloblen, e) < 0)
			goto out;
		blob = obuf;
	}
	/* Streamed to an object store: no local copy at all. */
	if (r->st->opts.blob_stream != NULL) {
		if (r->st->opts.blob_stream(r->st->opts.blob_stream_ctx, j->name,
		    blob, bloblen, e) < 0)
			goto out;
		j->streamed = 1;
		rc = 0;
		goto out;
	}
	if (tmp_path(r, j, tmp, sizeof(tmp), e) < 0)
		goto out;
	unlink(tmp);
	if ((tfd = store_direct_create(tmp, &direct)) < 0) {
		cs_errno(e, "create %s", tmp);
		goto out;
	}
	j->written = 1;
	if (store_direct_write(tfd, direct, blob, bloblen) < 0) {
		cs_errno(e, "write %s", tmp);
		goto out;
	}
	/* Only a hint for buffered writes: the fdatasync of pass 2 is what
	 * makes a chunk durable (direct writes leave the file's metadata and
	 * the disk's cache to it too). */
	if (!direct)
		(void)sync_file_range(tfd, 0, 0, SYNC_FILE_RANGE_WRITE);
	if (close(tfd) < 0) {
		tfd = -1;
		cs_errno(e, "close %s", tmp);
		goto out;
	}
	tfd = -1;
	rc = 0;
out:
	if (tfd >= 0)
		close(tfd);
	return rc;
}

/* Pass 2 for chunk j: make the temp file durable, then give it its name. */
static int
seal_chunk(struct crun *r, struct cjob *j, struct cs_err *e)
{
	char hex[SHA_HEX_LEN], tmp[PATH_MAX], dst[PATH_MAX];
	struct stat sb;
	int fd, rc;

	if (j->streamed)
		return 0;
	sha_hex(j->name, hex);
	if (tmp_path(r, j, tmp, sizeof(tmp), e) < 0 ||
	    store_blob_path(r->st, hex, dst, sizeof(dst), e) < 0)
		return -1;
	if ((fd = open(tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return cs_errno(e, "open %s", tmp);
	rc = fdatasync(fd);
	if (rc < 0)
		cs_errno(e, "fsync %s", tmp);
	close(fd);
	if (rc < 0)
		return -1;
	if (rename(tmp, dst) < 0)
		return cs_errno(e, "rename %s to %s", tmp, dst);
	j->written = 0;
	/* Ours now: an abort removes it unless something refers to it
	 * (orphans.c). */
	pthread_mutex_lock(&r->mu);
	rc = store_wrote_add(r->st, j->name);
	pthread_mutex_unlock(&r->mu);
	if (rc < 0)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	/* Its look after the rename, which sets the ctime. Without one the
	 * blob has no record and is only hashed again before its reuse. */
	if (lstat(dst, &sb) == 0) {
		store_bcheck_look(&sb, &j->look);
		j->looked = 1;
	}
	return 0;
}

/* Record the blobs of the jobs hashed by this run (looked) in
 * blobchecks.db, in one transaction, and clear their marks. */
static int
record_checks(struct crun *r, struct cs_err *e)
{
	struct blob_seen *v;
	size_t i, n = 0;
	int rc;

	for (i = 0; i < r->njobs; i++)
		n += r->jobs[i].looked;
	if (n == 0)
		return 0;
	if ((v = malloc(n * sizeof(*v))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	for (i = 0, n = 0; i < r->njobs; i++) {
		if (!r->jobs[i].looked)
			continue;
		memcpy(v[n].name, r->jobs[i].name, SHA_LEN);
		v[n++].look = r->jobs[i].look;
		r->jobs[i].looked = 0;
	}
	rc = store_bcheck_put(r->st, v, n, (int64_t)time(NULL), e);
	free(v);
	return rc;
}

/* The workers' buffers are kept from one run to the next in this
 * process. A process that takes a snapshot every few hundred ms (load
 * --snapshot-every) otherwise maps fresh buffers for every run, and the
 * first read into each, and zstd's output, take a page fault per page:
 * 9% of load's samples in such a run, a sixth of its snapshots' share
 * (docs/INTERNALS.md, "Snapshots every 500 ms"). One set, held by
 * one run at a time; a run beside it allocates its own. The set stays
 * allocated (some 8 MiB per worker) until a run with other sizes frees
 * it. The buffers are bigbufs (huge pages where the kernel gives them):
 * a one-shot snapshot faults its set in afresh. */
static struct {
	pthread_mutex_t mu;
	int busy;
	size_t bufsz, obufsz;
	uint8_t *bufs[POOL_MAX_THREADS], *obufs[POOL_MAX_THREADS];
	uint8_t *dbufs[POOL_MAX_THREADS];
} spare = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Size r's buffers for its largest chunk (plan has run) and take the
 * spare set: those of its buffers that have these sizes. */
static void
bufs_take(struct crun *r)
{
	int i;

	r->bufsz = store_direct_align(r->maxchunk);
	r->obufsz = store_obj_framed(r->st) ?
	    store_direct_align(store_obj_bound(r->st, r->maxchunk)) : 0;
	pthread_mutex_lock(&spare.mu);
	if (!spare.busy) {
		spare.busy = 1;
		r->has_spare = 1;
		for (i = 0; i < POOL_MAX_THREADS; i++) {
			if (spare.bufsz == r->bufsz) {
				r->bufs[i] = spare.bufs[i];
				r->dbufs[i] = spare.dbufs[i];
			} else {
				bigbuf_free(spare.bufs[i], spare.bufsz);
				bigbuf_free(spare.dbufs[i], spare.bufsz);
			}
			if (spare.obufsz == r->obufsz)
				r->obufs[i] = spare.obufs[i];
			else
				bigbuf_free(spare.obufs[i], spare.obufsz);
			spare.bufs[i] = spare.obufs[i] = NULL;
			spare.dbufs[i] = NULL;
		}
	}
	pthread_mutex_unlock(&spare.mu);
}

/* At the end of a run: its buffers become the spare set if it held it,
 * else they are freed. */
static void
bufs_give(struct crun *r)
{
	int i;

	if (!r->has_spare) {
		for (i = 0; i < POOL_MAX_THREADS; i++) {
			bigbuf_free(r->bufs[i], r->bufsz);
			bigbuf_free(r->obufs[i], r->obufsz);
			bigbuf_free(r->dbufs[i], r->bufsz);
		}
		return;
	}
	pthread_mutex_lock(&spare.mu);
	spare.bufsz = r->bufsz;
	spare.obufsz = r->obufsz;
	memcpy(spare.bufs, r->bufs, sizeof(spare.bufs));
	memcpy(spare.obufs, r->obufs, sizeof(spare.obufs));
	memcpy(spare.dbufs, r->dbufs, sizeof(spare.dbufs));
	spare.busy = 0;
	pthread_mutex_unlock(&spare.mu);
}

/* Worker w's buffer (store_direct_align(maxchunk) bytes, aligned for
 * O_DIRECT), allocated on first use; NULL after crun_fail when out of
 * memory. */
static uint8_t *
worker_buf(struct crun *r, int w)
{
	struct cs_err e;

	if (r->bufs[w] == NULL &&
	    (r->bufs[w] = bigbuf_alloc(r->bufsz)) == NULL) {
		cs_errc(&e, CS_E_NOMEM, "out of memory");
		crun_fail(r, &e);
	}
	return r->bufs[w];
}

/* Worker w's buffer for a previous object's decoded bytes (as large as
 * worker_buf's), allocated on first use; NULL when out of memory, which
 * only means the chunk is compressed whole. */
static uint8_t *
worker_dbuf(struct crun *r, int w)
{
	if (r->dbufs[w] == NULL &&
	    (r->dbufs[w] = bigbuf_alloc(r->bufsz)) == NULL)
		return NULL;
	return r->dbufs[w];
}

/* Worker w's object buffer (the largest blob of a chunk, rounded up for
 * O_DIRECT), for a framed repository; NULL when blobs are the chunks
 * themselves, and after crun_fail when out of memory (*failed set). */
static uint8_t *
worker_obuf(struct crun *r, int w, int *failed)
{
	struct cs_err e;

	*failed = 0;
	if (!store_obj_framed(r->st))
		return NULL;
	if (r->obufs[w] == NULL &&
	    (r->obufs[w] = bigbuf_alloc(r->obufsz)) == NULL) {
		*failed = 1;
		cs_errc(&e, CS_E_NOMEM, "out of memory");
		crun_fail(r, &e);
	}
	return r->obufs[w];
}

/* Recheck job j: read its blob back and hash it. Good: it is reused, and
 * its look before the read is recorded as checked (a change during the
 * read shows as another ctime next time). Bad or unreadable:
 * quarantined, and j becomes a copy from the live file. -1 only when the
 * bad blob cannot be moved out of the way. */
static int
recheck_chunk(struct crun *r, struct cjob *j, uint8_t *buf, struct cs_err *e)
{
	char hex[SHA_HEX_LEN], path[PATH_MAX];
	uint8_t got[SHA_LEN];
	struct cs_err le;
	struct stat sb;
	int good;

	sha_hex(j->name, hex);
	if (store_blob_path(r->st, hex, path, sizeof(path), e) < 0)
		return -1;
	ratelimit_take(&r->pace, j->len);
	good = lstat(path, &sb) == 0 &&
	    store_obj_load(r->st, j->name, path, buf, (size_t)j->len,
	    &le) == 0 && sha256_buf(buf, (size_t)j->len, got) == 0 &&
	    memcmp(got, j->sha, SHA_LEN) == 0;
	j->recheck = 0;
	if (good) {
		store_bcheck_look(&sb, &j->look);
		j->looked = 1;
		j->reuse = 1;
		return 0;
	}
	if (store_blob_quarantine(r->st, hex, e) < 0)
		return cs_errctx(e, "blob %s is bad and could not be "
		    "quarantined", hex);
	pthread_mutex_lock(&r->mu);
	r->healed++;
	pthread_mutex_unlock(&r->mu);
	return 0;
}

/* pool.c task: the recheck of job t, if it is one. */
static void
recheck_task(void *ctx, size_t t, int w)
{
	struct crun *r = ctx;
	struct cs_err e;
	uint8_t *buf;

	if (!r->jobs[t].recheck || crun_failed(r) ||
	    (buf = worker_buf(r, w)) == NULL)
		return;
	if (recheck_chunk(r, &r->jobs[t], buf, &e) < 0)
		crun_fail(r, &e);
}

/* Recheck what plan marked, then keep only the jobs that copy. */
static int
recheck_all(struct crun *r, struct cs_err *e)
{
	size_t i, kept = 0, n = 0;

	for (i = 0; i < r->njobs; i++)
		n += r->jobs[i].recheck;
	if (n == 0)
		return 0;
	store_pool_run_background(r->njobs, recheck_task, r);
	if (r->failed) {
		*e = r->err;
		return -1;
	}
	r->rechecked = n;
	if (record_checks(r, e) < 0)
		return -1;
	for (i = 0; i < r->njobs; i++)
		if (!r->jobs[i].reuse)
			r->jobs[kept++] = r->jobs[i];
	r->njobs = kept;
	return 0;
}

/* pool.c task: pass 1 of job t with worker w's buffer. */
static void
copy_task(void *ctx, size_t t, int w)
{
	struct crun *r = ctx;
	struct cs_err e;
	uint8_t *buf, *obuf, *dbuf = NULL;
	int failed;

	if (crun_failed(r) || (buf = worker_buf(r, w)) == NULL)
		return;
	obuf = worker_obuf(r, w, &failed);
	if (failed)
		return;
	if (obuf != NULL && r->jobs[t].plen > 0)
		dbuf = worker_dbuf(r, w);
	if (copy_chunk(r, &r->jobs[t], buf, obuf, dbuf, &e) < 0) {
		cs_errctx(&e, "agent %s", r->reps[r->jobs[t].src].agent);
		crun_fail(r, &e);
		return;
	}
	pthread_mutex_lock(&r->mu);
	r->bytes += r->jobs[t].len;
	if (r->paths[r->jobs[t].src] == NULL)
		r->fetched += r->jobs[t].len;
	pthread_mutex_unlock(&r->mu);
	store_progress_add(r->st, r->reps[r->jobs[t].src].agent,
	    r->jobs[t].len);
}

/* pool.c task: pass 2 of job t. */
static void
seal_task(void *ctx, size_t t, int w)
{
	struct crun *r = ctx;
	struct cs_err e;

	(void)w;
	if (crun_failed(r))
		return;
	if (seal_chunk(r, &r->jobs[t], &e) < 0)
		crun_fail(r, &e);
}

static int
cmp_job(const void *a, const void *b)
{
	const struct cjob *x = a, *y = b;

	return memcmp(x->name, y->name, SHA_LEN);
}

void
store_set_fetch(struct store *st, chunk_fetch_fn fn, void *ctx)
{
	st->ffn = fn;
	st->fctx = ctx;
}

void
store_set_put(struct store *st, chunk_put_fn fn, void *ctx)
{
	st->putfn = fn;
	st->putctx = ctx;
}

static int
cmp_name(const void *a, const void *b)
{
	return memcmp(a, b, SHA_LEN);
}

/* Remember name as stored in the object store already (r->elsewhere,
 * sorted by store_put_chunks once plan and put_elsewhere are done). */
static int
elsewhere_add(struct crun *r, const uint8_t name[SHA_LEN], struct cs_err *e)
{
	uint8_t (*nv)[SHA_LEN];
	size_t cap;

	if (r->nelsewhere == r->elsewhere_cap) {
		cap = r->elsewhere_cap ? r->elsewhere_cap * 2 : 64;
		if ((nv = realloc(r->elsewhere, cap * SHA_LEN)) == NULL)
			return cs_errc(e, CS_E_NOMEM, "out of memory");
		r->elsewhere = nv;
		r->elsewhere_cap = cap;
	}
	memcpy(r->elsewhere[r->nelsewhere++], name, SHA_LEN);
	return 0;
}

/* The jobs of files the coordinator cannot read go to store_set_put's
 * function first; those it reports in the object store are dropped
 * (remembered in r->elsewhere for all_there), the rest are fetched. */
static int
put_elsewhere(struct crun *r, struct cs_err *e)
{
	struct chunk_put *v;
	size_t i, n = 0, kept = 0;
	int rc = -1;

	/* Never for an encrypted repository: only this process holds its
	 * key. With compression the blob is the framed object, which the
	 * putter makes the same way (chunkobj.h). */
	if (r->st->putfn == NULL || r->st->enc)
		return 0;
	for (i = 0; i < r->njobs; i++)
		n += r->paths[r->jobs[i].src] == NULL;
	if (n == 0)
		return 0;
	if ((v = calloc(n, sizeof(*v))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	for (i = 0, n = 0; i < r->njobs; i++)
		if (r->paths[r->jobs[i].src] == NULL)
			v[n++] = (struct chunk_put){ (size_t)r->jobs[i].src,
			    r->jobs[i].off, r->jobs[i].len, r->jobs[i].sha,
			    0, 0 };
	if (r->st->putfn(r->st->putctx, v, n, r->st->compress !=
	    STORE_COMPRESS_NONE, e) < 0)
		goto out;
	/* v is in the jobs' order. */
	for (i = 0, n = 0; i < r->njobs; i++) {
		if (r->paths[r->jobs[i].src] == NULL && v[n++].done) {
			if (elsewhere_add(r, r->jobs[i].name, e) < 0)
				goto out;
			if (v[n - 1].put) {
				r->put++;
				r->put_bytes += r->jobs[i].len;
			}
			continue;
		}
		r->jobs[kept++] = r->jobs[i];
	}
	r->njobs = kept;
	rc = 0;
out:
	free(v);
	return rc;
}

const struct blob_target *
store_blob_target(const struct store *st)
{
	return st->opts.blob_target;
}

void
store_set_recheck_age(struct store *st, int64_t age_s)
{
	if (age_s < 0)
		return;
	st->recheck_set = 1;
	st->recheck_s = age_s;
}

void
store_set_max_rate(struct store *st, uint64_t rate)
{
	st->max_rate = rate;
}

void
store_set_stop(struct store *st, volatile sig_atomic_t *stop)
{
	st->stop = stop;
}

/* Open every data file and list the chunks not yet stored, each digest
 * once. */
static int
plan(struct crun *r, size_t n, struct cs_err *e)
{
	const struct report *rep;
	struct prev_tail tail;
	uint8_t name[SHA_LEN];
	struct stat sb;
	size_t i, k, cap = 0, kept;
	uint64_t off, len;
	struct cjob *nv;
	const struct blob_target *target = r->st->opts.blob_target;
	time_t now = time(NULL);
	int s;

	for (i = 0; i < n; i++) {
		rep = &r->reps[i];
		if (!chunk_size_valid(rep->chunk_size) ||
		    rep->nchunks != chunk_count(rep->size, rep->chunk_size))
			return cs_errf(e, "agent %s: malformed chunk list",
			    rep->agent);
		if (rep->chunk_size > r->maxchunk)
			r->maxchunk = rep->chunk_size;
		if (r->paths[i] == NULL && r->st->ffn == NULL)
			return cs_errf(e, "agent %s: no way to read its "
			    "recorded file", rep->agent);
		if (r->paths[i] != NULL && (r->fds[i] = open(r->paths[i],
		    O_RDONLY | O_CLOEXEC)) < 0)
			return cs_errno(e, "agent %s: open %s", rep->agent,
			    r->paths[i]);
		if (r->paths[i] != NULL && fstat(r->fds[i], &sb) < 0)
			return cs_errno(e, "agent %s: stat %s", rep->agent,
			    r->paths[i]);
		if (r->paths[i] != NULL && (uint64_t)sb.st_size < rep->size)
			return cs_errf(e, "agent %s: data file %s changed under "
			    "the snapshot: %lld bytes, expected at least %llu",
			    rep->agent, r->paths[i], (long long)sb.st_size,
			    (unsigned long long)rep->size);
		/* The chunk the previous snapshot ended in, when this one
		 * may build on its object: read from the live file here. */
		tail.found = 0;
		if (store_delta_usable(r->st) && r->paths[i] != NULL &&
		    r->st->putfn == NULL && r->st->opts.blob_stream == NULL &&
		    store_prev_tail(r->st, rep->agent, &tail, e) < 0)
			return -1;
		for (k = 0; k < rep->nchunks; k++) {
			off = (uint64_t)k * rep->chunk_size;
			len = rep->size - off < rep->chunk_size ?
			    rep->size - off : rep->chunk_size;
			store_name(r->st, rep->chunks[k], name);
			if ((s = store_blob_stored(r->st, name, len, now,
			    e)) < 0)
				return -1;
			if (s == 1)
				continue;
			/* Not here but in the object store (a writer whose
			 * cache is new, or was collected): its name says its
			 * bytes, so nothing is read or sent; target->has
			 * lists the bucket once, and the publishing finds it
			 * there again or commits nothing. */
			if (s == 0 && target != NULL && target->has != NULL &&
			    target->has(target->ctx, name)) {
				if (elsewhere_add(r, name, e) < 0)
					return -1;
				continue;
			}
			if (r->njobs == cap) {
				cap = cap ? cap * 2 : 64;
				nv = realloc(r->jobs, cap * sizeof(*nv));
				if (nv == NULL)
					return cs_errc(e, CS_E_NOMEM, "out of memory");
				r->jobs = nv;
			}
			r->jobs[r->njobs] = (struct cjob){ (int)i, k, off,
			    len, rep->chunks[k], { 0 }, 0, s == 2, 0, 0,
			    { 0 }, 0, { 0, 0, 0 }, 0 };
			if (tail.found && tail.off == off && tail.len < len) {
				r->jobs[r->njobs].plen = tail.len;
				memcpy(r->jobs[r->njobs].pname, tail.name,
				    SHA_LEN);
			}
			memcpy(r->jobs[r->njobs++].name, name, SHA_LEN);
		}
	}
	if (r->njobs > 1)
		qsort(r->jobs, r->njobs, sizeof(*r->jobs), cmp_job);
	for (i = 0, kept = 0; i < r->njobs; i++)
		if (kept == 0 || cmp_job(&r->jobs[kept - 1], &r->jobs[i]) != 0)
			r->jobs[kept++] = r->jobs[i];
	r->njobs = kept;
	return 0;
}

/* Every chunk of every report is a blob now: a verify running beside
 * the snapshot may have quarantined one it planned to reuse, and the
 * commit must not name a blob that is gone. */
static int
all_there(struct crun *r, size_t n, struct cs_err *e)
{
	const struct report *rep;
	const struct blob_target *target = r->st->opts.blob_target;
	uint8_t name[SHA_LEN];
	char hex[SHA_HEX_LEN];
	uint64_t len;
	size_t i, k;
	int s;

	for (i = 0; i < n; i++) {
		rep = &r->reps[i];
		for (k = 0; k < rep->nchunks; k++) {
			len = rep->size - (uint64_t)k * rep->chunk_size;
			if (len > rep->chunk_size)
				len = rep->chunk_size;
			store_name(r->st, rep->chunks[k], name);
			if (r->nelsewhere > 0 && bsearch(name, r->elsewhere,
			    r->nelsewhere, SHA_LEN, cmp_name) != NULL)
				continue;
			if ((s = store_blob_stored(r->st, name, len, 0,
			    e)) < 0)
				return -1;
			/* Streamed to the object store, which vouches
			 * for it (the publishing finds it listed). */
			if (s == 0 && r->st->opts.blob_stream != NULL &&
			    target != NULL && target->has != NULL &&
			    target->has(target->ctx, name))
				continue;
			if (s == 0) {
				sha_hex(name, hex);
				return cs_errf(e, "agent %s: chunk %zu (blob %s) "
				    "was quarantined while the snapshot ran; "
				    "take the snapshot again", rep->agent, k,
				    hex);
			}
		}
	}
	return 0;
}

/* Create the fan-out directories of the jobs; mark them in dirs[256]. */
static int
make_dirs(struct crun *r, unsigned char dirs[256], struct cs_err *e)
{
	char path[PATH_MAX];
	size_t i;

	memset(dirs, 0, 256);
	for (i = 0; i < r->njobs; i++) {
		if (dirs[r->jobs[i].name[0]])
			continue;
		dirs[r->jobs[i].name[0]] = 1;
		if (snprintf(path, sizeof(path), "%s/%02x", r->st->blobs,
		    r->jobs[i].name[0]) >= (int)sizeof(path))
			return cs_errf(e, "repository path too long: %s",
			    r->st->repo);
		if (fs_mkdir_p(path, 0700, e) < 0)
			return -1;
	}
	return 0;
}

/* pool.c task: fsync directory t of r->sync_dirs (a fan-out directory,
 * or 256: blobs/ itself). */
static void
sync_dir_task(void *ctx, size_t t, int w)
{
	struct crun *r = ctx;
	char path[PATH_MAX];
	struct cs_err e;
	int d = r->sync_dirs[t];

	(void)w;
	if (crun_failed(r))
		return;
	if (d == 256)
		snprintf(path, sizeof(path), "%s", r->st->blobs);
	else if (snprintf(path, sizeof(path), "%s/%02x", r->st->blobs, d) >=
	    (int)sizeof(path)) {
		cs_errf(&e, "repository path too long: %s", r->st->repo);
		crun_fail(r, &e);
		return;
	}
	if (fs_fsync_dir(path, &e) < 0)
		crun_fail(r, &e);
}

/* fsync the fan-out directories marked in dirs[256], and blobs/ when
 * root: all at once, on the I/O pool, so that their cache flushes
 * overlap instead of following each other. */
static int
sync_dirs(struct crun *r, const unsigned char dirs[256], int root,
    struct cs_err *e)
{
	size_t i, n = 0;

	for (i = 0; i < 256; i++)
		if (dirs[i])
			r->sync_dirs[n++] = (int)i;
	if (root)
		r->sync_dirs[n++] = 256;
	store_pool_run_io(n, sync_dir_task, r);
	if (r->failed) {
		*e = r->err;
		return -1;
	}
	return 0;
}

/* Copy and seal r->jobs: every chunk written, then each fdatasync'ed and
 * renamed; the fsyncs of the second pass find the data on the disk
 * already, and one journal commit serves many of them; on the I/O pool,
 * as they wait for the disk, not the CPU. */
static int
copy_jobs(struct crun *r, struct cs_err *e)
{
	size_t i;

	for (i = 0; i < r->njobs; i++)
		store_progress_grow(r->st, r->jobs[i].len);
	store_pool_run_background(r->njobs, copy_task, r);
	if (!r->failed)
		store_pool_run_io(r->njobs, seal_task, r);
	if (r->failed) {
		*e = r->err;
		return -1;
	}
	return record_checks(r, e);
}

int
store_put_chunks(struct store *st, const char *const *paths,
    const struct report *reps, size_t n, struct chunk_stats *stats,
    struct cs_err *e)
{
	unsigned char dirs[256];
	char path[PATH_MAX];
	struct crun r;
	size_t i, copied = 0;
	int rc = -1;

	memset(&r, 0, sizeof(r));
	r.st = st;
	r.paths = paths;
	r.reps = reps;
	r.claim_fd = -1;
	if (stats != NULL)
		memset(stats, 0, sizeof(*stats));
	if (store_need_key(st, e) < 0)
		return -1;
	if (pthread_mutex_init(&r.mu, NULL) != 0)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if (ratelimit_init(&r.pace, st->max_rate) < 0) {
		pthread_mutex_destroy(&r.mu);
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	}
	if ((r.fds = malloc((n + 1) * sizeof(*r.fds))) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++)
		r.fds[i] = -1;
	if (plan(&r, n, e) < 0)
		goto out;
	bufs_take(&r);
	if (recheck_all(&r, e) < 0 ||
	    put_elsewhere(&r, e) < 0)
		goto out;
	if (r.nelsewhere > 1)
		qsort(r.elsewhere, r.nelsewhere, SHA_LEN, cmp_name);
	if (make_dirs(&r, dirs, e) < 0 || store_claims_take(&r, e) < 0)
		goto out;
	/* Progress counts the bytes of the chunks to copy. */
	store_progress_start(st, 0);
	if (copy_jobs(&r, e) < 0)
		goto out;
	copied = r.njobs + r.put;
	/* The chunks other runs were copying: shared, or copied now. */
	if (r.nwaiting > 0) {
		if (store_claims_wait(&r, e) < 0 || copy_jobs(&r, e) < 0)
			goto out;
		copied += r.njobs;
	}
	/* The renames are durable once their directories are. */
	if (sync_dirs(&r, dirs, copied > 0, e) < 0)
		goto out;
	if (all_there(&r, n, e) < 0)
		goto out;
	if (stats != NULL) {
		for (i = 0; i < n; i++)
			stats->chunks += reps[i].nchunks;
		stats->copied = copied;
		stats->shared = r.shared;
		stats->bytes = r.bytes + r.put_bytes;
		stats->put = r.put;
		stats->put_bytes = r.put_bytes;
		stats->fetched = r.fetched;
		stats->rechecked = r.rechecked;
		stats->healed = r.healed;
		stats->extended = r.extended;
	}
	rc = 0;
out:
	for (i = 0; i < r.njobs; i++)
		if (r.jobs[i].written &&
		    tmp_path(&r, &r.jobs[i], path, sizeof(path), NULL) == 0)
			unlink(path);
	for (i = 0; r.fds != NULL && i < n; i++)
		if (r.fds[i] >= 0)
			close(r.fds[i]);
	bufs_give(&r);
	if (r.claim_fd >= 0)
		close(r.claim_fd);	/* drops every claim */
	free(r.fds);
	free(r.jobs);
	free(r.waiting);
	free(r.elsewhere);
	ratelimit_destroy(&r.pace);
	pthread_mutex_destroy(&r.mu);
	return rc;
}
