/* commit_cut.c - the cut check before a snapshot is committed: the same
 * rules as verify's (cutcheck.c), applied to what the agents reported,
 * which are the watermarks of their recorded prefixes and the messages
 * they recorded. A cut that fails is never listed complete: the commit
 * refuses it and the coordinator aborts the snapshot with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "cutcheck.h"

/* The problems found: the first is kept for the message. */
struct cut_problems {
	int n;
	char first[CS_ERR_MAX - 96];
};

static void
note(void *ctx, const char *line)
{
	struct cut_problems *p = ctx;

	if (p->n++ == 0)
		snprintf(p->first, sizeof(p->first), "%s", line);
}

static uint64_t
wm_of(const struct rep_wm *v, size_t n, const char *peer)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i].peer, peer) == 0)
			return v[i].seq;
	return 0;
}

/* Channel s->d as d recorded it: its messages' seqs against s's sent and
 * d's applied. -1 only when out of memory. */
static int
check_channel(const struct report *rs, const struct report *rd,
    struct cut_problems *p)
{
	const struct rep_channel *ch = NULL;
	struct cut_channel cc;
	uint64_t *seqs = NULL;
	size_t i;

	for (i = 0; i < rd->nchannels && ch == NULL; i++)
		if (strcmp(rd->channels[i].src, rs->agent) == 0)
			ch = &rd->channels[i];
	if (ch == NULL)
		return 0;	/* the commit refuses it, naming the channel */
	memset(&cc, 0, sizeof(cc));
	if (ch->nmsgs > 0) {
		if ((seqs = malloc(ch->nmsgs * sizeof(*seqs))) == NULL)
			return -1;
		for (i = 0; i < ch->nmsgs; i++)
			seqs[i] = ch->msgs[i].seq;
		cc.nseqs = ch->nmsgs;
	}
	cc.src = rs->agent;
	cc.dst = rd->agent;
	cc.sent = wm_of(rs->sent, rs->nsent, rd->agent);
	cc.applied = wm_of(rd->applied, rd->napplied, rs->agent);
	cc.seqs = seqs;
	store_cut_check(&cc, note, p);
	free(seqs);
	return 0;
}

int
store_commit_check_cut(const struct cfg *c, const struct report *reps,
    size_t nreps, struct cs_err *e)
{
	const struct report *rs, *rd;
	struct cut_problems p;
	int s, d;

	memset(&p, 0, sizeof(p));
	for (s = 0; s < c->nagents; s++) {
		rs = store_find_report(reps, nreps, c->agents[s].name);
		for (d = 0; d < c->nagents && rs != NULL; d++) {
			rd = store_find_report(reps, nreps, c->agents[d].name);
			if (d == s || rd == NULL)
				continue;
			if (!cfg_has_channel(c, s, d))
				store_cut_check_unlisted(rs->agent, rd->agent,
				    wm_of(rs->sent, rs->nsent, rd->agent),
				    wm_of(rd->applied, rd->napplied,
				    rs->agent), note, &p);
			else if (check_channel(rs, rd, &p) < 0)
				return cs_errf(e, "out of memory checking the "
				    "cut");
		}
	}
	if (p.n == 1)
		return cs_errf(e, "the cut is inconsistent: %s", p.first);
	if (p.n > 1)
		return cs_errf(e, "the cut is inconsistent: %s (and %d more "
		    "problems)", p.first, p.n - 1);
	return 0;
}
