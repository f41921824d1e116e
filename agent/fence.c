/* fence.c - an agent restored alone stays fenced until every one of its
 * channels has checked its history with the peer.
 *
 * Why: `restore --agent` of some agents into a cluster whose others moved
 * on since the snapshot gives the restored agent its recorded balance
 * back. Where that balance already left over some channel after the cut,
 * that channel's ends disagree (the history check refuses it, chain.h),
 * but a channel without traffic since the cut agrees, and a transfer over
 * it would spend the same balance twice. So the restored file ends with a
 * FENCE record (store/restore.c), and while it is in force the agent:
 * writes nothing on its outgoing channels, ignores messages and markers
 * on its incoming ones (unacknowledged, so their senders still hold them),
 * refuses transfers, refunds and snapshots. Each channel's history check
 * still runs at connect: the agent checks its outgoing channels itself and
 * hears the sender's VERDICT on each incoming one.
 *
 * Invariant: the fence is lifted (a FENCE record with on = 0) only once
 * every configured channel, both ways, was accepted by its check in this
 * run and none is diverged. Then no channel's history moved since the cut
 * at either end, so nothing of the restored state was spent or received
 * after the cut, and carrying on from it creates and loses nothing. The
 * incoming connections are then closed so that their senders resend what
 * was ignored. A whole cluster restored host by host (every agent from
 * one snapshot) lifts its fences by itself as the agents connect: no
 * agreement step. Where a channel diverged, the fence stays until the
 * operator restores the other agents from the same snapshot. */
#include <stdio.h>
#include <string.h>

#include "../lib/log.h"
#include "agent_int.h"

int
agent_fenced(const struct agent *a)
{
	return datalog_state(a->dl)->fenced;
}

/* The channels still to check, as "B>A, A>C" in buf (at most bufsz); the
 * number of them. */
static int
fence_waiting(const struct agent *a, char *buf, size_t bufsz)
{
	size_t used = 0;
	int d, n = 0, w;

	buf[0] = '\0';
	for (d = 0; d < a->n; d++) {
		const char *nm = a->c->agents[d].name;

		if (a->out[d].configured && !a->out[d].fence_ok) {
			w = snprintf(buf + used, bufsz - used, "%s%s>%s",
			    n ? ", " : "", a->name, nm);
			n++;
			if (w > 0 && (size_t)w < bufsz - used)
				used += (size_t)w;
		}
		if (a->in[d].configured && !a->in[d].fence_ok) {
			w = snprintf(buf + used, bufsz - used, "%s%s>%s",
			    n ? ", " : "", nm, a->name);
			n++;
			if (w > 0 && (size_t)w < bufsz - used)
				used += (size_t)w;
		}
	}
	return n;
}

int
agent_fence_why(const struct agent *a, char *why, size_t whysz)
{
	char wait[512], div[256];

	if (!agent_fenced(a))
		return 0;
	if (agent_diverged(a, div, sizeof(div)))
		snprintf(why, whysz, "agent %s is fenced after a restore of "
		    "snapshot %llu alone, and its %s: the other agents moved "
		    "on since; restore them from the same snapshot", a->name,
		    (unsigned long long)datalog_state(a->dl)->fence_snap, div);
	else {
		(void)fence_waiting(a, wait, sizeof(wait));
		snprintf(why, whysz, "agent %s is fenced after a restore of "
		    "snapshot %llu alone until each channel has checked its "
		    "history with the peer (waiting for %s)", a->name,
		    (unsigned long long)datalog_state(a->dl)->fence_snap,
		    wait);
	}
	return 1;
}

void
agent_fence_start(struct agent *a)
{
	char wait[512];

	if (!agent_fenced(a))
		return;
	(void)fence_waiting(a, wait, sizeof(wait));
	log_warn("agent %s was restored alone from snapshot %llu: fenced "
	    "(it sends, applies and snapshots nothing) until each channel "
	    "has checked its history with the peer: %s", a->name,
	    (unsigned long long)datalog_state(a->dl)->fence_snap, wait);
	agent_fence_check(a);	/* an agent without channels */
}

void
agent_fence_check(struct agent *a)
{
	struct dl_record rec;
	char wait[8];
	uint64_t snap;
	int d;

	if (!agent_fenced(a) || a->fatal)
		return;
	if (fence_waiting(a, wait, sizeof(wait)) > 0)
		return;
	for (d = 0; d < a->n; d++)
		if ((a->out[d].configured && a->out[d].diverged) ||
		    (a->in[d].configured && a->in[d].diverged))
			return;
	snap = datalog_state(a->dl)->fence_snap;
	memset(&rec, 0, sizeof(rec));
	rec.type = DL_FENCE;
	rec.code = 0;
	if (agent_append(a, &rec) == -1)
		return;
	log_info("agent %s: every channel's history agrees with its peer "
	    "since snapshot %llu: fence lifted", a->name,
	    (unsigned long long)snap);
	/* Their senders wrote messages this end ignored: a new connection
	 * resends them from what is applied. */
	for (d = 0; d < a->n; d++)
		if (a->in[d].conn != NULL)
			agent_conn_close(a, a->in[d].conn, NULL);
	for (d = 0; d < a->n; d++)
		if (a->out[d].configured)
			agent_outch_pump(a, d);
}
