/* report.c - encode and decode an agent's snapshot report (see report.h).
 * The decoder reads bytes from a socket: every count and length is capped
 * before anything is allocated for it. */
#include <stdlib.h>
#include <string.h>

#include "chmsg.h"
#include "../log/chunkhash.h"
#include "report.h"

#define REP_MAX_WM	4096		/* peers per watermark list */
#define REP_MAX_CHAN	4096		/* incoming channels */
#define REP_MAX_MSGS	1000000u	/* messages on one channel */
#define REP_MAX_MSG	REPORT_MSG_MAX	/* one chmsg's bytes */

static void
wm_encode(struct wbuf *out, const struct rep_wm *v, size_t n)
{
	size_t i;

	wbuf_put_u32(out, (uint32_t)n);
	for (i = 0; i < n; i++) {
		wbuf_put_str(out, v[i].peer);
		wbuf_put_u64(out, v[i].seq);
	}
}

void
report_encode(struct wbuf *out, const struct report *r)
{
	const struct rep_channel *c;
	size_t i, j;

	snapuid_put(out, &r->uid);
	wbuf_put_u64(out, r->snap_id);
	wbuf_put_str(out, r->agent);
	wbuf_put_u64(out, r->size);
	wbuf_put_raw(out, r->sha, sizeof(r->sha));
	wbuf_put_u32(out, r->chunk_size);
	wbuf_put_u32(out, (uint32_t)r->nchunks);
	if (r->nchunks > 0)
		wbuf_put_raw(out, r->chunks, r->nchunks * sizeof(*r->chunks));
	wm_encode(out, r->sent, r->nsent);
	wm_encode(out, r->applied, r->napplied);
	wbuf_put_u32(out, (uint32_t)r->nchannels);
	for (i = 0; i < r->nchannels; i++) {
		c = &r->channels[i];
		wbuf_put_str(out, c->src);
		wbuf_put_u64(out, c->applied);
		wbuf_put_u64(out, c->sent);
		wbuf_put_u32(out, (uint32_t)c->nmsgs);
		for (j = 0; j < c->nmsgs; j++) {
			wbuf_put_u64(out, c->msgs[j].seq);
			wbuf_put_bytes(out, c->msgs[j].data, c->msgs[j].len);
		}
	}
}

/* Reads a count and checks it against max and against the bytes left, at
 * min_size bytes per element, so a forged count cannot make us allocate
 * far more than the frame could describe. */
static int
read_count(struct rbuf *r, size_t max, size_t min_size, size_t *n)
{
	uint32_t v = rbuf_u32(r);

	*n = 0;
	if (r->err)
		return -1;
	if (v > max || (size_t)v > (r->len - r->off) / min_size) {
		r->err = 1;
		return -1;
	}
	*n = v;
	return 0;
}

static int
oom(struct cs_err *e)
{
	return cs_errc(e, CS_E_NOMEM, "snapshot report: out of memory");
}

/* The chunk list: its size and count must describe exactly r->size. */
static int
chunks_decode(struct rbuf *rb, struct report *r, struct cs_err *e)
{
	size_t cnt;

	r->chunk_size = rbuf_u32(rb);
	if (rb->err || !chunk_size_valid(r->chunk_size) ||
	    read_count(rb, CHUNK_MAX_COUNT, sizeof(*r->chunks), &cnt) < 0 ||
	    cnt != chunk_count(r->size, r->chunk_size)) {
		rb->err = 1;
		return -1;
	}
	if (cnt == 0)
		return 0;
	if ((r->chunks = malloc(cnt * sizeof(*r->chunks))) == NULL)
		return oom(e);
	r->nchunks = cnt;
	memcpy(r->chunks, rb->p + rb->off, cnt * sizeof(*r->chunks));
	rb->off += cnt * sizeof(*r->chunks);
	return 0;
}

/* The decoders below return 0, or -1 when malformed (r->err set, e
 * untouched) or out of memory (e of kind CS_E_NOMEM). */
static int
wm_decode(struct rbuf *r, struct rep_wm **v, size_t *n, struct cs_err *e)
{
	size_t i, cnt;

	/* str (u32 len) + u64: at least 12 bytes each. */
	if (read_count(r, REP_MAX_WM, 12, &cnt) == -1)
		return -1;
	if (cnt == 0)
		return 0;
	if ((*v = calloc(cnt, sizeof(**v))) == NULL)
		return oom(e);
	*n = cnt;
	for (i = 0; i < cnt; i++) {
		rbuf_str(r, (*v)[i].peer, sizeof((*v)[i].peer));
		(*v)[i].seq = rbuf_u64(r);
	}
	return r->err ? -1 : 0;
}

static int
channel_decode(struct rbuf *r, struct rep_channel *c, struct cs_err *e)
{
	const uint8_t *p;
	size_t i, cnt, len;

	rbuf_str(r, c->src, sizeof(c->src));
	c->applied = rbuf_u64(r);
	c->sent = rbuf_u64(r);
	/* u64 seq + u32 length: at least 12 bytes each. */
	if (read_count(r, REP_MAX_MSGS, 12, &cnt) == -1)
		return -1;
	if (cnt == 0)
		return 0;
	if ((c->msgs = calloc(cnt, sizeof(*c->msgs))) == NULL)
		return oom(e);
	c->nmsgs = cnt;
	for (i = 0; i < cnt; i++) {
		c->msgs[i].seq = rbuf_u64(r);
		p = rbuf_bytes(r, &len, REP_MAX_MSG);
		if (r->err)
			return -1;
		/* +1: a zero-length message still owns a buffer. */
		if ((c->msgs[i].data = malloc(len + 1)) == NULL)
			return oom(e);
		memcpy(c->msgs[i].data, p, len);
		c->msgs[i].len = len;
	}
	return 0;
}

int
report_decode(const uint8_t *p, size_t n, struct report *r,
    struct cs_err *e)
{
	struct cs_err le = { .code = 0 };	/* the decoders' out of memory */
	struct rbuf rb;
	size_t i, cnt;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	rbuf_init(&rb, p, n);
	snapuid_get(&rb, &r->uid);
	r->snap_id = rbuf_u64(&rb);
	rbuf_str(&rb, r->agent, sizeof(r->agent));
	r->size = rbuf_u64(&rb);
	/* A fixed 32-byte field: raw bytes, not length-prefixed. */
	if (!rb.err && rb.len - rb.off >= sizeof(r->sha)) {
		memcpy(r->sha, rb.p + rb.off, sizeof(r->sha));
		rb.off += sizeof(r->sha);
	} else
		rb.err = 1;
	if (rb.err)
		goto malformed;
	if (chunks_decode(&rb, r, &le) != 0 ||
	    wm_decode(&rb, &r->sent, &r->nsent, &le) != 0 ||
	    wm_decode(&rb, &r->applied, &r->napplied, &le) != 0)
		goto fail;
	/* str + u64 + u64 + u32: at least 24 bytes each. */
	if (read_count(&rb, REP_MAX_CHAN, 24, &cnt) == -1)
		goto malformed;
	if (cnt > 0) {
		if ((r->channels = calloc(cnt, sizeof(*r->channels))) == NULL) {
			oom(&le);
			goto fail;
		}
		r->nchannels = cnt;
	}
	for (i = 0; i < cnt; i++)
		if (channel_decode(&rb, &r->channels[i], &le) != 0)
			goto fail;
	if (rb.off != rb.len) {
		cs_errf(e, "malformed snapshot report: %zu trailing bytes",
		    rb.len - rb.off);
		goto release;
	}
	rc = 0;
	goto out;
fail:
	if (cs_err_code(&le) == CS_E_NOMEM) {
		if (e != NULL)
			*e = le;
		goto release;
	}
malformed:
	cs_errf(e, "malformed snapshot report: bad field or count near "
	    "byte %zu of %zu", rb.off, rb.len);
release:
	report_free(r);
	memset(r, 0, sizeof(*r));
out:
	return rc;
}

void
report_free(struct report *r)
{
	size_t i, j;

	if (r == NULL)
		return;
	free(r->chunks);
	free(r->sent);
	free(r->applied);
	for (i = 0; i < r->nchannels; i++) {
		for (j = 0; j < r->channels[i].nmsgs; j++)
			free(r->channels[i].msgs[j].data);
		free(r->channels[i].msgs);
	}
	free(r->channels);
	r->chunks = NULL;
	r->nchunks = 0;
	r->sent = r->applied = NULL;
	r->channels = NULL;
	r->nsent = r->napplied = r->nchannels = 0;
}
