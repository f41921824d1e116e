/* buf.h - bounds-checked little-endian encoding, used by the wire protocol,
 * the data-file records and snapshot reports. */
#ifndef CUTSNAP_BUF_H
#define CUTSNAP_BUF_H

#include <stddef.h>
#include <stdint.h>

/* A growable output buffer. Allocation failure is sticky: oom is set and
 * further puts are ignored; check it once at the end. */
struct wbuf {
	uint8_t *data;	/* heap, owned; NULL while empty */
	size_t len;	/* bytes written */
	size_t cap;	/* bytes allocated */
	int oom;	/* 1 after a failed allocation */
};

void wbuf_init(struct wbuf *b);
void wbuf_free(struct wbuf *b);		/* accepts a zeroed or NULL buffer */
void wbuf_reset(struct wbuf *b);	/* len = 0, keeps the allocation */
void wbuf_put_raw(struct wbuf *b, const void *p, size_t n);
/* Append n bytes for the caller to fill: a pointer to them, or NULL
 * (and oom set). Grows to what is needed, not to a power of two. */
uint8_t *wbuf_extend(struct wbuf *b, size_t n);
void wbuf_put_u8(struct wbuf *b, uint8_t v);
void wbuf_put_u32(struct wbuf *b, uint32_t v);
void wbuf_put_u64(struct wbuf *b, uint64_t v);
void wbuf_put_i64(struct wbuf *b, int64_t v);
/* u32 length followed by the bytes. */
void wbuf_put_bytes(struct wbuf *b, const void *p, size_t n);
void wbuf_put_str(struct wbuf *b, const char *s);	/* as bytes, no NUL */

/* A reader over borrowed memory. Any overrun sets err and makes every later
 * read return zero/NULL, so a decoder reads all fields and checks err once. */
struct rbuf {
	const uint8_t *p;	/* borrowed */
	size_t len;
	size_t off;
	int err;		/* 1 after an overrun or a cap violation */
};

void rbuf_init(struct rbuf *r, const void *p, size_t len);
uint8_t rbuf_u8(struct rbuf *r);
uint32_t rbuf_u32(struct rbuf *r);
uint64_t rbuf_u64(struct rbuf *r);
int64_t rbuf_i64(struct rbuf *r);
/* Length-prefixed bytes, at most max long; returns a pointer into the
 * buffer (not NUL-terminated) and the length in *n. */
const uint8_t *rbuf_bytes(struct rbuf *r, size_t *n, size_t max);
/* Length-prefixed bytes copied into out as a NUL-terminated string; err if
 * longer than outsz-1 or if it contains a NUL byte. */
void rbuf_str(struct rbuf *r, char *out, size_t outsz);
/* 1 when the reader consumed everything without error. */
int rbuf_done(const struct rbuf *r);

/* Raw little-endian helpers for fixed headers. */
void buf_le32_put(uint8_t *p, uint32_t v);
uint32_t buf_le32_get(const uint8_t *p);

#endif
