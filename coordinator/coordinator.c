/* coordinator.c - drives one snapshot: begin it in the manifest, JOIN
 * every agent, START the initiator, collect every report, copy the
 * recorded files into blobs and commit it all in one transaction; on any
 * failure record it as aborted with the reason.
 *
 * Each run is on its own: its identity (snapuid.h), its connections to
 * the agents, its lock and row in the repository. Several runs, in one
 * repository or in several, proceed at once and fail on their own. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "coord_int.h"
#include "../lib/buf.h"
#include "../net/client.h"
#include "../proto/report.h"
#include "../proto/snapuid.h"
#include "../lib/util.h"
#include "../net/wire.h"
#include "../store/store.h"

/* One snapshot in progress. */
struct run {
	const struct cfg *c;
	struct store *st;
	uint64_t id;		/* the manifest's id; 0 until begun */
	struct snapuid uid;	/* the identity agents and markers carry */
	coord_deadline deadline;	/* CLOCK_MONOTONIC ms: timeout_s past
					 * the last progress (progressed) */
	int timeout_s;
	_Atomic int stalled;	/* progress once came after the deadline:
				 * the agents may have given up meanwhile */
	volatile sig_atomic_t *interrupted;	/* may be NULL */
	struct chunk_stats stats;	/* what store_all copied */
	int *fds;		/* per agent, -1 when not connected */
	int *have;		/* per agent: rep is filled */
	uint8_t *caps;		/* per agent: its JOIN reply's SNAP_CAP_* */
	int *streamed;		/* per agent: streamed() */
	char note[CS_ERR_MAX];	/* coord_copy.note */
	struct report *reps;	/* per agent, in config order */
	int nreports;		/* reports in so far */
	const struct coord_opts *o;
	char reason[CS_ERR_MAX];
};

static void fail(struct run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
fail(struct run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
}

/* Was the coordinator asked to stop? Sets the abort reason. */
static int
interrupted(struct run *r)
{
	if (r->interrupted == NULL || *r->interrupted == 0)
		return 0;
	fail(r, "interrupted");
	return 1;
}

static int
left_ms(const struct run *r)
{
	int64_t left = r->deadline - cs_now_ms();

	return left < 0 ? 0 : left > 86400000 ? 86400000 : (int)left;
}

/* The run made progress (a report came in, bytes were copied): the
 * timeout counts from now. --timeout bounds a stall, never the length
 * of a copy that moves (a large file at a low --max-rate). */
static void
progressed(struct run *r)
{
	int64_t now = cs_now_ms();

	if (now > r->deadline)
		r->stalled = 1;
	r->deadline = now + (int64_t)r->timeout_s * 1000;
}

/* A progress_fn (store.h) around the caller's: every chunk copied is
 * progress. Called by the copy's threads. */
static void
copy_progress(void *ctx, const char *agent, uint64_t done, uint64_t total)
{
	struct run *r = ctx;

	progressed(r);
	if (r->o->progress != NULL)
		r->o->progress(r->o->progress_ctx, agent, done, total);
}

/* Connect to every agent, before anything is created in the
 * repository: a cluster that is not running leaves no trace there. */
static int
connect_all(struct run *r, struct cs_err *e)
{
	int i;

	for (i = 0; i < r->c->nagents; i++) {
		if ((r->fds[i] = client_connect_agent(r->c, i, r->deadline, e)) < 0)
			return cs_errctx(e, "nothing was recorded");
	}
	return 0;
}

/* Have every connected agent JOIN the snapshot. */
static int
join_all(struct run *r)
{
	const struct cfg_agent *a;
	struct wbuf req;
	struct cs_err e;
	uint8_t code, *body = NULL;
	size_t blen;
	int i, rc = -1;

	wbuf_init(&req);
	snapuid_put(&req, &r->uid);
	wbuf_put_u32(&req, (uint32_t)r->timeout_s);
	wbuf_put_u64(&req, r->id);	/* for the agents' messages */
	if (req.oom) {
		fail(r, "out of memory");
		goto out;
	}
	for (i = 0; i < r->c->nagents; i++) {
		a = &r->c->agents[i];
		if (client_call(r->fds[i], W_SNAP_JOIN, req.data, req.len,
		    &code, &body, &blen, left_ms(r), &e) < 0) {
			fail(r, "agent %s did not join the snapshot: %s",
			    a->name, e.msg);
			goto out;
		}
		if (code != REPLY_OK) {
			fail(r, "agent %s refused to join the snapshot: %.*s",
			    a->name, (int)(blen > 300 ? 300 : blen),
			    body ? (const char *)body : "");
			goto out;
		}
		r->caps[i] = blen > 0 && body != NULL ? body[0] : 0;
		free(body);
		body = NULL;
	}
	rc = 0;
out:
	free(body);
	wbuf_free(&req);
	return rc;
}

/* Tell the initiator to record; every other agent starts on a marker. */
static int
start(struct run *r, int init)
{
	struct wbuf b;
	struct cs_err e;
	int rc = 0;

	wbuf_init(&b);
	snapuid_put(&b, &r->uid);
	if (b.oom) {
		fail(r, "out of memory");
		rc = -1;
	} else if (wire_send(r->fds[init], W_SNAP_START, b.data, b.len,
	    &e) < 0) {
		fail(r, "lost agent %s (%s)", r->c->agents[init].name, e.msg);
		rc = -1;
	}
	wbuf_free(&b);
	return rc;
}

/* The report's bytes from agent i: its W_SNAP_REPORT_PART pieces, then
 * its W_SNAP_REPORT (wire.h), joined in *all (its frame alone in *p when
 * there were no pieces). 0, or -1 after fail(). */
static int
recv_report(struct run *r, int i, uint8_t **p, size_t *plen,
    struct wbuf *all)
{
	const char *name = r->c->agents[i].name;
	uint8_t type;
	struct cs_err e;

	for (;;) {
		if (wire_recv(r->fds[i], &type, p, plen, left_ms(r), &e) < 0) {
			fail(r, "lost agent %s (%s)", name, e.msg);
			return -1;
		}
		if (type != W_SNAP_REPORT && type != W_SNAP_REPORT_PART) {
			fail(r, "agent %s sent an unexpected frame (type %u) "
			    "instead of its report", name, type);
			return -1;
		}
		if (type == W_SNAP_REPORT && all->len == 0)
			return 0;
		if (all->len + *plen > REPORT_MAX_BYTES) {
			fail(r, "agent %s sent a report of more than %llu "
			    "bytes", name,
			    (unsigned long long)REPORT_MAX_BYTES);
			return -1;
		}
		wbuf_put_raw(all, *p, *plen);
		free(*p);
		*p = NULL;
		if (all->oom) {
			fail(r, "out of memory reading agent %s's report", name);
			return -1;
		}
		if (type == W_SNAP_REPORT)
			return 0;
	}
}

/* Agent i's report for this snapshot. */
static int
read_report(struct run *r, int i)
{
	const char *name = r->c->agents[i].name;
	uint8_t *p = NULL;
	struct wbuf all;
	struct cs_err e;
	size_t plen;
	int rc = -1;

	wbuf_init(&all);
	if (recv_report(r, i, &p, &plen, &all) == -1)
		goto out;
	if (p == NULL) {
		p = all.data;
		plen = all.len;
		all.data = NULL;
	}
	if (report_decode(p, plen, &r->reps[i], &e) < 0) {
		fail(r, "agent %s sent a malformed report: %s", name, e.msg);
		goto out;
	}
	r->have[i] = 1;
	if (!snapuid_eq(&r->reps[i].uid, &r->uid) ||
	    strcmp(r->reps[i].agent, name) != 0) {
		char hex[SNAPUID_HEX_LEN];

		snapuid_hex(&r->reps[i].uid, hex);
		fail(r, "agent %s sent a report for snapshot %s as agent %s",
		    name, hex, r->reps[i].agent);
		goto out;
	}
	r->reps[i].snap_id = r->id;	/* the store knows the manifest id */
	r->nreports++;
	if (r->o->reported != NULL)
		r->o->reported(r->o->event_ctx, r->id, name, r->nreports,
		    r->c->nagents);
	rc = 0;
out:
	free(p);
	wbuf_free(&all);
	return rc;
}

/* Names of the agents that have not reported, "B, C". */
static void
missing_names(const struct run *r, char *out, size_t outsz)
{
	size_t len = 0;
	int i, n;

	out[0] = '\0';
	for (i = 0; i < r->c->nagents && len < outsz; i++) {
		if (r->have[i])
			continue;
		n = snprintf(out + len, outsz - len, "%s%s", len ? ", " : "",
		    r->c->agents[i].name);
		if (n < 0)
			break;
		len += (size_t)n;
	}
}

/* The deadline passed with agents yet to report: name them, and the
 * held channels into them when there are ("channel hold"), which are
 * the cause then rather than the agents. */
static void
fail_timeout(struct run *r)
{
	char names[300], held[300], *arrow;
	unsigned char waiting[CFG_MAX_AGENTS];
	int i, n;

	missing_names(r, names, sizeof(names));
	for (i = 0; i < r->c->nagents && i < CFG_MAX_AGENTS; i++)
		waiting[i] = !r->have[i];
	n = coord_held_into(r->c, waiting, held, sizeof(held));
	if (n == 0) {
		fail(r, "timed out after %d s waiting for %s", r->timeout_s,
		    names);
	} else if (n == 1 && (arrow = strstr(held, "->")) != NULL) {
		fail(r, "timed out after %d s waiting for %s: channel %s is "
		    "held (cutsnap channel release %.*s %s)", r->timeout_s,
		    names, held, (int)(arrow - held), held, arrow + 2);
	} else {
		fail(r, "timed out after %d s waiting for %s: channels %s are "
		    "held (cutsnap channel release SRC DST)", r->timeout_s,
		    names, held);
	}
}

static int
wait_reports(struct run *r)
{
	struct pollfd *pfd;
	int *who, i, n, k, rc = -1;

	pfd = calloc((size_t)r->c->nagents, sizeof(*pfd));
	who = calloc((size_t)r->c->nagents, sizeof(*who));
	if (pfd == NULL || who == NULL) {
		fail(r, "out of memory");
		goto out;
	}
	for (;;) {
		for (i = n = 0; i < r->c->nagents; i++) {
			if (r->have[i])
				continue;
			pfd[n].fd = r->fds[i];
			pfd[n].events = POLLIN;
			pfd[n].revents = 0;
			who[n++] = i;
		}
		if (n == 0)
			break;
		if (interrupted(r))
			goto out;
		if ((k = client_poll(pfd, (nfds_t)n, left_ms(r))) < 0) {
			if (errno == EINTR)
				continue;
			fail(r, "poll: %s", strerror(errno));
			goto out;
		}
		if (k == 0) {
			fail_timeout(r);
			goto out;
		}
		for (i = 0; i < n; i++) {
			if (pfd[i].revents == 0)
				continue;
			if (read_report(r, who[i]) < 0)
				goto out;
			progressed(r);
		}
	}
	rc = 0;
out:
	free(pfd);
	free(who);
	return rc;
}

/* Test hook: CUTSNAP_FAULT=coord-copy-delay:MS makes the coordinator wait
 * MS ms before it copies the recorded files, so that the tests can
 * kill an agent or the coordinator while the copy is under way. */
static void
fault_copy_delay(void)
{
	cs_sleep_ms(cs_fault_ms("coord-copy-delay", 60000));
}

/* Does the coordinator fetch agent i's recorded file over its connection
 * rather than read it by its path? An agent with an addr may run on
 * another host, whose files this one cannot see, unless the config says
 * every data path is readable here (shared_data = yes). */
static int
streamed(const struct cfg *c, int i)
{
	return !c->shared_data && c->agents[i].addr[0] != '\0';
}

/* Agent i answers a new connection (it runs, whatever happened to the
 * snapshot's connection). */
static int
answers(const struct run *r, int i)
{
	struct cs_err e;
	int fd;

	fd = client_connect(r->c->agents[i].sock, r->c->agents[i].name, &e);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* Every agent must still be there at commit: after its report an agent
 * sends nothing, so anything readable on its connection means it closed
 * it while its recorded state was being copied. Say why: an agent gives
 * up a snapshot (and closes) once the coordinator's timeout, plus a
 * grace, has passed since it joined, which is what a coordinator that
 * was paused (SIGSTOP) or starved of CPU meets; otherwise the agent
 * exited or was stopped. */
static int
all_alive(struct run *r)
{
	struct pollfd p;
	const char *name;
	int i;

	for (i = 0; i < r->c->nagents; i++) {
		p.fd = r->fds[i];
		p.events = POLLIN;
		p.revents = 0;
		if (client_poll(&p, 1, 0) == 0)
			continue;
		name = r->c->agents[i].name;
		if ((r->stalled || cs_now_ms() >= r->deadline) &&
		    answers(r, i))
			fail(r, "agent %s gave up the snapshot: it was not "
			    "committed within its %d s timeout without "
			    "progress (was this "
			    "process paused or starved of CPU while the "
			    "recorded files were copied?); take it again, or "
			    "give a larger --timeout", name, r->timeout_s);
		else if (answers(r, i))
			fail(r, "agent %s closed its connection while its "
			    "recorded state was being copied, though it "
			    "still runs (restarted?); take the snapshot "
			    "again", name);
		else
			fail(r, "lost agent %s while its recorded state was "
			    "being copied: it no longer answers (exited or "
			    "stopped)", name);
		return 0;
	}
	return 1;
}

/* Test hook: CUTSNAP_FAULT=coord-commit-pause:PATH makes the coordinator,
 * once the recorded files are stored, create PATH.reached and wait while
 * PATH exists (at most two minutes, or until interrupted) before it
 * commits: the window in which the tests abort a snapshot whose blobs are
 * in the repository, or run another one beside it. */
static void
fault_commit_pause(const struct run *r)
{
	char path[PATH_MAX], reached[PATH_MAX + 16];
	FILE *f;
	int n;

	if (cs_fault_value("coord-commit-pause", path, sizeof(path)) == NULL)
		return;
	snprintf(reached, sizeof(reached), "%s.reached", path);
	if ((f = fopen(reached, "w")) != NULL)
		fclose(f);
	for (n = 0; n < 2400 && access(path, F_OK) == 0 &&
	    (r->interrupted == NULL || *r->interrupted == 0); n++)
		cs_sleep_ms(50);
}

/* Store the new chunks of every recorded prefix, then commit. */
static int
store_all(struct run *r)
{
	const char **paths;
	struct stream *sm = NULL;
	struct upctx *up = NULL;
	struct cs_err e;
	int *str, i, rc;

	fault_copy_delay();
	if (interrupted(r))
		return -1;
	paths = calloc((size_t)r->c->nagents, sizeof(*paths));
	str = calloc((size_t)r->c->nagents, sizeof(*str));
	if (paths == NULL || str == NULL ||
	    coord_stream_new(r->c, r->fds, &r->uid, &r->deadline,
	    r->interrupted, &sm) < 0 ||
	    coord_upload_new(r->c, store_blob_target(r->st), r->fds, r->caps,
	    str, &r->uid, &r->deadline, r->note, sizeof(r->note), &up) < 0) {
		coord_stream_free(sm);
		free(paths);
		free(str);
		fail(r, "out of memory");
		return -1;
	}
	for (i = 0; i < r->c->nagents; i++) {
		str[i] = streamed(r->c, i);
		paths[i] = str[i] ? NULL : r->c->agents[i].data;
	}
	store_set_fetch(r->st, coord_stream_fetch, sm);
	if (up != NULL)
		store_set_put(r->st, coord_upload, up);
	rc = store_put_chunks(r->st, paths, r->reps, (size_t)r->c->nagents,
	    &r->stats, &e);
	store_set_put(r->st, NULL, NULL);
	store_set_fetch(r->st, NULL, NULL);
	coord_upload_free(up);
	coord_stream_free(sm);
	free(paths);
	free(str);
	if (rc < 0) {
		if (!interrupted(r))
			fail(r, "%s", e.msg);
		return -1;
	}
	fault_commit_pause(r);
	if (interrupted(r) || !all_alive(r))
		return -1;
	if (store_commit_snapshot(r->st, r->id, r->c, r->reps,
	    (size_t)r->c->nagents, &e) < 0) {
		fail(r, "commit: %s", e.msg);
		return -1;
	}
	return 0;
}

/* Best effort: an agent that is gone forgets the snapshot anyway. */
static void
send_done(struct run *r, int committed)
{
	struct wbuf b;
	int i;

	wbuf_init(&b);
	snapuid_put(&b, &r->uid);
	wbuf_put_u8(&b, (uint8_t)committed);
	for (i = 0; !b.oom && i < r->c->nagents; i++)
		if (r->fds[i] >= 0)
			(void)wire_send(r->fds[i], W_SNAP_DONE, b.data, b.len,
			    NULL);
	wbuf_free(&b);
}

/* The snapshot is recorded as aborted: remove the blobs it wrote that
 * nothing refers to (store_drop_written), and say in e what became of
 * them. Only a snapshot recorded as aborted does this: one still
 * 'running' could yet be committed by nobody, but its blobs are prune's. */
static void
abort_cleanup(struct run *r, struct cs_err *e)
{
	struct store_dropped d;
	struct cs_err de;
	char what[CS_ERR_MAX + 128];
	int rc;

	rc = store_drop_written(r->st, &d, &de);
	what[0] = '\0';
	if (rc < 0)
		snprintf(what, sizeof(what), "; the blobs it wrote are left "
		    "for prune: %s", de.msg);
	else if (d.left_blobs > 0)
		snprintf(what, sizeof(what), "; the %llu blobs (%llu bytes) it "
		    "wrote are left for prune: another process holds the "
		    "repository", (unsigned long long)d.left_blobs,
		    (unsigned long long)d.left_bytes);
	else if (d.blobs > 0 || d.kept > 0)
		snprintf(what, sizeof(what), "; removed the %llu blobs (%llu "
		    "bytes) it wrote%s", (unsigned long long)d.blobs,
		    (unsigned long long)d.bytes, d.kept > 0 ? ", kept those "
		    "a committed snapshot shares" : "");
	cs_errf(e, "snapshot %llu aborted: %s%s", (unsigned long long)r->id,
	    r->reason, what);
	if (r->o != NULL && r->o->copy != NULL) {
		r->o->copy->removed = d.blobs;
		r->o->copy->removed_bytes = d.bytes;
		r->o->copy->kept = d.kept;
		r->o->copy->left = d.left_blobs;
		r->o->copy->left_bytes = d.left_bytes;
	}
}

/* Every agent must be reachable from the initiator; names those that
 * are not. */
static int
check_reach(const struct cfg *c, int init, struct cs_err *e)
{
	unsigned char *seen;
	char names[300];
	size_t len = 0;
	int i, n, rc = 0;

	if ((seen = malloc((size_t)c->nagents)) == NULL ||
	    coord_reach_mark(c, init, seen) < 0) {
		free(seen);
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	}
	names[0] = '\0';
	for (i = 0; i < c->nagents; i++) {
		if (seen[i])
			continue;
		rc = -1;
		if (len < sizeof(names)) {
			n = snprintf(names + len, sizeof(names) - len, "%s%s",
			    len ? ", " : "", c->agents[i].name);
			len += n > 0 ? (size_t)n : 0;
		}
	}
	free(seen);
	if (rc < 0)
		return cs_errf(e, "markers from %s cannot reach %s over the "
		    "configured channels", c->agents[init].name, names);
	return 0;
}

int
coord_snapshot(const struct cfg *c, const struct coord_opts *o,
    uint64_t *id, struct cs_err *e)
{
	struct run r;
	struct alive *alive = NULL;
	int i, init, rc = -1;

	*id = 0;
	/* A connection to every agent and, while storing, every data
	 * file open: two descriptors per agent (best effort: opening
	 * fails cleanly). */
	(void)cs_raise_nofile(2 * (uint64_t)c->nagents + 64);
	memset(&r, 0, sizeof(r));
	r.c = c;
	r.timeout_s = o->timeout_s > 0 ? o->timeout_s : 60;
	r.interrupted = o->interrupted;
	r.deadline = cs_now_ms() + (int64_t)r.timeout_s * 1000;
	init = o->initiator ? cfg_find(c, o->initiator) : 0;
	if (c->nagents <= 0)
		return cs_errf(e, "the config has no agents");
	if (init < 0)
		return cs_errf(e, "unknown agent %s", o->initiator);
	if (check_reach(c, init, e) < 0)
		return -1;
	r.fds = malloc((size_t)c->nagents * sizeof(*r.fds));
	r.have = calloc((size_t)c->nagents, sizeof(*r.have));
	r.caps = calloc((size_t)c->nagents, sizeof(*r.caps));
	r.streamed = calloc((size_t)c->nagents, sizeof(*r.streamed));
	r.reps = calloc((size_t)c->nagents, sizeof(*r.reps));
	if (r.fds == NULL || r.have == NULL || r.reps == NULL ||
	    r.caps == NULL || r.streamed == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < c->nagents; i++)
		r.fds[i] = -1;
	/* The identity needs no clock and is unique across repositories
	 * and hosts, so snapshots in flight at once never mix up. */
	if (snapuid_new(&r.uid, e) < 0 || connect_all(&r, e) < 0)
		goto out;
	if (store_open_with(o->repo, STORE_CREATE, o->store, &r.st,
	    e) < 0) {
		rc = COORD_BAD_REPO;
		goto out;
	}
	if ((o->key != NULL && store_set_key(r.st, o->key, o->keylen, e) < 0) ||
	    store_begin_snapshot(r.st, c->agents[init].name, c->text, &r.uid,
	    &r.id, e) < 0)
		goto out;
	*id = r.id;
	store_set_progress(r.st, copy_progress, &r);
	store_set_recheck_age(r.st, o->recheck_age_s);
	store_set_max_rate(r.st, o->max_rate);
	store_set_stop(r.st, o->interrupted);
	r.o = o;
	if (join_all(&r) < 0 || interrupted(&r))
		goto abort;
	if (o->joined != NULL)
		o->joined(o->event_ctx, r.id, c->nagents, c->agents[init].name);
	if (start(&r, init) < 0)
		goto abort;
	for (i = 0; i < c->nagents; i++)
		r.streamed[i] = streamed(c, i);
	coord_alive_start(c, r.fds, r.streamed, &r.uid, &r.deadline, &alive);
	if (wait_reports(&r) < 0 || interrupted(&r) || store_all(&r) < 0) {
		coord_alive_stop(alive);
		goto abort;
	}
	coord_alive_stop(alive);
	send_done(&r, 1);
	if (o->copy != NULL) {
		o->copy->chunks = r.stats.chunks;
		o->copy->copied = r.stats.copied;
		o->copy->shared = r.stats.shared;
		o->copy->bytes = r.stats.bytes;
		o->copy->extended = r.stats.extended;
		o->copy->streamed = r.stats.fetched;
		o->copy->put = r.stats.put;
		o->copy->put_bytes = r.stats.put_bytes;
		o->copy->rechecked = r.stats.rechecked;
		o->copy->healed = r.stats.healed;
		snprintf(o->copy->note, sizeof(o->copy->note), "%s", r.note);
	}
	rc = 0;
	goto out;
abort:
	send_done(&r, 0);
	if (store_abort_snapshot(r.st, r.id, r.reason, NULL) < 0)
		cs_errf(e, "snapshot %llu could not be marked aborted: %s",
		    (unsigned long long)r.id, r.reason);
	else
		abort_cleanup(&r, e);
out:
	for (i = 0; r.fds != NULL && i < c->nagents; i++)
		if (r.fds[i] >= 0)
			client_close(r.fds[i]);
	for (i = 0; r.reps != NULL && i < c->nagents; i++)
		report_free(&r.reps[i]);
	free(r.fds);
	free(r.have);
	free(r.caps);
	free(r.streamed);
	free(r.reps);
	store_close(r.st);
	return rc;
}
