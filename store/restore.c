/* restore.c - writing a verified snapshot back into a config's data paths
 * and replaying its recorded channel messages into their receivers.
 *
 * Invariants: nothing is written unless the snapshot verifies, the
 * config's agents are the snapshot's, no data file is locked by a running
 * agent and every image could be built; data paths come only from the
 * given config, never from the manifest, lie outside the repository and
 * name distinct files (restore_paths.c); each file is replaced atomically
 * (temp, fsync, rename, fsync dir), so it is either untouched or wholly
 * restored; and an image is a pure function of the snapshot, so running
 * restore again, also after it was killed half-way, yields the same
 * files. A message is appended as an APPLY (or, when its credit cannot
 * be applied, a DEAD) record only when its seq is applied+1 for its
 * channel, so none is ever consumed twice; the record carries the
 * channel's history chain, computed from the recorded message bytes as
 * the live receiver does (chain.h), so the restored receiver and the
 * restored sender agree on it without talking to each other. Every data
 * file to be written is locked first, created empty when missing, so an
 * agent started meanwhile cannot create it underneath. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_int.h"
#include "../log/datalog.h"
#include "../lib/fsutil.h"
#include "../lib/util.h"

/* rowof[i]: the agent row of config agent i. Both sets must be equal. */
static int
match_agents(const struct snap_rows *r, const struct cfg *c, int *rowof,
    struct cs_err *e)
{
	size_t k;
	int i;

	for (i = 0; i < c->nagents; i++) {
		rowof[i] = -1;
		for (k = 0; k < r->nagents; k++)
			if (strcmp(r->agents[k].name, c->agents[i].name) == 0)
				rowof[i] = (int)k;
		if (rowof[i] < 0 || !r->agents[rowof[i]].ok)
			return cs_errf(e, "config %s has agent %s, which "
			    "snapshot %llu does not have", c->path,
			    c->agents[i].name, (unsigned long long)r->id);
	}
	for (k = 0; k < r->nagents; k++)
		if (cfg_find(c, r->agents[k].name) < 0)
			return cs_errf(e, "snapshot %llu has agent %.64s, which "
			    "config %s does not have", (unsigned long long)r->id,
			    r->agents[k].name, c->path);
	return 0;
}

/* Open data file path to lock it: the existing file, or a new empty one
 * (directories made as needed), *made set. -1 with e set. */
static int
open_for_lock(const char *path, int *made, struct cs_err *e)
{
	char dir[PATH_MAX];
	int fd;

	*made = 0;
	fs_path_dirname(path, dir, sizeof(dir));
	if (fs_mkdir_p(dir, 0700, e) < 0)
		return -1;
	for (;;) {
		if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) >= 0)
			return fd;
		if (errno != ENOENT)
			break;
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (fd >= 0) {
			*made = 1;
			return fd;
		}
		if (errno != EEXIST)	/* else an agent just made it */
			break;
	}
	return cs_errno(e, "open %s", path);
}

/* Lock every data file to be written (want[i]) the way an agent does, and
 * keep the locks until the end: an agent that starts meanwhile fails on
 * its lock rather than writing to a file about to be replaced. A missing
 * file is created empty and locked too (made[i]), or an agent could create
 * it and write to it, and restore would then replace it underneath. */
static int
lock_all(const struct cfg *c, const int *want, int *fds, int *made,
    struct cs_err *e)
{
	int i;

	for (i = 0; i < c->nagents; i++) {
		if (!want[i])
			continue;
		if ((fds[i] = open_for_lock(c->agents[i].data, &made[i],
		    e)) < 0)
			return -1;
		if (flock(fds[i], LOCK_EX | LOCK_NB) < 0) {
			if (errno == EWOULDBLOCK)
				return cs_errf(e, "agent %s is running (data "
				    "file %s is locked); stop the cluster "
				    "first", c->agents[i].name,
				    c->agents[i].data);
			return cs_errno(e, "lock %s", c->agents[i].data);
		}
	}
	return 0;
}

/* Test hook: CUTSNAP_FAULT=restore-after-file:N makes the process exit
 * with status 99 right after the N-th file was renamed into place, so the
 * tests can prove that a restore killed half-way leaves whole files and
 * that running it again finishes the job. */
static void
fault_after_file(int nth)
{
	char v[32];

	if (cs_fault_value("restore-after-file", v, sizeof(v)) != NULL &&
	    atoi(v) == nth)
		_exit(99);
}

/* Test hook: CUTSNAP_FAULT=restore-hold-while:PATH makes restore wait,
 * once it holds every data file's lock and before it writes, for as long
 * as PATH exists (at most a minute), so the tests can start an agent in
 * the middle of a restore. */
static void
fault_hold_while(void)
{
	char path[PATH_MAX];
	int n;

	if (cs_fault_value("restore-hold-while", path, sizeof(path)) == NULL)
		return;
	for (n = 0; n < 1200 && access(path, F_OK) == 0; n++)
		cs_sleep_ms(50);
}

/* The temp file beside data path path that the verified chunks are
 * written to, its name in tmp. A restore killed while writing left its
 * temp file; we hold the data file's lock, so no other writer owns one. */
static int
open_temp(const char *path, char *tmp, size_t tmpsz, struct cs_err *e)
{
	char dir[PATH_MAX];

	fs_path_dirname(path, dir, sizeof(dir));
	if (fs_mkdir_p(dir, 0700, e) < 0 || fs_remove_stale_temps(path, e) < 0)
		return -1;
	return atomic_tmp_open(path, 0600, tmp, tmpsz, e);
}

/* A second descriptor of the temp file tmp (open as fd), with O_DIRECT,
 * for the verified chunks (verify.c's sink_write); -1 where the
 * filesystem refuses O_DIRECT (tmpfs) or the name no longer names fd's
 * file: then every chunk is written buffered through fd. */
static int
open_direct(const char *tmp, int fd)
{
	struct stat a, b;
	int dfd;

	if ((dfd = open(tmp, O_WRONLY | O_DIRECT | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return -1;
	if (fstat(fd, &a) < 0 || fstat(dfd, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		close(dfd);
		return -1;
	}
	return dfd;
}

/* Finishing the temp files, one pool task each: the replay's records
 * after the file's bytes, then fsync (most of the bytes are on their way
 * already) and close. */
struct finish {
	const struct cfg *c;
	const int *want;
	int *tfd;
	char (*tmp)[PATH_MAX];
	const uint64_t *size;	/* per config agent: its recorded size */
	struct wbuf *tails;
	char (*err)[CS_ERR_MAX];
};

static void
finish_task(void *ctx, size_t i, int worker)
{
	struct finish *f = ctx;
	int fd = f->tfd[i];

	(void)worker;
	if (!f->want[i])
		return;
	f->tfd[i] = -1;
	if (f->tails[i].len > 0 && pwrite_all(fd, f->tails[i].data,
	    f->tails[i].len, (off_t)f->size[i]) < 0)
		snprintf(f->err[i], CS_ERR_MAX, "write %s: %s", f->tmp[i],
		    strerror(errno));
	/* An fsync failure may have dropped the dirty pages: retrying could
	 * "succeed" without the data, so the whole restore fails. */
	else if (fsync(fd) < 0)
		snprintf(f->err[i], CS_ERR_MAX, "fsync %s: %s", f->tmp[i],
		    strerror(errno));
	if (close(fd) < 0 && f->err[i][0] == '\0')
		snprintf(f->err[i], CS_ERR_MAX, "close %s: %s", f->tmp[i],
		    strerror(errno));
}

/* want[i]: config agent i is restored (all of them when nonly is 0).
 * -1 with e set if a name is not an agent of c. */
static int
pick_agents(const struct cfg *c, const char *const *only, size_t nonly,
    int *want, struct cs_err *e)
{
	size_t k;
	int i;

	for (i = 0; i < c->nagents; i++)
		want[i] = nonly == 0;
	for (k = 0; k < nonly; k++) {
		if ((i = cfg_find(c, only[k])) < 0)
			return cs_errf(e, "config %s has no agent %s", c->path,
			    only[k]);
		want[i] = 1;
	}
	return 0;
}

/* 1 when some of c's agents are restored and others are not: the others
 * may have moved on since the snapshot, and a restored agent that spent
 * its recorded balance again over a channel without traffic since the
 * cut would create value. Such files end with a FENCE record: the agent
 * sends, applies and joins snapshots only once every one of its
 * channels has checked its history with the peer (INTERNALS.md,
 * "Fencing a partial restore"). A whole restore needs none: every file
 * comes from one cut. */
static int
partial_restore(const struct cfg *c, const int *want)
{
	int i, n = 0;

	for (i = 0; i < c->nagents; i++)
		n += want[i] != 0;
	return n > 0 && n < c->nagents;
}

/* Append FENCE(on, snapshot id) to a restored file's tail: a pure
 * function of the snapshot, so restoring again yields the same file. */
static int
append_fence(struct wbuf *tail, uint64_t id)
{
	struct dl_record rec;

	memset(&rec, 0, sizeof(rec));
	rec.type = DL_FENCE;
	rec.code = 1;
	rec.seq = id;
	dl_encode(tail, &rec);
	return tail->oom ? -1 : 0;
}

/* The note a partial restore gives: what the fence means, what to do. */
static void
fence_note(struct store *st, const struct cfg *c, const int *want,
    uint64_t rid)
{
	char names[512], line[1024];
	size_t used = 0;
	int i, w;

	if (st->nfn == NULL)
		return;
	names[0] = '\0';
	for (i = 0; i < c->nagents; i++) {
		if (!want[i])
			continue;
		w = snprintf(names + used, sizeof(names) - used, "%s%s",
		    used ? " " : "", c->agents[i].name);
		if (w > 0 && (size_t)w < sizeof(names) - used)
			used += (size_t)w;
	}
	snprintf(line, sizeof(line), "restored without the rest of the "
	    "cluster (%s): each starts fenced (no transfer, no snapshot) "
	    "until every channel of it has checked its history with the "
	    "peer; if the other agents moved on since snapshot %llu, restore "
	    "them from it too", names, (unsigned long long)rid);
	st->nfn(st->nctx, line);
}

/* After a failed restore: remove the empty files lock_all created and
 * nothing replaced (still the same inode, still empty). */
static void
unmake(const struct cfg *c, const int *fds, const int *made)
{
	struct stat a, b;
	int i;

	for (i = 0; i < c->nagents; i++)
		if (made[i] && fds[i] >= 0 && fstat(fds[i], &a) == 0 &&
		    a.st_size == 0 && lstat(c->agents[i].data, &b) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			(void)unlink(c->agents[i].data);
}

/* Restore refused before writing: a snapshot that fails verification
 * says so (and names its problems) rather than what it made go wrong
 * (a malformed agent row that matches no config agent), as when verify
 * ran first. e is replaced only then. */
static void
prefer_verify_error(struct store *st, uint64_t rid, problem_fn fn,
    void *ctx, struct cs_err *e)
{
	struct cs_err ve;
	int n;

	st->pnested = 1;
	n = store_verify(st, rid, NULL, fn, ctx, &ve);
	st->pnested = 0;
	if (n > 0)
		cs_errf(e, "snapshot %llu failed verification; nothing was "
		    "restored", (unsigned long long)rid);
}

int
store_restore(struct store *st, uint64_t id, const struct cfg *c,
    uint64_t *resolved, problem_fn fn, void *ctx, struct cs_err *e)
{
	return store_restore_agents(st, id, c, NULL, 0, resolved, fn, ctx, e);
}

int
store_restore_agents(struct store *st, uint64_t id, const struct cfg *c,
    const char *const *only, size_t nonly, uint64_t *resolved,
    problem_fn fn, void *ctx, struct cs_err *e)
{
	struct snap_rows r;
	struct wbuf *tails = NULL;
	struct vsink *sinks = NULL;
	struct finish fin;
	char (*tmp)[PATH_MAX] = NULL, (*err)[CS_ERR_MAX] = NULL;
	uint64_t *size = NULL;
	int *rowof = NULL, *fds = NULL, *want = NULL, *made = NULL;
	int *tfd = NULL, *dfd = NULL;
	int i, n, k = 0, rc = -1;
	size_t j;
	uint64_t rid;

	memset(&r, 0, sizeof(r));
	if (resolved != NULL)
		*resolved = 0;
	if (store_snap_resolve(st, id, &rid, e) < 0)
		return -1;
	if (resolved != NULL)
		*resolved = rid;
	/* One progress count: each chunk is hashed and written together. */
	store_progress_start(st, 0);
	if (store_rows_load(st, rid, &r, e) < 0)
		return -1;
	rowof = calloc((size_t)c->nagents, sizeof(*rowof));
	fds = malloc((size_t)c->nagents * sizeof(*fds));
	tfd = malloc((size_t)c->nagents * sizeof(*tfd));
	dfd = malloc((size_t)c->nagents * sizeof(*dfd));
	want = calloc((size_t)c->nagents, sizeof(*want));
	made = calloc((size_t)c->nagents, sizeof(*made));
	tmp = calloc((size_t)c->nagents, sizeof(*tmp));
	err = calloc((size_t)c->nagents, sizeof(*err));
	size = calloc((size_t)c->nagents, sizeof(*size));
	tails = calloc((size_t)c->nagents, sizeof(*tails));
	sinks = calloc(r.nagents + 1, sizeof(*sinks));
	if (rowof == NULL || fds == NULL || tfd == NULL || dfd == NULL ||
	    want == NULL || made == NULL || tmp == NULL || err == NULL ||
	    size == NULL || tails == NULL || sinks == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < c->nagents; i++)
		fds[i] = tfd[i] = dfd[i] = -1;
	for (j = 0; j < r.nagents; j++)
		sinks[j].fd = sinks[j].dfd = -1;
	if (pick_agents(c, only, nonly, want, e) < 0 ||
	    match_agents(&r, c, rowof, e) < 0 ||
	    store_check_paths(st, c, e) < 0 ||
	    lock_all(c, want, fds, made, e) < 0) {
		prefer_verify_error(st, rid, fn, ctx, e);
		goto out;
	}
	fault_hold_while();
	/* One pass: verify reads each chunk once, checks it and writes it to
	 * its file's temp file (O_DIRECT where it can), and replays the file
	 * from the checked chunks; nothing is renamed into place unless the
	 * whole snapshot verified and every temp file is complete and on
	 * disk. No recorded file is held whole: memory holds a few chunks
	 * per worker and file, and the APPLY tails. */
	for (i = 0; i < c->nagents; i++) {
		if (!want[i])
			continue;
		if ((tfd[i] = open_temp(c->agents[i].data, tmp[i],
		    sizeof(tmp[i]), e)) < 0)
			goto out;
		dfd[i] = open_direct(tmp[i], tfd[i]);
		size[i] = r.agents[rowof[i]].size;
		sinks[rowof[i]] = (struct vsink){ tfd[i], dfd[i], tmp[i],
		    &tails[i] };
	}
	st->pnested = 1;
	n = store_verify_restore(st, rid, sinks, fn, ctx, e);
	st->pnested = 0;
	for (i = 0; i < c->nagents; i++)
		if (dfd[i] >= 0) {
			(void)close(dfd[i]);	/* its writes are done */
			dfd[i] = -1;
		}
	if (n < 0)
		goto out;
	if (n > 0) {
		cs_errf(e, "snapshot %llu failed verification; nothing "
		    "was restored", (unsigned long long)rid);
		goto out;
	}
	if (partial_restore(c, want)) {
		for (i = 0; i < c->nagents; i++)
			if (want[i] && append_fence(&tails[i], rid) < 0) {
				cs_errc(e, CS_E_NOMEM, "out of memory");
				goto out;
			}
		fence_note(st, c, want, rid);
	}
	fin = (struct finish){ c, want, tfd, tmp, size, tails, err };
	store_pool_run((size_t)c->nagents, finish_task, &fin);
	for (i = 0; i < c->nagents; i++)
		if (err[i][0] != '\0') {
			cs_errf(e, "%s", err[i]);
			goto out;
		}
	for (i = 0; i < c->nagents; i++) {
		if (!want[i])
			continue;
		n = atomic_tmp_commit(tmp[i], c->agents[i].data, e);
		tmp[i][0] = '\0';	/* renamed, or removed */
		if (n < 0)
			goto out;
		fault_after_file(++k);
	}
	rc = 0;
out:
	if (rc < 0 && made != NULL && fds != NULL)
		unmake(c, fds, made);
	for (i = 0; tfd != NULL && i < c->nagents; i++)
		if (tfd[i] >= 0)
			close(tfd[i]);
	for (i = 0; dfd != NULL && i < c->nagents; i++)
		if (dfd[i] >= 0)
			close(dfd[i]);
	for (i = 0; tmp != NULL && i < c->nagents; i++)
		if (tmp[i][0] != '\0')
			(void)unlink(tmp[i]);
	for (i = 0; fds != NULL && i < c->nagents; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	free(tfd);
	free(dfd);
	free(rowof);
	free(want);
	free(made);
	free(tmp);
	free(err);
	free(size);
	for (i = 0; tails != NULL && i < c->nagents; i++)
		wbuf_free(&tails[i]);
	free(tails);
	free(sinks);
	store_rows_free(&r);
	return rc;
}
