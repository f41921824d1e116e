/* kvmap.h - an in-memory map from byte-string keys to byte-string values
 * (open addressing, FNV-1a). Keys and values are copied in, except values
 * put by reference: those stay in the data file, the map keeps their
 * offset and length (an agent's index stays small with large values).
 * Each entry counts its writes (its version): a put of a held key adds
 * one, a put of a new key starts at 1, a delete forgets the count. */
#ifndef CUTSNAP_KVMAP_H
#define CUTSNAP_KVMAP_H

#include <stddef.h>
#include <stdint.h>

struct kvmap;	/* opaque */

struct kv_entry {
	uint8_t *key;	/* owned by the map */
	size_t klen;
	uint8_t *val;	/* owned by the map; NULL for a value by reference */
	size_t vlen;
	uint64_t voff;	/* by reference: the value's offset in the file */
	uint64_t ver;	/* the key's version: writes since it was created
			 * (1 after the first; kvmap_put counts them) */
};

struct kvmap *kvmap_new(void);			/* NULL on OOM */
void kvmap_free(struct kvmap *m);		/* accepts NULL */
/* 1 and a borrowed value (valid until the map changes), or 0 if absent.
 * For a value put by reference *val is NULL (use kvmap_entry). */
int kvmap_get(const struct kvmap *m, const void *key, size_t klen,
    const uint8_t **val, size_t *vlen);
/* The key's entry (borrowed, valid until the map changes) or NULL. */
const struct kv_entry *kvmap_entry(const struct kvmap *m, const void *key,
    size_t klen);
int kvmap_put(struct kvmap *m, const void *key, size_t klen, const void *val,
    size_t vlen);				/* 0, -1 on OOM */
/* Put a value that lives at offset voff of the data file, vlen bytes long:
 * only the key is copied. 0, -1 on OOM. */
int kvmap_put_ref(struct kvmap *m, const void *key, size_t klen,
    uint64_t voff, size_t vlen);
/* Set the version of key, which must be held: 1, or 0 when absent. */
int kvmap_set_ver(struct kvmap *m, const void *key, size_t klen,
    uint64_t ver);
int kvmap_del(struct kvmap *m, const void *key, size_t klen); /* 1 / 0 */
size_t kvmap_count(const struct kvmap *m);
/* The entries' key and value lengths summed (values by reference at their
 * length): kept as the map changes, so it costs nothing to ask. */
uint64_t kvmap_bytes(const struct kvmap *m);
/* A malloc'ed array of pointers to the entries sorted by key (memcmp, then
 * length); the caller frees the array, not the entries. 0 / -1 on OOM. */
int kvmap_sorted(const struct kvmap *m, const struct kv_entry ***out,
    size_t *n);

#endif
