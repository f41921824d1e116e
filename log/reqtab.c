/* reqtab.c - the client request ids an agent remembers (reqtab.h). */
/*
 * Invariants:
 * - n <= cap <= REQTAB_MAX; until n reaches REQTAB_MAX, head is 0 and the
 *   entries are ring[0, n) in insertion order; from then on the ring is
 *   full and ring[head] is the oldest.
 * - Every entry is on exactly one chain: that of bucket[slot_of(id)].
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "reqtab.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= FNV_PRIME;
	}
	return h;
}

uint64_t
reqtab_digest(uint8_t type, const void *p, size_t n)
{
	return fnv(fnv(FNV_OFFSET, &type, 1), p, n);
}

static size_t
slot_of(const struct reqtab *t, const uint8_t id[REQ_ID_LEN])
{
	return (size_t)(fnv(FNV_OFFSET, id, REQ_ID_LEN) & (2 * t->cap - 1));
}

void
reqtab_free(struct reqtab *t)
{
	if (t == NULL)
		return;
	free(t->ring);
	free(t->bucket);
	memset(t, 0, sizeof(*t));
}

const struct reqent *
reqtab_find(const struct reqtab *t, const uint8_t id[REQ_ID_LEN])
{
	uint32_t i;

	if (t->n == 0)
		return NULL;
	for (i = t->bucket[slot_of(t, id)]; i != 0; i = t->ring[i - 1].next)
		if (memcmp(t->ring[i - 1].id, id, REQ_ID_LEN) == 0)
			return &t->ring[i - 1];
	return NULL;
}

const struct reqent *
reqtab_at(const struct reqtab *t, size_t i)
{
	assert(i < t->n);
	return &t->ring[(t->head + i) & (t->cap - 1)];
}

/* Double the ring (only while it is not full: its entries are then
 * ring[0, n)) and rebuild the chains. 0 / -1. */
static int
grow(struct reqtab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64, i, b;
	struct reqent *r;
	uint32_t *bk;

	assert(t->head == 0 && t->n <= t->cap && cap <= REQTAB_MAX);
	if ((bk = calloc(2 * cap, sizeof(*bk))) == NULL)
		return -1;
	if ((r = realloc(t->ring, cap * sizeof(*r))) == NULL) {
		free(bk);
		return -1;
	}
	free(t->bucket);
	t->ring = r;
	t->bucket = bk;
	t->cap = cap;
	for (i = 0; i < t->n; i++) {
		b = slot_of(t, r[i].id);
		r[i].next = bk[b];
		bk[b] = (uint32_t)(i + 1);
	}
	return 0;
}

int
reqtab_reserve(struct reqtab *t, size_t k)
{
	size_t want = k > REQTAB_MAX - t->n ? REQTAB_MAX : t->n + k;

	while (t->cap < want)
		if (grow(t) == -1)
			return -1;
	return 0;
}

/* Take the oldest entry, at head, off its chain. */
static void
unlink_oldest(struct reqtab *t)
{
	uint32_t *p = &t->bucket[slot_of(t, t->ring[t->head].id)];

	while (*p != t->head + 1) {
		assert(*p != 0);
		p = &t->ring[*p - 1].next;
	}
	*p = t->ring[t->head].next;
}

int
reqtab_add(struct reqtab *t, const uint8_t id[REQ_ID_LEN], uint64_t digest,
    const void *val, size_t vlen)
{
	struct reqent *en;
	size_t s, b;

	assert(vlen <= REQ_VAL_MAX);
	if (reqtab_reserve(t, 1) == -1)
		return -1;
	if (t->n == REQTAB_MAX) {
		unlink_oldest(t);
		s = t->head;
		t->head = (t->head + 1) & (t->cap - 1);
	} else
		s = t->n++;
	en = &t->ring[s];
	memcpy(en->id, id, REQ_ID_LEN);
	en->digest = digest;
	en->vlen = (uint8_t)vlen;
	if (vlen > 0)
		memcpy(en->val, val, vlen);
	b = slot_of(t, id);
	en->next = t->bucket[b];
	t->bucket[b] = (uint32_t)(s + 1);
	return 0;
}
