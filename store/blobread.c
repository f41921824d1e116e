/* blobread.c - a chunk object read through the repository's backend
 * (backend.h) when it has one: an object store's bucket, read straight
 * into memory (no local copy); else from REPO/blobs as object.c does.
 * The checks are the same either way: the object's size against what
 * its chunk can take, then decode (object.c), then the caller hashes. */
#include <stdio.h>
#include <string.h>

#include "store_int.h"
#include "backend.h"

int
store_blob_remote(const struct store *st)
{
	return st->opts.blob_backend != NULL;
}

/* Bytes of blob hex through the backend, into buf (at most cap): see
 * store_backend_ops.get. A missing object says where it was expected. */
static int
blob_get(const struct store *st, const char *hex, const char *expect,
    uint64_t off, size_t len, void *buf, size_t cap, size_t *got,
    uint64_t *size, struct cs_err *e)
{
	struct store_backend *b = st->opts.blob_backend;
	char key[CHUNKOBJ_KEY_MAX], where[512];

	if (chunkobj_key(hex, key, sizeof(key)) < 0)
		return cs_errf(e, "bad blob name %.80s", hex);
	if (b->ops->get(b, key, off, len, buf, cap, got, size, e) == 0)
		return 0;
	if (cs_err_code(e) == CS_E_NOTFOUND) {
		b->ops->where(b, key, where, sizeof(where));
		cs_errc(e, CS_E_NOTFOUND, "missing (expected %s at %s)", expect,
		    where);
	}
	return -1;
}

int
store_obj_fetch_buf(const struct store *st, const uint8_t name[SHA_LEN],
    const char *hex, uint8_t *plain, size_t len, struct objbuf *b,
    struct cs_err *e)
{
	char path[PATH_MAX], expect[48];
	size_t got, bound = store_obj_bound(st, len);
	uint64_t size;

	if (!store_blob_remote(st)) {
		if (store_blob_path(st, hex, path, sizeof(path), e) < 0)
			return -1;
		return store_obj_load_buf(st, name, path, plain, len, b, e);
	}
	snprintf(expect, sizeof(expect), "%s%zu bytes", bound != len ?
	    "at most " : "", bound);
	if (!store_obj_framed(st) && !st->enc) {
		/* The object is the chunk: straight to its place. */
		if (blob_get(st, hex, expect, 0, 0, plain, len, &got, &size,
		    e) < 0)
			return -1;
		if (size != len || got != len)
			return cs_errf(e, "size mismatch: expected %zu bytes, "
			    "found %llu", len, (unsigned long long)size);
		return 0;
	}
	/* One byte more than the bound: a larger object is seen as one. */
	if (store_objbuf_reserve(st, b, bound + 1, len, e) < 0 ||
	    blob_get(st, hex, expect, 0, 0, b->p, bound + 1, &got, &size,
	    e) < 0)
		return -1;
	if (size > bound || got != size)
		return cs_errc(e, CS_E_CORRUPT, "size mismatch: expected at "
		    "most %zu bytes, found %llu", bound,
		    (unsigned long long)size);
	if (store_obj_decode(st, name, b->p, got, plain, len, e) < 0) {
		cs_errkind(e, CS_E_CORRUPT);
		return -1;
	}
	return 0;
}

int
store_obj_fetch_head(const struct store *st, const char *hex,
    uint8_t *head, size_t n, size_t *got, uint64_t *size, struct cs_err *e)
{
	return blob_get(st, hex, "an object", 0, n, head, n, got, size, e);
}

int
store_blob_where(const struct store *st, const char *hex, struct cs_err *e)
{
	struct store_backend *b = st->opts.blob_backend;
	char key[CHUNKOBJ_KEY_MAX], where[512];

	if (chunkobj_key(hex, key, sizeof(key)) < 0)
		return cs_errf(e, "bad blob name %.80s", hex);
	b->ops->where(b, key, where, sizeof(where));
	return cs_errf(e, "the object is %s: delete it there, and the next "
	    "snapshot that still has its bytes stores it again", where);
}
