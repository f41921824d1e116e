/* compact.c - the agent's compactions: when to rewrite the data file, the
 * rewrite's wake-up, the COMPACT request and its replies.
 *
 * Invariants:
 * - At most one rewrite at a time (a->rw); requests that come meanwhile
 *   wait for it (conn.compact_wait) and are answered when it is durable.
 * - Offsets queued items wait for refer to the old file; after the switch
 *   everything up to its end is durable in the new one, so they are all
 *   released (offsets_durable).
 * - The switch to the new file waits while a snapshot holds a recorded
 *   prefix of the old one (recording, recorded or reported): the
 *   coordinator copies that prefix from the data file's path until it has
 *   committed. The new file is then read from the start by later
 *   snapshots, which find its chunks new and copy them (it is small). */
#include <sys/epoll.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../log/dlrewrite.h"
#include "../lib/log.h"
#include "agent_int.h"

void
agent_compact_init(struct agent *a)
{
	a->compact_ref = dl_live_size(datalog_state(a->dl));
}

static void
answer_waiters(struct agent *a, const struct dl_rewrite_result *res,
    const char *err)
{
	struct conn *c;
	struct wbuf w;

	wbuf_init(&w);
	if (res != NULL) {
		wbuf_put_u64(&w, res->before);
		wbuf_put_u64(&w, res->after);
		wbuf_put_u64(&w, res->base);
		wbuf_put_u64(&w, res->gen);
		wbuf_put_u64(&w, a->cms);
	}
	for (c = a->conns; c != NULL; c = c->next) {
		if (c->dead || !c->compact_wait)
			continue;
		c->compact_wait = 0;
		if (err != NULL || w.oom)
			agent_conn_replyf(a, c, REPLY_FAIL,
			    "agent %s: compaction "
			    "failed: %s", a->name, err ? err : "out of memory");
		else
			agent_conn_reply(a, c, REPLY_OK, w.data, w.len, 0);
	}
	wbuf_free(&w);
}

static int
start(struct agent *a, const char *why)
{
	struct epoll_event ev;
	struct cs_err e;

	if (dl_rewrite_start(a->dl, &a->rw, &e) == -1) {
		log_warn("compaction (%s) not started: %s", why, e.msg);
		return -1;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = &a->rw;
	if (epoll_ctl(a->ep, EPOLL_CTL_ADD, dl_rewrite_wait_fd(a->rw),
	    &ev) == -1) {
		log_warn("compaction (%s) not started: epoll_ctl: %s", why,
		    strerror(errno));
		dl_rewrite_abort(a->rw);
		a->rw = NULL;
		return -1;
	}
	a->rw_start_ms = cs_now_ms();
	log_info("compaction (%s) started at %" PRIu64 " bytes", why,
	    datalog_end(a->dl));
	return 0;
}

/* Everything waiting for the old file to become durable up to some offset
 * (replies, channel messages, markers) is durable now, in the new file,
 * whose offsets are different: release it all. A channel's backlog in the
 * file is read back from the new file, from its first unacknowledged
 * send on (the backlog's seqs are unchanged). */
static void
offsets_durable(struct agent *a)
{
	const struct dl_state *st = datalog_state(a->dl);
	struct outch *o;
	struct conn *c;
	size_t i;
	int d;

	for (c = a->conns; c != NULL; c = c->next)
		for (i = c->mhead; i < c->mtail; i++)
			c->marks[i].off = 0;
	for (d = 0; d < a->n; d++) {
		o = &a->out[d];
		for (i = o->qh; i < o->qt; i++)
			o->q[i].off = 0;
		for (i = 0; i < o->nfm; i++)
			o->fm[i].off = 0;
		if (o->f_lo == 0)
			continue;
		o->f_off = dl_wm_get(&st->sendoff, a->c->agents[d].name);
		if (o->f_off < DL_HEADER_LEN)
			o->f_off = DL_HEADER_LEN;	/* scan it all */
	}
}

static void
finish(struct agent *a)
{
	struct dl_rewrite_result res;
	struct cs_err e;
	int rc;

	(void)epoll_ctl(a->ep, EPOLL_CTL_DEL, dl_rewrite_wait_fd(a->rw), NULL);
	rc = dl_rewrite_finish(a->dl, a->rw, &res, &e);
	a->rw = NULL;
	if (rc == -1) {
		/* Try again once the file has doubled from here. */
		a->compact_ref = datalog_end(a->dl);
		log_error("compaction failed: %s", e.msg);
		answer_waiters(a, NULL, e.msg);
		if (datalog_failed(a->dl)) {
			log_error("the data file is in an unknown state; "
			    "exiting");
			a->fatal = 1;
		}
		return;
	}
	offsets_durable(a);
	a->compactions++;
	a->cbefore = res.before;
	a->cafter = res.after;
	a->cms = (uint64_t)(cs_now_ms() - a->rw_start_ms);
	a->compact_ref = res.after;
	log_info("compaction: %" PRIu64 " -> %" PRIu64 " bytes (live state "
	    "%" PRIu64 ", generation %" PRIu64 ") in %" PRIu64 " ms",
	    res.before, res.after, res.base, res.gen, a->cms);
	answer_waiters(a, &res, NULL);
}

int
agent_snap_holds_prefix(const struct agent *a)
{
	size_t i;

	for (i = 0; i < SNAP_MAX; i++)
		if (a->snaps[i].phase != SNAP_NONE &&
		    a->snaps[i].phase != SNAP_JOINED)
			return 1;
	return 0;
}

void
agent_compact_tick(struct agent *a)
{
	uint64_t end, live, min = a->c->compact_min_size;

	if (a->fatal)
		return;
	if (a->rw != NULL) {
		if (dl_rewrite_done(a->rw) && !agent_snap_holds_prefix(a))
			finish(a);
		return;
	}
	end = datalog_end(a->dl);
	if (end < min || end / 2 < a->compact_ref)
		return;
	/* The file doubled since its last rewrite. A rewrite that would not
	 * halve it (most of the file is live: new keys, not overwrites)
	 * would write nearly the whole file again to reclaim little, and it
	 * changes every chunk, so the next snapshot would copy the whole
	 * file instead of what was added. Skip it until the file doubles
	 * again. */
	live = dl_live_size(datalog_state(a->dl));
	if (live > end / 2) {
		log_info("compaction (automatic) skipped at %" PRIu64 " bytes: "
		    "the live state is %" PRIu64 " bytes, more than half",
		    end, live);
		a->compact_ref = end;
		return;
	}
	if (start(a, "automatic") == -1)
		a->compact_ref = end;
}

void
agent_compact_event(struct agent *a)
{
	uint64_t v;

	if (a->rw != NULL)
		(void)read(dl_rewrite_wait_fd(a->rw), &v, sizeof(v));
}

void
agent_compact_request(struct agent *a, struct conn *c)
{
	if (a->rw == NULL && start(a, "requested") == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "agent %s: compaction not "
		    "started (see its log)", a->name);
		return;
	}
	c->compact_wait = 1;
}

void
agent_compact_free(struct agent *a)
{
	if (a->rw != NULL) {
		(void)epoll_ctl(a->ep, EPOLL_CTL_DEL,
		    dl_rewrite_wait_fd(a->rw), NULL);
		dl_rewrite_abort(a->rw);
		a->rw = NULL;
		answer_waiters(a, NULL, "the agent is stopping");
	}
}
