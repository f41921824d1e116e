/* api_int.h - the connection handle of libcutsnap, shared by the files
 * of api/ only. */
#ifndef CUTSNAP_API_INT_H
#define CUTSNAP_API_INT_H

#include "../lib/buf.h"
#include "../lib/err.h"
#include "../net/wire.h"
#include "api.h"

#define API_TIMEOUT_MS 30000	/* a call's default wait for its reply */

struct cs_conn {
	int fd;			/* -1 once broken: every call fails */
	int timeout_ms;		/* a call's wait for its reply */
	int code;		/* the last call's outcome or error kind */
	char msg[CS_ERR_MAX];	/* and its message ("" after success) */
	char agent[NAME_MAX_LEN + 1];	/* for messages */
	struct wbuf out;	/* requests queued, not yet written */
	uint32_t owed;		/* replies owed for requests written or
				 * queued (pipelining) */
	uint8_t *in;		/* what was read: frames at in[inoff,
				 * inlen), the last one possibly partial */
	size_t inoff, inlen, incap;
	size_t consumed;	/* the frame handed out last, consumed by
				 * the next read */
};

/* Write out c->out (queued requests). 0, or -1 recorded (CS_EIO). */
int api_flush(cs_conn *c);
/* The next reply frame: its code and body, borrowed until the next read
 * on c. 0, or -1 recorded (CS_EIO, CS_EVERSION), c then broken. */
int api_read_reply(cs_conn *c, int timeout_ms, uint8_t *code,
    const uint8_t **body, size_t *blen);
/* Queue one request frame on c->out. 0, or -1 recorded. */
int api_queue(cs_conn *c, uint8_t type, const void *req, size_t len);
/* Record success on c. */
void api_ok(cs_conn *c, int code);

#endif
