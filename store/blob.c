/* blob.c - content-addressed blobs: REPO/blobs/ab/<64 hex digits>, each
 * one chunk of a recorded file (written by chunkstore.c); whether a chunk
 * is stored already. */
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
 * framed repository, object.c: a size it can have): 1, the same bytes
 * when they were last checked (the blob's mtime); 2 when that check is
 * older than the recheck age (the blob must be hashed before it is
 * reused); 0 when not stored. */
int
store_blob_stored(struct store *st, const uint8_t name[SHA_LEN],
    uint64_t len, time_t now, struct cs_err *e)
{
	char hex[SHA_HEX_LEN], path[PATH_MAX];
	int64_t age = st->recheck_set ? st->recheck_s : RECHECK_DEFAULT_S;
	struct stat sb;

	sha_hex(name, hex);
	if (store_blob_path(st, hex, path, sizeof(path), e) < 0)
		return -1;
	if (lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
		return 0;
	if (store_obj_framed(st) ? (uint64_t)sb.st_size < OBJ_HDR_LEN ||
	    (uint64_t)sb.st_size > store_obj_bound(st, (size_t)len) :
	    (uint64_t)sb.st_size != len)
		return 0;
	return age == 0 || (int64_t)now - (int64_t)sb.st_mtime >= age ? 2 : 1;
}
