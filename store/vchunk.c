/* vchunk.c - verify's chunk check: a chunk read (and decoded) into a
 * worker's buffer and hashed against its recorded sha256, its block
 * checksums kept after its bytes (struct ctail); and the pool of spare
 * chunk buffers the check and the handoff share. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "verify_int.h"
#include "../lib/bigbuf.h"
#include "../log/crcblk.h"
#include "../lib/util.h"

/* A chunk buffer for worker w, or NULL: a spare one (those the replay
 * passed, up to VERIFY_SPARE_MAX, are kept for the next chunks), else a
 * new one (a bigbuf: page-aligned, in huge pages where the kernel gives
 * them), as large as the snapshot's largest chunk. Writing into a buffer
 * whose lines another core holds is what costs here: decompressing into
 * the buffer another worker wrote last took 2-3x the CPU (docs/perf/
 * profiles.md, performance IX and XI). So the newest spare w wrote
 * itself (still in its own cache; the replay reads little of a chunk),
 * else the oldest spare. */
uint8_t *
store_vbuf_get(struct vrun *v, int w)
{
	void *p = NULL;
	size_t j;

	pthread_mutex_lock(&v->smu);
	if (v->nspare > 0) {
		for (j = v->nspare; j-- > 0;)
			if (store_vchunk_tail(v, v->spare[j])->owner == w)
				break;
		if (j >= v->nspare)
			j = 0;
		p = v->spare[j];
		memmove(&v->spare[j], &v->spare[j + 1],
		    (v->nspare - j - 1) * sizeof(v->spare[0]));
		v->nspare--;
	}
	pthread_mutex_unlock(&v->smu);
	if (p == NULL)
		p = bigbuf_alloc(v->bufsz);
	return p;
}

/* Keep buffer p (a chunk's, or NULL) as a spare, oldest first, or free
 * it when VERIFY_SPARE_MAX are kept. */
void
store_vbuf_put(struct vrun *v, uint8_t *p)
{
	pthread_mutex_lock(&v->smu);
	if (p != NULL && v->nspare < VERIFY_SPARE_MAX) {
		v->spare[v->nspare++] = p;
		p = NULL;
	}
	pthread_mutex_unlock(&v->smu);
	bigbuf_free(p, v->bufsz);
}

/* CUTSNAP_FAULT=verify-slow-chunks:MS (tests only): every chunk check
 * of verify and restore first sleeps MS ms, so that the tests can make
 * the replay of a file meet a chunk a task is still checking. */
static void
fault_slow_chunk(void)
{
	cs_sleep_ms(cs_fault_ms("verify-slow-chunks", 1000));
}

/* Chunk k of agent i: read (and decoded, in a framed repository: on the
 * pool's threads) into worker w's buffer and checked against its
 * recorded sha256 (f->bad[k] says how it fared). Every byte of a
 * recorded file is in exactly one chunk (open_file checked the tiling),
 * and the chunk list is covered by the snapshot's digest, so this checks
 * the whole file; unlike one SHA-256 over the file, it runs on every
 * core. Progress counts each chunk once it is hashed. 0: its bytes are
 * in v->wbuf[w] (whether or not they hash to its name), or -1: they
 * could not be read. */
int
store_vchunk_check(struct vrun *v, size_t i, size_t k, int w)
{
	const struct row_agent *a = &v->rows.agents[i];
	const struct row_chunk *c = &a->chunks[k];
	struct fcheck *f = &v->fc[i];
	char hex[SHA_HEX_LEN];
	uint8_t sha[SHA_LEN];
	struct ctail *t;
	struct cs_err e;
	int rc;

	if (v->wbuf[w] == NULL && (v->wbuf[w] = store_vbuf_get(v, w)) == NULL) {
		f->hash_failed = 1;	/* a benign race: only ever set */
		return -1;
	}
	t = store_vchunk_tail(v, v->wbuf[w]);
	t->valid = 0;
	t->owner = w;
	fault_slow_chunk();
	rc = store_fview_read_chunk(v->st, c, v->wbuf[w], &v->bufs[w], &e);
	if (rc < 0 && cs_err_code(&e) == CS_E_CORRUPT) {
		f->bad[k] = 2;	/* its object does not decode */
		store_progress_add(v->st, a->name, c->size);
		return -1;
	}
	if (rc < 0) {
		if ((f->lerr[k] = strdup(e.msg)) == NULL)
			f->hash_failed = 1;
		f->bad[k] = 3;
		return -1;
	}
	if (crcblk_sha(v->wbuf[w], (size_t)c->size, t->crc, sha) < 0) {
		f->hash_failed = 1;
		return -1;
	}
	t->agent = i;
	t->chunk = k;
	t->valid = 1;
	store_name_hex(v->st, sha, hex);
	if (strcmp(hex, c->sha) != 0)
		f->bad[k] = 1;
	else if (f->sink >= 0 && !atomic_load(&f->wfailed))
		store_vsink_write_chunk(v, f, c, v->wbuf[w]);
	store_progress_add(v->st, a->name, c->size);
	return 0;
}
