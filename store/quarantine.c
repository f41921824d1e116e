/* quarantine.c - taking a bad blob out of use. A blob whose bytes no
 * longer hash to its name is moved to REPO/quarantine/<name> (kept for
 * inspection, never read again), so that the next snapshot whose file
 * still holds those bytes finds the name free and stores a good copy
 * under it: every snapshot that refers to the name is whole again, as a
 * scrubbed mirror heals. Nothing else is changed; on a read-only
 * repository, or one read through a backend (an object store, whose
 * object is what is damaged), nothing is moved and the caller only
 * reports. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "store_int.h"
#include "../lib/fsutil.h"

int
store_blob_quarantine(struct store *st, const char *hex, struct cs_err *e)
{
	char src[PATH_MAX], dir[PATH_MAX], dst[PATH_MAX], sub[PATH_MAX];

	/* Read through a backend (an object store): the damaged copy is
	 * the object there, and verify only reports it. */
	if (store_blob_remote(st))
		return store_blob_where(st, hex, e);
	if (st->readonly) {	/* also when root could write it anyway */
		errno = EROFS;
		return cs_errno(e, "repository %s", st->repo);
	}
	if (store_blob_path(st, hex, src, sizeof(src), e) < 0)
		return -1;
	if (snprintf(dir, sizeof(dir), "%s/quarantine", st->repo) >=
	    (int)sizeof(dir) || snprintf(dst, sizeof(dst), "%s/%s", dir,
	    hex) >= (int)sizeof(dst))
		return cs_errf(e, "repository path too long: %s", st->repo);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return cs_errno(e, "create %s", dir);
	if (rename(src, dst) < 0) {
		if (errno == ENOENT)
			return 0;	/* moved already (another chunk) */
		return cs_errno(e, "move %s to %s", src, dst);
	}
	fs_path_dirname(src, sub, sizeof(sub));
	if (fs_fsync_dir(dir, e) < 0 || fs_fsync_dir(sub, e) < 0)
		return -1;
	return 0;
}
