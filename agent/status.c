/* status.c - the STATUS reply: pid, uptime, file, snapshot, channels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../proto/agstat.h"
#include "../log/dlrewrite.h"
#include "agent_int.h"

/* Fill st from the live agent; st->out and st->in are heap arrays. */
static int
collect(struct agent *a, struct agstat *st)
{
	const struct dl_state *s = datalog_state(a->dl);
	const struct snap *sn;
	struct agstat_snap *as;
	const char *nm;
	size_t i;
	int d;

	memset(st, 0, sizeof(*st));
	st->pid = (int)getpid();
	st->uptime_s = (cs_now_ms() - a->start_ms) / 1000;
	st->size = datalog_end(a->dl);
	st->records = s->records;
	st->syncs = datalog_syncs(a->dl);
	st->writes = a->writes;
	st->dead = s->nopen;
	st->fenced = s->fenced ? (s->fence_snap ? s->fence_snap : 1) : 0;
	st->live = dl_live_size(s);
	st->gen = s->gen;
	st->compacted_at = s->gen_time;
	st->compactions = a->compactions;
	st->cbefore = a->cbefore;
	st->cafter = a->cafter;
	st->cms = a->cms;
	st->compacting = a->rw != NULL;
	st->inbox_msgs = s->ninbox;
	st->inbox_bytes = s->inbox_bytes;
	st->inbox_max = a->c->agents[a->self].inbox_max;
	st->recv_parked = a->nrecv;
	/* Every snapshot in progress, by the id its repository gave it and
	 * its identity; the first also as snap_id/phase. */
	snprintf(st->phase, sizeof(st->phase), "none");
	for (i = 0; i < SNAP_MAX && st->nsnaps < AGSTAT_MAX_SNAPS; i++) {
		sn = &a->snaps[i];
		if (sn->phase == SNAP_NONE)
			continue;
		as = &st->snaps[st->nsnaps++];
		as->id = sn->label;
		snapuid_hex(&sn->id, as->uid);
		snprintf(as->phase, sizeof(as->phase), "%s",
		    agent_snap_phase_name(sn->phase));
		if (st->nsnaps == 1) {
			st->snap_id = sn->label ? sn->label : 1;
			snprintf(st->phase, sizeof(st->phase), "%s",
			    as->phase);
		}
	}
	st->out = calloc((size_t)a->n, sizeof(*st->out));
	st->in = calloc((size_t)a->n, sizeof(*st->in));
	if (st->out == NULL || st->in == NULL)
		return -1;
	for (d = 0; d < a->n; d++) {
		nm = a->c->agents[d].name;
		if (a->out[d].configured) {
			struct agstat_ch *c = &st->out[st->nout++];

			snprintf(c->peer, sizeof(c->peer), "%s", nm);
			c->seq = dl_wm_get(&s->sent, nm);
			c->acked = dl_wm_get(&s->acked, nm);
			c->queued = agent_outch_queued(a, d);
			c->unacked = agent_outch_unacked(a, d);
			c->up = a->out[d].up;
			c->held = a->out[d].held;
			c->diverged = a->out[d].diverged;
			c->checked = a->out[d].fence_ok;
			c->stalled_ms = agent_outch_stalled_ms(a, d);
		}
		if (a->in[d].configured) {
			struct agstat_ch *c = &st->in[st->nin++];

			snprintf(c->peer, sizeof(c->peer), "%s", nm);
			c->seq = dl_wm_get(&s->applied, nm);
			c->queued = a->in[d].nheld;
			c->up = a->in[d].conn != NULL;
			c->diverged = a->in[d].diverged;
			c->checked = a->in[d].fence_ok;
		}
	}
	return 0;
}

int
agent_diverged(const struct agent *a, char *why, size_t whysz)
{
	int d;

	for (d = 0; d < a->n; d++) {
		if (a->out[d].configured && a->out[d].diverged) {
			snprintf(why, whysz, "channel %s>%s diverged: %s",
			    a->name, a->c->agents[d].name, a->out[d].why);
			return 1;
		}
		if (a->in[d].configured && a->in[d].diverged) {
			snprintf(why, whysz, "channel %s>%s diverged (its "
			    "sender refused this end's history)", a->c->agents[d].name,
			    a->name);
			return 1;
		}
	}
	return 0;
}

void
agent_status_reply(struct agent *a, struct conn *c)
{
	struct agstat st;
	struct wbuf w;

	wbuf_init(&w);
	if (collect(a, &st) == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
		goto out;
	}
	wbuf_put_u32(&w, (uint32_t)getpid());
	/* The text as length-prefixed bytes: reserve the prefix, fill it in
	 * once the text's length is known. */
	wbuf_put_u32(&w, 0);
	agstat_format(&st, a->name, &w);
	if (w.oom) {
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
		goto out;
	}
	buf_le32_put(w.data + 4, (uint32_t)(w.len - 8));
	agent_conn_reply(a, c, REPLY_OK, w.data, w.len, datalog_need(a->dl));
out:
	agstat_free(&st);
	wbuf_free(&w);
}
