/* verify_int.h - the pieces of one verify run (struct vrun, store_int.h)
 * that its files share: verify.c runs them; vchunk.c checks a chunk in a
 * worker's buffer, from a pool of spare buffers; handoff.c hands the
 * checked chunks to the replay of their file; vsink.c writes them to
 * restore's temp files. Internal to store/. */
#ifndef CUTSNAP_STORE_VERIFY_INT_H
#define CUTSNAP_STORE_VERIFY_INT_H

#include "store_int.h"

/* After a chunk buffer's csz bytes: the block checksums of the chunk it
 * holds, taken with its hash (crcblk.h), for the replay's record
 * checksums (crc_at): valid only once the chunk is hashed, and only for
 * that chunk; and the worker that last wrote the buffer. */
struct ctail {
	size_t agent, chunk;
	int valid;
	int owner;
	uint32_t crc[];
};

static inline struct ctail *
store_vchunk_tail(const struct vrun *v, const uint8_t *buf)
{
	return (struct ctail *)(void *)(buf + v->csz);
}

/* vchunk.c: a chunk buffer for worker w (a spare one or a new one), or
 * NULL; store_vbuf_put keeps p (or NULL) as a spare or frees it. */
uint8_t *store_vbuf_get(struct vrun *v, int w);
void store_vbuf_put(struct vrun *v, uint8_t *p);
/* vchunk.c: chunk k of agent row i read into worker w's buffer and
 * checked against its recorded sha256 (fc[i].bad[k] says how it fared).
 * 0: its bytes are in v->wbuf[w], or -1: they could not be read. */
int store_vchunk_check(struct vrun *v, size_t i, size_t k, int w);

/* handoff.c: chunk k of agent row i checked by worker w for the replay
 * of its file (plain verify). */
void store_handoff_offer(struct vrun *v, size_t i, size_t k, int w);
/* handoff.c: replay agent row i's recorded file into st (worker >= 0:
 * through the handoff, as its file's task). 0, or -1 with err. */
int store_handoff_replay(struct vrun *v, size_t i, int worker,
    const struct wm_set *from, struct dl_state *st, char *err, size_t errsz);
/* handoff.c: the replay of agent row i no longer reads its chunks. */
void store_handoff_end(struct vrun *v, size_t i);
/* handoff.c: the handoff state of agent row i's chunks (0 / -1), and
 * its release. */
int store_handoff_init(struct vrun *v, size_t i);
void store_handoff_free(struct vrun *v, size_t i);

/* vsink.c: under restore, the checked chunk c of file f (its bytes at p)
 * written to f's temp file; a failure is kept in f->werr. */
void store_vsink_write_chunk(struct vrun *v, struct fcheck *f,
    const struct row_chunk *c, const uint8_t *p);
/* vsink.c: whether restore wrote every chunk of agent row i. */
int store_vsink_complete(const struct vrun *v, size_t i);
/* vsink.c: the first failed write to a temp file as e (-1), or 0. */
int store_vsink_error(const struct vrun *v, struct cs_err *e);

#endif
