/* chunkhash.c - per-chunk SHA-256 of an append-only file (chunkhash.h). */
#include <stdlib.h>
#include <string.h>

#include "chunkhash.h"
#include "../crypto/sha.h"

struct chunkhash {
	uint32_t size;		/* chunk size */
	uint64_t len;		/* bytes fed */
	struct sha_ctx *cur;	/* hash of [nfull*size, len) */
	uint8_t (*done)[SHA_LEN];	/* digests of the finished chunks */
	size_t nfull, cap;
};

int
chunk_size_valid(uint64_t size)
{
	return size >= CHUNK_SIZE_MIN && size <= CHUNK_SIZE_MAX &&
	    (size & (size - 1)) == 0;
}

uint32_t
chunk_size_default(void)
{
	const char *s = getenv("CUTSNAP_CHUNK_SIZE");
	char *end;
	unsigned long long v;

	if (s == NULL || *s == '\0')
		return CHUNK_SIZE_DEFAULT;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || !chunk_size_valid(v))
		return CHUNK_SIZE_DEFAULT;
	return (uint32_t)v;
}

uint64_t
chunk_count(uint64_t len, uint32_t size)
{
	return len / size + (len % size != 0);
}

struct chunkhash *
chunkhash_new(uint32_t size)
{
	struct chunkhash *h;

	if (!chunk_size_valid(size) || (h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->size = size;
	if ((h->cur = sha_new()) == NULL) {
		free(h);
		return NULL;
	}
	return h;
}

void
chunkhash_free(struct chunkhash *h)
{
	if (h == NULL)
		return;
	sha_free(h->cur);
	free(h->done);
	free(h);
}

/* Finish the current chunk and start the next one. */
static int
boundary(struct chunkhash *h)
{
	uint8_t (*v)[SHA_LEN];
	struct sha_ctx *next;
	size_t ncap;

	if (h->nfull == h->cap) {
		ncap = h->cap ? h->cap * 2 : 64;
		if ((v = realloc(h->done, ncap * sizeof(*v))) == NULL)
			return -1;
		h->done = v;
		h->cap = ncap;
	}
	if ((next = sha_new()) == NULL)
		return -1;
	if (sha_final(h->cur, h->done[h->nfull]) < 0) {
		sha_free(next);
		return -1;
	}
	sha_free(h->cur);
	h->cur = next;
	h->nfull++;
	return 0;
}

int
chunkhash_update(struct chunkhash *h, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t room;
	size_t k;

	while (n > 0) {
		room = h->size - h->len % h->size;
		k = n < room ? n : (size_t)room;
		if (sha_update(h->cur, b, k) < 0)
			return -1;
		h->len += k;
		b += k;
		n -= k;
		if (h->len % h->size == 0 && boundary(h) < 0)
			return -1;
	}
	return 0;
}

uint32_t
chunkhash_size(const struct chunkhash *h)
{
	return h->size;
}

uint64_t
chunkhash_len(const struct chunkhash *h)
{
	return h->len;
}

size_t
chunkhash_nfull(const struct chunkhash *h)
{
	return h->nfull;
}

const uint8_t *
chunkhash_digest(const struct chunkhash *h, size_t i)
{
	return i < h->nfull ? h->done[i] : NULL;
}

int
chunkhash_peek(const struct chunkhash *h, uint8_t out[32])
{
	return sha_peek(h->cur, out);
}
