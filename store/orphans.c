/* orphans.c - the blobs a snapshot wrote, and their removal when it
 * aborts, so that an aborted snapshot does not leave its copy behind.
 *
 * store_put_chunks records each blob it renames into place (never one it
 * found stored, nor one another run copied for it). When the snapshot is
 * aborted, those of them that no committed snapshot refers to are garbage,
 * unless a snapshot running beside it uses them: one that planned after
 * the rename reuses the blob by its name, one that waited for its claim
 * counts it as shared, and neither says so anywhere until it commits.
 * So removal needs what prune needs, the exclusive repository lock: with
 * it no snapshot is between storing its chunks and committing its rows,
 * and the manifest's references are the whole truth. It is tried once,
 * without waiting; when another process holds the repository (a
 * concurrent snapshot, a reader), nothing is removed and prune removes
 * them later, as it does after a coordinator that was killed. A live
 * lock file seen first skips the attempt, so that the exclusive lock file
 * is published only when nobody seems to be there. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_int.h"
#include "../lib/fsutil.h"

int
store_wrote_add(struct store *st, const uint8_t name[SHA_LEN])
{
	uint8_t (*nv)[SHA_LEN];
	size_t cap;

	if (st->nwrote == st->wrote_cap) {
		cap = st->wrote_cap ? st->wrote_cap * 2 : 64;
		if ((nv = realloc(st->wrote, cap * sizeof(*nv))) == NULL)
			return -1;
		st->wrote = nv;
		st->wrote_cap = cap;
	}
	memcpy(st->wrote[st->nwrote++], name, SHA_LEN);
	return 0;
}

static int
cmp_hex(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The size of blob hex, or -1 when it is not there (any more). */
static off_t
blob_size(const struct store *st, const char *hex, char *path, size_t sz)
{
	struct stat sb;

	if (store_blob_path(st, hex, path, sz, NULL) < 0 ||
	    lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
		return -1;
	return sb.st_size;
}

/* Nothing may be removed: count what is left for prune. */
static void
count_left(const struct store *st, struct store_dropped *d)
{
	char hex[SHA_HEX_LEN], path[PATH_MAX];
	off_t size;
	size_t i;

	for (i = 0; i < st->nwrote; i++) {
		sha_hex(st->wrote[i], hex);
		if ((size = blob_size(st, hex, path, sizeof(path))) < 0)
			continue;
		d->left_blobs++;
		d->left_bytes += (uint64_t)size;
	}
}

/* Remove the written blobs not in ref (sorted), then fsync the fan-out
 * directories they were in, so that the removal is durable. */
static int
remove_unreferenced(struct store *st, char **ref, size_t nref,
    struct store_dropped *d, struct cs_err *e)
{
	char hex[SHA_HEX_LEN], path[PATH_MAX], dir[PATH_MAX];
	unsigned char dirs[256];
	const char *key = hex;
	off_t size;
	size_t i;

	memset(dirs, 0, sizeof(dirs));
	for (i = 0; i < st->nwrote; i++) {
		sha_hex(st->wrote[i], hex);
		if (nref > 0 && bsearch(&key, ref, nref, sizeof(*ref),
		    cmp_hex) != NULL) {
			d->kept++;
			continue;
		}
		if ((size = blob_size(st, hex, path, sizeof(path))) < 0)
			continue;	/* counted once, or gone */
		if (unlink(path) < 0 && errno != ENOENT)
			return cs_errno(e, "unlink %s", path);
		d->blobs++;
		d->bytes += (uint64_t)size;
		dirs[st->wrote[i][0]] = 1;
	}
	for (i = 0; i < 256; i++) {
		if (!dirs[i])
			continue;
		if (snprintf(dir, sizeof(dir), "%s/%02zx", st->blobs, i) >=
		    (int)sizeof(dir))
			return cs_errf(e, "repository path too long: %s",
			    st->repo);
		if (fs_fsync_dir(dir, e) < 0)
			return -1;
	}
	return 0;
}

int
store_drop_written(struct store *st, struct store_dropped *d,
    struct cs_err *e)
{
	struct cs_err le;
	char **ref = NULL;
	size_t nref = 0, i;
	int rc = -1;

	memset(d, 0, sizeof(*d));
	if (st == NULL || st->nwrote == 0)
		return 0;
	/* Another holder seen first: no exclusive lock file is published,
	 * which would make a snapshot starting meanwhile fail as locked. */
	if (store_lock_others(st)) {
		count_left(st, d);
		return 0;
	}
	if (store_lock(st, 1, &le) < 0) {
		if (cs_err_code(&le) != CS_E_LOCKED) {
			*e = le;
			return -1;
		}
		count_left(st, d);
		return 0;
	}
	if (store_blob_referenced(st, &ref, &nref, e) < 0)
		goto out;
	rc = remove_unreferenced(st, ref, nref, d, e);
out:
	for (i = 0; i < nref; i++)
		free(ref[i]);
	free(ref);
	store_unlock(st);
	return rc;
}
