/* snapuid.c - snapshot identities (see snapuid.h). */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "snapuid.h"

int
snapuid_new(struct snapuid *u, struct cs_err *e)
{
	size_t off = 0;
	ssize_t k;

	do {
		while (off < sizeof(u->b)) {
			k = getrandom(u->b + off, sizeof(u->b) - off, 0);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				return cs_errno(e, "getrandom");
			off += (size_t)k;
		}
		off = 0;
	} while (snapuid_is_zero(u));
	return 0;
}

int
snapuid_is_zero(const struct snapuid *u)
{
	static const struct snapuid zero;

	return memcmp(u->b, zero.b, sizeof(u->b)) == 0;
}

int
snapuid_eq(const struct snapuid *x, const struct snapuid *y)
{
	return memcmp(x->b, y->b, sizeof(x->b)) == 0;
}

void
snapuid_hex(const struct snapuid *u, char out[SNAPUID_HEX_LEN])
{
	static const char digit[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < sizeof(u->b); i++) {
		out[2 * i] = digit[u->b[i] >> 4];
		out[2 * i + 1] = digit[u->b[i] & 15];
	}
	out[2 * sizeof(u->b)] = '\0';
}

static int
nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
snapuid_parse(const char *hex, struct snapuid *u)
{
	size_t i;
	int hi, lo;

	if (strlen(hex) != 2 * sizeof(u->b))
		return -1;
	for (i = 0; i < sizeof(u->b); i++) {
		if ((hi = nibble(hex[2 * i])) < 0 ||
		    (lo = nibble(hex[2 * i + 1])) < 0)
			return -1;
		u->b[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void
snapuid_put(struct wbuf *w, const struct snapuid *u)
{
	wbuf_put_raw(w, u->b, sizeof(u->b));
}

void
snapuid_get(struct rbuf *r, struct snapuid *u)
{
	memset(u->b, 0, sizeof(u->b));
	if (r->err)
		return;
	if (r->len - r->off < sizeof(u->b)) {
		r->err = 1;
		return;
	}
	memcpy(u->b, r->p + r->off, sizeof(u->b));
	r->off += sizeof(u->b);
}
