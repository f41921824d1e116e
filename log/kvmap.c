/* kvmap.c - byte-string map: open addressing, linear probing, FNV-1a. */
/*
 * Invariants:
 * - cap is a power of two (or 0 before the first put); count <= cap * 7/10
 *   after every put, so a probe always ends at an empty slot.
 * - No tombstones: deletion shifts the following run of entries back
 *   (backward-shift deletion), so every entry is reachable from its home
 *   slot by a probe that crosses only used slots.
 * - An entry's key and value live in one allocation: val = key + klen;
 *   a value put by reference has val == NULL and only the key is stored.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvmap.h"

#define KV_MIN_CAP 16

struct slot {
	struct kv_entry e;	/* valid when used */
	uint64_t hash;		/* FNV-1a of e.key, cached for growth */
	int used;		/* 1 when the slot holds an entry */
};

struct kvmap {
	struct slot *slots;	/* cap slots, NULL while cap == 0 */
	size_t cap;		/* power of two, or 0 */
	size_t count;		/* used slots */
	uint64_t bytes;		/* the entries' klen + vlen, summed */
};

static uint64_t
fnv1a(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

struct kvmap *
kvmap_new(void)
{
	return calloc(1, sizeof(struct kvmap));
}

void
kvmap_free(struct kvmap *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->cap; i++)
		if (m->slots[i].used)
			free(m->slots[i].e.key);
	free(m->slots);
	free(m);
}

/* Index of key's slot, or of the empty slot where it would go. cap > 0. */
static size_t
find_slot(const struct kvmap *m, const void *key, size_t klen, uint64_t h)
{
	size_t mask = m->cap - 1, i = (size_t)h & mask;
	const struct slot *s;

	for (;;) {
		s = &m->slots[i];
		if (!s->used)
			return i;
		if (s->hash == h && s->e.klen == klen &&
		    (klen == 0 || memcmp(s->e.key, key, klen) == 0))
			return i;
		i = (i + 1) & mask;
	}
}

/* Rehash into ncap slots; entries are moved, not copied. 0 / -1. */
static int
grow(struct kvmap *m, size_t ncap)
{
	struct slot *ns, *os = m->slots;
	size_t i, j, mask = ncap - 1;

	if ((ns = calloc(ncap, sizeof(*ns))) == NULL)
		return -1;
	for (i = 0; i < m->cap; i++) {
		if (!os[i].used)
			continue;
		j = (size_t)os[i].hash & mask;
		while (ns[j].used)
			j = (j + 1) & mask;
		ns[j] = os[i];
	}
	free(os);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

const struct kv_entry *
kvmap_entry(const struct kvmap *m, const void *key, size_t klen)
{
	const struct slot *s;

	if (m->cap == 0)
		return NULL;
	s = &m->slots[find_slot(m, key, klen, fnv1a(key, klen))];
	return s->used ? &s->e : NULL;
}

int
kvmap_get(const struct kvmap *m, const void *key, size_t klen,
    const uint8_t **val, size_t *vlen)
{
	const struct kv_entry *e = kvmap_entry(m, key, klen);

	if (e == NULL)
		return 0;
	*val = e->val;
	*vlen = e->vlen;
	return 1;
}

/* Put key -> (val[0, vlen) copied in, or by reference at voff when val is
 * NULL). 0 / -1 on OOM, the map unchanged. */
static int
put(struct kvmap *m, const void *key, size_t klen, const void *val,
    size_t vlen, uint64_t voff)
{
	uint64_t h = fnv1a(key, klen);
	size_t inl = val != NULL ? vlen : 0;
	struct slot *s;
	uint8_t *blk;
	size_t i;

	if (klen > SIZE_MAX - inl - 1)
		return -1;
	/* Grow first so that a failed allocation leaves the map untouched;
	 * a replaced key may grow the table one put early, which is harmless. */
	if (m->cap == 0 || (m->count + 1) * 10 > m->cap * 7)
		if (grow(m, m->cap ? m->cap * 2 : KV_MIN_CAP) == -1)
			return -1;
	/* One block for key and value; +1 so a 0-byte entry still gets a
	 * distinct, non-NULL allocation. */
	if ((blk = malloc(klen + inl + 1)) == NULL)
		return -1;
	if (klen > 0)
		memcpy(blk, key, klen);
	if (inl > 0)
		memcpy(blk + klen, val, inl);
	i = find_slot(m, key, klen, h);
	s = &m->slots[i];
	if (s->used) {
		m->bytes -= s->e.klen + s->e.vlen;
		free(s->e.key);
		s->e.ver++;
	} else {
		m->count++;
		s->e.ver = 1;
	}
	m->bytes += klen + vlen;
	s->used = 1;
	s->hash = h;
	s->e.key = blk;
	s->e.klen = klen;
	s->e.val = val != NULL ? blk + klen : NULL;
	s->e.vlen = vlen;
	s->e.voff = val != NULL ? 0 : voff;
	return 0;
}

int
kvmap_put(struct kvmap *m, const void *key, size_t klen, const void *val,
    size_t vlen)
{
	static const uint8_t empty[1];

	/* A NULL val with vlen 0 is an empty inline value, not a reference. */
	return put(m, key, klen, val != NULL ? val : empty, vlen, 0);
}

int
kvmap_put_ref(struct kvmap *m, const void *key, size_t klen, uint64_t voff,
    size_t vlen)
{
	return put(m, key, klen, NULL, vlen, voff);
}

int
kvmap_set_ver(struct kvmap *m, const void *key, size_t klen, uint64_t ver)
{
	struct slot *s;

	if (m->cap == 0)
		return 0;
	s = &m->slots[find_slot(m, key, klen, fnv1a(key, klen))];
	if (!s->used)
		return 0;
	s->e.ver = ver;
	return 1;
}

int
kvmap_del(struct kvmap *m, const void *key, size_t klen)
{
	size_t mask, i, j, home;

	if (m->cap == 0)
		return 0;
	mask = m->cap - 1;
	i = find_slot(m, key, klen, fnv1a(key, klen));
	if (!m->slots[i].used)
		return 0;
	m->bytes -= m->slots[i].e.klen + m->slots[i].e.vlen;
	free(m->slots[i].e.key);
	m->slots[i].used = 0;
	m->count--;
	/* Backward shift: pull each later entry of the run into the hole
	 * unless its home lies cyclically in (hole, j], where it already
	 * is reachable without crossing the hole. */
	for (j = (i + 1) & mask; m->slots[j].used; j = (j + 1) & mask) {
		home = (size_t)m->slots[j].hash & mask;
		if (((j - home) & mask) < ((j - i) & mask))
			continue;
		m->slots[i] = m->slots[j];
		m->slots[j].used = 0;
		i = j;
	}
	return 1;
}

size_t
kvmap_count(const struct kvmap *m)
{
	return m->count;
}

uint64_t
kvmap_bytes(const struct kvmap *m)
{
	return m->bytes;
}

static int
entry_cmp(const void *a, const void *b)
{
	const struct kv_entry *x = *(const struct kv_entry *const *)a;
	const struct kv_entry *y = *(const struct kv_entry *const *)b;
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int c = n ? memcmp(x->key, y->key, n) : 0;

	if (c != 0)
		return c;
	return (x->klen > y->klen) - (x->klen < y->klen);
}

int
kvmap_sorted(const struct kvmap *m, const struct kv_entry ***out, size_t *n)
{
	const struct kv_entry **v;
	size_t i, k = 0;

	/* +1: malloc(0) may return NULL, which would look like OOM. */
	if ((v = malloc((m->count + 1) * sizeof(*v))) == NULL)
		return -1;
	for (i = 0; i < m->cap; i++)
		if (m->slots[i].used)
			v[k++] = &m->slots[i].e;
	assert(k == m->count);
	qsort(v, k, sizeof(*v), entry_cmp);
	*out = v;
	*n = k;
	return 0;
}
