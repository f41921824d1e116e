/* chmsg.c - encode and decode the body of a channel message (see chmsg.h). */
#include <sys/random.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "chmsg.h"
#include "../net/wire.h"

void
chmsg_encode(struct wbuf *out, const void *key, size_t klen, int64_t amount)
{
	wbuf_put_u8(out, CHMSG_ADD);
	wbuf_put_bytes(out, key, klen);
	wbuf_put_i64(out, amount);
}

void
chmsg_encode_id(struct wbuf *out, const void *key, size_t klen,
    int64_t amount, const uint8_t id[CHMSG_ID_LEN])
{
	wbuf_put_u8(out, CHMSG_ADD_ID);
	wbuf_put_bytes(out, key, klen);
	wbuf_put_i64(out, amount);
	wbuf_put_raw(out, id, CHMSG_ID_LEN);
}

void
chmsg_encode_from(struct wbuf *out, const void *key, size_t klen,
    int64_t amount, const uint8_t id[CHMSG_ID_LEN], const void *from,
    size_t flen)
{
	wbuf_put_u8(out, CHMSG_ADD_FROM);
	wbuf_put_bytes(out, key, klen);
	wbuf_put_i64(out, amount);
	wbuf_put_raw(out, id, CHMSG_ID_LEN);
	wbuf_put_bytes(out, from, flen);
}

void
chmsg_encode_app(struct wbuf *out, const uint8_t id[CHMSG_ID_LEN],
    const void *p, size_t n)
{
	wbuf_put_u8(out, CHMSG_APP);
	wbuf_put_raw(out, id, CHMSG_ID_LEN);
	wbuf_put_bytes(out, p, n);
}

/* Ids come from a per-thread pool of getrandom bytes, refilled a page at
 * a time: an agent takes one per transfer, and a getrandom call each was
 * one system call per transfer. A forked child starts with an empty pool
 * (pthread_atfork), so parent and child never hand out the same bytes. */
#define ID_POOL 4096

static _Thread_local uint8_t id_pool[ID_POOL];
static _Thread_local size_t id_left;
static _Thread_local unsigned id_fork_gen;
static unsigned fork_gen;	/* bumped in the child at every fork */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void
on_fork_child(void)
{
	fork_gen++;
}

static void
fork_hook(void)
{
	(void)pthread_atfork(NULL, NULL, on_fork_child);
}

int
chmsg_new_id(uint8_t id[CHMSG_ID_LEN])
{
	size_t got = 0;
	ssize_t k;

	pthread_once(&fork_once, fork_hook);
	if (id_fork_gen != fork_gen) {
		id_left = 0;
		id_fork_gen = fork_gen;
	}
	if (id_left < CHMSG_ID_LEN) {
		while (got < ID_POOL) {
			k = getrandom(id_pool + got, ID_POOL - got, 0);
			if (k == -1 && errno == EINTR)
				continue;
			if (k <= 0)
				return -1;
			got += (size_t)k;
		}
		id_left = ID_POOL;
	}
	memcpy(id, id_pool + ID_POOL - id_left, CHMSG_ID_LEN);
	/* Handed out once: not left in memory for a core dump to repeat. */
	memset(id_pool + ID_POOL - id_left, 0, CHMSG_ID_LEN);
	id_left -= CHMSG_ID_LEN;
	return 0;
}

int
chmsg_decode(const uint8_t *p, size_t n, struct chmsg *m)
{
	struct rbuf r;

	rbuf_init(&r, p, n);
	m->op = rbuf_u8(&r);
	m->key = rbuf_bytes(&r, &m->klen, WIRE_MAX_KEY);
	m->amount = rbuf_i64(&r);
	m->id = NULL;
	m->from = NULL;
	m->flen = 0;
	if (m->op == CHMSG_ADD_ID && !r.err && r.len - r.off == CHMSG_ID_LEN) {
		m->id = r.p + r.off;
		r.off = r.len;
	}
	if (m->op == CHMSG_ADD_FROM && !r.err &&
	    r.len - r.off >= CHMSG_ID_LEN) {
		m->id = r.p + r.off;
		r.off += CHMSG_ID_LEN;
		m->from = rbuf_bytes(&r, &m->flen, WIRE_MAX_KEY);
		if (m->flen == 0)
			return -1;
	}
	if (!rbuf_done(&r) || (m->op != CHMSG_ADD && m->op != CHMSG_ADD_ID &&
	    m->op != CHMSG_ADD_FROM) || (m->op != CHMSG_ADD && m->id == NULL))
		return -1;
	return 0;
}

int
chmsg_decode_app(const uint8_t *p, size_t n, struct chmsg_app *m)
{
	struct rbuf r;

	rbuf_init(&r, p, n);
	if (rbuf_u8(&r) != CHMSG_APP || r.err || r.len - r.off < CHMSG_ID_LEN)
		return -1;
	m->id = r.p + r.off;
	r.off += CHMSG_ID_LEN;
	m->payload = rbuf_bytes(&r, &m->plen, CHMSG_APP_MAX);
	return rbuf_done(&r) ? 0 : -1;
}

int
chmsg_op(const uint8_t *p, size_t n)
{
	return n > 0 ? p[0] : -1;
}
