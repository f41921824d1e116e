/* snapuid.h - a snapshot's identity: 128 random bits drawn from the OS
 * when the snapshot begins. Markers, JOIN/START/DONE frames and reports
 * carry it, the manifest stores it. It needs no clock and is unique across
 * repositories and hosts (a collision has probability ~2^-64 even after
 * 2^32 snapshots), so agents can tell snapshots apart by it alone. */
#ifndef CUTSNAP_SNAPUID_H
#define CUTSNAP_SNAPUID_H

#include <stdint.h>
#include "../lib/buf.h"
#include "../lib/err.h"

#define SNAPUID_LEN 16
#define SNAPUID_HEX_LEN (2 * SNAPUID_LEN + 1)	/* 32 hex digits and a NUL */
/* Messages name a snapshot by its repository id and the first digits of
 * its identity, "snapshot 3 (9f2c41d0)": enough to tell apart the few in
 * flight, short enough for a log line. */
#define SNAPUID_SHORT 8

struct snapuid {
	uint8_t b[SNAPUID_LEN];
};

/* Fill u with random bytes from getrandom(2); never all zero. 0 / -1. */
int snapuid_new(struct snapuid *u, struct cs_err *e);
/* All zero: "no snapshot". */
int snapuid_is_zero(const struct snapuid *u);
int snapuid_eq(const struct snapuid *x, const struct snapuid *y);
/* Lowercase hex, SNAPUID_HEX_LEN bytes with the NUL. */
void snapuid_hex(const struct snapuid *u, char out[SNAPUID_HEX_LEN]);
/* Parse exactly 32 hex digits; 0 / -1. */
int snapuid_parse(const char *hex, struct snapuid *u);
/* The wire form: SNAPUID_LEN raw bytes, not length-prefixed. */
void snapuid_put(struct wbuf *w, const struct snapuid *u);
void snapuid_get(struct rbuf *r, struct snapuid *u);

#endif
