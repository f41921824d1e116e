/* aead_scrypt.c - scrypt's core (RFC 7914 ROMix with BlockMix over
 * Salsa20/8) with SSE2: each 64-byte Salsa block held as four 128-bit
 * rows, its words stored diagonally (word 5*i mod 16 at place i) so that
 * the column and row rounds are lane-wise adds, shifts and xors with one
 * shuffle per row between them. OpenSSL's scrypt computes the same bytes
 * one 32-bit word at a time: this takes 0.6-0.75x of its time for the
 * repositories' N=2^16, r=8 (the same parameters, so the same key: the
 * unit test checks both against each other and RFC 7914). PBKDF2
 * stays OpenSSL's. Built only where SSE2 is (every x86-64); elsewhere
 * aead.c uses OpenSSL's. */
#include "aead_int.h"

#ifdef AEAD_SCRYPT_SSE2
#include <emmintrin.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

/* Half of a Salsa20 double round on the rows a, b, c, d: the column
 * round as (x0, x1, x2, x3), the row round as (x0, x3, x2, x1) once the
 * rows are shuffled into place. */
static inline void
half(__m128i *a, __m128i *b, __m128i *c, __m128i *d)
{
	__m128i t;

#define ROTX(v, t, s) ((v) = _mm_xor_si128(_mm_xor_si128((v), \
	_mm_slli_epi32((t), (s))), _mm_srli_epi32((t), 32 - (s))))
	t = _mm_add_epi32(*a, *d);
	ROTX(*b, t, 7);
	t = _mm_add_epi32(*b, *a);
	ROTX(*c, t, 9);
	t = _mm_add_epi32(*c, *b);
	ROTX(*d, t, 13);
	t = _mm_add_epi32(*d, *c);
	ROTX(*a, t, 18);
#undef ROTX
}

/* b = Salsa20/8(b) + b, b in the diagonal order above. */
static void
salsa8(__m128i b[4])
{
	__m128i x0 = b[0], x1 = b[1], x2 = b[2], x3 = b[3];
	int i;

	for (i = 0; i < 8; i += 2) {
		half(&x0, &x1, &x2, &x3);
		x1 = _mm_shuffle_epi32(x1, 0x93);
		x2 = _mm_shuffle_epi32(x2, 0x4E);
		x3 = _mm_shuffle_epi32(x3, 0x39);
		half(&x0, &x3, &x2, &x1);
		x1 = _mm_shuffle_epi32(x1, 0x39);
		x2 = _mm_shuffle_epi32(x2, 0x4E);
		x3 = _mm_shuffle_epi32(x3, 0x93);
	}
	b[0] = _mm_add_epi32(b[0], x0);
	b[1] = _mm_add_epi32(b[1], x1);
	b[2] = _mm_add_epi32(b[2], x2);
	b[3] = _mm_add_epi32(b[3], x3);
}

/* out = BlockMix(a ^ m), or BlockMix(a) when m is NULL: 2r blocks of
 * four rows each, the even outputs first, then the odd ones. */
static void
blockmix(const __m128i *a, const __m128i *m, __m128i *out, uint32_t r)
{
	const __m128i *la = a + (2 * (size_t)r - 1) * 4;
	__m128i x[4], v;
	size_t i, k;

	for (k = 0; k < 4; k++)
		x[k] = m != NULL ?
		    _mm_xor_si128(la[k], m[(2 * (size_t)r - 1) * 4 + k]) :
		    la[k];
	for (i = 0; i < 2 * (size_t)r; i++) {
		for (k = 0; k < 4; k++) {
			v = a[i * 4 + k];
			if (m != NULL)
				v = _mm_xor_si128(v, m[i * 4 + k]);
			x[k] = _mm_xor_si128(x[k], v);
		}
		salsa8(x);
		for (k = 0; k < 4; k++)
			out[((i & 1) * r + i / 2) * 4 + k] = x[k];
	}
}

/* blk (128r bytes, little-endian words) to or from the diagonal order
 * in x. */
static void
order(uint8_t *blk, uint32_t *x, uint32_t r, int to_x)
{
	size_t k, w;

	for (k = 0; k < 2 * (size_t)r; k++)
		for (w = 0; w < 16; w++) {
			if (to_x)
				memcpy(&x[k * 16 + w],
				    blk + (k * 16 + w * 5 % 16) * 4, 4);
			else
				memcpy(blk + (k * 16 + w * 5 % 16) * 4,
				    &x[k * 16 + w], 4);
		}
}

/* RFC 7914 ROMix of blk in place; v holds n blocks, x and y one each.
 * N is even (a power of two >= 2), so each loop takes two steps at a
 * time, x and y swapping roles. Integerify is the last block's word 0
 * (in place 0 of the diagonal order; N <= 2^22 needs no more bits). */
static void
romix(uint8_t *blk, uint32_t r, uint64_t n, __m128i *v, __m128i *x,
    __m128i *y)
{
	size_t vecs = 8 * (size_t)r, last = (2 * (size_t)r - 1) * 16;
	uint64_t i, j;

	order(blk, (uint32_t *)(void *)x, r, 1);
	for (i = 0; i < n; i += 2) {
		memcpy(v + i * vecs, x, vecs * 16);
		blockmix(x, NULL, y, r);
		memcpy(v + (i + 1) * vecs, y, vecs * 16);
		blockmix(y, NULL, x, r);
	}
	for (i = 0; i < n; i += 2) {
		j = ((const uint32_t *)(const void *)x)[last] & (n - 1);
		blockmix(x, v + j * vecs, y, r);
		j = ((const uint32_t *)(const void *)y)[last] & (n - 1);
		blockmix(y, v + j * vecs, x, r);
	}
	order(blk, (uint32_t *)(void *)x, r, 0);
}

int
aead_scrypt_sse2(const void *pass, size_t passlen, const uint8_t *salt,
    size_t saltlen, uint64_t n, uint32_t r, uint32_t p,
    uint8_t out[AEAD_KEY_LEN], struct cs_err *e)
{
	size_t bl = 128 * (size_t)r * p, vl = 128 * (size_t)r * (size_t)n;
	uint8_t *b = NULL;
	__m128i *xy = NULL, *v = MAP_FAILED;
	uint32_t i;
	int rc = -1;

	if ((b = malloc(bl)) == NULL ||
	    (xy = aligned_alloc(64, 256 * (size_t)r)) == NULL) {
		cs_errf(e, "scrypt: out of memory");
		goto out;
	}
	/* Populated at once: the kernel zeroes the 64 MiB (for N=2^16,
	 * r=8) in one pass instead of 16384 page faults along the first
	 * loop, about 10-20 ms less CPU per derivation here. */
	v = mmap(NULL, vl, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (v == MAP_FAILED) {
		cs_errno(e, "scrypt: mmap");
		goto out;
	}
	if (PKCS5_PBKDF2_HMAC(pass, (int)passlen, salt, (int)saltlen, 1,
	    EVP_sha256(), (int)bl, b) != 1) {
		cs_errf(e, "scrypt: PBKDF2 failed");
		goto out;
	}
	for (i = 0; i < p; i++)
		romix(b + (size_t)i * 128 * r, r, n, v, xy, xy + 8 * r);
	if (PKCS5_PBKDF2_HMAC(pass, (int)passlen, b, (int)bl, 1,
	    EVP_sha256(), AEAD_KEY_LEN, out) != 1) {
		cs_errf(e, "scrypt: PBKDF2 failed");
		goto out;
	}
	rc = 0;
out:
	/* Every intermediate derives from the password: cleared before it
	 * is given back, as OpenSSL's scrypt does. */
	if (v != MAP_FAILED) {
		OPENSSL_cleanse(v, vl);
		munmap(v, vl);
	}
	if (xy != NULL)
		OPENSSL_cleanse(xy, 256 * (size_t)r);
	free(xy);
	if (b != NULL)
		OPENSSL_cleanse(b, bl);
	free(b);
	return rc;
}
#else
/* ISO C wants something in a translation unit. */
typedef int aead_scrypt_none;
#endif
