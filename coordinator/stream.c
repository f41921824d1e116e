/* stream.c - the chunks of a recorded file that the coordinator cannot
 * read from its own disk (an agent on another host): fetched from the
 * agent over the snapshot's connection, after its report.
 *
 * The store asks for one chunk at a time (chunk_fetch_fn), from several
 * threads. A chunk is asked for in pieces of at most WIRE_MAX_PIECE bytes,
 * with at most WIRE_PIECE_WINDOW requests unanswered: neither end ever
 * buffers more than that window, whatever the file's size. One thread at
 * a time talks to a given agent (its mutex), so the answers come in the
 * order of the requests; the other threads hash and write the chunks they
 * already have meanwhile. Nothing here is trusted: the store hashes every
 * chunk against the agent's report, so a piece damaged on the way fails
 * the snapshot. A failure on a connection (a short or unexpected answer,
 * EOF, the deadline, an interrupt) leaves the connection out of step, so
 * the agent's later fetches fail at once: the snapshot aborts. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord_int.h"
#include "../lib/buf.h"
#include "../net/client.h"
#include "../lib/util.h"
#include "../net/wire.h"

struct stream_agent {
	pthread_mutex_t mu;
	int broken;		/* a fetch failed: out of step */
	char why[CS_ERR_MAX];	/* then: its error, which the later fetches
				 * give too (any of them may be reported) */
};

struct stream {
	const struct cfg *c;
	const int *fds;		/* per agent, borrowed */
	struct snapuid uid;
	const coord_deadline *deadline;	/* the run's, borrowed */
	volatile sig_atomic_t *interrupted;	/* may be NULL */
	struct stream_agent *ag;	/* c->nagents */
	long delay_ms;		/* test hook coord-stream-delay:MS */
	pthread_mutex_t fmu;	/* guards corrupt */
	int corrupt;		/* test hook coord-stream-corrupt: flip a
				 * bit of the next piece, once */
};

int
coord_stream_new(const struct cfg *c, const int *fds, const struct snapuid *uid,
    const coord_deadline *deadline, volatile sig_atomic_t *interrupted,
    struct stream **out)
{
	struct stream *s;
	int i;

	*out = NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->ag = calloc((size_t)c->nagents, sizeof(*s->ag))) == NULL) {
		free(s);
		return -1;
	}
	s->c = c;
	s->fds = fds;
	s->uid = *uid;
	s->deadline = deadline;
	s->interrupted = interrupted;
	s->delay_ms = cs_fault_ms("coord-stream-delay", 60000);
	s->corrupt = cs_fault_on("coord-stream-corrupt");
	pthread_mutex_init(&s->fmu, NULL);
	for (i = 0; i < c->nagents; i++)
		pthread_mutex_init(&s->ag[i].mu, NULL);
	*out = s;
	return 0;
}

void
coord_stream_free(struct stream *s)
{
	int i;

	if (s == NULL)
		return;
	for (i = 0; i < s->c->nagents; i++)
		pthread_mutex_destroy(&s->ag[i].mu);
	pthread_mutex_destroy(&s->fmu);
	free(s->ag);
	free(s);
}

static int
left(const struct stream *s)
{
	int64_t l = atomic_load(s->deadline) - cs_now_ms();

	return l < 0 ? 0 : l > 86400000 ? 86400000 : (int)l;
}

/* Ask agent i for bytes [off, off + n). */
static int
request(struct stream *s, size_t i, uint64_t off, size_t n,
    struct cs_err *e)
{
	struct wbuf b;
	int rc;

	wbuf_init(&b);
	snapuid_put(&b, &s->uid);
	wbuf_put_u64(&b, off);
	wbuf_put_u32(&b, (uint32_t)n);
	if (b.oom)
		rc = cs_errc(e, CS_E_NOMEM, "out of memory");
	else
		rc = wire_send(s->fds[i], W_SNAP_FETCH, b.data, b.len, e);
	wbuf_free(&b);
	return rc;
}

/* The answer to the request for [off, off + n) into buf. */
static int
answer(struct stream *s, size_t i, uint64_t off, uint8_t *buf, size_t n,
    struct cs_err *e)
{
	const uint8_t *body;
	uint8_t type, code, *p = NULL;
	size_t plen, blen;
	struct rbuf r;
	int rc = -1;

	if (wire_recv(s->fds[i], &type, &p, &plen, left(s), e) < 0)
		goto out;
	if (type == W_REPLY) {
		if (client_reply_decode(type, p, plen, &code, &body, &blen,
		    e) == 0)
			cs_errf(e, "refused to send its recorded file: %.*s",
			    (int)(blen > 300 ? 300 : blen), (const char *)body);
		goto out;
	}
	rbuf_init(&r, p, plen);
	if (type != W_SNAP_DATA || plen != 8 + n || rbuf_u64(&r) != off) {
		cs_errf(e, "sent an unexpected frame (type %u, %zu bytes) "
		    "instead of bytes %llu+%zu of its recorded file", type,
		    plen, (unsigned long long)off, n);
		goto out;
	}
	memcpy(buf, p + 8, n);
	pthread_mutex_lock(&s->fmu);
	if (s->corrupt) {
		buf[n / 2] ^= 0x10;
		s->corrupt = 0;
	}
	pthread_mutex_unlock(&s->fmu);
	rc = 0;
out:
	free(p);
	return rc;
}

/* Bytes [off, off + len) of agent i's recorded file into buf, the
 * requests WIRE_PIECE_WINDOW pieces ahead of the answers. */
static int
pull(struct stream *s, size_t i, uint64_t off, uint8_t *buf, size_t len,
    struct cs_err *e)
{
	size_t asked = 0, got = 0, n;

	while (got < len) {
		while (asked < len &&
		    asked - got < (size_t)WIRE_PIECE_WINDOW * WIRE_MAX_PIECE) {
			cs_sleep_ms(s->delay_ms);
			if (s->interrupted != NULL && *s->interrupted)
				return cs_errf(e, "interrupted");
			n = len - asked < WIRE_MAX_PIECE ? len - asked :
			    WIRE_MAX_PIECE;
			if (request(s, i, off + asked, n, e) < 0)
				return -1;
			asked += n;
		}
		n = len - got < WIRE_MAX_PIECE ? len - got : WIRE_MAX_PIECE;
		if (answer(s, i, off + got, buf + got, n, e) < 0)
			return -1;
		got += n;
	}
	return 0;
}

int
coord_stream_fetch(void *ctx, size_t i, uint64_t off, uint8_t *buf, size_t len,
    struct cs_err *e)
{
	struct stream *s = ctx;
	struct stream_agent *ag = &s->ag[i];
	int rc = -1;

	pthread_mutex_lock(&ag->mu);
	if (ag->broken) {
		cs_errf(e, "%s", ag->why);
	} else if (pull(s, i, off, buf, len, e) < 0) {
		ag->broken = 1;
		snprintf(ag->why, sizeof(ag->why), "%s", e->msg);
	} else {
		rc = 0;
	}
	pthread_mutex_unlock(&ag->mu);
	if (rc < 0)
		cs_errctx(e, "streaming its recorded file");
	return rc;
}
