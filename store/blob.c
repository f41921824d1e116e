/* blob.c - content-addressed blobs: REPO/blobs/ab/<64 hex digits>.
 *
 * A blob is written as a temp file in blobs/, fsync'ed, checked against
 * the digest the agent reported, renamed to its name and the directories
 * fsync'ed. A name therefore only ever refers to complete, checked bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_int.h"
#include "../common/fsutil.h"

#define COPY_BUF (1u << 20)

int
blob_path(const struct store *st, const char *hex, char *out, size_t outsz,
    struct cs_err *e)
{
	if (strlen(hex) != SHA_HEX_LEN - 1)
		return cs_errf(e, "bad blob name %.80s", hex);
	if (snprintf(out, outsz, "%s/%.2s/%s", st->blobs, hex, hex) >=
	    (int)outsz)
		return cs_errf(e, "repository path too long: %s", st->repo);
	return 0;
}

/* Copy [0, len) of src into the open temp file tfd, hashing on the way. */
static int
copy_hash(int src, const char *path, int tfd, const char *tmp,
    uint64_t len, uint8_t sha[SHA_LEN], struct cs_err *e)
{
	struct sha_ctx *c = NULL;
	uint8_t *buf = NULL;
	uint64_t done = 0;
	size_t want;
	ssize_t r;
	int rc = -1;

	if ((buf = malloc(COPY_BUF)) == NULL || (c = sha_new()) == NULL) {
		cs_errf(e, "out of memory");
		goto out;
	}
	while (done < len) {
		want = len - done < COPY_BUF ? (size_t)(len - done) : COPY_BUF;
		r = pread(src, buf, want, (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			cs_errno(e, "read %s", path);
			goto out;
		}
		if (r == 0) {
			cs_errf(e, "data file %s changed under the snapshot: "
			    "%llu bytes, expected at least %llu", path,
			    (unsigned long long)done, (unsigned long long)len);
			goto out;
		}
		if (sha_update(c, buf, (size_t)r) < 0) {
			cs_errf(e, "sha256 of %s failed", path);
			goto out;
		}
		if (tfd >= 0 && write_all(tfd, buf, (size_t)r) < 0) {
			cs_errno(e, "write %s", tmp);
			goto out;
		}
		done += (uint64_t)r;
	}
	if (sha_final(c, sha) < 0) {
		cs_errf(e, "sha256 of %s failed", path);
		goto out;
	}
	rc = 0;
out:
	sha_free(c);
	free(buf);
	return rc;
}

int
store_put_blob(struct store *st, const char *path, uint64_t len,
    const uint8_t sha[32], struct cs_err *e)
{
	char hex[SHA_HEX_LEN], dst[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX];
	uint8_t got[SHA_LEN];
	struct stat sb;
	int src = -1, tfd = -1, exists, rc = -1;

	tmp[0] = '\0';
	sha_hex(sha, hex);
	if (blob_path(st, hex, dst, sizeof(dst), e) < 0)
		goto out;
	path_dirname(dst, dir, sizeof(dir));
	if ((src = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		cs_errno(e, "open %s", path);
		goto out;
	}
	/* Same name, same size: the same bytes are already stored. The
	 * source is still read and hashed below, so a data file that does
	 * not hold what its agent reported is caught either way. */
	exists = lstat(dst, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    (uint64_t)sb.st_size == len;
	if (!exists) {
		if (mkdir_p(dir, 0700, e) < 0)
			goto out;
		if (snprintf(tmp, sizeof(tmp), "%s/.tmp.%ld.%.16s", st->blobs,
		    (long)getpid(), hex) >= (int)sizeof(tmp)) {
			tmp[0] = '\0';
			cs_errf(e, "repository path too long: %s", st->repo);
			goto out;
		}
		/* A leftover from a killed run with our pid is garbage. */
		unlink(tmp);
		tfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (tfd < 0) {
			cs_errno(e, "create %s", tmp);
			tmp[0] = '\0';
			goto out;
		}
	}
	if (copy_hash(src, path, tfd, tmp, len, got, e) < 0)
		goto out;
	if (memcmp(got, sha, SHA_LEN) != 0) {
		cs_errf(e, "data file %s changed under the snapshot: sha256 "
		    "mismatch", path);
		goto out;
	}
	if (exists) {
		rc = 0;
		goto out;
	}
	if (fsync(tfd) < 0) {
		cs_errno(e, "fsync %s", tmp);
		goto out;
	}
	if (close(tfd) < 0) {
		tfd = -1;
		cs_errno(e, "close %s", tmp);
		goto out;
	}
	tfd = -1;
	if (rename(tmp, dst) < 0) {
		cs_errno(e, "rename %s to %s", tmp, dst);
		goto out;
	}
	tmp[0] = '\0';
	if (fsync_dir(dir, e) < 0 || fsync_dir(st->blobs, e) < 0)
		goto out;
	rc = 0;
out:
	if (tfd >= 0)
		close(tfd);
	if (tmp[0] != '\0')
		unlink(tmp);
	if (src >= 0)
		close(src);
	return rc;
}

int
blob_map(const char *path, struct blob_map *m, struct cs_err *e)
{
	struct stat sb;
	void *p;
	int fd, rc = -1;

	m->p = NULL;
	m->len = 0;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		if (errno == ENOENT) {
			cs_errf(e, "missing");
			return -2;
		}
		return cs_errno(e, "open");
	}
	if (fstat(fd, &sb) < 0) {
		cs_errno(e, "stat");
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		cs_errf(e, "not a regular file");
		goto out;
	}
	if ((uint64_t)sb.st_size > SIZE_MAX / 2) {
		cs_errf(e, "too large to read (%lld bytes)",
		    (long long)sb.st_size);
		goto out;
	}
	if (sb.st_size > 0) {
		p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE,
		    fd, 0);
		if (p == MAP_FAILED) {
			cs_errno(e, "mmap");
			goto out;
		}
		m->p = p;
		m->len = (size_t)sb.st_size;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

void
blob_unmap(struct blob_map *m)
{
	if (m->p != NULL)
		munmap(m->p, m->len);
	m->p = NULL;
	m->len = 0;
}
