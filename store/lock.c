/* lock.c - the repository lock (restic-style) and the liveness of a
 * running snapshot.
 *
 * Each holder of the repository lock owns one file REPO/locks/<name>.lock
 * whose text says "host=H pid=P mode=shared|exclusive started=T" and which
 * it keeps flocked for as long as it holds the lock. Shared locks (snapshot,
 * verify, restore, ls) coexist; an exclusive one (forget, prune) excludes
 * every other. Readers (ls, show, verify, restore) write no file: they
 * hold a shared flock on the REPO directory itself, which works on
 * read-only media and changes nothing, and forget and prune take it
 * exclusively beside their lock file. A holder first publishes its own file, then looks at the
 * others and withdraws on a conflict, so two conflicting holders can both
 * be refused but never both succeed. A file is created under a temporary
 * name and renamed to *.lock only once flocked, so a *.lock file whose
 * flock is free belongs to a dead process: it is stale and removed.
 *
 * The coordinator's lock is also what keeps its snapshot row 'running':
 * the kernel drops an flock when its holder dies, even by kill -9, so a
 * 'running' row whose lock is free (or whose lock file is gone) belongs to
 * a coordinator that will never commit it: store_reap_stale marks it
 * aborted. This is how `ls`, `verify` and the next `snapshot` never show a
 * dead snapshot as anything but aborted. A reader only reports such a
 * row as stale: it writes nothing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"
#include "../lib/fsutil.h"

/* A lock name as stored in the manifest: "locks/" and a plain file name,
 * so a tampered row can never make us open or unlink anything else. */
static int
valid_lock_name(const char *name)
{
	const char *p;

	if (strncmp(name, "locks/", 6) != 0 || name[6] == '\0' ||
	    strlen(name) > 128)
		return 0;
	for (p = name + 6; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
			return 0;
	return strcmp(name + 6, ".") != 0 && strcmp(name + 6, "..") != 0;
}

/* Create, flock and publish our lock file: REPO/<st->lock_name>. */
static int
lock_create(struct store *st, int exclusive, struct cs_err *e)
{
	char dir[PATH_MAX], tmp[PATH_MAX], path[PATH_MAX], host[64];
	char text[256], now[32], base[64];
	struct timespec ts;
	int fd = -1, n;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	snprintf(base, sizeof(base), "%ld-%ld%09ld", (long)getpid(),
	    (long)ts.tv_sec, ts.tv_nsec);
	snprintf(st->lock_name, sizeof(st->lock_name), "locks/%s.lock", base);
	if (snprintf(dir, sizeof(dir), "%s/locks", st->repo) >= (int)sizeof(dir)
	    || snprintf(tmp, sizeof(tmp), "%s/.tmp-%s", dir, base) >=
	    (int)sizeof(tmp)
	    || snprintf(path, sizeof(path), "%s/%s", st->repo, st->lock_name)
	    >= (int)sizeof(path))
		return cs_errf(e, "repository path too long: %s", st->repo);
	if (fs_mkdir_p(dir, 0700, e) < 0)
		return -1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd < 0)
		return cs_errno(e, "repository %s: create a lock in %s",
		    st->repo, dir);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		cs_errno(e, "repository %s: lock %s", st->repo, tmp);
		goto fail;
	}
	store_now(now);
	n = snprintf(text, sizeof(text), "host=%s pid=%ld mode=%s started=%s\n",
	    host, (long)getpid(), exclusive ? "exclusive" : "shared", now);
	if (fs_write_all(fd, text, (size_t)n) < 0 || fsync(fd) < 0) {
		cs_errno(e, "repository %s: write lock %s", st->repo, tmp);
		goto fail;
	}
	if (rename(tmp, path) < 0) {
		cs_errno(e, "repository %s: publish lock %s", st->repo,
		    st->lock_name);
		goto fail;
	}
	if (fs_fsync_dir(dir, e) < 0) {
		unlink(path);
		close(fd);
		return -1;
	}
	st->lock_fd = fd;
	st->lock_excl = exclusive;
	return 0;
fail:
	unlink(tmp);
	close(fd);
	return -1;
}

/* Unlink and close our lock file. */
static void
lock_drop(struct store *st)
{
	char path[PATH_MAX];

	if (st->lock_fd < 0)
		return;
	if (snprintf(path, sizeof(path), "%s/%s", st->repo, st->lock_name) <
	    (int)sizeof(path))
		unlink(path);
	close(st->lock_fd);
	st->lock_fd = -1;
	if (st->lock_excl && st->dir_fd >= 0)
		flock(st->dir_fd, LOCK_UN);
	st->lock_excl = 0;
	st->lock_user = 0;
}

/* One other lock file: 0 stale (removed unless reader) or vanished, 1
 * live (its text in info, *excl set from its mode; a file without a mode
 * counts as shared). */
static int
lock_peek(const char *dir, const char *name, char *info, size_t infosz,
    int *excl, int reader)
{
	char path[PATH_MAX], text[256];
	struct stat sb;
	ssize_t n;
	char *nl;
	int fd, live;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return 0;
	}
	live = flock(fd, LOCK_SH | LOCK_NB) < 0;
	if (!live) {
		if (!reader)
			unlink(path);	/* its holder is dead */
		close(fd);
		return 0;
	}
	n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	if ((nl = strchr(text, '\n')) != NULL)
		*nl = '\0';
	*excl = strstr(text, "mode=exclusive") != NULL;
	snprintf(info, infosz, "%s", text[0] ? text : "unknown holder");
	return 1;
}

/* The one walk over REPO/locks: fn(ctx, info, excl) for each live lock
 * file (lock_peek; a stale one is removed unless reader) but ours when
 * own is set and `keep`, until fn returns non-zero. Returns 1 when fn
 * stopped it, 0 when every file was seen, -1 with errno set when the
 * directory cannot be read (ENAMETOOLONG: the path is too long). */
static int
lock_walk(struct store *st, int own, const char *keep, int reader,
    int (*fn)(void *ctx, const char *info, int excl), void *ctx)
{
	char dir[PATH_MAX], info[256];
	struct dirent *d;
	DIR *dp;
	size_t len;
	int excl, rc = 0;

	if (snprintf(dir, sizeof(dir), "%s/locks", st->repo) >=
	    (int)sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((dp = opendir(dir)) == NULL)
		return -1;
	while (rc == 0 && (d = readdir(dp)) != NULL) {
		len = strlen(d->d_name);
		if (len < 6 || strcmp(d->d_name + len - 5, ".lock") != 0 ||
		    (own && strcmp(d->d_name, st->lock_name + 6) == 0) ||
		    (keep != NULL && strcmp(d->d_name, keep) == 0))
			continue;
		if (lock_peek(dir, d->d_name, info, sizeof(info), &excl,
		    reader) && fn(ctx, info, excl) != 0)
			rc = 1;
	}
	closedir(dp);
	return rc;
}

struct conflict {
	struct store *st;
	struct cs_err *e;
};

/* lock_walk's fn for lock_conflicts: stop, e set, on a conflicting one. */
static int
conflict_one(void *ctx, const char *info, int excl)
{
	struct conflict *c = ctx;

	if (excl)
		return cs_errc(c->e, CS_E_LOCKED, "repository %s is locked "
		    "exclusively by %s (forget or prune); try again once it "
		    "has finished", c->st->repo, info);
	if (c->st->lock_excl)
		return cs_errc(c->e, CS_E_LOCKED, "repository %s is in use by "
		    "%s; try again once it has finished", c->st->repo, info);
	return 0;
}

/* Fail if a live lock other than ours conflicts with our mode (a
 * reader's: shared, and no lock file of its own). */
static int
lock_conflicts(struct store *st, const char *keep, struct cs_err *e)
{
	struct conflict c = { st, e };
	int reader = st->mode == STORE_READ, rc;

	if ((rc = lock_walk(st, !reader, keep, reader, conflict_one,
	    &c)) >= 0)
		return rc > 0 ? -1 : 0;
	if (errno == ENAMETOOLONG)
		return cs_errf(e, "repository path too long: %s", st->repo);
	/* Nobody has ever locked it, or we may not look: the flock on REPO
	 * still keeps forget and prune away. */
	if (reader && (errno == ENOENT || errno == EACCES))
		return 0;
	return cs_errno(e, "repository %s: read %s/locks", st->repo,
	    st->repo);
}

/* flock REPO itself (op LOCK_SH or LOCK_EX), without waiting. */
static int
lock_dir(struct store *st, int op, struct cs_err *e)
{
	if (st->dir_fd < 0 && (st->dir_fd = open(st->repo, O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC)) < 0)
		return cs_errno(e, "repository %s: open", st->repo);
	if (flock(st->dir_fd, op | LOCK_NB) == 0)
		return 0;
	if (errno != EWOULDBLOCK)
		return cs_errno(e, "repository %s: flock", st->repo);
	if (op == LOCK_SH)
		return cs_errc(e, CS_E_LOCKED, "repository %s is locked "
		    "exclusively (forget or prune); try again once it has "
		    "finished", st->repo);
	return cs_errc(e, CS_E_LOCKED, "repository %s is being read "
	    "(ls, show, verify or restore); try again once it has finished",
	    st->repo);
}

/* A reader's hold on REPO: a shared flock on the directory, and no live
 * exclusive lock file. 0, or -1 with e naming the holder. */
static int
store_lock_read(struct store *st, struct cs_err *e)
{
	/* The lock files first, to name a holder when there is one. */
	if (lock_conflicts(st, NULL, e) < 0 || lock_dir(st, LOCK_SH, e) < 0)
		return -1;
	return 0;
}

int
store_lock(struct store *st, int exclusive, struct cs_err *e)
{
	char old_name[sizeof(st->lock_name)];
	int old_fd = st->lock_fd, old_excl = st->lock_excl;

	if (st->mode == STORE_READ) {
		if (exclusive)
			return cs_errf(e, "repository %s was opened to read "
			    "only", st->repo);
		if (st->dir_fd >= 0)
			return 0;
		return store_lock_read(st, e);
	}
	exclusive = exclusive != 0;
	if (st->lock_fd >= 0 && st->lock_excl >= exclusive) {
		st->lock_user = 1;
		return 0;
	}
	/* Upgrade: publish the exclusive lock beside the shared one, which
	 * goes only once the new one stands. */
	memcpy(old_name, st->lock_name, sizeof(old_name));
	st->lock_fd = -1;
	if (lock_create(st, exclusive, e) < 0 ||
	    lock_conflicts(st, old_fd >= 0 ? old_name + 6 : NULL, e) < 0 ||
	    (exclusive && lock_dir(st, LOCK_EX, e) < 0)) {
		lock_drop(st);
		st->lock_fd = old_fd;
		st->lock_excl = old_excl;
		memcpy(st->lock_name, old_name, sizeof(old_name));
		return -1;
	}
	if (old_fd >= 0) {
		char path[PATH_MAX];

		if (snprintf(path, sizeof(path), "%s/%s", st->repo, old_name)
		    < (int)sizeof(path))
			unlink(path);
		close(old_fd);
	}
	st->lock_user = 1;
	return 0;
}

void
store_unlock(struct store *st)
{
	if (st != NULL)
		lock_drop(st);
}

int
store_lock_acquire(struct store *st, struct cs_err *e)
{
	if (st->lock_fd >= 0)
		return 0;
	if (lock_create(st, 0, e) < 0)
		return -1;
	if (lock_conflicts(st, NULL, e) < 0) {
		lock_drop(st);
		return -1;
	}
	return 0;
}

void
store_lock_release(struct store *st, uint64_t id)
{
	if (st->lock_fd < 0 || (id != 0 && id != st->lock_snap))
		return;
	/* A lock taken with store_lock stays until store_unlock/close. */
	if (id != 0 && st->lock_user)
		return;
	lock_drop(st);
}

int
store_lock_is_stale(struct store *st, const char *name)
{
	char path[PATH_MAX];
	int fd, stale;

	if (!valid_lock_name(name) || snprintf(path, sizeof(path), "%s/%s",
	    st->repo, name) >= (int)sizeof(path))
		return 1;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return errno == ENOENT;
	stale = flock(fd, LOCK_SH | LOCK_NB) == 0;
	if (stale && st->mode != STORE_READ)
		unlink(path);	/* under our lock: nobody holds it any more */
	close(fd);
	return stale;
}

/* lock_walk's fn for store_lock_others: any live one will do. */
static int
any_one(void *ctx, const char *info, int excl)
{
	(void)ctx;
	(void)info;
	(void)excl;
	return 1;
}

int
store_lock_others(struct store *st)
{
	return lock_walk(st, st->lock_fd >= 0, NULL, 1, any_one, NULL) > 0;
}
