/* chmsg.h - the body of a channel message (what transfer sends S->D).
 * Encoding: u8 op (CHMSG_ADD) | bytes key | i64 amount. These bytes are
 * what the data file's SEND record and the manifest's messages store. */
#ifndef CUTSNAP_CHMSG_H
#define CUTSNAP_CHMSG_H

#include <stddef.h>
#include <stdint.h>
#include "buf.h"

#define CHMSG_ADD 1

struct chmsg {
	uint8_t op;		/* CHMSG_ADD */
	const uint8_t *key;	/* borrowed from the decoded buffer */
	size_t klen;
	int64_t amount;
};

void chmsg_encode(struct wbuf *out, const void *key, size_t klen,
    int64_t amount);
/* 0, or -1 if malformed (wrong op, overrun, trailing bytes, key too long). */
int chmsg_decode(const uint8_t *p, size_t n, struct chmsg *m);

#endif
