/* blob.c - content-addressed blobs: REPO/blobs/ab/<64 hex digits>, each
 * one chunk of a recorded file (written by chunkstore.c). */
#include <stdio.h>
#include <string.h>

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
