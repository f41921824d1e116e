/* object.c - the bytes of a chunk blob, by the repository's settings
 * (table repo_settings, written once when the repository is created).
 *
 * A repository without settings (made before them) or with compression
 * "none" keeps each chunk's bytes as they are: the blob is the chunk. With
 * compression "zstd" every blob is an object:
 *
 *   "CSO1" | u8 codec | 3 zero bytes | le64 plain length | payload
 *
 * codec 0: the payload is the chunk itself (zstd did not make it smaller);
 * codec 1: the payload is zstd frames of the chunk, one, or a few for a
 * chunk stored as the previous snapshot's object of it plus the bytes
 * added since (chunkdelta.c); ZSTD_decompress decodes both. The blob keeps its
 * name, the SHA-256 of the plain chunk, so chunks still deduplicate and
 * every reader checks the decoded bytes against the name. The object is
 * made in proto/chunkobj.c, which an agent uploading its own chunks to
 * an object store uses too.
 *
 * In an encrypted repository (crypt.c) the object above is sealed:
 *
 *   "CSE1" | nonce (12) | AES-256-GCM(object) | tag (16)
 *
 * bound to kind 'C', the repository and the blob's name (a keyed hash of
 * the chunk), so the header, codec and length are hidden too; only the
 * blob's size is visible. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "store_int.h"
#include "../crypto/aead.h"
#include "../lib/bigbuf.h"
#include "../proto/chunkobj.h"
#include "../lib/fsutil.h"

#define OBJ_MAGIC CHUNKOBJ_MAGIC
#define SEALED_MAGIC "CSE1"
#define SEALED_HDR 4
#define CODEC_STORED CHUNKOBJ_STORED
#define CODEC_ZSTD CHUNKOBJ_ZSTD

static uint64_t
get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int
store_obj_framed(const struct store *st)
{
	return st->compress != STORE_COMPRESS_NONE || st->enc;
}

/* The sealing's share of a blob. */
static size_t
sealing(const struct store *st)
{
	return st->enc ? SEALED_HDR + AEAD_OVERHEAD : 0;
}

size_t
store_obj_bound(const struct store *st, size_t len)
{
	if (!store_obj_framed(st))
		return len;
	return sealing(st) + chunkobj_bound(len);
}

size_t
store_obj_frame_off(const struct store *st)
{
	return st->enc ? SEALED_HDR + AEAD_NONCE_LEN : 0;
}

int
store_obj_encode_in_place(const struct store *st,
    const uint8_t name[SHA_LEN], size_t len, uint8_t *out, size_t outsz,
    uint8_t *scratch, size_t scratchsz, size_t *outlen, struct cs_err *e)
{
	size_t n, off = store_obj_frame_off(st);

	*outlen = 0;
	if (!store_obj_framed(st))
		return cs_errf(e, "not a framed repository");
	if (outsz < store_obj_bound(st, len))
		return cs_errf(e, "object buffer too small");
	n = chunkobj_frame_in_place(st->compress == STORE_COMPRESS_ZSTD,
	    out + off, len, scratch, scratchsz);
	return store_obj_seal_in_place(st, name, out, n, outlen, e);
}

int
store_obj_seal_in_place(const struct store *st, const uint8_t name[SHA_LEN],
    uint8_t *out, size_t n, size_t *outlen, struct cs_err *e)
{
	*outlen = 0;
	if (!st->enc) {
		*outlen = n;
		return 0;
	}
	/* Sealed in place: the framed object follows the header and the
	 * nonce, the tag follows it. */
	if (store_crypt_seal(st, 'C', name, SHA_LEN, out + SEALED_HDR +
	    AEAD_NONCE_LEN, n, out + SEALED_HDR, e) < 0)
		return -1;
	memcpy(out, SEALED_MAGIC, SEALED_HDR);
	*outlen = sealing(st) + n;
	return 0;
}

int
store_obj_open_in_place(const struct store *st, const uint8_t name[SHA_LEN],
    uint8_t *blob, size_t bloblen, uint8_t **framed, size_t *framedlen)
{
	*framed = blob;
	*framedlen = bloblen;
	if (!st->enc)
		return 0;
	if (bloblen < sealing(st) ||
	    memcmp(blob, SEALED_MAGIC, SEALED_HDR) != 0 ||
	    store_crypt_open(st, 'C', name, SHA_LEN, blob + SEALED_HDR,
	    bloblen - SEALED_HDR, blob + SEALED_HDR + AEAD_NONCE_LEN,
	    NULL) < 0)
		return -1;
	*framed = blob + SEALED_HDR + AEAD_NONCE_LEN;
	*framedlen = bloblen - sealing(st);
	return 0;
}

/* The framed object's header: its magic, and len plain bytes. */
static int
check_header(const uint8_t *obj, size_t objlen, size_t len, struct cs_err *e)
{
	if (objlen < OBJ_HDR_LEN || memcmp(obj, OBJ_MAGIC, 4) != 0 ||
	    obj[5] != 0 || obj[6] != 0 || obj[7] != 0)
		return cs_errf(e, "not a chunk object (bad header)");
	if (get_le64(obj + 8) != (uint64_t)len)
		return cs_errf(e, "size mismatch: the object holds %llu bytes, "
		    "expected %zu", (unsigned long long)get_le64(obj + 8), len);
	return 0;
}

/* Where the opened bytes of a sealed chunk after its object's header go
 * (aead_open_split): straight to plain when the header says the chunk is
 * stored as it is, with the length that takes, saving its copy; else in
 * place, for zstd. Only a choice of buffer: the header is checked once
 * the whole object is authenticated. */
struct where {
	uint8_t *plain, *in_place;
	size_t len, objlen;
	int direct;
};

static uint8_t *
stored_where(void *ctx, const uint8_t *hdr)
{
	struct where *w = ctx;

	w->direct = w->objlen == OBJ_HDR_LEN + w->len &&
	    hdr[4] == CODEC_STORED;
	return w->direct ? w->plain : w->in_place;
}

/* Blob name's bytes back into its len plain bytes (obj is overwritten
 * when it is opened in place); e names what is wrong. */
int
store_obj_decode(const struct store *st, const uint8_t name[SHA_LEN],
    uint8_t *obj, size_t objlen, uint8_t *plain, size_t len,
    struct cs_err *e)
{
	struct where w;
	size_t n;
	int direct = 0;

	if (st->enc) {
		if (objlen < sealing(st) ||
		    memcmp(obj, SEALED_MAGIC, SEALED_HDR) != 0)
			return cs_errf(e, "not a sealed chunk object (bad "
			    "header)");
		/* Opened in place: the object follows the nonce; but a
		 * chunk stored as it is goes straight to plain. */
		w.plain = plain;
		w.len = len;
		w.objlen = objlen - sealing(st);
		w.in_place = obj + SEALED_HDR + AEAD_NONCE_LEN + OBJ_HDR_LEN;
		w.direct = 0;
		if (store_crypt_open_split(st, 'C', name, SHA_LEN,
		    obj + SEALED_HDR, objlen - SEALED_HDR,
		    obj + SEALED_HDR + AEAD_NONCE_LEN, OBJ_HDR_LEN, stored_where,
		    &w, e) < 0) {
			/* Nothing unauthenticated stays in plain. */
			if (w.direct)
				memset(plain, 0, len);
			return -1;
		}
		obj += SEALED_HDR + AEAD_NONCE_LEN;
		objlen -= sealing(st);
		direct = w.direct;
	}

	if (!store_obj_framed(st)) {
		if (objlen != len)
			return cs_errf(e, "size mismatch: expected %zu bytes, "
			    "found %zu", len, objlen);
		memcpy(plain, obj, len);
		return 0;
	}
	if (check_header(obj, objlen, len, e) < 0)
		return -1;
	switch (obj[4]) {
	case CODEC_STORED:
		if (objlen - OBJ_HDR_LEN != len)
			return cs_errf(e, "size mismatch: expected %zu stored "
			    "bytes, found %zu", len, objlen - OBJ_HDR_LEN);
		if (!direct)
			memcpy(plain, obj + OBJ_HDR_LEN, len);
		return 0;
	case CODEC_ZSTD:
		n = ZSTD_decompress(plain, len, obj + OBJ_HDR_LEN,
		    objlen - OBJ_HDR_LEN);
		if (ZSTD_isError(n))
			return cs_errf(e, "zstd: %s", ZSTD_getErrorName(n));
		if (n != len)
			return cs_errf(e, "size mismatch: decompressed to %zu "
			    "bytes, expected %zu", n, len);
		return 0;
	default:
		return cs_errf(e, "unknown codec %u", obj[4]);
	}
}

int
store_obj_load(const struct store *st, const uint8_t name[SHA_LEN],
    const char *path, uint8_t *plain, size_t len, struct cs_err *e)
{
	struct objbuf b = { NULL, 0, 1 };
	int rc;

	rc = store_obj_load_buf(st, name, path, plain, len, &b, e);
	store_objbuf_free(&b);
	return rc;
}

int
store_obj_open(const char *path, const char *expect, uint64_t *size,
    struct cs_err *e)
{
	struct stat sb;
	int fd;

	*size = 0;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		if (errno == ENOENT)
			return cs_errf(e, "missing (expected %s at %s)", expect,
			    path);
		return cs_errno(e, "open %s", path);
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return cs_errf(e, "not a regular file");
	}
	*size = (uint64_t)sb.st_size;
	return fd;
}

int
store_obj_load_buf(const struct store *st, const uint8_t name[SHA_LEN],
    const char *path, uint8_t *plain, size_t len, struct objbuf *b,
    struct cs_err *e)
{
	char expect[32];
	uint64_t size;
	size_t objlen;
	int fd, rc = -1;

	snprintf(expect, sizeof(expect), "%zu bytes", len);
	if ((fd = store_obj_open(path, expect, &size, e)) < 0)
		return -1;
	objlen = (size_t)size;
	/* From here a failure to decode is CS_E_CORRUPT: the object is there
	 * but damaged; a failed read or allocation keeps its own kind. */
	if (objlen > store_obj_bound(st, len)) {
		cs_errc(e, CS_E_CORRUPT, "size mismatch: expected %s%zu bytes, "
		    "found %zu", store_obj_framed(st) ? "at most " : "",
		    store_obj_bound(st, len), objlen);
		goto out;
	}
	/* A chunk stored as it is (zstd did not help: random data) is read
	 * straight to its place, with no copy. */
	if (!st->enc && store_obj_framed(st) && objlen == OBJ_HDR_LEN + len) {
		uint8_t hdr[OBJ_HDR_LEN];

		if (fs_pread_all(fd, hdr, sizeof(hdr), 0) < 0) {
			rc = cs_errno(e, "read %s", path);
			goto out;
		}
		if (hdr[4] == CODEC_STORED) {
			if (check_header(hdr, sizeof(hdr), len, e) < 0) {
				cs_errkind(e, CS_E_CORRUPT);
				goto out;
			}
			if (fs_pread_all(fd, plain, len, OBJ_HDR_LEN) < 0) {
				rc = cs_errno(e, "read %s", path);
				goto out;
			}
			rc = 0;
			goto out;
		}
	}
	if (store_objbuf_reserve(st, b, objlen + 1, len, e) < 0)
		goto out;
	if (fs_pread_all(fd, b->p, objlen, 0) < 0) {
		rc = cs_errno(e, "read %s", path);
		goto out;
	}
	if (b->drop_cache)
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (store_obj_decode(st, name, b->p, objlen, plain, len, e) == 0)
		rc = 0;
	else
		cs_errkind(e, CS_E_CORRUPT);
out:
	close(fd);
	return rc;
}

/* The buffer only grows, in steps of 2 MiB (a huge page) up to one
 * object's bound: a reader that decodes many chunks allocates (and
 * faults in) it once or twice. */
int
store_objbuf_reserve(const struct store *st, struct objbuf *b, size_t n,
    size_t len, struct cs_err *e)
{
	size_t step = (size_t)2 << 20, cap;
	uint8_t *np;

	if (b->cap >= n)
		return 0;
	cap = (n + step - 1) / step * step;
	if (cap > store_obj_bound(st, len) + 1)
		cap = store_obj_bound(st, len) + 1;
	if ((np = bigbuf_alloc(cap)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	store_objbuf_free(b);
	b->p = np;
	b->cap = cap;
	return 0;
}

void
store_objbuf_free(struct objbuf *b)
{
	bigbuf_free(b->p, b->cap);
	b->p = NULL;
	b->cap = 0;
}

/* Blob hex's size and its first SEALED_HDR bytes (fewer: *got), from
 * REPO/blobs or through the backend. */
static int
obj_head(const struct store *st, const char *hex, uint8_t magic[SEALED_HDR],
    size_t *got, uint64_t *size, struct cs_err *e)
{
	char path[PATH_MAX];
	int fd, rc = 0;

	*got = 0;
	if (store_blob_remote(st))
		return store_obj_fetch_head(st, hex, magic, SEALED_HDR, got,
		    size, e);
	if (store_blob_path(st, hex, path, sizeof(path), e) < 0 ||
	    (fd = store_obj_open(path, "an object", size, e)) < 0)
		return -1;
	if (*size >= SEALED_HDR) {
		if (fs_pread_all(fd, magic, SEALED_HDR, 0) < 0)
			rc = cs_errno(e, "read %s", path);
		else
			*got = SEALED_HDR;
	}
	close(fd);
	return rc;
}

int
store_obj_check_shape(const struct store *st, const char *hex,
    uint64_t plain, uint64_t *size, struct cs_err *e)
{
	uint8_t magic[SEALED_HDR];
	uint64_t min = sealing(st) + (store_obj_framed(st) ? OBJ_HDR_LEN : 0);
	uint64_t max = store_obj_bound(st, (size_t)plain);
	size_t got;

	*size = 0;
	if (!store_obj_framed(st))
		min = plain;
	if (obj_head(st, hex, magic, &got, size, e) < 0)
		return -1;
	if (*size < min || *size > max) {
		if (min == max)
			cs_errf(e, "size mismatch: expected %llu bytes, found "
			    "%llu", (unsigned long long)min,
			    (unsigned long long)*size);
		else
			cs_errf(e, "size mismatch: expected %llu to %llu bytes, "
			    "found %llu", (unsigned long long)min,
			    (unsigned long long)max, (unsigned long long)*size);
		return -1;
	}
	if (st->enc && (got < SEALED_HDR ||
	    memcmp(magic, SEALED_MAGIC, SEALED_HDR) != 0))
		return cs_errf(e, "not a sealed object (no %s at its start)",
		    SEALED_MAGIC);
	return 0;
}
