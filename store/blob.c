/* blob.c - content-addressed blobs: REPO/blobs/ab/<64 hex digits>, each
 * one chunk of a recorded file (written by chunkstore.c); whether a chunk
 * is stored already, and whether it may be reused without hashing it. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "store_int.h"

int
store_blob_path(const struct store *st, const char *hex, char *out,
    size_t outsz, struct cs_err *e)
{
	if (strlen(hex) != SHA_HEX_LEN - 1)
		return cs_errf(e, "bad blob name %.80s", hex);
	if (snprintf(out, outsz, "%s/%.2s/%s", st->blobs, hex, hex) >=
	    (int)outsz)
		return cs_errf(e, "repository path too long: %s", st->repo);
	return 0;
}

/* Is the chunk already stored? Same name, same size (for an object of a
 * framed repository, object.c: a size it can have). With now, whether it
 * may be reused unread: its record (blobcheck.c) says it is the file
 * that was hashed then, and that is within the recheck age. */
int
store_blob_stored(struct store *st, const uint8_t name[SHA_LEN],
    uint64_t len, time_t now, struct cs_err *e)
{
	char hex[SHA_HEX_LEN], path[PATH_MAX];
	int64_t age = st->recheck_set ? st->recheck_s : RECHECK_DEFAULT_S;
	int64_t checked = 0;
	struct blob_look look;
	struct stat sb;
	int same;

	sha_hex(name, hex);
	if (store_blob_path(st, hex, path, sizeof(path), e) < 0)
		return -1;
	if (lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
		return 0;
	if (store_obj_framed(st) ? (uint64_t)sb.st_size < OBJ_HDR_LEN ||
	    (uint64_t)sb.st_size > store_obj_bound(st, (size_t)len) :
	    (uint64_t)sb.st_size != len)
		return 0;
	if (now == 0)
		return 1;
	if (age == 0)
		return 2;
	store_bcheck_look(&sb, &look);
	if ((same = store_bcheck_get(st, name, &look, &checked, e)) < 0)
		return -1;
	return !same || (int64_t)now - checked >= age ? 2 : 1;
}
