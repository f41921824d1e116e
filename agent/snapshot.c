/* snapshot.c - an agent's part of Chandy-Lamport snapshots: record the
 * state as a log prefix, put markers into every outgoing queue, record each
 * incoming channel's messages in (a, s], report to the coordinator.
 *
 * Several snapshots may be in progress at once (up to SNAP_MAX), each in
 * its own slot of a->snaps with its own L, sha, windows and report; they
 * are told apart by their identities, never by order or time. A message
 * applied from src is recorded in every snapshot whose window on src
 * holds it. Each is forgotten on its own (DONE, its coordinator gone, its
 * deadline) without touching the others.
 *
 * Invariants per slot: phase NONE <=> slot free; RECORDING <=> nopen > 0;
 * a report is sent at most once per id, and only when every incoming
 * channel closed and the log is durable up to L; no two slots hold the
 * same id. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../log/chunkhash.h"
#include "../lib/fsutil.h"
#include "../lib/log.h"
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
		if (dl_wm_put(dst, src->v[i].peer, src->v[i].seq) == -1)
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
	wm_free(&sn->sent);
	wm_free(&sn->applied);
	memset(sn, 0, sizeof(*sn));
	sn->phase = SNAP_NONE;
}

/* How messages name a snapshot: "3 (9f2c41d0)", its id in the repository
 * when the coordinator told us (JOIN) and the start of its identity. */
struct sname {
	char s[64];
};

static const char *
idname(struct sname *b, const struct snapuid *id, uint64_t label)
{
	char hex[SNAPUID_HEX_LEN];

	snapuid_hex(id, hex);
	if (label != 0)
		snprintf(b->s, sizeof(b->s), "%" PRIu64 " (%.*s)", label,
		    SNAPUID_SHORT, hex);
	else
		snprintf(b->s, sizeof(b->s), "%.*s", SNAPUID_SHORT, hex);
	return b->s;
}

#define SNAME(sn) idname(&(struct sname){ { 0 } }, &(sn)->id, (sn)->label)
#define UNAME(id) idname(&(struct sname){ { 0 } }, (id), 0)

static struct snap *
snap_find(struct agent *a, const struct snapuid *id)
{
	size_t i;

	for (i = 0; i < SNAP_MAX; i++)
		if (a->snaps[i].phase != SNAP_NONE &&
		    snapuid_eq(&a->snaps[i].id, id))
			return &a->snaps[i];
	return NULL;
}

static size_t
snap_count(const struct agent *a)
{
	size_t i, n = 0;

	for (i = 0; i < SNAP_MAX; i++)
		n += a->snaps[i].phase != SNAP_NONE;
	return n;
}

static int
done_has(const struct agent *a, const struct snapuid *id)
{
	size_t i, n = a->ndone < SNAP_DONE_RING ? (size_t)a->ndone :
	    SNAP_DONE_RING;

	for (i = 0; i < n; i++)
		if (snapuid_eq(&a->done[i], id))
			return 1;
	return 0;
}

static void
done_add(struct agent *a, const struct snapuid *id)
{
	if (done_has(a, id))
		return;
	a->done[a->ndone % SNAP_DONE_RING] = *id;
	a->ndone++;
}

/* The agent's own deadline for a snapshot it joined: the coordinator's
 * timeout (counted from the JOIN or its last word, so a little later
 * than the coordinator's own) plus a grace. */
static void
snap_arm(struct snap *sn, uint32_t timeout_s)
{
	uint32_t t = timeout_s ? timeout_s : SNAP_DEFAULT_TIMEOUT_S;

	sn->timeout_s = t;
	sn->deadline = cs_now_ms() + (int64_t)t * 1000 + SNAP_GRACE_MS;
}

void
agent_snap_alive(struct agent *a, struct conn *c, const struct snapuid *id)
{
	struct snap *sn = snap_find(a, id);

	if (sn != NULL && sn->coord == c && sn->deadline != 0)
		snap_arm(sn, sn->timeout_s);
}

/* Forget the snapshot; markers already queued still leave. committed:
 * it ended in a commit (agent_snap_done counts those); every other end
 * counts as failed. */
static void
snap_forget(struct agent *a, struct snap *sn, int committed, const char *why)
{
	if (sn->phase == SNAP_NONE)
		return;
	log_info("snapshot %s: %s", SNAME(sn), why);
	if (!committed)
		a->ct.snaps_failed++;
	done_add(a, &sn->id);
	if (sn->coord != NULL)
		sn->coord->is_coord = 0;
	snap_clear(sn);
}

void
agent_snap_free(struct agent *a)
{
	size_t i;

	for (i = 0; i < SNAP_MAX; i++)
		snap_clear(&a->snaps[i]);
}

const char *
agent_snap_phase_name(enum snap_phase p)
{
	static const char *const name[] = { "none", "joined", "recording",
	    "recorded", "reported" };

	return (size_t)p < sizeof(name) / sizeof(name[0]) ? name[p] : "?";
}

void
agent_snap_join(struct agent *a, struct conn *c, const struct snapuid *id,
    uint32_t timeout_s, uint64_t label)
{
	struct snap *sn;
	uint8_t caps;
	size_t i;

	if (snapuid_is_zero(id)) {
		agent_conn_replyf(a, c, REPLY_BADREQ,
		    "snapshot id 0 is invalid");
		return;
	}
	sn = snap_find(a, id);
	if (sn != NULL && sn->coord != NULL && sn->coord != c) {
		agent_conn_replyf(a, c, REPLY_FAIL, "snapshot %s already has a "
		    "coordinator", SNAME(sn));
		return;
	}
	if (sn == NULL && c->is_coord) {
		agent_conn_replyf(a, c, REPLY_BADREQ, "this connection already "
		    "coordinates another snapshot; use one per snapshot");
		return;
	}
	if (sn == NULL && done_has(a, id)) {
		agent_conn_replyf(a, c, REPLY_FAIL,
		    "snapshot %s is already finished "
		    "here", idname(&(struct sname){ { 0 } }, id, label));
		return;
	}
	for (i = 0; sn == NULL && i < SNAP_MAX; i++)
		if (a->snaps[i].phase == SNAP_NONE) {
			sn = &a->snaps[i];
			sn->phase = SNAP_JOINED;
			sn->id = *id;
		}
	if (sn == NULL) {
		agent_conn_replyf(a, c, REPLY_FAIL,
		    "agent %s already takes part in "
		    "%d snapshots, the most it runs at once; try again once "
		    "one has finished", a->name, SNAP_MAX);
		return;
	}
	if (label != 0)
		sn->label = label;
	sn->coord = c;
	c->is_coord = 1;
	snap_arm(sn, timeout_s);
	log_info("snapshot %s: joined (timeout %us, %zu in progress)",
	    SNAME(sn), (unsigned)(timeout_s ? timeout_s :
	    SNAP_DEFAULT_TIMEOUT_S), snap_count(a));
	caps = SNAP_CAP_UPLOAD;
	agent_conn_reply(a, c, REPLY_OK, &caps, 1, 0);
}

static void
snap_close_chan(struct agent *a, struct snap *sn, struct rec_chan *rc)
{
	/* Messages past s were sent after the sender recorded: not ours. */
	while (rc->n > 0 && rc->msgs[rc->n - 1].seq > rc->s) {
		free(rc->msgs[rc->n - 1].data);
		rc->n--;
	}
	rc->closed = 1;
	sn->nopen--;
	log_debug("snapshot %s: channel %s>%s recorded: (%" PRIu64 ", %"
	    PRIu64 "], %zu messages", SNAME(sn), nm(a, rc->src), a->name,
	    rc->a, rc->s, rc->n);
	if (sn->nopen == 0) {
		sn->phase = SNAP_RECORDED;
		log_info("snapshot %s: recorded (%" PRIu64 " bytes, %zu "
		    "incoming channels)", SNAME(sn), sn->L, sn->nch);
	}
}

static struct rec_chan *
snap_chan(struct snap *sn, int src)
{
	size_t i;

	for (i = 0; i < sn->nch; i++)
		if (sn->ch[i].src == src)
			return &sn->ch[i];
	return NULL;
}

/* The marker for this snapshot arrived on src->self with s. */
static void
snap_chan_marker(struct agent *a, struct snap *sn, int src, uint64_t s)
{
	const struct dl_state *st = datalog_state(a->dl);
	struct rec_chan *rc = snap_chan(sn, src);

	if (rc == NULL || rc->closed || rc->have_s) {
		log_debug("snapshot %s: extra marker on %s>%s ignored",
		    SNAME(sn), nm(a, src), a->name);
		return;
	}
	rc->have_s = 1;
	rc->s = s;
	if (s < rc->a)
		log_error("snapshot %s: channel %s>%s: marker s=%" PRIu64
		    " below applied %" PRIu64 " at recording: the sender let "
		    "a later message overtake its marker", SNAME(sn),
		    nm(a, src), a->name, s, rc->a);
	/* Every message up to s applied, or recorded on arrival while it
	 * waits for room in the inbox. */
	if (dl_wm_get(&st->applied, nm(a, src)) >= s || rc->a + rc->n >= s)
		snap_close_chan(a, sn, rc);
}

/* Markers of snapshot id into every outgoing queue at offset L, the end
 * of the log now: after every SEND inside L, before every later one. s
 * is the channel's sent seq inside L. L may end in ACK hints; the
 * markers wait for it to be durable. */
static int
snap_send_markers(struct agent *a, const struct snapuid *id, uint64_t L)
{
	const struct dl_state *st = datalog_state(a->dl);
	int i;

	datalog_require(a->dl, L);
	for (i = 0; i < a->n; i++) {
		if (!a->out[i].configured)
			continue;
		if (agent_outch_enqueue(a, i, Q_MARKER, dl_wm_get(&st->sent,
		    nm(a, i)), id, L, NULL, 0) == -1)
			return -1;
	}
	return 0;
}

/* Record now: L, sha, watermarks; markers into every outgoing queue at
 * offset L; open every incoming channel. first_src >= 0 is the channel
 * whose marker started it. */
static void
snap_record(struct agent *a, struct snap *sn, int first_src, uint64_t s)
{
	const struct dl_state *st = datalog_state(a->dl);
	struct rec_chan *rc;
	int i;

	sn->L = datalog_end(a->dl);
	sn->rec_ms = cs_now_ms();
	sn->nfull = chunkhash_nfull(datalog_chunks(a->dl));
	if (datalog_prefix_sha(a->dl, sn->sha) == -1 ||
	    chunkhash_peek(datalog_chunks(a->dl), sn->partial) == -1 ||
	    wm_copy(&sn->sent, &st->sent) == -1 ||
	    wm_copy(&sn->applied, &st->applied) == -1 ||
	    (sn->ch = calloc((size_t)a->n, sizeof(*sn->ch))) == NULL ||
	    snap_send_markers(a, &sn->id, sn->L) == -1)
		goto oom;
	for (i = 0; i < a->n; i++) {
		if (!a->in[i].configured)
			continue;
		rc = &sn->ch[sn->nch++];
		rc->src = i;
		rc->a = dl_wm_get(&st->applied, nm(a, i));
	}
	sn->nopen = sn->nch;
	sn->phase = SNAP_RECORDING;
	/* Messages that arrived and wait for room in the inbox are past
	 * a, so in the channel's state. */
	for (i = 0; i < a->n; i++)
		if (a->in[i].configured && agent_snap_arrived(a, i) == -1)
			goto oom;
	log_info("snapshot %s: recording at %" PRIu64 " bytes (%s)",
	    SNAME(sn), sn->L, first_src >= 0 ? "first marker" : "initiator");
	if (sn->nopen == 0) {
		sn->phase = SNAP_RECORDED;
		log_info("snapshot %s: recorded (no incoming channels)",
		    SNAME(sn));
		return;
	}
	if (first_src >= 0)
		snap_chan_marker(a, sn, first_src, s);
	return;
oom:
	/* Without its markers the snapshot cannot complete anywhere; the
	 * coordinator times out and aborts it. */
	log_error("snapshot %s: out of memory while recording", SNAME(sn));
	snap_forget(a, sn, 0, "abandoned");
}

void
agent_snap_start(struct agent *a, const struct snapuid *id)
{
	struct snap *sn = snap_find(a, id);

	if (sn != NULL && sn->phase == SNAP_JOINED)
		snap_record(a, sn, -1, 0);
	else if (sn != NULL)
		log_debug("snapshot %s: start ignored: already recording",
		    SNAME(sn));
	else
		log_warn("snapshot %s: start ignored: not joined", UNAME(id));
}

void
agent_snap_done(struct agent *a, const struct snapuid *id, int committed)
{
	struct snap *sn = snap_find(a, id);

	if (sn == NULL) {
		log_debug("snapshot %s: done, not active here", UNAME(id));
		done_add(a, id);
		return;
	}
	if (committed)
		a->ct.snaps_done++;
	snap_forget(a, sn, committed, committed ? "committed" :
	    "aborted");
}

struct snap *
agent_snap_reported(struct agent *a, struct conn *c, const struct snapuid *id,
    uint64_t *L)
{
	struct snap *sn = snap_find(a, id);

	if (sn == NULL || sn->coord != c || sn->phase != SNAP_REPORTED)
		return NULL;
	*L = sn->L;
	return sn;
}

void
agent_snap_fetch(struct agent *a, struct conn *c, const struct snapuid *id,
    uint64_t off, uint32_t len)
{
	struct snap *sn = snap_find(a, id);
	uint8_t *p = NULL, pre[8];

	if (sn == NULL || sn->coord != c || sn->phase != SNAP_REPORTED) {
		agent_conn_replyf(a, c, REPLY_FAIL,
		    "snapshot %s is not reported "
		    "here on this connection", UNAME(id));
		return;
	}
	if (len == 0 || len > WIRE_MAX_PIECE || off > sn->L ||
	    len > sn->L - off) {
		agent_conn_replyf(a, c, REPLY_BADREQ,
		    "bytes %" PRIu64 "+%" PRIu32
		    " are not within the recorded %" PRIu64, off, len, sn->L);
		return;
	}
	/* A fetch is the coordinator's word that the copy goes on. */
	snap_arm(sn, sn->timeout_s);
	/* [0, L) is durable, so on the file; a compaction does not switch
	 * files while a recorded prefix is held (agent_snap_holds_prefix).
	 * The piece goes from the file to the socket as it drains (a copy
	 * of 128 KiB at a time over TLS, none over a Unix socket): built
	 * in memory, each piece cost two fresh 1 MiB buffers, the frame's
	 * and the output's, faulted in and freed again (docs/perf/
	 * profiles.md, "performance VIII"). */
	buf_le32_put(pre, (uint32_t)off);	/* u64, little-endian */
	buf_le32_put(pre + 4, (uint32_t)(off >> 32));
	if (agent_conn_send_range(a, c, W_SNAP_DATA, pre, sizeof(pre), off,
	    len) == 0)
		return;
	if ((p = malloc(8 + (size_t)len)) == NULL) {
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
		return;
	}
	memcpy(p, pre, sizeof(pre));
	if (fs_pread_all(datalog_fd(a->dl), p + 8, len, (off_t)off) < 0) {
		log_error("snapshot %s: read of the recorded file at %" PRIu64
		    ": %s", SNAME(sn), off, strerror(errno));
		agent_conn_replyf(a, c, REPLY_FAIL,
		    "agent %s: read of its data file "
		    "at %" PRIu64 " failed: %s", a->name, off, strerror(errno));
	} else {
		agent_conn_send(a, c, W_SNAP_DATA, p, 8 + (size_t)len, 0);
	}
	free(p);
}

void
agent_snap_marker(struct agent *a, int src, const struct snapuid *id,
    uint64_t s)
{
	struct snap *sn = snap_find(a, id);

	if (sn != NULL) {
		if (sn->phase == SNAP_JOINED)
			snap_record(a, sn, src, s);
		else if (sn->phase == SNAP_RECORDING)
			snap_chan_marker(a, sn, src, s);
		return;
	}
	if (done_has(a, id)) {
		log_debug("snapshot %s: marker on %s>%s after it finished; "
		    "ignored", UNAME(id), nm(a, src), a->name);
		return;
	}
	/* A snapshot this agent never joined (it restarted since the JOIN,
	 * which precedes every marker): obey the protocol anyway so the
	 * others can complete theirs, but record and report nothing. It
	 * takes no slot, so the limit never blocks it. */
	if (snap_send_markers(a, id, datalog_end(a->dl)) == -1)
		log_error("snapshot %s: out of memory forwarding markers",
		    UNAME(id));
	log_info("snapshot %s: markers forwarded; not joined here, so "
	    "nothing to report", UNAME(id));
	done_add(a, id);
}

/* Record message seq of src in every recording that expects it next:
 * its recorded messages are (a, a + n], in seq order, each once, whether
 * it was recorded on arrival (it waited for room in the inbox) or when
 * applied. */
int
agent_snap_applied(struct agent *a, int src, uint64_t seq, const uint8_t *p,
    size_t n)
{
	struct snap *sn;
	struct rec_chan *rc;
	struct rep_msg *m;
	size_t i, ncap;

	for (i = 0; i < SNAP_MAX; i++) {
		sn = &a->snaps[i];
		if (sn->phase != SNAP_RECORDING ||
		    (rc = snap_chan(sn, src)) == NULL || rc->closed ||
		    seq != rc->a + rc->n + 1)
			continue;
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
			snap_close_chan(a, sn, rc);
	}
	return 0;
}

int
agent_snap_arrived(struct agent *a, int src)
{
	const struct inch *ic = &a->in[src];
	const struct held *h;
	struct rec_chan *rc;
	uint64_t next;
	size_t i;

	if (ic->ring == NULL)
		return 0;
	for (i = 0; i < SNAP_MAX; i++) {
		if (a->snaps[i].phase != SNAP_RECORDING ||
		    (rc = snap_chan(&a->snaps[i], src)) == NULL)
			continue;
		while (!rc->closed) {
			next = rc->a + rc->n + 1;
			h = &ic->ring[next % HOLD_CAP];
			if (h->seq != next)
				break;
			if (agent_snap_applied(a, src, next, h->p, h->n) == -1)
				return -1;
		}
	}
	return 0;
}

void
agent_snap_conn_closed(struct agent *a, struct conn *c)
{
	size_t i;

	if (!c->is_coord)
		return;
	for (i = 0; i < SNAP_MAX; i++)
		if (a->snaps[i].phase != SNAP_NONE && a->snaps[i].coord == c) {
			a->snaps[i].coord = NULL;
			snap_forget(a, &a->snaps[i], 0, "coordinator went "
			    "away; forgotten");
		}
}

/* Report sn once recorded and durable. */
static void
snap_report(struct agent *a, struct snap *sn)
{
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
	r.uid = sn->id;
	r.snap_id = sn->label;
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
	if (w.len > REPORT_MAX_BYTES) {
		log_error("snapshot %s: its report is %zu bytes, more than %llu "
		    "(the messages in flight at the cut); abandoned",
		    SNAME(sn), w.len, (unsigned long long)REPORT_MAX_BYTES);
		snap_forget(a, sn, 0, "abandoned");
		goto out;
	}
	/* In pieces beyond one (wire.h): the last one is the report. */
	for (i = 0; w.len - i > WIRE_MAX_PIECE; i += WIRE_MAX_PIECE)
		agent_conn_send(a, sn->coord, W_SNAP_REPORT_PART, w.data + i,
		    WIRE_MAX_PIECE, 0);
	agent_conn_send(a, sn->coord, W_SNAP_REPORT, w.data + i, w.len - i, 0);
	sn->phase = SNAP_REPORTED;
	a->ct.snaps++;
	a->ct.snap_bytes += sn->L;
	a->ct.snap_ms += (uint64_t)(cs_now_ms() - sn->rec_ms);
	log_info("snapshot %s: reported (%" PRIu64 " bytes)", SNAME(sn),
	    sn->L);
	goto out;
oom:
	log_error("snapshot %s: out of memory building the report",
	    SNAME(sn));
	snap_forget(a, sn, 0, "abandoned");
out:
	free(chunks);
	free(chs);
	free(wms);
	wbuf_free(&w);
}

/* The invariants at the top of this file; 1 if they hold. */
static int
snaps_check(const struct agent *a)
{
	const struct snap *x, *y;
	size_t i, j;

	for (i = 0; i < SNAP_MAX; i++) {
		x = &a->snaps[i];
		if (x->phase == SNAP_NONE)
			continue;
		if (snapuid_is_zero(&x->id) || x->coord == NULL ||
		    (x->phase == SNAP_RECORDING) != (x->nopen > 0))
			return 0;
		for (j = i + 1; j < SNAP_MAX; j++) {
			y = &a->snaps[j];
			if (y->phase != SNAP_NONE && snapuid_eq(&x->id, &y->id))
				return 0;
		}
	}
	return 1;
}

/* Called after each group commit. */
void
agent_snap_tick(struct agent *a)
{
	size_t i;

	for (i = 0; i < SNAP_MAX; i++)
		snap_report(a, &a->snaps[i]);
	assert(snaps_check(a));
}

int
agent_snap_timeout(struct agent *a, int64_t now)
{
	struct snap *sn;
	struct conn *coord;
	int64_t left, next = -1;
	size_t i;

	for (i = 0; i < SNAP_MAX; i++) {
		sn = &a->snaps[i];
		if (sn->phase == SNAP_NONE || sn->deadline == 0)
			continue;
		left = sn->deadline - now;
		if (left > 0) {
			if (next < 0 || left < next)
				next = left;
			continue;
		}
		/* The coordinator (if any) is past its own timeout too: it
		 * hangs. Only this snapshot's connection is closed. */
		coord = sn->coord;
		snap_forget(a, sn, 0, "timed out; forgotten");
		if (coord != NULL)
			agent_conn_close(a, coord, "snapshot timed out");
	}
	return next < 0 ? -1 : next > 86400000 ? 86400000 : (int)next;
}
