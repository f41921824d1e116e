/* chmsg.h - the body of a channel message (what transfer sends S->D).
 * Encodings:
 *   CHMSG_ADD       u8 op | bytes key | i64 amount          (older agents)
 *   CHMSG_ADD_ID    u8 op | bytes key | i64 amount | 16 bytes id
 *   CHMSG_ADD_FROM  u8 op | bytes key | i64 amount | 16 bytes id |
 *                   bytes from
 *   CHMSG_APP       u8 op | 16 bytes id | bytes payload
 *                   (an application message, sent by a transaction's
 *                   send; opaque to the agents, at most CHMSG_APP_MAX
 *                   payload bytes; it carries no credit)
 * The id is drawn at random for each send: two histories of one channel
 * never send the same bytes, so the channel's history chain (datalog.h)
 * tells them apart even when they send equal amounts to equal keys. from
 * (not empty) names the key the amount was debited from at the sender,
 * so that a credit its receiver cannot apply (a dead letter) can be
 * refunded to it; what transfer sends now. These bytes are what the data
 * file's SEND record and the manifest's messages store. */
#ifndef CUTSNAP_CHMSG_H
#define CUTSNAP_CHMSG_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/buf.h"
#include "../net/wire.h"

#define CHMSG_ADD 1
#define CHMSG_ADD_ID 2
#define CHMSG_ADD_FROM 3
#define CHMSG_APP 4
#define CHMSG_ID_LEN 16

/* Longest valid credit encoding: op, two length-prefixed keys, amount,
 * id. */
#define CHMSG_MAX (2 * WIRE_MAX_KEY + 64u)
/* An application message's payload cap: what a put's value may be, so
 * that a message fits a frame (wire.h) and a data-file record
 * (DL_MAX_RECORD) with room for the fields around it. */
#define CHMSG_APP_MAX WIRE_MAX_VALUE
/* Longest valid application message encoding: op, id, payload. */
#define CHMSG_APP_ENC_MAX (1u + CHMSG_ID_LEN + 4u + CHMSG_APP_MAX)

struct chmsg {
	uint8_t op;		/* CHMSG_ADD, CHMSG_ADD_ID or CHMSG_ADD_FROM */
	const uint8_t *key;	/* borrowed from the decoded buffer */
	size_t klen;
	int64_t amount;
	const uint8_t *id;	/* ADD_ID, ADD_FROM: CHMSG_ID_LEN bytes,
				 * borrowed; ADD: NULL */
	const uint8_t *from;	/* ADD_FROM: the sending key, borrowed;
				 * else NULL */
	size_t flen;		/* 0 when the message does not name it */
};

/* The older encoding, without an id (kept for tests and old files). */
void chmsg_encode(struct wbuf *out, const void *key, size_t klen,
    int64_t amount);
/* The current encoding: with id (CHMSG_ID_LEN bytes). */
void chmsg_encode_id(struct wbuf *out, const void *key, size_t klen,
    int64_t amount, const uint8_t id[CHMSG_ID_LEN]);
/* With id and the sending key from[0, flen), flen > 0. */
void chmsg_encode_from(struct wbuf *out, const void *key, size_t klen,
    int64_t amount, const uint8_t id[CHMSG_ID_LEN], const void *from,
    size_t flen);
/* A fresh random id (getrandom, drawn a page at a time). 0, or -1 with
 * errno set. */
int chmsg_new_id(uint8_t id[CHMSG_ID_LEN]);
/* 0, or -1 if malformed (wrong op, overrun, trailing bytes, a key too
 * long, an empty from key). Credits only: an application message
 * (CHMSG_APP) is refused here, so that code which moves amounts never
 * mistakes one for a credit; read those with chmsg_decode_app. */
int chmsg_decode(const uint8_t *p, size_t n, struct chmsg *m);

/* A decoded application message; pointers borrow the decoded buffer. */
struct chmsg_app {
	const uint8_t *id;	/* CHMSG_ID_LEN bytes */
	const uint8_t *payload;	/* plen bytes (NULL or any when 0) */
	size_t plen;		/* at most CHMSG_APP_MAX */
};

/* An application message with id and payload p[0, n), n <=
 * CHMSG_APP_MAX (the caller checks: it is outside input). */
void chmsg_encode_app(struct wbuf *out, const uint8_t id[CHMSG_ID_LEN],
    const void *p, size_t n);
/* 0, or -1 if it is not a well-formed CHMSG_APP (another op, overrun,
 * trailing bytes, a payload above CHMSG_APP_MAX). */
int chmsg_decode_app(const uint8_t *p, size_t n, struct chmsg_app *m);
/* The message's op (its first byte), or -1 for an empty message. */
int chmsg_op(const uint8_t *p, size_t n);

#endif
