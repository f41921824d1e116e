/* store_verify_cut.c - the consistency half of verify, derived from the
 * recorded files themselves: take every file's replay (done in verify.c's
 * pool), then for every channel S->D of the snapshot's config take sent
 * from S's file and applied from D's, and check the recorded messages
 * against them (cutcheck.c) and against S's own SEND records, and that D's
 * history chain at applied, carried through the recorded messages,
 * reaches S's chain at sent (chain.h), as restore's replay will; every
 * other watermark of a file must be accounted for too (unlisted). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "cutcheck.h"
#include "../log/chain.h"
#include "../log/datalog.h"

/* The SEND records of one agent's file to one peer, in log order. The
 * replay enforced seq == previous + 1 per peer, so the send with seq q is
 * v[q - first]: found by index, no sort. */
struct peer_sends {
	const char *peer;	/* borrowed from the first send */
	const struct dl_send **v;
	size_t n, cap;
};

/* Per config agent: its row and, when its blob replayed, its state. */
struct cut_agent {
	int row;		/* index in rows.agents, or -1 */
	int have;		/* st is the replayed recorded file */
	const struct dl_state *st;	/* borrowed from the verify run */
	struct peer_sends *ps;	/* st's sends by peer */
	size_t nps;
};

static void
prefix_problem(void *ctx, const char *line)
{
	store_vproblem(ctx, "%s", line);
}

static struct peer_sends *
peer_of(const struct cut_agent *a, const char *peer)
{
	size_t i;

	for (i = 0; i < a->nps; i++)
		if (strcmp(a->ps[i].peer, peer) == 0)
			return &a->ps[i];
	return NULL;
}

static const struct dl_send *
find_send(const struct cut_agent *a, const char *peer, uint64_t seq)
{
	const struct peer_sends *p = peer_of(a, peer);
	const struct dl_send *s;

	if (p == NULL || p->n == 0 || seq < p->v[0]->seq ||
	    seq - p->v[0]->seq >= p->n)
		return NULL;
	s = p->v[seq - p->v[0]->seq];
	return s->seq == seq ? s : NULL;
}

/* Group a's sends by peer; 0, or -1 when out of memory. */
static int
index_sends(struct cut_agent *a)
{
	struct peer_sends *p = NULL, *np;
	const struct dl_send *s;
	const struct dl_send **nv;
	size_t i, ncap;

	for (i = 0; i < a->st->nsends; i++) {
		s = &a->st->sends[i];
		/* Runs of sends to one peer are the common case. */
		if (p == NULL || strcmp(p->peer, s->peer) != 0)
			p = peer_of(a, s->peer);
		if (p == NULL) {
			np = realloc(a->ps, (a->nps + 1) * sizeof(*np));
			if (np == NULL)
				return -1;
			a->ps = np;
			p = &a->ps[a->nps++];
			memset(p, 0, sizeof(*p));
			p->peer = s->peer;
		}
		if (p->n == p->cap) {
			ncap = p->cap ? p->cap * 2 : 64;
			if ((nv = realloc(p->v, ncap * sizeof(*nv))) == NULL)
				return -1;
			p->v = nv;
			p->cap = ncap;
		}
		p->v[p->n++] = s;
	}
	return 0;
}

/* Take the replay of agent row a->row's verified file (verify.c). */
static void
replay(struct vrun *v, struct cut_agent *a, const char *name)
{
	const struct fcheck *f = &v->fc[a->row];

	if (!f->have) {
		store_vproblem(v, "agent %s: recorded file unreadable: %s",
		    name, f->err);
		return;
	}
	a->st = &f->st;
	a->have = 1;
}

/* The replay kept a's sends not yet acknowledged in its file. A channel
 * a->D needs those after D's applied seq: when D applied less than a's
 * file saw acknowledged (an ACK can overtake D's marker), replay a's file
 * again keeping exactly the sends from D's applied seq + 1 on. Memory:
 * the messages in flight, not the history. Then index them. */
static void
need_sends(struct vrun *v, const struct cfg *c, struct cut_agent *ag, int s)
{
	const char *sn = c->agents[s].name, *dn;
	struct wm_set from;
	uint64_t applied;
	int d, again = 0;

	if (!ag[s].have)
		return;
	memset(&from, 0, sizeof(from));
	for (d = 0; d < c->nagents; d++) {
		if (d == s || !ag[d].have || !cfg_has_channel(c, s, d))
			continue;
		dn = c->agents[d].name;
		applied = dl_wm_get(&ag[d].st->applied, sn);
		if (dl_wm_put(&from, dn, applied + 1) < 0) {
			store_vproblem(v, "agent %s: out of memory", sn);
			goto out;
		}
		if (applied < dl_wm_get(&ag[s].st->acked, dn))
			again = 1;
	}
	if (again && store_verify_resend(v, (size_t)ag[s].row, &from) < 0)
		store_vproblem(v, "agent %s: replaying its recorded file again "
		    "failed: %s", sn, v->fc[ag[s].row].err);
	if (index_sends(&ag[s]) < 0)
		store_vproblem(v, "agent %s: out of memory", sn);
out:
	free(from.v);
}

/* The config's agents and the recorded agents are the same set. */
static void
match_agents(struct vrun *v, const struct cfg *c, struct cut_agent *ag)
{
	size_t r;
	int i, found;

	for (i = 0; i < c->nagents; i++) {
		ag[i].row = -1;
		for (r = 0; r < v->rows.nagents; r++)
			if (strcmp(v->rows.agents[r].name,
			    c->agents[i].name) == 0)
				ag[i].row = (int)r;
		if (ag[i].row < 0)
			store_vproblem(v,
			    "agent %s of the snapshot's config has no "
			    "recorded file", c->agents[i].name);
	}
	for (r = 0; r < v->rows.nagents; r++) {
		found = v->rows.agents[r].ok &&
		    cfg_find(c, v->rows.agents[r].name) >= 0;
		if (!found)
			store_vproblem(v,
			    "agent %.64s is recorded but not in the "
			    "snapshot's config", v->rows.agents[r].name);
	}
}

/* The channel's messages first..first+n-1 carry the receiver's chain at
 * applied to the sender's at sent. Skipped where a file has no chain yet
 * (an older version) or the seqs do not line up (the cut check says so). */
static void
check_chain(struct vrun *v, const struct cut_agent *ag, int s, int d,
    const char *sn, const char *dn, size_t first, size_t n)
{
	const uint8_t *rc = dl_wm_chain(&ag[d].st->applied, sn);
	const uint8_t *sc = dl_wm_chain(&ag[s].st->sent, dn);
	uint64_t applied = dl_wm_get(&ag[d].st->applied, sn);
	uint64_t sent = dl_wm_get(&ag[s].st->sent, dn), want = applied + 1;
	const struct row_msg *m;
	uint8_t c[DL_CHAIN_LEN];
	size_t i;
	int known = 1;

	if (rc == NULL || sc == NULL || applied > sent ||
	    n != sent - applied)
		return;
	memcpy(c, rc, sizeof(c));
	for (i = first; i < first + n; i++, want++) {
		m = &v->rows.msgs[i];
		if (!m->ok || m->seq != want)
			return;
		if (chain_after(known ? c : NULL, m->seq, m->data, m->len,
		    c, &known) < 0) {
			store_vproblem(v, "channel %s->%s: out of memory", sn,
			    dn);
			return;
		}
	}
	if (known && memcmp(c, sc, sizeof(c)) != 0)
		store_vproblem(v,
		    "channel %s->%s: %s's history at applied seq %llu "
		    "and the recorded messages do not lead to %s's at sent seq "
		    "%llu: the recorded files come from different histories",
		    sn, dn, dn, (unsigned long long)applied, sn,
		    (unsigned long long)sent);
}

static void
check_channel(struct vrun *v, const struct cfg *c, struct cut_agent *ag,
    int s, int d)
{
	const char *sn = c->agents[s].name, *dn = c->agents[d].name;
	const struct row_msg *m;
	const struct dl_send *snd;
	struct cut_channel ch;
	uint64_t *seqs = NULL;
	size_t first, n, i, k = 0;

	if (!ag[s].have || !ag[d].have)
		return;		/* already reported */
	first = store_rows_channel(&v->rows, sn, dn, &n);
	if (n > 0 && (seqs = malloc(n * sizeof(*seqs))) == NULL) {
		store_vproblem(v, "channel %s->%s: out of memory", sn, dn);
		return;
	}
	for (i = first; i < first + n; i++) {
		m = &v->rows.msgs[i];
		if (!m->ok)
			continue;
		seqs[k++] = m->seq;
		snd = find_send(&ag[s], dn, m->seq);
		if (snd != NULL && (snd->len != m->len || (m->len > 0 &&
		    memcmp(snd->msg, m->data, m->len) != 0)))
			store_vproblem(v,
			    "channel %s->%s: message seq %llu differs "
			    "from the SEND record in %s's recorded file", sn,
			    dn, (unsigned long long)m->seq, sn);
	}
	memset(&ch, 0, sizeof(ch));
	ch.src = sn;
	ch.dst = dn;
	ch.sent = dl_wm_get(&ag[s].st->sent, dn);
	ch.applied = dl_wm_get(&ag[d].st->applied, sn);
	ch.seqs = seqs;
	ch.nseqs = k;
	store_cut_check(&ch, prefix_problem, v);
	check_chain(v, ag, s, d, sn, dn, first, n);
	free(seqs);
}

/* Every watermark of a recorded file is accounted for by the cut's
 * channels: between two agents of the config without a channel, S's sent
 * must equal D's applied; sends to a peer outside the config must all
 * have been acknowledged. Otherwise messages in flight are lost to the
 * cut (a channel dropped from the config while it held some). */
static void
unlisted(struct vrun *v, const struct cfg *c, const struct cut_agent *ag)
{
	const struct dl_state *st;
	const char *peer;
	uint64_t sent, acked;
	size_t k;
	int s, d;

	for (s = 0; s < c->nagents; s++) {
		if (!ag[s].have)
			continue;
		st = ag[s].st;
		for (d = 0; d < c->nagents; d++)
			if (d != s && ag[d].have && !cfg_has_channel(c, s, d))
				store_cut_check_unlisted(c->agents[s].name,
				    c->agents[d].name,
				    dl_wm_get(&st->sent, c->agents[d].name),
				    dl_wm_get(&ag[d].st->applied,
				    c->agents[s].name), prefix_problem, v);
		for (k = 0; k < st->sent.n; k++) {
			peer = st->sent.v[k].peer;
			sent = st->sent.v[k].seq;
			acked = dl_wm_get(&st->acked, peer);
			if (cfg_find(c, peer) < 0 && sent > acked)
				store_vproblem(v,
				    "agent %s: %llu unacknowledged "
				    "messages to %.64s, which is not an agent "
				    "of the snapshot's config: the cut does "
				    "not hold them", c->agents[s].name,
				    (unsigned long long)(sent - acked), peer);
		}
	}
}

/* Messages recorded on a channel that the config does not have. */
static void
stray_msgs(struct vrun *v, const struct cfg *c)
{
	const struct row_msg *m;
	size_t i, n;
	int s, d;

	for (i = 0; i < v->rows.nmsgs; i += n ? n : 1) {
		m = &v->rows.msgs[i];
		store_rows_channel(&v->rows, m->src, m->dst, &n);
		if (!m->ok)
			continue;
		s = cfg_find(c, m->src);
		d = cfg_find(c, m->dst);
		if (s < 0 || d < 0 || !cfg_has_channel(c, s, d))
			store_vproblem(v,
			    "channel %s->%s: %zu recorded messages, "
			    "but it is not a channel of the snapshot's config",
			    m->src, m->dst, n);
	}
}

void
store_verify_cut(struct vrun *v)
{
	struct cut_agent *ag = NULL;
	struct cfg *c = NULL;
	struct cs_err e;
	int i, s, d;
	size_t k;

	/* The stored config is parsed only for its agents and channels; the
	 * path gives relative paths a short, harmless base. */
	if (cfg_parse(v->rows.config, "/snapshot.conf", &c, &e) < 0) {
		store_vproblem(v, "the snapshot's config does not parse: %s",
		    e.msg);
		return;
	}
	if ((ag = calloc((size_t)c->nagents, sizeof(*ag))) == NULL) {
		store_vproblem(v, "out of memory checking the cut");
		goto out;
	}
	match_agents(v, c, ag);
	for (i = 0; i < c->nagents; i++)
		if (ag[i].row >= 0 && v->fc[ag[i].row].ok)
			replay(v, &ag[i], c->agents[i].name);
	for (s = 0; s < c->nagents; s++)
		need_sends(v, c, ag, s);
	for (s = 0; s < c->nagents; s++)
		for (d = 0; d < c->nagents; d++)
			if (s != d && cfg_has_channel(c, s, d))
				check_channel(v, c, ag, s, d);
	unlisted(v, c, ag);
	stray_msgs(v, c);
out:
	for (i = 0; ag != NULL && i < c->nagents; i++) {
		for (k = 0; k < ag[i].nps; k++)
			free(ag[i].ps[k].v);
		free(ag[i].ps);
	}
	free(ag);
	cfg_free(c);
}
