/* buf.c - bounds-checked little-endian writer and reader (see buf.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

void
buf_le32_put(uint8_t *p, uint32_t v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = (v >> 24) & 0xff;
}

uint32_t
buf_le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

void
wbuf_init(struct wbuf *b)
{
	memset(b, 0, sizeof(*b));
}

void
wbuf_free(struct wbuf *b)
{
	if (b == NULL)
		return;
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void
wbuf_reset(struct wbuf *b)
{
	b->len = 0;
}

/* Make room for n more bytes; 0, or -1 (and oom set). */
static int
wbuf_reserve(struct wbuf *b, size_t n)
{
	size_t ncap;
	uint8_t *p;

	if (b->oom)
		return -1;
	if (n <= b->cap - b->len)
		return 0;
	if (n > SIZE_MAX / 2 - b->len) {
		b->oom = 1;
		return -1;
	}
	ncap = b->cap ? b->cap : 64;
	while (ncap - b->len < n)
		ncap *= 2;
	if ((p = realloc(b->data, ncap)) == NULL) {
		b->oom = 1;
		return -1;
	}
	b->data = p;
	b->cap = ncap;
	return 0;
}

uint8_t *
wbuf_extend(struct wbuf *b, size_t n)
{
	uint8_t *p;

	if (b->oom)
		return NULL;
	if (n > b->cap - b->len) {
		if (n > SIZE_MAX / 2 - b->len) {
			b->oom = 1;
			return NULL;
		}
		if ((p = realloc(b->data, b->len + n)) == NULL) {
			b->oom = 1;
			return NULL;
		}
		b->data = p;
		b->cap = b->len + n;
	}
	p = b->data + b->len;
	b->len += n;
	return p;
}

void
wbuf_put_raw(struct wbuf *b, const void *p, size_t n)
{
	if (n == 0 || wbuf_reserve(b, n) == -1)
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void
wbuf_put_u8(struct wbuf *b, uint8_t v)
{
	wbuf_put_raw(b, &v, 1);
}

void
wbuf_put_u32(struct wbuf *b, uint32_t v)
{
	uint8_t t[4];

	buf_le32_put(t, v);
	wbuf_put_raw(b, t, 4);
}

void
wbuf_put_u64(struct wbuf *b, uint64_t v)
{
	uint8_t t[8];

	buf_le32_put(t, (uint32_t)v);
	buf_le32_put(t + 4, (uint32_t)(v >> 32));
	wbuf_put_raw(b, t, 8);
}

void
wbuf_put_i64(struct wbuf *b, int64_t v)
{
	wbuf_put_u64(b, (uint64_t)v);
}

void
wbuf_put_bytes(struct wbuf *b, const void *p, size_t n)
{
	/* A length that does not fit the u32 prefix cannot be encoded. */
	if (n > UINT32_MAX) {
		b->oom = 1;
		return;
	}
	wbuf_put_u32(b, (uint32_t)n);
	wbuf_put_raw(b, p, n);
}

void
wbuf_put_str(struct wbuf *b, const char *s)
{
	wbuf_put_bytes(b, s, strlen(s));
}

void
rbuf_init(struct rbuf *r, const void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->off = 0;
	r->err = 0;
}

/* A pointer to the next n bytes, consumed; NULL (and err set) on overrun. */
static const uint8_t *
rbuf_take(struct rbuf *r, size_t n)
{
	const uint8_t *p;

	if (r->err)
		return NULL;
	if (n > r->len - r->off) {
		r->err = 1;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

uint8_t
rbuf_u8(struct rbuf *r)
{
	const uint8_t *p = rbuf_take(r, 1);

	return p ? p[0] : 0;
}

uint32_t
rbuf_u32(struct rbuf *r)
{
	const uint8_t *p = rbuf_take(r, 4);

	return p ? buf_le32_get(p) : 0;
}

uint64_t
rbuf_u64(struct rbuf *r)
{
	const uint8_t *p = rbuf_take(r, 8);

	if (p == NULL)
		return 0;
	return (uint64_t)buf_le32_get(p) | (uint64_t)buf_le32_get(p + 4) << 32;
}

int64_t
rbuf_i64(struct rbuf *r)
{
	return (int64_t)rbuf_u64(r);
}

const uint8_t *
rbuf_bytes(struct rbuf *r, size_t *n, size_t max)
{
	const uint8_t *p = NULL;
	uint32_t len;

	*n = 0;
	len = rbuf_u32(r);
	if (r->err)
		goto out;
	if (len > max) {
		r->err = 1;
		goto out;
	}
	if ((p = rbuf_take(r, len)) != NULL)
		*n = len;
out:
	return p;
}

void
rbuf_str(struct rbuf *r, char *out, size_t outsz)
{
	const uint8_t *p;
	size_t n;

	if (outsz > 0)
		out[0] = '\0';
	if (outsz == 0) {
		r->err = 1;
		return;
	}
	p = rbuf_bytes(r, &n, outsz - 1);
	if (p == NULL)
		return;
	if (memchr(p, '\0', n) != NULL) {
		r->err = 1;
		return;
	}
	memcpy(out, p, n);
	out[n] = '\0';
}

int
rbuf_done(const struct rbuf *r)
{
	return !r->err && r->off == r->len;
}
