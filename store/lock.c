/* lock.c - liveness of a running snapshot: its coordinator holds an flock
 * on REPO/locks/<name>.lock for as long as it works on the snapshot.
 *
 * A snapshot row stays 'running' only while that lock is held. The kernel
 * drops an flock when its holder dies, even by kill -9, so a 'running' row
 * whose lock is free (or whose lock file is gone) belongs to a coordinator
 * that will never commit it: store_reap_stale marks it aborted. This is how
 * `ls`, `verify` and the next `snapshot` never show a dead snapshot as
 * anything but aborted. The file's text (host, pid, time) is for people. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"
#include "../common/fsutil.h"

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

int
lock_acquire(struct store *st, struct cs_err *e)
{
	char dir[PATH_MAX], path[PATH_MAX], host[64], text[256], now[32];
	struct timespec ts;
	int fd = -1, n;

	if (st->lock_fd >= 0)
		return 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	snprintf(st->lock_name, sizeof(st->lock_name), "locks/%ld-%ld%09ld.lock",
	    (long)getpid(), (long)ts.tv_sec, ts.tv_nsec);
	if (snprintf(dir, sizeof(dir), "%s/locks", st->repo) >= (int)sizeof(dir)
	    || snprintf(path, sizeof(path), "%s/%s", st->repo, st->lock_name)
	    >= (int)sizeof(path))
		return cs_errf(e, "repository path too long: %s", st->repo);
	if (mkdir_p(dir, 0700, e) < 0)
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd < 0)
		return cs_errno(e, "repository %s: create lock %s", st->repo,
		    st->lock_name);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		cs_errno(e, "repository %s: lock %s", st->repo, st->lock_name);
		goto fail;
	}
	store_now(now);
	n = snprintf(text, sizeof(text), "host=%s pid=%ld started=%s\n", host,
	    (long)getpid(), now);
	if (write_all(fd, text, (size_t)n) < 0 || fsync(fd) < 0 ||
	    fsync_dir(dir, e) < 0) {
		cs_errno(e, "repository %s: write lock %s", st->repo,
		    st->lock_name);
		goto fail;
	}
	st->lock_fd = fd;
	return 0;
fail:
	unlink(path);
	close(fd);
	return -1;
}

void
lock_release(struct store *st, uint64_t id)
{
	char path[PATH_MAX];

	if (st->lock_fd < 0 || (id != 0 && id != st->lock_snap))
		return;
	if (snprintf(path, sizeof(path), "%s/%s", st->repo, st->lock_name) <
	    (int)sizeof(path))
		unlink(path);
	close(st->lock_fd);
	st->lock_fd = -1;
}

/* 1 if the lock named in a running row is no longer held by anyone. */
static int
lock_is_stale(struct store *st, const char *name)
{
	char path[PATH_MAX];
	int fd, stale;

	if (!valid_lock_name(name) || snprintf(path, sizeof(path), "%s/%s",
	    st->repo, name) >= (int)sizeof(path))
		return 1;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return errno == ENOENT;
	stale = flock(fd, LOCK_SH | LOCK_NB) == 0;
	if (stale)
		unlink(path);	/* under our lock: nobody holds it any more */
	close(fd);
	return stale;
}

int
store_reap_stale(struct store *st, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	uint64_t ids[64];
	size_t n = 0, i;
	int rc = -1;

	if (db_prepare(st, "SELECT id, lock FROM snapshots WHERE status = "
	    "'running' ORDER BY id", &s, e) < 0)
		return -1;
	while (n < sizeof(ids) / sizeof(ids[0]) && sqlite3_step(s) ==
	    SQLITE_ROW) {
		if (sqlite3_column_type(s, 0) != SQLITE_INTEGER)
			continue;
		if (lock_is_stale(st, col_text(s, 1)))
			ids[n++] = (uint64_t)sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	s = NULL;
	for (i = 0; i < n; i++)
		/* "not running any more" is fine: someone else reaped it. */
		(void)store_abort_snapshot(st, ids[i], "coordinator exited "
		    "before the snapshot completed (killed or interrupted)",
		    NULL);
	rc = 0;
	return rc;
}
