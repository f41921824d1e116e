/* verify.c - the integrity half of verify: the manifest database, the
 * recorded files' chunks, the messages' hashes and the snapshot's
 * digest, run as one pool of tasks (the chunk checks, vchunk.c, and the
 * replays of the files, handoff.c; restore's sinks, vsink.c). The
 * consistency of the cut is in verify_cut.c. Every problem is one line
 * (vproblem.c); nothing in a tampered repository may crash it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "verify_int.h"
#include "../lib/bigbuf.h"
#include "../log/crcblk.h"
#include "../log/datalog.h"

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
	if (store_handoff_replay(v, i, worker, NULL, &f->st, f->err,
	    sizeof(f->err)) == 0)
		f->have = 1;
	store_handoff_end(v, i);
}

int
store_verify_resend(struct vrun *v, size_t i, const struct wm_set *from)
{
	struct fcheck *f = &v->fc[i];
	struct dl_state st;

	if (store_handoff_replay(v, i, -1, from, &st, f->err,
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

	store_handoff_offer(v, task->agent, (size_t)task->chunk, worker);
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
		if (v.fc[i].mapped && store_handoff_init(&v, i) < 0) {
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
	if (store_blob_remote(st))
		/* Chunks come from an object store: a worker waits on its
		 * GET most of the time, and more of them in flight keep the
		 * cores decoding and hashing. */
		store_pool_run_remote(v.ntasks, any_task, &v);
	else if (sinks != NULL)
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
	if (store_vsink_error(&v, e) < 0)
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
		store_handoff_free(&v, i);
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
