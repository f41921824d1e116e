/* chmsg.c - encode and decode the body of a channel message (see chmsg.h). */
#include "chmsg.h"
#include "wire.h"

void
chmsg_encode(struct wbuf *out, const void *key, size_t klen, int64_t amount)
{
	wbuf_put_u8(out, CHMSG_ADD);
	wbuf_put_bytes(out, key, klen);
	wbuf_put_i64(out, amount);
}

int
chmsg_decode(const uint8_t *p, size_t n, struct chmsg *m)
{
	struct rbuf r;

	rbuf_init(&r, p, n);
	m->op = rbuf_u8(&r);
	m->key = rbuf_bytes(&r, &m->klen, WIRE_MAX_KEY);
	m->amount = rbuf_i64(&r);
	if (!rbuf_done(&r) || m->op != CHMSG_ADD)
		return -1;
	return 0;
}
