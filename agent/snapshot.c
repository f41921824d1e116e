/* snapshot.c - an agent's part of a Chandy-Lamport snapshot: record the
 * state as a log prefix, put markers into every outgoing queue, record each
 * incoming channel's messages in (a, s], report to the coordinator.
 *
 * Invariants: phase NONE <=> no id; RECORDING <=> nopen > 0; a report is
 * sent at most once per id, and only when every incoming channel closed
 * and the log is durable up to L. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/chunkhash.h"
#include "../common/log.h"
#include "agent_int.h"

static const char *
nm(const struct agent *a, int i)
{
	return a->c->agents[i].name;
}

static void
wm_free(struct wm_set *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int
wm_copy(struct wm_set *dst, const struct wm_set *src)
{
	size_t i;

	for (i = 0; i < src->n; i++)
		if (wm_put(dst, src->v[i].peer, src->v[i].seq) == -1)
			return -1;
	return 0;
}

static void
snap_clear(struct snap *sn)
{
	size_t i, j;

	for (i = 0; i < sn->nch; i++) {
		for (j = 0; j < sn->ch[i].n; j++)
			free(sn->ch[i].msgs[j].data);
		free(sn->ch[i].msgs);
	}
	free(sn->ch);
	sn->ch = NULL;
	sn->nch = sn->nopen = 0;
	wm_free(&sn->sent);
	wm_free(&sn->applied);
	sn->coord = NULL;
	sn->phase = SNAP_NONE;
	sn->id = 0;
	sn->label = 0;
	sn->deadline = 0;
}

/* How messages name the snapshot: its id in the repository when the
 * coordinator told us (JOIN), else the token markers carry. */
static uint64_t
snap_name(const struct snap *sn)
{
	return sn->label ? sn->label : sn->id;
}

/* The agent's own deadline for the snapshot it joined: the coordinator's
 * timeout (counted from the JOIN, so a little later than the
 * coordinator's own) plus a grace. */
static void
snap_arm(struct agent *a, uint32_t timeout_s)
{
	uint32_t t = timeout_s ? timeout_s : SNAP_DEFAULT_TIMEOUT_S;

	a->snap.deadline = now_ms() + (int64_t)t * 1000 + SNAP_GRACE_MS;
}

/* Forget the snapshot; markers already queued still leave. */
static void
snap_forget(struct agent *a, const char *why)
{
	struct snap *sn = &a->snap;

	if (sn->phase == SNAP_NONE)
		return;
	log_info("snapshot %" PRIu64 ": %s", snap_name(sn), why);
	if (sn->id > sn->last_done)
		sn->last_done = sn->id;
	if (sn->coord != NULL)
		sn->coord->is_coord = 0;
	snap_clear(sn);
}

void
snap_free(struct agent *a)
{
	snap_clear(&a->snap);
}

const char *
snap_describe(const struct agent *a, char *buf, size_t bufsz)
{
	const struct snap *sn = &a->snap;

	if (sn->phase == SNAP_NONE)
		snprintf(buf, bufsz, "none");
	else
		snprintf(buf, bufsz, "%" PRIu64 ":%s",
		    snap_name(sn), snap_phase_name(sn->phase));
	return buf;
}

const char *
snap_phase_name(enum snap_phase p)
{
	static const char *const name[] = { "none", "joined", "recording",
	    "recorded", "reported" };

	return (size_t)p < sizeof(name) / sizeof(name[0]) ? name[p] : "?";
}

void
snap_join(struct agent *a, struct conn *c, uint64_t id, uint32_t timeout_s,
    uint64_t label)
{
	struct snap *sn = &a->snap;

	if (id == 0) {
		conn_replyf(a, c, REPLY_BADREQ, "snapshot id 0 is invalid");
		return;
	}
	if (sn->phase != SNAP_NONE && sn->id != id) {
		conn_replyf(a, c, REPLY_FAIL, "busy with snapshot %" PRIu64
		    ", which another cutsnap snapshot is taking; try again "
		    "once it has finished", snap_name(sn));
		return;
	}
	if (sn->phase != SNAP_NONE && sn->coord != NULL && sn->coord != c) {
		conn_replyf(a, c, REPLY_FAIL, "snapshot %" PRIu64 " already has "
		    "a coordinator", id);
		return;
	}
	if (sn->phase == SNAP_NONE && id <= sn->last_done) {
		conn_replyf(a, c, REPLY_FAIL, "snapshot %" PRIu64 " is already "
		    "finished here", id);
		return;
	}
	if (sn->phase == SNAP_NONE) {
		sn->phase = SNAP_JOINED;
		sn->id = id;
	}
	if (label != 0)
		sn->label = label;
	sn->coord = c;
	c->is_coord = 1;
	snap_arm(a, timeout_s);
	log_info("snapshot %" PRIu64 ": joined (timeout %us)", snap_name(sn),
	    (unsigned)(timeout_s ? timeout_s : SNAP_DEFAULT_TIMEOUT_S));
	conn_reply(a, c, REPLY_OK, NULL, 0, 0);
}

static void
snap_close_chan(struct agent *a, struct rec_chan *rc)
{
	struct snap *sn = &a->snap;

	/* Messages past s were sent after the sender recorded: not ours. */
	while (rc->n > 0 && rc->msgs[rc->n - 1].seq > rc->s) {
		free(rc->msgs[rc->n - 1].data);
		rc->n--;
	}
	rc->closed = 1;
	sn->nopen--;
	log_debug("snapshot %" PRIu64 ": channel %s>%s recorded: (%" PRIu64
	    ", %" PRIu64 "], %zu messages", snap_name(sn), nm(a, rc->src),
	    a->name, rc->a, rc->s, rc->n);
	if (sn->nopen == 0) {
		sn->phase = SNAP_RECORDED;
		log_info("snapshot %" PRIu64 ": recorded (%" PRIu64 " bytes, "
		    "%zu incoming channels)", snap_name(sn), sn->L, sn->nch);
		if (sn->coord == NULL)
			snap_forget(a, "recorded; not joined here, so no "
			    "report");
	}
}

static struct rec_chan *
snap_chan(struct agent *a, int src)
{
	size_t i;

	for (i = 0; i < a->snap.nch; i++)
		if (a->snap.ch[i].src == src)
			return &a->snap.ch[i];
	return NULL;
}

/* The marker for this snapshot arrived on src->self with s. */
static void
snap_chan_marker(struct agent *a, int src, uint64_t s)
{
	const struct dl_state *st = datalog_state(a->dl);
	struct rec_chan *rc = snap_chan(a, src);

	if (rc == NULL || rc->closed || rc->have_s) {
		log_debug("snapshot %" PRIu64 ": extra marker on %s>%s ignored",
		    a->snap.id, nm(a, src), a->name);
		return;
	}
	rc->have_s = 1;
	rc->s = s;
	if (s < rc->a)
		log_error("snapshot %" PRIu64 ": channel %s>%s: marker s=%"
		    PRIu64 " below applied %" PRIu64 " at recording: the "
		    "sender let a later message overtake its marker",
		    a->snap.id, nm(a, src), a->name, s, rc->a);
	if (wm_get(&st->applied, nm(a, src)) >= s)
		snap_close_chan(a, rc);
}

/* Record now: L, sha, watermarks; markers into every outgoing queue at
 * offset L (after every SEND inside L, before every later one); open every
 * incoming channel. first_src >= 0 is the channel whose marker started it. */
static void
snap_record(struct agent *a, int first_src, uint64_t s)
{
	const struct dl_state *st = datalog_state(a->dl);
	struct snap *sn = &a->snap;
	struct rec_chan *rc;
	int i;

	sn->L = datalog_end(a->dl);
	sn->nfull = chunkhash_nfull(datalog_chunks(a->dl));
	/* L may end in ACK hints; the markers and the report wait for it. */
	datalog_require(a->dl, sn->L);
	if (datalog_prefix_sha(a->dl, sn->sha) == -1 ||
	    chunkhash_peek(datalog_chunks(a->dl), sn->partial) == -1 ||
	    wm_copy(&sn->sent, &st->sent) == -1 ||
	    wm_copy(&sn->applied, &st->applied) == -1 ||
	    (sn->ch = calloc((size_t)a->n, sizeof(*sn->ch))) == NULL)
		goto oom;
	for (i = 0; i < a->n; i++) {
		if (!a->out[i].configured)
			continue;
		if (outch_enqueue(a, i, Q_MARKER, wm_get(&st->sent, nm(a, i)),
		    sn->id, sn->L, NULL, 0) == -1)
			goto oom;
	}
	/* Not joined (we restarted since the coordinator's JOIN, which
	 * precedes every marker): our markers let the others finish their
	 * recording, but ours would never be reported and would only keep
	 * us busy, so there is nothing more to do. */
	if (sn->coord == NULL) {
		/* Not SNAP_NONE, or forgetting would skip the clean-up and
		 * leave last_done behind: a second marker for this id would
		 * record again and queue a second set of markers. */
		sn->phase = SNAP_RECORDED;
		snap_forget(a, "markers forwarded; not joined here, so "
		    "nothing to report");
		return;
	}
	for (i = 0; i < a->n; i++) {
		if (!a->in[i].configured)
			continue;
		rc = &sn->ch[sn->nch++];
		rc->src = i;
		rc->a = wm_get(&st->applied, nm(a, i));
	}
	sn->nopen = sn->nch;
	sn->phase = SNAP_RECORDING;
	log_info("snapshot %" PRIu64 ": recording at %" PRIu64 " bytes (%s)",
	    snap_name(sn), sn->L,
	    first_src >= 0 ? "first marker" : "initiator");
	if (sn->nopen == 0) {
		sn->phase = SNAP_RECORDED;
		log_info("snapshot %" PRIu64 ": recorded (no incoming "
		    "channels)", snap_name(sn));
		return;
	}
	if (first_src >= 0)
		snap_chan_marker(a, first_src, s);
	return;
oom:
	/* Without its markers the snapshot cannot complete anywhere; the
	 * coordinator times out and aborts it. */
	log_error("snapshot %" PRIu64 ": out of memory while recording",
	    snap_name(sn));
	snap_forget(a, "abandoned");
}

void
snap_start(struct agent *a, uint64_t id)
{
	struct snap *sn = &a->snap;

	if (sn->phase == SNAP_JOINED && sn->id == id)
		snap_record(a, -1, 0);
	else if (sn->id == id)
		log_debug("snapshot %" PRIu64 ": start ignored: already "
		    "recording", id);
	else
		log_warn("snapshot %" PRIu64 ": start ignored: not joined",
		    id);
}

void
snap_done(struct agent *a, uint64_t id, int committed)
{
	if (a->snap.phase == SNAP_NONE || a->snap.id != id) {
		log_debug("snapshot %" PRIu64 ": done, not active here", id);
		if (id > a->snap.last_done && a->snap.phase == SNAP_NONE)
			a->snap.last_done = id;
		return;
	}
	snap_forget(a, committed ? "committed" : "aborted");
}

void
snap_marker(struct agent *a, int src, uint64_t id, uint64_t s)
{
	struct snap *sn = &a->snap;

	if (sn->phase != SNAP_NONE && sn->id == id) {
		if (sn->phase == SNAP_JOINED)
			snap_record(a, src, s);
		else if (sn->phase == SNAP_RECORDING)
			snap_chan_marker(a, src, s);
		return;
	}
	if (id <= sn->last_done) {
		log_debug("snapshot %" PRIu64 ": marker on %s>%s after it "
		    "finished; ignored", id, nm(a, src), a->name);
		return;
	}
	if (sn->phase != SNAP_NONE) {
		log_warn("snapshot %" PRIu64 ": marker on %s>%s ignored: busy "
		    "with snapshot %" PRIu64, id, nm(a, src), a->name,
		    snap_name(sn));
		return;
	}
	/* A snapshot this agent never joined: obey the protocol anyway so
	 * the others can complete theirs, but report nothing. */
	sn->id = id;
	sn->coord = NULL;
	snap_record(a, src, s);
}

int
snap_applied(struct agent *a, int src, uint64_t seq, const uint8_t *p,
    size_t n)
{
	struct snap *sn = &a->snap;
	struct rec_chan *rc;
	struct rep_msg *m;
	size_t ncap;

	if (sn->phase != SNAP_RECORDING || (rc = snap_chan(a, src)) == NULL ||
	    rc->closed || seq <= rc->a)
		return 0;
	if (rc->n == rc->cap) {
		ncap = rc->cap ? rc->cap * 2 : 16;
		if ((m = realloc(rc->msgs, ncap * sizeof(*m))) == NULL)
			return -1;
		rc->msgs = m;
		rc->cap = ncap;
	}
	m = &rc->msgs[rc->n];
	if ((m->data = malloc(n ? n : 1)) == NULL)
		return -1;
	memcpy(m->data, p, n);
	m->len = n;
	m->seq = seq;
	rc->n++;
	if (rc->have_s && seq >= rc->s)
		snap_close_chan(a, rc);
	return 0;
}

void
snap_conn_closed(struct agent *a, struct conn *c)
{
	if (a->snap.phase != SNAP_NONE && a->snap.coord == c) {
		a->snap.coord = NULL;
		snap_forget(a, "coordinator went away; forgotten");
	}
}

/* Called after each group commit: report once recorded and durable. */
void
snap_tick(struct agent *a)
{
	struct snap *sn = &a->snap;
	struct rep_channel *chs = NULL;
	struct rep_wm *wms = NULL;
	uint8_t (*chunks)[32] = NULL;
	const struct chunkhash *h = datalog_chunks(a->dl);
	struct report r;
	struct wbuf w;
	size_t i;

	if (sn->phase != SNAP_RECORDED || sn->coord == NULL ||
	    datalog_synced(a->dl) < sn->L)
		return;
	wbuf_init(&w);
	if ((chs = calloc(sn->nch + 1, sizeof(*chs))) == NULL ||
	    (wms = calloc(sn->sent.n + sn->applied.n + 1, sizeof(*wms))) ==
	    NULL)
		goto oom;
	for (i = 0; i < sn->sent.n; i++) {
		memcpy(wms[i].peer, sn->sent.v[i].peer, sizeof(wms[i].peer));
		wms[i].seq = sn->sent.v[i].seq;
	}
	for (i = 0; i < sn->applied.n; i++) {
		memcpy(wms[sn->sent.n + i].peer, sn->applied.v[i].peer,
		    sizeof(wms[i].peer));
		wms[sn->sent.n + i].seq = sn->applied.v[i].seq;
	}
	memset(&r, 0, sizeof(r));
	r.chunk_size = chunkhash_size(h);
	r.nchunks = (size_t)chunk_count(sn->L, r.chunk_size);
	if ((chunks = malloc((r.nchunks + 1) * sizeof(*chunks))) == NULL)
		goto oom;
	for (i = 0; i < sn->nfull && i < r.nchunks; i++)
		memcpy(chunks[i], chunkhash_digest(h, i), sizeof(chunks[i]));
	if (i < r.nchunks)
		memcpy(chunks[i], sn->partial, sizeof(chunks[i]));
	r.chunks = chunks;
	r.snap_id = sn->id;
	snprintf(r.agent, sizeof(r.agent), "%s", a->name);
	r.size = sn->L;
	memcpy(r.sha, sn->sha, sizeof(r.sha));
	r.nsent = sn->sent.n;
	r.sent = wms;
	r.napplied = sn->applied.n;
	r.applied = wms + sn->sent.n;
	for (i = 0; i < sn->nch; i++) {
		snprintf(chs[i].src, sizeof(chs[i].src), "%s",
		    nm(a, sn->ch[i].src));
		chs[i].applied = sn->ch[i].a;
		chs[i].sent = sn->ch[i].s;
		chs[i].nmsgs = sn->ch[i].n;
		chs[i].msgs = sn->ch[i].msgs;
	}
	r.nchannels = sn->nch;
	r.channels = chs;
	report_encode(&w, &r);
	if (w.oom)
		goto oom;
	conn_send(a, sn->coord, W_SNAP_REPORT, w.data, w.len, 0);
	sn->phase = SNAP_REPORTED;
	log_info("snapshot %" PRIu64 ": reported (%" PRIu64 " bytes)",
	    snap_name(sn), sn->L);
	goto out;
oom:
	log_error("snapshot %" PRIu64 ": out of memory building the report",
	    snap_name(sn));
	snap_forget(a, "abandoned");
out:
	free(chunks);
	free(chs);
	free(wms);
	wbuf_free(&w);
}

int
snap_timeout(struct agent *a, int64_t now)
{
	struct snap *sn = &a->snap;
	struct conn *coord = sn->coord;
	int64_t left;

	if (sn->phase == SNAP_NONE || sn->deadline == 0)
		return -1;
	left = sn->deadline - now;
	if (left > 0)
		return left > 86400000 ? 86400000 : (int)left;
	/* The coordinator (if any) is past its own timeout too: it hangs. */
	snap_forget(a, "timed out; forgotten");
	if (coord != NULL)
		conn_close(a, coord, "snapshot timed out");
	return -1;
}
