/* upload.c - agents on other hosts put their own new chunks into the
 * object store that holds the repository (a chunk_put_fn, store.h), so
 * that the chunks do not travel through the coordinator.
 *
 * Only for a repository without encryption (the store calls this for no
 * other: agents do not hold its key); with compression the agents make
 * each chunk's framed object themselves (UPLOAD_ZSTD). Only for the
 * agents whose files this host cannot read (streamed) and whose JOIN
 * reply said they can (SNAP_CAP_UPLOAD). A chunk the bucket had when the
 * command began (blob_target.has: its listing) is not asked for. The
 * others go to their agent in W_SNAP_UPLOAD batches, every agent at once;
 * each agent uploads them with its own credentials and answers with one
 * status per chunk.
 *
 * Trust: each PUT carries x-amz-content-sha256 set to the hash of its
 * body, so the server stores only the bytes the agent sent. Without
 * compression the body is the chunk and the key is its hash (a 412 means
 * an object of that name, made the same way, is there); with it the body
 * is the chunk's object, which the agent made from bytes it checked
 * against the name, and every reader checks the decoded chunk against
 * the name again (verify names a blob that does not decode to it). The coordinator does not download the object
 * again; it records each chunk an agent reports stored (blob_target.
 * stored), and the publishing, before it writes the manifest, checks
 * that every one of them is in the bucket's listing, or commits nothing.
 *
 * A chunk an agent could not upload (no credentials, an endpoint it
 * cannot reach, a refusal) is fetched over the connection as before
 * (W_SNAP_FETCH) and uploaded by the coordinator: the snapshot still
 * completes, and the note (coord_copy.note) says which agent fell back
 * and why. A connection that fails or answers out of turn (the agent
 * died, the deadline) fails the snapshot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "../lib/buf.h"
#include "../net/client.h"
#include "../lib/util.h"
#include "../net/wire.h"
#include "../store/store.h"

struct upctx {
	const struct cfg *c;
	const int *fds;
	const uint8_t *caps;	/* per agent, from its JOIN reply */
	const int *streamed;	/* per agent */
	struct snapuid uid;
	uint8_t form;		/* enum upload_form, this copy's */
	const coord_deadline *deadline;	/* the run's, borrowed */
	const struct blob_target *t;
	char *note;		/* the first fallback, for the user */
	size_t notesz;
	int fellback;		/* agents that fell back */
};

static int
left(const struct upctx *u)
{
	int64_t l = atomic_load(u->deadline) - cs_now_ms();

	return l < 0 ? 0 : l > 86400000 ? 86400000 : (int)l;
}

static void
fell_back(struct upctx *u, size_t i, size_t n, const char *why)
{
	if (u->fellback++ == 0 && u->note != NULL)
		snprintf(u->note, u->notesz, "agent %s did not upload %zu "
		    "chunks to %s (%.300s); they came through the coordinator",
		    u->c->agents[i].name, n, u->t->url, why);
}

/* Send agent i's batch: the items of v for src i from *pos on, at most
 * UPLOAD_MAX_BATCH; idx gets their indexes into v, *k their count. */
static int
send_batch(struct upctx *u, size_t i, struct chunk_put *v, size_t n,
    size_t *pos, size_t *idx, size_t *k, struct cs_err *e)
{
	struct wbuf b;
	size_t j;
	int rc;

	*k = 0;
	for (j = *pos; j < n && *k < UPLOAD_MAX_BATCH; j++)
		if (v[j].src == i && !v[j].done)
			idx[(*k)++] = j;
	*pos = j;
	if (*k == 0)
		return 0;
	wbuf_init(&b);
	snapuid_put(&b, &u->uid);
	wbuf_put_str(&b, u->t->url);
	wbuf_put_str(&b, "");	/* never an endpoint: the agent's own */
	wbuf_put_str(&b, u->t->region);
	wbuf_put_u8(&b, u->form);
	wbuf_put_u32(&b, (uint32_t)*k);
	for (j = 0; j < *k; j++) {
		wbuf_put_u64(&b, v[idx[j]].off);
		wbuf_put_u32(&b, (uint32_t)v[idx[j]].len);
		wbuf_put_raw(&b, v[idx[j]].sha, SHA_LEN);
	}
	rc = b.oom ? cs_errc(e, CS_E_NOMEM, "out of memory") :
	    wire_send(u->fds[i], W_SNAP_UPLOAD, b.data, b.len, e);
	wbuf_free(&b);
	return rc;
}

/* Agent i's answer to its batch idx[0, k). 0 (a refusal falls back),
 * or -1 with e set: the connection is out of step. */
static int
recv_batch(struct upctx *u, size_t i, struct chunk_put *v, const size_t *idx,
    size_t k, struct cs_err *e)
{
	const uint8_t *body;
	uint8_t type, code, *p = NULL, st;
	size_t plen, blen, j, failed = 0;
	char why[CS_ERR_MAX];
	struct rbuf r;
	int rc = -1;

	if (wire_recv(u->fds[i], &type, &p, &plen, left(u), e) < 0)
		goto out;
	if (type == W_REPLY) {
		if (client_reply_decode(type, p, plen, &code, &body, &blen,
		    e) < 0)
			goto out;
		snprintf(why, sizeof(why), "%.*s", (int)(blen > 300 ? 300 :
		    blen), (const char *)body);
		fell_back(u, i, k, why);
		rc = 0;
		goto out;
	}
	rbuf_init(&r, p, plen);
	if (type != W_SNAP_UPLOADED || rbuf_u32(&r) != k || plen < 4 + k) {
		cs_errf(e, "sent an unexpected frame (type %u, %zu bytes) "
		    "instead of its upload's answer", type, plen);
		goto out;
	}
	for (j = 0; j < k; j++) {
		st = rbuf_u8(&r);
		if (st == UPLOAD_CREATED || st == UPLOAD_HAD) {
			v[idx[j]].done = 1;
			v[idx[j]].put = st == UPLOAD_CREATED;
			if (u->t->stored != NULL)
				u->t->stored(u->t->ctx, v[idx[j]].sha);
		} else {
			failed++;
		}
	}
	rbuf_str(&r, why, sizeof(why));
	if (!rbuf_done(&r)) {
		cs_errf(e, "sent a malformed upload answer");
		goto out;
	}
	if (failed > 0)
		fell_back(u, i, failed, why[0] ? why : "no reason given");
	rc = 0;
out:
	free(p);
	return rc;
}

int
coord_upload(void *ctx, struct chunk_put *v, size_t n, int compressed,
    struct cs_err *e)
{
	struct upctx *u = ctx;
	size_t nag = (size_t)u->c->nagents, i, j, want;
	size_t *pos = NULL, *k = NULL, **idx = NULL;
	int more, rc = -1;

	u->form = compressed ? UPLOAD_ZSTD : UPLOAD_RAW;
	for (j = 0; j < n; j++)
		if (u->t->has != NULL && u->t->has(u->t->ctx, v[j].sha))
			v[j].done = 1;
	pos = calloc(nag, sizeof(*pos));
	k = calloc(nag, sizeof(*k));
	idx = calloc(nag, sizeof(*idx));
	if (pos == NULL || k == NULL || idx == NULL)
		goto oom;
	for (i = 0; i < nag; i++) {
		for (j = 0, want = 0; j < n; j++)
			want += v[j].src == i && !v[j].done;
		if (want == 0)
			continue;
		if (!u->streamed[i] || !(u->caps[i] & SNAP_CAP_UPLOAD)) {
			if (u->streamed[i])
				fell_back(u, i, want, "it does not upload "
				    "chunks itself (an older cutsnap)");
			pos[i] = n;
			continue;
		}
		if ((idx[i] = malloc((want < UPLOAD_MAX_BATCH ? want :
		    UPLOAD_MAX_BATCH) * sizeof(**idx))) == NULL)
			goto oom;
	}
	/* Rounds: one batch to every agent that has one, then the answers. */
	do {
		more = 0;
		for (i = 0; i < nag; i++) {
			k[i] = 0;
			if (idx[i] == NULL || pos[i] >= n)
				continue;
			if (send_batch(u, i, v, n, &pos[i], idx[i], &k[i],
			    e) < 0) {
				cs_errctx(e, "agent %s: upload",
				    u->c->agents[i].name);
				goto out;
			}
		}
		for (i = 0; i < nag; i++) {
			if (k[i] == 0)
				continue;
			more = 1;
			if (recv_batch(u, i, v, idx[i], k[i], e) < 0) {
				cs_errctx(e, "agent %s: upload",
				    u->c->agents[i].name);
				goto out;
			}
		}
	} while (more);
	rc = 0;
	goto out;
oom:
	cs_errc(e, CS_E_NOMEM, "out of memory");
out:
	for (i = 0; idx != NULL && i < nag; i++)
		free(idx[i]);
	free(idx);
	free(k);
	free(pos);
	return rc;
}

int
coord_upload_new(const struct cfg *c, const struct blob_target *t,
    const int *fds, const uint8_t *caps, const int *streamed,
    const struct snapuid *uid, const coord_deadline *deadline, char *note,
    size_t notesz, struct upctx **out)
{
	*out = NULL;
	if (t == NULL)
		return 0;
	if ((*out = calloc(1, sizeof(**out))) == NULL)
		return -1;
	**out = (struct upctx){ .c = c, .fds = fds, .caps = caps,
	    .streamed = streamed, .uid = *uid, .form = UPLOAD_RAW,
	    .deadline = deadline, .t = t, .note = note, .notesz = notesz };
	if (note != NULL && notesz > 0)
		note[0] = '\0';
	return 0;
}

void
coord_upload_free(struct upctx *u)
{
	free(u);
}
