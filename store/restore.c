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
#include <time.h>
#include <unistd.h>

#include "store_int.h"
#include "../common/datalog.h"
#include "../common/fsutil.h"

/* The restored file of agent row a: its recorded file (mapped in *view,
 * left open for the write) and, in tail, an APPLY or DEAD record for
 * every recorded message to it that its applied seq has not covered
 * (replay.c). */
static int
build_image(struct store *st, const struct snap_rows *r,
    const struct row_agent *a, struct fview *view, struct wbuf *tail,
    struct cs_err *e)
{
	struct keyset ks = { NULL, 0 };
	struct dl_state ds;
	char what[128];
	int have = 0, rc = -1;

	wbuf_reset(tail);
	if (fview_open(st, a, view, NULL, NULL, e) < 0) {
		cs_errctx(e, "agent %s", a->name);
		goto out;
	}
	if (view->p == NULL) {
		cs_errf(e, "agent %s: recorded file changed since it was "
		    "verified", a->name);
		goto out;
	}
	if (keyset_build(&ks, r, a->name) < 0 || dl_state_init(&ds, 0) < 0) {
		cs_errf(e, "out of memory");
		goto out;
	}
	have = 1;
	ds.keep = keyset_has;
	ds.keep_ctx = &ks;
	snprintf(what, sizeof(what), "recorded file of agent %s", a->name);
	if (dl_replay(view->p, (size_t)view->len, what, 0, &ds, NULL, e) < 0)
		goto out;
	if (replay_msgs(&ds, r, a->name, tail, st->nfn, st->nctx, e) < 0)
		goto out;
	rc = 0;
out:
	if (have)
		dl_state_free(&ds);
	keyset_free(&ks);
	return rc;
}

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
	path_dirname(path, dir, sizeof(dir));
	if (mkdir_p(dir, 0700, e) < 0)
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
	const char *f = getenv("CUTSNAP_FAULT");
	const char *pfx = "restore-after-file:";

	if (f != NULL && strncmp(f, pfx, strlen(pfx)) == 0 &&
	    atoi(f + strlen(pfx)) == nth)
		_exit(99);
}

/* Test hook: CUTSNAP_FAULT=restore-hold-while:PATH makes restore wait,
 * once it holds every data file's lock and before it writes, for as long
 * as PATH exists (at most a minute), so the tests can start an agent in
 * the middle of a restore. */
static void
fault_hold_while(void)
{
	const char *f = getenv("CUTSNAP_FAULT");
	const char *pfx = "restore-hold-while:";
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	int n;

	if (f == NULL || strncmp(f, pfx, strlen(pfx)) != 0)
		return;
	for (n = 0; n < 1200 && access(f + strlen(pfx), F_OK) == 0; n++)
		(void)nanosleep(&ts, NULL);
}

static int
write_image(const char *path, const struct fview *view,
    const struct wbuf *tail, struct cs_err *e)
{
	char dir[PATH_MAX];

	path_dirname(path, dir, sizeof(dir));
	if (mkdir_p(dir, 0700, e) < 0)
		return -1;
	/* A restore killed while writing left its temp file; we hold the
	 * data file's lock, so no other writer owns one. */
	if (remove_stale_temps(path, e) < 0)
		return -1;
	return atomic_write_file2(path, view->p, (size_t)view->len,
	    tail->data, tail->len, 0600, e);
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
	struct fview *views = NULL;
	struct wbuf *tails = NULL;
	int *rowof = NULL, *fds = NULL, *want = NULL, *made = NULL;
	int i, n, k = 0, rc = -1;
	uint64_t rid;

	memset(&r, 0, sizeof(r));
	if (resolved != NULL)
		*resolved = 0;
	if (snap_resolve(st, id, &rid, e) < 0)
		return -1;
	if (resolved != NULL)
		*resolved = rid;
	/* One progress count for verifying and then writing. */
	store_progress_start(st, 0);
	st->pnested = 1;
	n = store_verify(st, rid, NULL, fn, ctx, e);
	st->pnested = 0;
	if (n < 0)
		return -1;
	if (n > 0)
		return cs_errf(e, "snapshot %llu failed verification; nothing "
		    "was restored", (unsigned long long)rid);
	if (rows_load(st, rid, &r, e) < 0)
		return -1;
	rowof = calloc((size_t)c->nagents, sizeof(*rowof));
	fds = malloc((size_t)c->nagents * sizeof(*fds));
	want = calloc((size_t)c->nagents, sizeof(*want));
	made = calloc((size_t)c->nagents, sizeof(*made));
	views = calloc((size_t)c->nagents, sizeof(*views));
	tails = calloc((size_t)c->nagents, sizeof(*tails));
	if (rowof == NULL || fds == NULL || want == NULL || made == NULL ||
	    views == NULL || tails == NULL) {
		cs_errf(e, "out of memory");
		goto out;
	}
	for (i = 0; i < c->nagents; i++)
		fds[i] = -1;
	if (pick_agents(c, only, nonly, want, e) < 0 ||
	    match_agents(&r, c, rowof, e) < 0 ||
	    store_check_paths(st, c, e) < 0 ||
	    lock_all(c, want, fds, made, e) < 0)
		goto out;
	/* First build every image without writing, so that a snapshot that
	 * cannot be restored leaves every file untouched. The recorded files
	 * stay mapped, not copied: memory holds only the APPLY tails. */
	for (i = 0; i < c->nagents; i++)
		if (want[i] && build_image(st, &r, &r.agents[rowof[i]],
		    &views[i], &tails[i], e) < 0)
			goto out;
	fault_hold_while();
	for (i = 0; i < c->nagents; i++) {
		if (!want[i])
			continue;
		if (write_image(c->agents[i].data, &views[i], &tails[i],
		    e) < 0)
			goto out;
		progress_add(st, c->agents[i].name, r.agents[rowof[i]].size);
		fault_after_file(++k);
	}
	rc = 0;
out:
	if (rc < 0 && made != NULL && fds != NULL)
		unmake(c, fds, made);
	for (i = 0; fds != NULL && i < c->nagents; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	free(rowof);
	free(want);
	free(made);
	for (i = 0; views != NULL && i < c->nagents; i++)
		fview_close(&views[i]);
	for (i = 0; tails != NULL && i < c->nagents; i++)
		wbuf_free(&tails[i]);
	free(views);
	free(tails);
	rows_free(&r);
	return rc;
}
