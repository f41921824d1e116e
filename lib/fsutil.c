/* fsutil.c - durable file helpers: full writes (to a socket too), directory
 * fsync, atomic replacement, mkdir -p, capped whole-file reads. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"

/* The one write-all loop: write(2), or with sock send(2) with
 * MSG_NOSIGNAL (write on what is no socket, ENOTSOCK). */
static int
write_all(int fd, const void *p, size_t n, int sock)
{
	const uint8_t *q = p;
	ssize_t w;

	while (n > 0) {
		w = sock ? send(fd, q, n, MSG_NOSIGNAL) : write(fd, q, n);
		if (w == -1 && sock && errno == ENOTSOCK) {
			sock = 0;
			continue;
		}
		if (w == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		q += w;
		n -= (size_t)w;
	}
	return 0;
}

int
fs_write_all(int fd, const void *p, size_t n)
{
	return write_all(fd, p, n, 0);
}

int
fs_send_all(int fd, const void *p, size_t n)
{
	return write_all(fd, p, n, 1);
}

int
fs_pread_all(int fd, void *p, size_t n, off_t off)
{
	uint8_t *q = p;
	ssize_t r;

	while (n > 0) {
		r = pread(fd, q, n, off);
		if (r == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0) {
			/* EOF before n bytes: say so through errno too. */
			errno = ENODATA;
			return -1;
		}
		q += r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

int
pwrite_all(int fd, const void *p, size_t n, off_t off)
{
	const uint8_t *q = p;
	ssize_t r;

	while (n > 0) {
		r = pwrite(fd, q, n, off);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO;
			return -1;
		}
		q += r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

int
fs_fsync_dir(const char *dir, struct cs_err *e)
{
	int fd, rc = -1;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		cs_errno(e, "open directory %s", dir);
		goto out;
	}
	if (fsync(fd) == -1) {
		cs_errno(e, "fsync directory %s", dir);
		goto out;
	}
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	return rc;
}

void
fs_path_dirname(const char *path, char *out, size_t outsz)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (outsz == 0)
		return;
	if (slash == NULL) {
		snprintf(out, outsz, ".");
		return;
	}
	/* Drop the last component; keep "/" for a file in the root. Repeated
	 * slashes before it ("a//b") are dropped too. */
	while (slash > path && slash[-1] == '/')
		slash--;
	n = (size_t)(slash - path);
	if (n == 0)
		n = 1;
	if (n >= outsz)
		n = outsz - 1;
	memcpy(out, path, n);
	out[n] = '\0';
}

int
fs_mkdir_p(const char *path, mode_t mode, struct cs_err *e)
{
	char buf[PATH_MAX];
	struct stat st;
	size_t len = strlen(path);
	char *p;

	if (len == 0)
		return cs_errf(e, "mkdir: empty path");
	if (len >= sizeof(buf))
		return cs_errf(e, "mkdir %s: path too long", path);
	memcpy(buf, path, len + 1);
	/* Create each prefix ending before a '/', then the whole path. */
	for (p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		if (p[-1] != '/') {
			char c = *p;

			*p = '\0';
			if (mkdir(buf, mode) == -1 && errno != EEXIST)
				return cs_errno(e, "mkdir %s", buf);
			if (stat(buf, &st) == -1)
				return cs_errno(e, "stat %s", buf);
			if (!S_ISDIR(st.st_mode))
				return cs_errf(e, "mkdir %s: not a directory",
				    buf);
			*p = c;
		}
		if (*p == '\0')
			break;
	}
	return 0;
}

int
fs_atomic_write_file(const char *path, const void *data, size_t len,
    mode_t mode, struct cs_err *e)
{
	return fs_atomic_write_file2(path, data, len, NULL, 0, mode, e);
}

int
atomic_tmp_open(const char *path, mode_t mode, char *tmp, size_t tmpsz,
    struct cs_err *e)
{
	int fd;

	/* A random suffix, not the pid: a writer killed with -9 leaves its
	 * temp behind, and pids wrap, so a later writer with the same pid
	 * would find the name taken. */
	if ((size_t)snprintf(tmp, tmpsz, "%s" ATOMIC_TMP_INFIX "XXXXXX",
	    path) >= tmpsz)
		return cs_errf(e, "write %s: path too long", path);
	/* mkostemp creates with O_EXCL, so it never writes through a
	 * planted file or link. */
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1)
		return cs_errno(e, "create %s", tmp);
	if (fchmod(fd, mode) == -1) {
		cs_errno(e, "chmod %s", tmp);
		close(fd);
		unlink(tmp);
		return -1;
	}
	return fd;
}

int
atomic_tmp_commit(const char *tmp, const char *path, struct cs_err *e)
{
	char dir[PATH_MAX];

	if (rename(tmp, path) == -1) {
		cs_errno(e, "rename %s to %s", tmp, path);
		unlink(tmp);
		return -1;
	}
	fs_path_dirname(path, dir, sizeof(dir));
	return fs_fsync_dir(dir, e);
}

int
fs_atomic_write_file2(const char *path, const void *data, size_t len,
    const void *data2, size_t len2, mode_t mode, struct cs_err *e)
{
	char tmp[PATH_MAX];
	int fd, rc = -1, created = 1;

	if ((fd = atomic_tmp_open(path, mode, tmp, sizeof(tmp), e)) == -1)
		return -1;
	if (fs_write_all(fd, data, len) == -1 ||
	    (len2 > 0 && fs_write_all(fd, data2, len2) == -1)) {
		cs_errno(e, "write %s", tmp);
		goto out;
	}
	/* An fsync failure may have dropped the dirty pages: retrying could
	 * "succeed" without the data, so the whole operation fails. */
	if (fsync(fd) == -1) {
		cs_errno(e, "fsync %s", tmp);
		goto out;
	}
	if (close(fd) == -1) {
		fd = -1;
		cs_errno(e, "close %s", tmp);
		goto out;
	}
	fd = -1;
	created = 0;	/* renamed, or removed on failure */
	if (atomic_tmp_commit(tmp, path, e) == -1)
		goto out;
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	if (created)
		unlink(tmp);
	return rc;
}

int
fs_remove_stale_temps(const char *path, struct cs_err *e)
{
	char dir[PATH_MAX], prefix[PATH_MAX];
	const char *base;
	struct dirent *d;
	DIR *dp;
	int dfd, rc = 0;

	fs_path_dirname(path, dir, sizeof(dir));
	base = strrchr(path, '/');
	base = base != NULL ? base + 1 : path;
	if ((size_t)snprintf(prefix, sizeof(prefix), "%s" ATOMIC_TMP_INFIX,
	    base) >= sizeof(prefix))
		return cs_errf(e, "clean %s: path too long", path);
	if ((dp = opendir(dir)) == NULL) {
		if (errno == ENOENT)
			return 0;
		return cs_errno(e, "open directory %s", dir);
	}
	dfd = dirfd(dp);
	while ((d = readdir(dp)) != NULL) {
		if (strncmp(d->d_name, prefix, strlen(prefix)) != 0)
			continue;
		/* unlinkat removes a link itself, never what it names. */
		if (unlinkat(dfd, d->d_name, 0) == -1 && errno != ENOENT) {
			rc = cs_errno(e, "remove %s/%s", dir, d->d_name);
			break;
		}
	}
	closedir(dp);
	return rc;
}

int
fs_read_file(const char *path, size_t max, uint8_t **out, size_t *len,
    struct cs_err *e)
{
	uint8_t *p = NULL, *np;
	size_t n = 0, cap = 0;
	ssize_t r;
	int fd, rc = -1;

	*out = NULL;
	*len = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		cs_errno(e, "open %s", path);
		goto out;
	}
	/* Read until EOF rather than trusting st_size: works for pipes and
	 * files that grow, and the cap is enforced on what is really read. */
	for (;;) {
		if (n == cap) {
			/* Room for max+1 bytes at most: one byte past the
			 * cap is how an oversized file shows itself. */
			cap = cap ? cap * 2 : 4096;
			if (max < SIZE_MAX && cap > max + 1)
				cap = max + 1;
			if ((np = realloc(p, cap)) == NULL) {
				cs_errno(e, "read %s", path);
				goto out;
			}
			p = np;
		}
		r = read(fd, p + n, cap - n);
		if (r == -1) {
			if (errno == EINTR)
				continue;
			cs_errno(e, "read %s", path);
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			cs_errf(e, "read %s: larger than %zu bytes", path, max);
			goto out;
		}
	}
	*out = p;
	*len = n;
	p = NULL;
	rc = 0;
out:
	free(p);
	if (fd != -1)
		close(fd);
	return rc;
}
