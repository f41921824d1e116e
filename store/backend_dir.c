/* backend_dir.c - the backend of a repository directory, a bucket in a
 * directory (as restic's local backend): each key is the file DIR/KEY.
 * Several threads and processes may use one directory at once.
 *
 * Invariants:
 * - An object is only ever replaced whole: put writes a temporary file
 *   (".tmp-XXXXXX" in the key's directory, which list skips), fsyncs it
 *   and renames it over the key (ANY, IFMATCH) or links it there
 *   (CREATE), then fsyncs the directory. A reader sees the old object
 *   or the new one, never a mixture, and no file is written in place.
 * - Every change of a key (rename, link, unlink) happens under an
 *   exclusive flock on DIR/.backend-lock, held for that step alone (and
 *   IFMATCH's compare before it), never while data is written. So an
 *   IFMATCH compare-and-rename is atomic against every other put and
 *   delete of any process. flock belongs to an open file description:
 *   each call opens the lock file itself, so threads of one process
 *   exclude each other too.
 * - A version's tag is the hex of st_dev, st_ino, st_size and st_mtim
 *   (seconds and nanoseconds). Each put makes a new inode (its temp
 *   file), so a replaced object has another tag, except when the new
 *   inode reuses the number of the one it replaced or of an older one
 *   (ext4 does). Put therefore sets the temp file's mtime itself, from
 *   CLOCK_REALTIME read after the file was created: an inode number is
 *   free again only after its old object was replaced, which is after
 *   that object's mtime was read, so the new object's mtime is later.
 *   (The kernel's own file times may come from a coarse clock, a tick
 *   of some milliseconds, and let two quick versions share a tag.) On a
 *   file system that keeps whole seconds only, or when the clock steps
 *   back, two versions can share a tag: use one with nanosecond times.
 * - Keys are relative paths without empty, "." or ".." segments and
 *   without the names reserved above (".tmp-*", ".backend-lock"). */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "../lib/fsutil.h"

#define TMP_PREFIX	".tmp-"
#define LOCK_NAME	".backend-lock"
#define COPY_STEP	(256 * 1024)	/* get_file's read size */

struct dir_backend {
	struct store_backend b;
	char *dir;		/* the repository directory, heap */
};

/* A listing being gathered. */
struct objvec {
	struct store_obj *v;	/* heap, n used of cap */
	size_t n, cap;
};

static void
dir_where(struct store_backend *b, const char *key, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", ((struct dir_backend *)b)->dir, key);
}

/* 1 if a file name is one of ours that no listing shows. */
static int
reserved_name(const char *name, size_t n)
{
	return (n >= strlen(TMP_PREFIX) &&
	    memcmp(name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0) ||
	    (n == strlen(LOCK_NAME) && memcmp(name, LOCK_NAME, n) == 0);
}

/* The n bytes of s as a key: not empty, relative, no empty, "." or ".."
 * segment, no reserved name. what names it in the message. */
static int
check_rel(const char *s, size_t n, const char *what, struct cs_err *e)
{
	const char *seg = s, *end = s + n, *slash;
	size_t len, i;

	if (n == 0 || s[0] == '/' || s[n - 1] == '/')
		goto bad;
	while (seg < end) {
		slash = memchr(seg, '/', (size_t)(end - seg));
		len = (size_t)((slash != NULL ? slash : end) - seg);
		if (len == 0 || (len == 1 && seg[0] == '.') ||
		    reserved_name(seg, len))
			goto bad;
		seg += len + 1;
	}
	/* "..", even inside a name: no way out of the directory. */
	for (i = 0; i + 1 < n; i++)
		if (s[i] == '.' && s[i + 1] == '.')
			goto bad;
	return 0;
bad:
	return cs_errc(e, CS_E_USAGE, "bad %s \"%.*s\": a relative path "
	    "without empty, \".\", \"..\", \"" TMP_PREFIX "*\" or \""
	    LOCK_NAME "\" parts is wanted", what, n > 200 ? 200 : (int)n, s);
}

/* DIR/KEY into path, the key checked first. */
static int
key_path(struct dir_backend *d, const char *key, char *path, size_t sz,
    struct cs_err *e)
{
	if (check_rel(key, strlen(key), "key", e) < 0)
		return -1;
	if ((size_t)snprintf(path, sz, "%s/%s", d->dir, key) >= sz)
		return cs_errc(e, CS_E_USAGE, "%s/%s: path too long", d->dir,
		    key);
	return 0;
}

/* A version's tag (see the top of this file). */
static void
make_tag(const struct stat *st, char tag[STORE_TAG_MAX])
{
	snprintf(tag, STORE_TAG_MAX, "%jx.%jx.%jx.%jx.%jx",
	    (uintmax_t)st->st_dev, (uintmax_t)st->st_ino,
	    (uintmax_t)st->st_size, (uintmax_t)st->st_mtim.tv_sec,
	    (uintmax_t)st->st_mtim.tv_nsec);
}

/* Opens key read-only: a regular file, never through a link. The fd,
 * or -1 with e set (CS_E_NOTFOUND when absent). */
static int
open_obj(const char *path, struct stat *st, struct cs_err *e)
{
	int fd;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		if (errno == ENOENT)
			return cs_errc(e, CS_E_NOTFOUND, "%s: no such object",
			    path);
		return cs_errno(e, "open %s", path);
	}
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		cs_errf(e, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	return fd;
}

static int
dir_get(struct store_backend *b, const char *key, uint64_t off, size_t len,
    void *buf, size_t cap, size_t *got, uint64_t *size, struct cs_err *e)
{
	char path[PATH_MAX];
	struct stat sb;
	uint64_t want;
	int fd, rc = -1;

	*got = 0;
	*size = 0;
	if (key_path((struct dir_backend *)b, key, path, sizeof(path), e) < 0 ||
	    (fd = open_obj(path, &sb, e)) < 0)
		return -1;
	*size = (uint64_t)sb.st_size;
	want = off >= *size ? 0 : *size - off;
	if (len > 0 && want > len)
		want = len;
	if (want > cap)
		want = cap;
	if (want > 0 && fs_pread_all(fd, buf, (size_t)want, (off_t)off) < 0) {
		cs_errno(e, "read %s", path);
		goto out;
	}
	*got = (size_t)want;
	atomic_fetch_add(&b->gets, 1);
	atomic_fetch_add(&b->bytes, want);
	rc = 0;
out:
	close(fd);
	return rc;
}

static int
dir_read(struct store_backend *b, const char *key, size_t cap, char **data,
    size_t *len, char tag[STORE_TAG_MAX], struct cs_err *e)
{
	char path[PATH_MAX], *p = NULL;
	struct stat sb;
	size_t n;
	int fd, rc = -1;

	*data = NULL;
	*len = 0;
	if (key_path((struct dir_backend *)b, key, path, sizeof(path), e) < 0 ||
	    (fd = open_obj(path, &sb, e)) < 0)
		return -1;
	/* Objects are replaced by rename, never rewritten in place: the
	 * size fstat gives is the size of what this fd reads. */
	if ((uint64_t)sb.st_size > cap) {
		cs_errc(e, CS_E_CORRUPT, "%s: %jd bytes, more than the %zu "
		    "allowed", path, (intmax_t)sb.st_size, cap);
		goto out;
	}
	n = (size_t)sb.st_size;
	if ((p = malloc(n + 1)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "read %s: out of memory", path);
		goto out;
	}
	if (n > 0 && fs_pread_all(fd, p, n, 0) < 0) {
		cs_errno(e, "read %s", path);
		goto out;
	}
	p[n] = '\0';
	if (tag != NULL)
		make_tag(&sb, tag);
	atomic_fetch_add(&b->gets, 1);
	atomic_fetch_add(&b->bytes, n);
	*data = p;
	*len = n;
	p = NULL;
	rc = 0;
out:
	free(p);
	close(fd);
	return rc;
}

/* Copies fd's n bytes into out (named tmp in messages). */
static int
copy_fd(int fd, const char *src, int out, const char *tmp, uint64_t *n,
    struct cs_err *e)
{
	char *buf;
	ssize_t r;
	int rc = -1;

	*n = 0;
	if ((buf = malloc(COPY_STEP)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "copy %s: out of memory", src);
	for (;;) {
		if ((r = read(fd, buf, COPY_STEP)) < 0) {
			if (errno == EINTR)
				continue;
			cs_errno(e, "read %s", src);
			goto out;
		}
		if (r == 0)
			break;
		if (fs_write_all(out, buf, (size_t)r) < 0) {
			cs_errno(e, "write %s", tmp);
			goto out;
		}
		*n += (uint64_t)r;
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

static int
dir_get_file(struct store_backend *b, const char *key, const char *path,
    struct cs_err *e)
{
	char src[PATH_MAX], tmp[PATH_MAX];
	struct stat sb;
	uint64_t n = 0;
	int fd, out = -1, have_tmp = 0, rc = -1;

	if (key_path((struct dir_backend *)b, key, src, sizeof(src), e) < 0 ||
	    (fd = open_obj(src, &sb, e)) < 0)
		return -1;
	if ((out = atomic_tmp_open(path, 0600, tmp, sizeof(tmp), e)) < 0)
		goto out;
	have_tmp = 1;
	if (copy_fd(fd, src, out, tmp, &n, e) < 0)
		goto out;
	if (fsync(out) < 0) {
		cs_errno(e, "fsync %s", tmp);
		goto out;
	}
	if (close(out) < 0) {
		out = -1;
		cs_errno(e, "close %s", tmp);
		goto out;
	}
	out = -1;
	have_tmp = 0;	/* renamed, or removed by a failed rename */
	if (atomic_tmp_commit(tmp, path, e) < 0)
		goto out;
	atomic_fetch_add(&b->gets, 1);
	atomic_fetch_add(&b->bytes, n);
	rc = 0;
out:
	if (out >= 0)
		close(out);
	if (have_tmp)
		unlink(tmp);
	close(fd);
	return rc;
}

/* Creates the directories of key below DIR (mode 0700) that are missing,
 * each new one made durable in its parent. */
static int
make_parents(struct dir_backend *d, const char *key, struct cs_err *e)
{
	char path[PATH_MAX], parent[PATH_MAX];
	const char *slash = strrchr(key, '/');
	struct stat st;

	if (slash == NULL)
		return 0;
	snprintf(path, sizeof(path), "%s/%.*s", d->dir, (int)(slash - key),
	    key);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;	/* the common case: one call */
	for (slash = strchr(key, '/'); slash != NULL;
	    slash = strchr(slash + 1, '/')) {
		snprintf(path, sizeof(path), "%s/%.*s", d->dir,
		    (int)(slash - key), key);
		if (mkdir(path, 0700) < 0) {
			/* A file in the way: creating the temp says so. */
			if (errno == EEXIST)
				continue;
			return cs_errno(e, "mkdir %s", path);
		}
		fs_path_dirname(path, parent, sizeof(parent));
		if (fs_fsync_dir(parent, e) < 0)
			return -1;
	}
	return 0;
}

/* data in a new temp file beside path, fsynced, with its mtime set from
 * CLOCK_REALTIME after its inode was made (see the top of this file).
 * The temp's name into tmp, its tag into tag. */
static int
write_temp(const char *path, const void *data, size_t len, char *tmp,
    size_t sz, char tag[STORE_TAG_MAX], struct cs_err *e)
{
	char dir[PATH_MAX];
	struct timespec ts[2];
	struct stat st;
	int fd, rc = -1;

	fs_path_dirname(path, dir, sizeof(dir));
	if ((size_t)snprintf(tmp, sz, "%s/" TMP_PREFIX "XXXXXX", dir) >= sz)
		return cs_errc(e, CS_E_USAGE, "%s: path too long", path);
	/* mkostemp creates with O_EXCL and mode 0600. */
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
		return cs_errno(e, "create %s", tmp);
	if (fs_write_all(fd, data, len) < 0) {
		cs_errno(e, "write %s", tmp);
		goto out;
	}
	if (clock_gettime(CLOCK_REALTIME, &ts[0]) < 0 ||
	    (ts[1] = ts[0], futimens(fd, ts)) < 0) {
		cs_errno(e, "set the time of %s", tmp);
		goto out;
	}
	/* A failed fsync may have dropped the pages: the put fails. */
	if (fsync(fd) < 0 || fstat(fd, &st) < 0) {
		cs_errno(e, "fsync %s", tmp);
		goto out;
	}
	make_tag(&st, tag);
	rc = 0;
out:
	if (close(fd) < 0 && rc == 0)
		rc = cs_errno(e, "close %s", tmp);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

/* Takes DIR/.backend-lock exclusively (created on demand): the fd to
 * close to drop it, or -1 with e set. */
static int
lock_take(struct dir_backend *d, struct cs_err *e)
{
	char path[PATH_MAX];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/" LOCK_NAME, d->dir) >=
	    sizeof(path))
		return cs_errc(e, CS_E_USAGE, "%s: path too long", d->dir);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return cs_errno(e, "open %s", path);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			cs_errno(e, "lock %s", path);
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* Under the lock: the temp file becomes the object as cond says. *gone
 * is set when the temp's name went with it (renamed). */
static int
publish(const char *path, const char *tmp, enum store_put_cond cond,
    const char *tag_in, int *gone, struct cs_err *e)
{
	char cur[STORE_TAG_MAX];
	struct stat st;

	if (cond == STORE_PUT_CREATE) {
		/* link, unlike rename, never replaces what is there. */
		if (link(tmp, path) == 0)
			return 0;
		if (errno == EEXIST)
			return cs_errc(e, CS_E_EXISTS, "%s: exists already",
			    path);
		return cs_errno(e, "link %s to %s", tmp, path);
	}
	if (cond == STORE_PUT_IFMATCH) {
		if (lstat(path, &st) < 0) {
			if (errno == ENOENT)
				return cs_errc(e, CS_E_EXISTS, "%s: no version "
				    "to replace", path);
			return cs_errno(e, "stat %s", path);
		}
		make_tag(&st, cur);
		if (!S_ISREG(st.st_mode) || strcmp(cur, tag_in) != 0)
			return cs_errc(e, CS_E_EXISTS, "%s: holds another "
			    "version", path);
	}
	if (rename(tmp, path) < 0)
		return cs_errno(e, "rename %s to %s", tmp, path);
	*gone = 1;
	return 0;
}

static int
dir_put(struct store_backend *b, const char *key, const void *data,
    size_t len, enum store_put_cond cond, const char *tag_in,
    char tag_out[STORE_TAG_MAX], struct cs_err *e)
{
	struct dir_backend *d = (struct dir_backend *)b;
	char path[PATH_MAX], tmp[PATH_MAX], dir[PATH_MAX];
	char tag[STORE_TAG_MAX];
	int lk = -1, gone = 0, rc = -1;

	if (key_path(d, key, path, sizeof(path), e) < 0)
		return -1;
	if (cond != STORE_PUT_ANY && cond != STORE_PUT_CREATE &&
	    (cond != STORE_PUT_IFMATCH || tag_in == NULL))
		return cs_errc(e, CS_E_USAGE, "put %s: bad condition", path);
	if (make_parents(d, key, e) < 0 ||
	    write_temp(path, data, len, tmp, sizeof(tmp), tag, e) < 0)
		return -1;
	if ((lk = lock_take(d, e)) < 0 ||
	    publish(path, tmp, cond, tag_in, &gone, e) < 0)
		goto out;
	close(lk);
	lk = -1;
	/* CREATE's temp goes before the fsync, which then keeps that too. */
	if (!gone) {
		unlink(tmp);
		gone = 1;
	}
	fs_path_dirname(path, dir, sizeof(dir));
	if (fs_fsync_dir(dir, e) < 0)
		goto out;
	if (tag_out != NULL)
		memcpy(tag_out, tag, STORE_TAG_MAX);
	rc = 0;
out:
	if (lk >= 0)
		close(lk);
	if (!gone)
		unlink(tmp);
	return rc;
}

static int
dir_del(struct store_backend *b, const char *key, struct cs_err *e)
{
	struct dir_backend *d = (struct dir_backend *)b;
	char path[PATH_MAX], dir[PATH_MAX];
	int lk, r, err;

	if (key_path(d, key, path, sizeof(path), e) < 0 ||
	    (lk = lock_take(d, e)) < 0)
		return -1;
	r = unlink(path);
	err = errno;
	close(lk);
	if (r < 0 && err == ENOENT)
		return 0;
	if (r < 0) {
		errno = err;
		return cs_errno(e, "remove %s", path);
	}
	fs_path_dirname(path, dir, sizeof(dir));
	return fs_fsync_dir(dir, e);
}

/* Adds key rel with st's size and mtime to ov. */
static int
add_obj(struct objvec *ov, const char *rel, const struct stat *st,
    struct cs_err *e)
{
	struct store_obj *nv;
	size_t ncap;

	if (ov->n == ov->cap) {
		ncap = ov->cap ? ov->cap * 2 : 64;
		if ((nv = realloc(ov->v, ncap * sizeof(*nv))) == NULL)
			return cs_errc(e, CS_E_NOMEM, "list: out of memory");
		ov->v = nv;
		ov->cap = ncap;
	}
	if ((ov->v[ov->n].key = strdup(rel)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "list: out of memory");
	ov->v[ov->n].size = (uint64_t)st->st_size;
	ov->v[ov->n].mtime = (int64_t)st->st_mtime;
	ov->n++;
	return 0;
}

/* Adds the regular files below the open directory fd to ov, their keys
 * rel[0..rlen) (empty or ending in '/') and their names below; rel has
 * room for PATH_MAX bytes. Closes fd. Links are never followed; a name
 * that vanishes meanwhile (a delete) is skipped. */
static int
walk(int fd, char *rel, size_t rlen, struct objvec *ov, const char *dir,
    struct cs_err *e)
{
	struct dirent *de;
	struct stat st;
	size_t nlen;
	DIR *dp;
	int sub, rc = -1;

	if ((dp = fdopendir(fd)) == NULL) {
		cs_errno(e, "open directory %s/%.*s", dir, (int)rlen, rel);
		close(fd);
		return -1;
	}
	for (errno = 0; (de = readdir(dp)) != NULL; errno = 0) {
		nlen = strlen(de->d_name);
		/* Only names a key may have: no ".", "..", ours. */
		if (strcmp(de->d_name, ".") == 0 ||
		    strstr(de->d_name, "..") != NULL ||
		    reserved_name(de->d_name, nlen))
			continue;
		if (rlen + nlen + 2 > PATH_MAX) {
			cs_errf(e, "%s/%.*s%s: path too long", dir, (int)rlen,
			    rel, de->d_name);
			goto out;
		}
		memcpy(rel + rlen, de->d_name, nlen + 1);
		if (fstatat(dirfd(dp), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			cs_errno(e, "stat %s/%s", dir, rel);
			goto out;
		}
		if (S_ISREG(st.st_mode) && add_obj(ov, rel, &st, e) < 0)
			goto out;
		if (!S_ISDIR(st.st_mode))
			continue;
		if ((sub = openat(dirfd(dp), de->d_name, O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			if (errno == ENOENT)
				continue;
			cs_errno(e, "open directory %s/%s", dir, rel);
			goto out;
		}
		memcpy(rel + rlen + nlen, "/", 2);
		if (walk(sub, rel, rlen + nlen + 1, ov, dir, e) < 0)
			goto out;
	}
	if (errno != 0) {
		cs_errno(e, "read directory %s/%.*s", dir, (int)rlen, rel);
		goto out;
	}
	rc = 0;
out:
	closedir(dp);
	return rc;
}

static int
obj_cmp(const void *a, const void *b)
{
	return strcmp(((const struct store_obj *)a)->key,
	    ((const struct store_obj *)b)->key);
}

static int
dir_list(struct store_backend *b, const char *prefix,
    struct store_obj **objs, size_t *n, struct cs_err *e)
{
	struct dir_backend *d = (struct dir_backend *)b;
	struct objvec ov = { NULL, 0, 0 };
	char rel[PATH_MAX], path[PATH_MAX];
	size_t plen = strlen(prefix);
	int fd;

	*objs = NULL;
	*n = 0;
	if (plen > 0 && prefix[plen - 1] != '/')
		return cs_errc(e, CS_E_USAGE, "bad prefix \"%s\": it ends in "
		    "no '/'", prefix);
	if (plen > 0 && check_rel(prefix, plen - 1, "prefix", e) < 0)
		return -1;
	if (plen + 2 > sizeof(rel) || (size_t)snprintf(path, sizeof(path),
	    "%s/%s", d->dir, prefix) >= sizeof(path))
		return cs_errc(e, CS_E_USAGE, "%s/%s: path too long", d->dir,
		    prefix);
	memcpy(rel, prefix, plen + 1);
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		/* No directory there: nothing has that prefix. */
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return cs_errno(e, "open directory %s", path);
	}
	if (walk(fd, rel, plen, &ov, d->dir, e) < 0) {
		store_objs_free(ov.v, ov.n);
		return -1;
	}
	if (ov.n > 1)
		qsort(ov.v, ov.n, sizeof(*ov.v), obj_cmp);
	*objs = ov.v;
	*n = ov.n;
	return 0;
}

void
store_objs_free(struct store_obj *objs, size_t n)
{
	size_t i;

	if (objs == NULL)
		return;
	for (i = 0; i < n; i++)
		free(objs[i].key);
	free(objs);
}

static void
dir_close(struct store_backend *b)
{
	struct dir_backend *d = (struct dir_backend *)b;

	free(d->dir);
	free(d);
}

static const struct store_backend_ops dir_ops = {
	.get = dir_get,
	.read = dir_read,
	.get_file = dir_get_file,
	.put = dir_put,
	.list = dir_list,
	.del = dir_del,
	.where = dir_where,
	.close = dir_close,
};

int
store_backend_dir(const char *dir, struct store_backend **out,
    struct cs_err *e)
{
	struct dir_backend *d;

	*out = NULL;
	if ((d = calloc(1, sizeof(*d))) == NULL ||
	    (d->dir = strdup(dir)) == NULL) {
		free(d);
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	}
	d->b.ops = &dir_ops;
	/* A disk gains little from more writers than this: each put
	 * ends in two fsyncs. */
	d->b.parallel = 4;
	*out = &d->b;
	return 0;
}

void
store_backend_close(struct store_backend *b)
{
	if (b != NULL)
		b->ops->close(b);
}
