/* backend_dir.c - the backend of a repository directory: each key is
 * the file DIR/KEY, read with pread. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "../lib/fsutil.h"

struct dir_backend {
	struct store_backend b;
	char *dir;
};

static void
dir_where(struct store_backend *b, const char *key, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", ((struct dir_backend *)b)->dir, key);
}

static int
dir_get(struct store_backend *b, const char *key, uint64_t off, size_t len,
    void *buf, size_t cap, size_t *got, uint64_t *size, struct cs_err *e)
{
	char path[4096];
	struct stat sb;
	uint64_t want;
	int fd, rc = -1;

	*got = 0;
	*size = 0;
	dir_where(b, key, path, sizeof(path));
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		if (errno == ENOENT)
			return cs_errc(e, CS_E_NOTFOUND, "%s: no such object",
			    path);
		return cs_errno(e, "open %s", path);
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		cs_errf(e, "%s: not a regular file", path);
		goto out;
	}
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

static void
dir_close(struct store_backend *b)
{
	struct dir_backend *d = (struct dir_backend *)b;

	free(d->dir);
	free(d);
}

static const struct store_backend_ops dir_ops = { .get = dir_get,
    .where = dir_where,
    .close = dir_close };

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
	*out = &d->b;
	return 0;
}

void
store_backend_close(struct store_backend *b)
{
	if (b != NULL)
		b->ops->close(b);
}
