/* verify.c - the integrity half of verify: the manifest database, the
 * recorded files' chunks, the messages' hashes and the snapshot's digest. The consistency
 * of the cut is in verify_cut.c. Every problem is one line; nothing in a
 * tampered repository may crash it. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_int.h"
#include "../common/datalog.h"
#include "../common/fsutil.h"

void
vproblem(struct vrun *v, const char *fmt, ...)
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
static void
check_db(struct vrun *v)
{
	sqlite3_stmt *s = NULL;
	int step;

	if (sqlite3_prepare_v2(v->st->db, "PRAGMA integrity_check", -1, &s,
	    NULL) != SQLITE_OK) {
		vproblem(v, "manifest integrity_check failed: %s",
		    sqlite3_errmsg(v->st->db));
		goto fk;
	}
	while ((step = sqlite3_step(s)) == SQLITE_ROW)
		if (strcmp(col_text(s, 0), "ok") != 0)
			vproblem(v, "manifest integrity_check: %s",
			    col_text(s, 0));
	if (step != SQLITE_DONE)
		vproblem(v, "manifest integrity_check failed: %s",
		    sqlite3_errmsg(v->st->db));
fk:
	sqlite3_finalize(s);
	s = NULL;
	if (sqlite3_prepare_v2(v->st->db, "PRAGMA foreign_key_check", -1, &s,
	    NULL) != SQLITE_OK) {
		vproblem(v, "manifest foreign_key_check failed: %s",
		    sqlite3_errmsg(v->st->db));
		goto out;
	}
	while ((step = sqlite3_step(s)) == SQLITE_ROW)
		vproblem(v, "manifest: row %lld of table %s has no matching "
		    "row in table %s", (long long)sqlite3_column_int64(s, 1),
		    col_text(s, 0), col_text(s, 2));
	if (step != SQLITE_DONE)
		vproblem(v, "manifest foreign_key_check failed: %s",
		    sqlite3_errmsg(v->st->db));
out:
	sqlite3_finalize(s);
}

/* fview_open's callback: one problem per unusable chunk. */
struct chunk_ctx {
	struct vrun *v;
	const struct row_agent *a;
	int n;
};

static void
chunk_problem(void *ctx, const struct row_chunk *c, const char *what)
{
	struct chunk_ctx *cc = ctx;

	cc->n++;
	vproblem(cc->v, "agent %s: chunk %llu (%.*s): %s", cc->a->name,
	    (unsigned long long)c->idx, SHORT_SHA(c->sha), what);
}

/* Map agent row i's chunks; the hashing and replay run later, in the
 * pool. */
static void
open_file(struct vrun *v, size_t i)
{
	const struct row_agent *a = &v->rows.agents[i];
	struct chunk_ctx cc = { v, a, 0 };
	struct cs_err e;

	if (!a->ok) {
		vproblem(v, "agent %.64s: malformed manifest row (name, size "
		    "or sha256)", a->name);
		return;
	}
	if (a->nchunks == 0) {
		vproblem(v, "agent %s: no chunks recorded for its %llu-byte "
		    "file", a->name, (unsigned long long)a->size);
		return;
	}
	if (fview_open_deferred(v->st, a, &v->fc[i].view, chunk_problem, &cc,
	    &e) < 0) {
		if (cc.n == 0)
			vproblem(v, "agent %s: %s", a->name, e.msg);
		return;
	}
	if ((v->fc[i].bad = calloc(a->nchunks, 1)) == NULL ||
	    (v->fc[i].lerr = calloc(a->nchunks, sizeof(char *))) == NULL) {
		vproblem(v, "agent %s: out of memory", a->name);
		return;
	}
	/* A file restore writes: its whole-file stream (feed_file_hash). */
	if (v->fc[i].sink >= 0) {
		if ((v->fc[i].done = calloc(a->nchunks,
		    sizeof(*v->fc[i].done))) == NULL ||
		    (v->fc[i].fh = sha_new()) == NULL) {
			vproblem(v, "agent %s: out of memory", a->name);
			return;
		}
		atomic_init(&v->fc[i].fhnext, 0);
	}
	v->fc[i].mapped = 1;
}

/* A write to the restore's temp file failed: keep the first error. */
static void
sink_failed(struct fcheck *f, const char *what)
{
	if (atomic_exchange(&f->wfailed, 1) == 0)
		snprintf(f->werr, sizeof(f->werr), "write %s: %s",
		    f->sinkname, what);
}

/* Write a verified chunk to the restore's temp file: its whole pages
 * straight from the view to the disk (O_DIRECT: no copy into the page
 * cache, nothing left for the final fsync; the view and the offsets are
 * page-aligned), the rest, if any, buffered with its write-back started
 * at once. A filesystem that refuses direct writes gets them buffered.
 * 0, or -1 with errno set. */
static int
sink_write(struct fcheck *f, const uint8_t *p, size_t len, uint64_t off)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = 0;

	if (f->dsink >= 0)
		n = len / page * page;
	if (n > 0 && pwrite_all(f->dsink, p, n, (off_t)off) < 0) {
		if (errno != EINVAL)
			return -1;
		n = 0;
	}
	if (n == len)
		return 0;
	if (pwrite_all(f->sink, p + n, len - n, (off_t)(off + n)) < 0)
		return -1;
	(void)sync_file_range(f->sink, (off_t)(off + n), (off_t)(len - n),
	    SYNC_FILE_RANGE_WRITE);
	return 0;
}

/* Under restore only: the file's own sha256 (agents.sha256), the digest
 * the agent kept of its log. The chunks already prove the bytes; this
 * proves the row agrees with them before a file is written from them.
 * It is one stream over the file, so it is fed while the chunks are
 * being loaded: after each chunk, its worker feeds every chunk from the
 * stream's position on that is done, unless another worker is at it
 * (then that one sees this chunk done too: it checks again after
 * letting go). So the stream runs beside the chunk work, on every core,
 * instead of one core reading the whole file after it. */
static void
feed_file_hash(struct fcheck *f, const struct row_agent *a)
{
	const struct row_chunk *c;
	size_t k;

	for (;;) {
		if (pthread_mutex_trylock(&f->fhmu) != 0)
			return;
		while ((k = atomic_load(&f->fhnext)) < a->nchunks &&
		    atomic_load(&f->done[k]) == 1) {
			c = &a->chunks[k];
			if (sha_update(f->fh, f->view.p + c->off,
			    (size_t)c->size) < 0)
				f->hash_failed = 1;
			atomic_store(&f->fhnext, k + 1);
		}
		pthread_mutex_unlock(&f->fhmu);
		if ((k = atomic_load(&f->fhnext)) >= a->nchunks ||
		    atomic_load(&f->done[k]) != 1)
			return;
	}
}

/* Once every chunk is done: the stream's digest, if it covered them. */
static void
hash_file(struct vrun *v, size_t i)
{
	struct fcheck *f = &v->fc[i];

	if (atomic_load(&f->fhnext) == v->rows.agents[i].nchunks &&
	    sha_final(f->fh, f->got) == 0)
		f->hashed = 1;
	else
		f->hash_failed = 1;
}

/* Test hook: CUTSNAP_FAULT=restore-kill-after-chunks:N makes restore
 * exit with status 99 once N chunks were written to its temp files, so
 * the tests can prove that a restore killed in the middle of its one
 * pass leaves every data file as it was. */
static void
fault_after_chunks(struct vrun *v)
{
	const char *f = getenv("CUTSNAP_FAULT");
	const char *pfx = "restore-kill-after-chunks:";

	if (f != NULL && strncmp(f, pfx, strlen(pfx)) == 0 &&
	    (long)atomic_fetch_add(&v->nwritten, 1) + 1 >= atol(f +
	    strlen(pfx)))
		_exit(99);
}

/* Chunk k of agent i: loaded (read and decoded, in a framed repository)
 * and checked against its recorded sha256; under restore, then written
 * to the temp file at its offset while its bytes are still in the cache,
 * with the write-back started at once so the final fsync has little left
 * to do. Every byte of a recorded file is in exactly one chunk
 * (fview_open checked the tiling), and the chunk list is covered by the
 * snapshot's digest, so this checks the whole file; unlike one SHA-256
 * over the file, it runs on every core. Progress counts each chunk once
 * it is hashed. */
static void
hash_chunk(struct vrun *v, size_t i, size_t k, int worker)
{
	const struct row_agent *a = &v->rows.agents[i];
	const struct row_chunk *c = &a->chunks[k];
	struct fcheck *f = &v->fc[i];
	char hex[SHA_HEX_LEN];
	uint8_t sha[SHA_LEN];
	struct cs_err e;
	int rc;

	rc = fview_load(v->st, &f->view, c, &v->bufs[worker], &e);
	if (rc == -1) {
		if ((f->lerr[k] = strdup(e.msg)) == NULL)
			f->hash_failed = 1;
		f->bad[k] = 3;
		if (f->fh != NULL)
			atomic_store(&f->done[k], 2);
		return;
	}
	if (f->fh != NULL) {
		atomic_store(&f->done[k], 1);
		feed_file_hash(f, a);
	}
	if (f->view.damaged != NULL && f->view.damaged[k]) {
		f->bad[k] = 2;	/* its object does not decode */
		progress_add(v->st, a->name, c->size);
		return;
	}
	if (sha256_buf(f->view.p + c->off, (size_t)c->size, sha) < 0) {
		f->hash_failed = 1;	/* a benign race: only ever set */
		return;
	}
	store_name_hex(v->st, sha, hex);
	if (strcmp(hex, c->sha) != 0)
		f->bad[k] = 1;
	else if (f->sink >= 0 && !atomic_load(&f->wfailed)) {
		if (sink_write(f, f->view.p + c->off, (size_t)c->size,
		    c->off) < 0)
			sink_failed(f, strerror(errno));
		fault_after_chunks(v);
	}
	progress_add(v->st, a->name, c->size);
}

/* Replay the recorded file for the cut check and the message replay
 * (keeping only the values the recorded messages to it add to); whether
 * it may be used is decided once its hash is known. */
static void
replay_file(struct vrun *v, size_t i)
{
	const struct row_agent *a = &v->rows.agents[i];
	struct fcheck *f = &v->fc[i];
	char what[128];
	struct cs_err e;

	if (dl_state_init(&f->st, 1) < 0) {
		snprintf(f->err, sizeof(f->err), "out of memory");
		return;
	}
	f->st.keep = keyset_has;
	f->st.keep_ctx = &f->ks;
	snprintf(what, sizeof(what), "recorded file of agent %s", a->name);
	if (dl_replay(f->view.p ? f->view.p : (const uint8_t *)"",
	    (size_t)f->view.len, what, 0, &f->st, NULL, &e) < 0) {
		snprintf(f->err, sizeof(f->err), "%s", e.msg);
		dl_state_free(&f->st);
		return;
	}
	f->have = 1;
}

/* pool.c task t of the list built by plan_tasks: the chunks first, in
 * a pass of their own (a replay needs its whole file loaded), then the
 * whole-file tasks (offset by nchunktasks). */
static void
chunk_task(void *ctx, size_t t, int worker)
{
	struct vrun *v = ctx;
	const struct vtask *task = &v->tasks[t];

	hash_chunk(v, task->agent, (size_t)task->chunk, worker);
}

static void
file_task(void *ctx, size_t t, int worker)
{
	struct vrun *v = ctx;
	const struct vtask *task = &v->tasks[v->nchunktasks + t];
	size_t i = task->agent, k;

	(void)worker;
	/* A chunk that could not be loaded left its part unreadable. */
	for (k = 0; k < v->rows.agents[i].nchunks; k++)
		if (v->fc[i].bad[k] == 3)
			return;
	if (task->chunk == TASK_REPLAY)
		replay_file(v, i);
	else
		hash_file(v, i);
}

static int
cmp_task(const void *x, const void *y)
{
	const struct vtask *a = x, *b = y;

	/* Chunks first, in file order; then the whole-file tasks, longest
	 * first. */
	if ((a->chunk < 0) != (b->chunk < 0))
		return a->chunk < 0 ? 1 : -1;
	if (a->chunk < 0 && a->len != b->len)
		return a->len > b->len ? -1 : 1;
	if (a->agent != b->agent)
		return a->agent < b->agent ? -1 : 1;
	return (a->chunk > b->chunk) - (a->chunk < b->chunk);
}

/* The pool's tasks: one per chunk, then per mapped file its replay and,
 * for a file restore writes, its whole-file hash. */
static int
plan_tasks(struct vrun *v)
{
	size_t i, k, n = 0;

	for (i = 0; i < v->rows.nagents; i++)
		if (v->fc[i].mapped)
			n += 2 + v->rows.agents[i].nchunks;
	if ((v->tasks = calloc(n + 1, sizeof(*v->tasks))) == NULL)
		return -1;
	for (i = 0; i < v->rows.nagents; i++) {
		const struct row_agent *a = &v->rows.agents[i];

		if (!v->fc[i].mapped)
			continue;
		v->tasks[v->ntasks++] = (struct vtask){ i, TASK_REPLAY,
		    a->size };
		if (v->fc[i].sink >= 0)
			v->tasks[v->ntasks++] = (struct vtask){ i,
			    TASK_FILE_HASH, a->size };
		for (k = 0; k < a->nchunks; k++)
			v->tasks[v->ntasks++] = (struct vtask){ i,
			    (int64_t)k, a->chunks[k].size };
		v->nchunktasks += a->nchunks;
	}
	qsort(v->tasks, v->ntasks, sizeof(*v->tasks), cmp_task);
	return 0;
}

static void
report_file(struct vrun *v, size_t i)
{
	const struct row_agent *a = &v->rows.agents[i];
	struct fcheck *f = &v->fc[i];
	char hex[SHA_HEX_LEN], what[CS_ERR_MAX + 32];
	struct cs_err e;
	size_t k, nbad = 0;

	if (!f->mapped)
		return;
	if (f->hash_failed) {
		vproblem(v, "agent %s: sha256 of the recorded file failed",
		    a->name);
		return;
	}
	for (k = 0; k < a->nchunks; k++)
		if (f->bad[k] == 3) {
			/* As fview_open would have said: not the bytes. */
			vproblem(v, "agent %s: chunk %zu (%.*s): %s", a->name,
			    k, SHORT_SHA(a->chunks[k].sha), f->lerr[k]);
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
		if (blob_quarantine(v->st, a->chunks[k].sha, &e) == 0)
			snprintf(what, sizeof(what), "moved to %.300s/quarantine/; "
			    "the next snapshot stores it again from the live "
			    "file", v->st->repo);
		else
			snprintf(what, sizeof(what), "not quarantined: %s",
			    e.msg);
		vproblem(v, "agent %s: chunk %zu (%.*s) %s; blob %s %s",
		    a->name, k, SHORT_SHA(a->chunks[k].sha),
		    f->bad[k] == 2 ? "damaged: its object no longer decodes" :
		    "sha256 mismatch: its bytes no longer hash to its name",
		    a->chunks[k].sha, what);
	}
	if (nbad == 0 && f->hashed) {
		store_name_hex(v->st, f->got, hex);
		if (strcmp(hex, a->sha) != 0) {
			vproblem(v, "agent %s: recorded file sha256 mismatch: "
			    "expected %s, found %s", a->name, a->sha, hex);
			nbad++;
		}
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
			vproblem(v, "message row %lld: malformed (src %.64s, "
			    "dst %.64s, seq)", (long long)m->rowid, m->src,
			    m->dst);
			continue;
		}
		if (m->damaged) {
			vproblem(v, "channel %s->%s: message seq %llu "
			    "damaged: its sealed payload does not open",
			    m->src, m->dst, (unsigned long long)m->seq);
			continue;
		}
		if (sha256_buf(m->data ? m->data : (const uint8_t *)"",
		    m->len, sha) < 0) {
			vproblem(v, "channel %s->%s: message seq %llu: sha256 "
			    "failed", m->src, m->dst,
			    (unsigned long long)m->seq);
			continue;
		}
		store_name_hex(v->st, sha, hex);
		if (strcmp(hex, m->sha) != 0)
			vproblem(v, "channel %s->%s: message seq %llu sha256 "
			    "mismatch: expected %.64s, found %s", m->src,
			    m->dst, (unsigned long long)m->seq, m->sha, hex);
	}
}

static void
check_digest(struct vrun *v)
{
	char hex[SHA_HEX_LEN];
	struct cs_err e;

	if (store_digest(v->st, v->id, hex, &e) < 0)
		vproblem(v, "manifest digest could not be computed: %s",
		    e.msg);
	else if (strcmp(hex, v->rows.digest) != 0)
		vproblem(v, "manifest digest mismatch: rows were edited or "
		    "deleted (expected %.64s, found %s)",
		    v->rows.digest[0] ? v->rows.digest : "none", hex);
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
		if (v->fc[i].tail != NULL ? replay_msgs(&v->fc[i].st, &v->rows,
		    a->name, v->fc[i].tail, v->st->nfn, v->st->nctx, &e) < 0 :
		    replay_msgs(&v->fc[i].st, &v->rows, a->name, NULL, note, v,
		    &e) < 0)
			vproblem(v, "agent %s: the replay of its recorded "
			    "messages fails: %s", a->name, e.msg);
	}
}

static void
bad_key(void *ctx, int64_t id)
{
	vproblem(ctx, "key %lld damaged: its row no longer matches its check "
	    "(remove it with cutsnap key remove)", (long long)id);
}

/* An encrypted repository's key rows, each checked under the master key:
 * a flipped bit in the sealed copy of another password's key shows. */
static void
check_keys(struct vrun *v)
{
	struct cs_err e;

	if (crypt_check_keys(v->st, bad_key, v, &e) < 0)
		vproblem(v, "keys: %s", e.msg);
}

static int run(struct store *st, uint64_t id, uint64_t *resolved,
    const struct vsink *sinks, problem_fn fn, void *ctx, struct cs_err *e);

int
store_verify(struct store *st, uint64_t id, uint64_t *resolved,
    problem_fn fn, void *ctx, struct cs_err *e)
{
	return run(st, id, resolved, NULL, fn, ctx, e);
}

int
verify_restore(struct store *st, uint64_t id, const struct vsink *sinks,
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
	uint64_t rid;
	size_t i, k;
	int rc = -1;

	memset(&v, 0, sizeof(v));
	if (resolved != NULL)
		*resolved = 0;
	if (snap_resolve(st, id, &rid, e) < 0)
		return -1;
	if (resolved != NULL)
		*resolved = rid;
	v.st = st;
	v.id = rid;
	v.fn = fn;
	v.ctx = ctx;
	atomic_init(&v.nwritten, 0);
	if (rows_load(st, rid, &v.rows, e) < 0)
		return -1;
	if (strcmp(v.rows.status, "complete") != 0) {
		vproblem(&v, "status is %s, not complete",
		    v.rows.status[0] ? v.rows.status : "empty");
		rc = v.nproblems;
		goto out;
	}
	if ((v.fc = calloc(v.rows.nagents + 1, sizeof(*v.fc))) == NULL) {
		cs_errf(e, "out of memory");
		goto out;
	}
	for (i = 0; i < v.rows.nagents; i++) {
		v.fc[i].sink = sinks != NULL ? sinks[i].fd : -1;
		v.fc[i].dsink = sinks != NULL ? sinks[i].dfd : -1;
		pthread_mutex_init(&v.fc[i].fhmu, NULL);
		v.fc[i].sinkname = sinks != NULL ? sinks[i].name : NULL;
		v.fc[i].tail = sinks != NULL && sinks[i].fd >= 0 ?
		    sinks[i].tail : NULL;
		atomic_init(&v.fc[i].wfailed, 0);
	}
	check_db(&v);
	for (i = 0; i < v.rows.nagents; i++)
		open_file(&v, i);
	/* Under restore a chunk is hashed and written in one pass: one
	 * count. */
	if (!st->pnested)
		store_progress_start(st, 0);
	for (i = 0; i < v.rows.nagents; i++)
		progress_grow(st, v.rows.agents[i].size);
	if (plan_tasks(&v) < 0) {
		cs_errf(e, "out of memory");
		rc = -1;
		goto out;
	}
	for (i = 0; i < v.rows.nagents; i++)
		if (v.fc[i].mapped && keyset_build(&v.fc[i].ks, &v.rows,
		    v.rows.agents[i].name) < 0) {
			cs_errf(e, "out of memory");
			rc = -1;
			goto out;
		}
	pool_run(v.nchunktasks, chunk_task, &v);
	pool_run(v.ntasks - v.nchunktasks, file_task, &v);
	if (sink_error(&v, e) < 0)
		goto out;
	for (i = 0; i < v.rows.nagents; i++)
		report_file(&v, i);
	check_msgs(&v);
	check_keys(&v);
	check_digest(&v);
	auth_check(&v);
	verify_cut(&v);
	replay_all(&v);
	rc = v.nproblems;
out:
	for (i = 0; v.fc != NULL && i < v.rows.nagents; i++) {
		for (k = 0; v.fc[i].lerr != NULL &&
		    k < v.rows.agents[i].nchunks; k++)
			free(v.fc[i].lerr[k]);
		free(v.fc[i].lerr);
		free(v.fc[i].done);
		sha_free(v.fc[i].fh);
		pthread_mutex_destroy(&v.fc[i].fhmu);
		fview_close(&v.fc[i].view);
		if (v.fc[i].have)
			dl_state_free(&v.fc[i].st);
		free(v.fc[i].bad);
		keyset_free(&v.fc[i].ks);
	}
	free(v.fc);
	free(v.tasks);
	for (i = 0; i < POOL_MAX_THREADS; i++)
		free(v.bufs[i].p);
	rows_free(&v.rows);
	return rc;
}
