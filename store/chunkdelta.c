/* chunkdelta.c - a chunk that only grew since the previous snapshot,
 * stored without compressing its old bytes again.
 *
 * An agent's data file grows at its end, so the last chunk of a snapshot
 * is usually partial, and the next snapshot finds the same chunk longer:
 * the same first plen bytes and some new ones. Its blob is new (its name
 * is the SHA-256 of the whole chunk), and compressing it whole redoes
 * the previous snapshot's work on those plen bytes: with a snapshot every
 * 500 ms under load, zstd was the largest part of what the snapshots
 * cost the process taking them (docs/INTERNALS.md, "Snapshots every
 * 500 ms").
 *
 * zstd decodes a run of frames as the concatenation of their contents,
 * so the new chunk's object can be the previous object's frames followed
 * by one frame of the new bytes: the object format does not change, and
 * every reader (verify, restore, older binaries) decodes it with the same
 * single call. Before the previous object is built on, it is proven to
 * hold exactly the new chunk's first plen bytes: the caller checked that
 * those bytes have the previous chunk's name, and the object here is
 * decoded and compared with them byte for byte, so a blob that rotted is
 * never copied into a new one (the chunk is then compressed whole, as
 * before). A chunk holds at most DELTA_MAX_FRAMES frames; one that would
 * have more is compressed whole again, which bounds what the frames cost
 * in ratio (each starts with an empty window) when snapshots are taken
 * often and each adds little.
 *
 * Only for a repository that compresses. In an encrypted one the
 * previous object is opened (authenticated under its name, so only what
 * this repository's key sealed for that chunk is used) and the new one
 * sealed under its own name with a fresh nonce, as any chunk is; the
 * names compared are then the keyed names of the manifest. */
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "store_int.h"
#include "../lib/fsutil.h"

#define DELTA_MAX_FRAMES 8

int
store_delta_usable(const struct store *st)
{
	return st->compress == STORE_COMPRESS_ZSTD;
}

int
store_prev_tail(struct store *st, const char *agent, struct prev_tail *t,
    struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	const char *hex;
	int step, rc = -1;

	memset(t, 0, sizeof(*t));
	/* The agent's last chunk in its latest complete snapshot: walks
	 * agents' primary key from the newest snapshot down, then
	 * agent_chunks' to the chunk. */
	if (store_db_prepare(st,
	    "SELECT c.offset, c.size, c.sha256 FROM agent_chunks c "
	    "WHERE c.agent = ?1 AND c.snapshot_id = ("
	    " SELECT a.snapshot_id FROM agents a "
	    " JOIN snapshots s ON s.id = a.snapshot_id "
	    " WHERE a.name = ?1 AND s.status = 'complete' "
	    " ORDER BY a.snapshot_id DESC LIMIT 1) "
	    "ORDER BY c.idx DESC LIMIT 1", &s, e) < 0)
		return -1;
	sqlite3_bind_text(s, 1, agent, -1, SQLITE_STATIC);
	step = sqlite3_step(s);
	if (step == SQLITE_ROW) {
		hex = (const char *)sqlite3_column_text(s, 2);
		if (sqlite3_column_int64(s, 0) >= 0 &&
		    sqlite3_column_int64(s, 1) > 0 && hex != NULL &&
		    sha_unhex(hex, t->name) == 0) {
			t->off = (uint64_t)sqlite3_column_int64(s, 0);
			t->len = (uint64_t)sqlite3_column_int64(s, 1);
			t->found = 1;
		}
		rc = 0;
	} else if (step == SQLITE_DONE) {
		rc = 0;
	} else {
		store_db_fail(st, e, "reading the manifest");
	}
	sqlite3_finalize(s);
	return rc;
}

/* The previous chunk's blob at path, read into buf[0, bufsz) and opened
 * (chunkobj framing, object.c): 0 with its framed object in *obj, *objlen
 * when that is a zstd object of plen plain bytes (a chunk stored as it is
 * has nothing to build on); else -1. */
static int
read_prev(const struct store *st, const uint8_t pname[SHA_LEN],
    const char *path, size_t plen, uint8_t *buf, size_t bufsz,
    uint8_t **obj, size_t *objlen)
{
	uint8_t want[OBJ_HDR_LEN];
	struct cs_err e;
	uint64_t size;
	size_t n = 0;
	int fd;

	if ((fd = store_obj_open(path, "an object", &size, &e)) < 0)
		return -1;
	if (size < store_obj_bound(st, plen) && size <= bufsz &&
	    fs_pread_all(fd, buf, (size_t)size, 0) == 0)
		n = (size_t)size;
	close(fd);
	if (n == 0 || store_obj_open_in_place(st, pname, buf, n, obj,
	    objlen) < 0 || *objlen <= OBJ_HDR_LEN ||
	    *objlen >= OBJ_HDR_LEN + plen)
		return -1;
	chunkobj_header(want, CHUNKOBJ_ZSTD, plen);
	return memcmp(*obj, want, OBJ_HDR_LEN) == 0 ? 0 : -1;
}

/* How many zstd frames payload[0, n) is, exactly; 0 when it is not a
 * run of whole frames. */
static int
count_frames(const uint8_t *payload, size_t n)
{
	size_t off = 0, k;
	int frames = 0;

	while (off < n) {
		k = ZSTD_findFrameCompressedSize(payload + off, n - off);
		if (ZSTD_isError(k) || k == 0)
			return 0;
		off += k;
		frames++;
	}
	return frames;
}

/* Whether payload[0, n) decodes to exactly want[0, plen), decoded into
 * got (plen bytes). */
static int
decodes_to(const uint8_t *payload, size_t n, const uint8_t *want,
    size_t plen, uint8_t *got)
{
	size_t k;

	k = ZSTD_decompress(got, plen, payload, n);
	return !ZSTD_isError(k) && k == plen && memcmp(got, want, plen) == 0;
}

int
store_delta_encode(const struct store *st, const uint8_t pname[SHA_LEN],
    size_t plen, const uint8_t name[SHA_LEN], uint8_t *obj, size_t len,
    uint8_t *scratch, size_t scratchsz, uint8_t *check, size_t *outlen,
    struct cs_err *e)
{
	char hex[SHA_HEX_LEN], path[PATH_MAX];
	uint8_t *framed = obj + store_obj_frame_off(st);
	const uint8_t *in = framed + OBJ_HDR_LEN;
	uint8_t *prev;
	size_t prevlen, payload, n;
	int frames;

	*outlen = 0;
	if (!store_delta_usable(st) || plen == 0 || plen >= len)
		return 0;
	sha_hex(pname, hex);
	if (store_blob_path(st, hex, path, sizeof(path), NULL) < 0 ||
	    read_prev(st, pname, path, plen, scratch, scratchsz, &prev,
	    &prevlen) < 0)
		return 0;
	payload = prevlen - OBJ_HDR_LEN;
	frames = count_frames(prev + OBJ_HDR_LEN, payload);
	if (frames == 0 || frames >= DELTA_MAX_FRAMES ||
	    !decodes_to(prev + OBJ_HDR_LEN, payload, in, plen, check))
		return 0;
	n = chunkobj_zstd_frame(in + plen, len - plen, prev + prevlen,
	    (size_t)(scratch + scratchsz - (prev + prevlen)));
	/* zstd failed, or the whole is no smaller than the chunk (the new
	 * bytes do not compress): the caller frames the chunk as before. */
	if (n == 0 || payload + n >= len)
		return 0;
	memcpy(framed + OBJ_HDR_LEN, prev + OBJ_HDR_LEN, payload + n);
	chunkobj_header(framed, CHUNKOBJ_ZSTD, len);
	if (store_obj_seal_in_place(st, name, obj, OBJ_HDR_LEN + payload + n,
	    outlen, e) < 0)
		return -1;
	return 1;
}
