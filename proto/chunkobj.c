/* chunkobj.c - the framed object of a chunk (chunkobj.h). */
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "chunkobj.h"

/* The chunks' zstd parameters: the fastest level, with a window as large
 * as a default chunk (2^22 = 4 MiB; zstd shrinks it for a smaller
 * chunk) and a hash table of 2^16 entries. Level 1's own window for a 4
 * MiB input is 512 KiB, which misses the repeats of records further
 * apart: on the bench's text it stores 6.5x smaller where level 3 does
 * 10x, and level 1 with this window 11.6x, at 1.3x level 3's speed.
 * Any reader decodes it: a frame says its window, and a chunk is
 * decompressed whole, in one call. */
#define ZSTD_LEVEL 1
#define ZSTD_WLOG 22
#define ZSTD_HLOG 16

/* Whether zstd may make plain[0, len) smaller: its first SAMPLE bytes,
 * compressed at zstd's fastest level into out, must shrink by at least
 * 1/32. Random data (already compressed or encrypted values) fails at
 * once, instead of a whole attempt per chunk that is then stored as it
 * is anyway: that attempt was an eighth of a full snapshot's CPU time on
 * random data. */
#define SAMPLE (64 * 1024)
static int
worth_compressing(const uint8_t *plain, size_t len, uint8_t *out,
    size_t outsz)
{
	size_t n;

	if (len <= SAMPLE)
		return 1;
	n = ZSTD_compress(out, outsz, plain, SAMPLE, 1);
	return ZSTD_isError(n) || n < SAMPLE - SAMPLE / 32;
}

/* plain[0, len) as one zstd frame into out: its length, or 0 when zstd
 * failed (then the chunk is stored as it is). */
size_t
chunkobj_zstd_frame(const uint8_t *plain, size_t len, uint8_t *out,
    size_t outsz)
{
	ZSTD_CCtx *c;
	size_t n = 0;

	if ((c = ZSTD_createCCtx()) == NULL)
		return 0;
	if (!ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel,
	    ZSTD_LEVEL)) &&
	    !ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog,
	    ZSTD_WLOG)) &&
	    !ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_hashLog,
	    ZSTD_HLOG))) {
		n = ZSTD_compress2(c, out, outsz, plain, len);
		if (ZSTD_isError(n))
			n = 0;
	}
	ZSTD_freeCCtx(c);
	return n;
}

static void
put_le64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

size_t
chunkobj_bound(size_t len)
{
	return CHUNKOBJ_HDR_LEN + ZSTD_compressBound(len);
}

void
chunkobj_header(uint8_t *out, int codec, size_t len)
{
	memcpy(out, CHUNKOBJ_MAGIC, 4);
	memset(out + 4, 0, 4);
	out[4] = (uint8_t)codec;
	put_le64(out + 8, (uint64_t)len);
}

/* plain[0, len) compressed into out when zstd is set and that makes it
 * smaller: its length; else 0 (then it is stored as it is). */
static size_t
try_compress(int zstd, const uint8_t *plain, size_t len, uint8_t *out,
    size_t outsz)
{
	size_t n = 0;

	if (zstd && worth_compressing(plain, len, out, outsz))
		n = chunkobj_zstd_frame(plain, len, out, outsz);
	return n > 0 && n < len ? n : 0;
}

size_t
chunkobj_frame(int zstd, const uint8_t *plain, size_t len, uint8_t *out,
    size_t outsz)
{
	size_t n;

	n = try_compress(zstd, plain, len, out + CHUNKOBJ_HDR_LEN,
	    outsz - CHUNKOBJ_HDR_LEN);
	if (n > 0) {
		chunkobj_header(out, CHUNKOBJ_ZSTD, len);
		return CHUNKOBJ_HDR_LEN + n;
	}
	chunkobj_header(out, CHUNKOBJ_STORED, len);
	memcpy(out + CHUNKOBJ_HDR_LEN, plain, len);
	return CHUNKOBJ_HDR_LEN + len;
}

size_t
chunkobj_frame_in_place(int zstd, uint8_t *obj, size_t len,
    uint8_t *scratch, size_t scratchsz)
{
	size_t n;

	n = try_compress(zstd, obj + CHUNKOBJ_HDR_LEN, len, scratch,
	    scratchsz);
	if (n > 0) {
		memcpy(obj + CHUNKOBJ_HDR_LEN, scratch, n);
		chunkobj_header(obj, CHUNKOBJ_ZSTD, len);
		return CHUNKOBJ_HDR_LEN + n;
	}
	chunkobj_header(obj, CHUNKOBJ_STORED, len);
	return CHUNKOBJ_HDR_LEN + len;
}

int
chunkobj_key(const char *hex, char *out, size_t outsz)
{
	int n = snprintf(out, outsz, "blobs/%.2s/%s", hex, hex);

	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}
