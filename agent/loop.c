/* loop.c - the agent's event loop: setup, group commit, signals, shutdown. */
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/log.h"
#include "../net/xcert.h"
#include "../net/xport.h"
#include "agent.h"
#include "agent_int.h"

#define MAX_EVENTS 128

int
agent_append(struct agent *a, const struct dl_record *r)
{
	struct cs_err e;

	if (a->fatal)
		return -1;
	if (datalog_append(a->dl, r, &e) == -1) {
		/* The file may now hold a partial record; serving on would
		 * risk answering from a state the disk does not have. */
		log_error("data file append failed: %s; exiting", e.msg);
		a->fatal = 1;
		return -1;
	}
	return 0;
}

int
agent_append_send(struct agent *a, int d, const struct dl_record *r,
    uint64_t seq, const uint8_t *msg, size_t len)
{
	if (agent_append(a, r) == -1)
		return -1;
	a->sent_to[d]++;
	if (agent_outch_enqueue(a, d, Q_MSG, seq, NULL, datalog_need(a->dl),
	    msg, len) == -1) {
		/* The record is in the log: only a restart could resend. */
		log_error("out of memory queueing message %s>%s seq %llu",
		    a->name, a->c->agents[d].name, (unsigned long long)seq);
		a->fatal = 1;
		return -1;
	}
	return 0;
}

static int
signals_open(struct agent *a, sigset_t *old, struct cs_err *e)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);	/* reopen the log file */
	if (sigprocmask(SIG_BLOCK, &set, old) == -1)
		return cs_errno(e, "sigprocmask");
	if ((a->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1)
		return cs_errno(e, "signalfd");
	return 0;
}

static void
signals_read(struct agent *a)
{
	struct signalfd_siginfo si;
	struct cs_err e;

	while (read(a->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			/* logrotate moved the file: go on in a new one. */
			switch (log_reopen(&e)) {
			case 1:
				log_info("got SIGHUP, log file reopened");
				break;
			case 0:
				log_info("got SIGHUP: no log file to reopen "
				    "(logging to stderr)");
				break;
			default:
				log_error("got SIGHUP: %s; logging on to the "
				    "old file", e.msg);
				break;
			}
			continue;
		}
		log_info("got %s, shutting down",
		    si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
		a->stop = 1;
	}
}

static int
ep_add(struct agent *a, int fd, void *tag, struct cs_err *e)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = tag;
	if (epoll_ctl(a->ep, EPOLL_CTL_ADD, fd, &ev) == -1)
		return cs_errno(e, "epoll_ctl");
	return 0;
}

/* Group commit: one fdatasync for everything appended since the last one,
 * then release whatever waited for it. Trailing ACK records alone do not
 * cost an fsync (datalog_need); with all, the final one at shutdown makes
 * them durable too. */
static void
commit(struct agent *a, int all)
{
	struct cs_err e;
	uint64_t synced, target;
	int d;

	target = all ? datalog_end(a->dl) : datalog_need(a->dl);
	if (!a->fatal && target > datalog_synced(a->dl) &&
	    datalog_sync(a->dl, &e) == -1) {
		/* Never retried: after a failed fsync the page cache may
		 * claim data the disk lost (fsyncgate). */
		log_error("data file sync failed: %s; exiting", e.msg);
		a->fatal = 1;
	}
	if (a->fatal)
		return;
	synced = datalog_synced(a->dl);
	agent_snap_tick(a);
	for (d = 0; d < a->n; d++)
		if (a->out[d].configured)
			agent_outch_pump(a, d);
	agent_conn_commit(a, synced);
}

void
agent_commit(struct agent *a)
{
	commit(a, 0);
}

/* This agent needs a TLS identity when any agent has an addr: its own
 * listener, or its channels to the others. */
/* An existing data file of 0 bytes: a new file gets its header (and is
 * synced, with its directory entry) before the agent takes any request,
 * so an empty one lost its content (truncated by hand, a copy that
 * failed, a file system that kept the name but not the data). Starting
 * afresh would silently zero the agent's values and restart its
 * channels; refuse instead, and say what to do. 0, or -1 with e set. */
static int
refuse_empty(const char *path, const char *name, struct cs_err *e)
{
	struct stat sb;
	int fd, busy;

	if (lstat(path, &sb) == -1 || !S_ISREG(sb.st_mode) || sb.st_size > 0)
		return 0;	/* new, or datalog_open says what is wrong */
	/* Held by another owner (a restore locks the empty file it creates
	 * until it renames the restored one over it): datalog_open says
	 * "locked", which is the reason. */
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		busy = flock(fd, LOCK_EX | LOCK_NB) == -1;
		close(fd);	/* releases it when it was ours */
		if (busy)
			return 0;
	}
	return cs_errf(e, "data file %s exists but is empty (0 bytes), so "
	    "its content was lost: restore it (cutsnap restore --agent %s) "
	    "or, if agent %s never ran, remove it to start afresh", path,
	    name, name);
}

static int
tls_needed(const struct cfg *c)
{
	int i;

	for (i = 0; i < c->nagents; i++)
		if (c->agents[i].addr[0] != '\0')
			return 1;
	return 0;
}

static void
run_loop(struct agent *a)
{
	struct epoll_event evs[MAX_EVENTS];
	int i, k, timeout, tls_more = 0;
	int64_t now;

	while (!a->stop && !a->fatal) {
		agent_compact_tick(a);
		agent_commit(a);
		agent_conn_reap(a);
		if (a->stop || a->fatal)
			break;
		now = cs_now_ms();
		timeout = agent_outch_timeout(a, now);
		k = agent_snap_timeout(a, now);
		if (k >= 0 && (timeout < 0 || k < timeout))
			timeout = k;
		k = agent_conn_hs_timeout(a, now);
		if (k >= 0 && (timeout < 0 || k < timeout))
			timeout = k;
		k = agent_inch_timeout(a, now);
		if (k >= 0 && (timeout < 0 || k < timeout))
			timeout = k;
		k = agent_recv_timeout(a, now);
		if (k >= 0 && (timeout < 0 || k < timeout))
			timeout = k;
		k = agent_admit_tick(a, now);
		if (k >= 0 && (timeout < 0 || k < timeout))
			timeout = k;
		k = agent_metrics_timeout(a, now);
		if (k >= 0 && (timeout < 0 || k < timeout))
			timeout = k;
		/* From the loop, not a timer thread: a loop that hangs stops
		 * the pings, and systemd restarts the agent. */
		k = agent_sd_watchdog(a, now);
		if (k >= 0 && (timeout < 0 || k < timeout))
			timeout = k;
		if (tls_more)
			timeout = 0;
		k = epoll_wait(a->ep, evs, MAX_EVENTS, timeout);
		if (k == -1) {
			if (errno == EINTR)
				continue;
			log_error("epoll_wait: %s", strerror(errno));
			a->fatal = 1;
			break;
		}
		for (i = 0; i < k && !a->fatal; i++) {
			if (evs[i].data.ptr == &a->lfd)
				agent_listen_accept(a);
			else if (evs[i].data.ptr == &a->sfd)
				signals_read(a);
			else if (evs[i].data.ptr == &a->rw)
				agent_compact_event(a);
			else if (evs[i].data.ptr == &a->up)
				agent_upload_event(a);
			else if (agent_metrics_event(a, evs[i].data.ptr,
			    evs[i].events))
				;	/* a scraper of /metrics */
			else
				agent_conn_event(a, evs[i].data.ptr,
				    evs[i].events);
		}
		tls_more = agent_conn_tls_pending(a);
		now = cs_now_ms();
		agent_outch_timers(a, now);
		agent_inch_timers(a, now, 0);
		agent_recv_timers(a, now);
	}
}

/* Make what was appended durable, hand out the replies that waited for
 * it (the STOP reply among them), then close everything. */
static void
shutdown_agent(struct agent *a)
{
	struct conn *c;

	agent_sd_notify(a, "STOPPING=1");
	agent_metrics_close(a);
	agent_compact_free(a);
	agent_upload_free(a);
	/* The ACKs still owed go out with the final commit. */
	agent_inch_timers(a, 0, 1);
	if (!a->fatal)
		commit(a, 1);
	for (c = a->conns; c != NULL; c = c->next)
		if (!c->dead)
			agent_conn_close(a, c, NULL);
	agent_conn_reap(a);
	agent_snap_free(a);
	agent_listen_close(a);
}

int
agent_run(const struct cfg *c, int self, struct cs_err *e)
{
	struct agent a;
	sigset_t oldmask;
	int rc = -1, masked = 0;

	memset(&a, 0, sizeof(a));
	a.c = c;
	a.self = self;
	a.name = c->agents[self].name;
	a.n = c->nagents;
	a.ep = a.lfd = a.sfd = a.spare = -1;
	a.start_ms = cs_now_ms();
	/* Every peer and client costs a descriptor. */
	if (cs_raise_nofile(0) == -1)
		log_warn("setrlimit nofile: %s", strerror(errno));
	/* Buffers of 256 KiB and more (a large value on its way in or out,
	 * a record waiting for its write) come from mmap and go back to the
	 * system when freed. glibc would otherwise raise the threshold to
	 * the largest block freed so far, and serve the next 16 MiB value
	 * from a heap that never shrinks. */
	(void)mallopt(M_MMAP_THRESHOLD, 256 * 1024);

	/* Its certificate first: without it, nothing to start. */
	if (tls_needed(c) &&
	    (xport_ctx_new(c, a.name, &a.tls, e) == -1 ||
	    xcert_check_own(c, a.name, e) == -1)) {
		cs_errkind(e, CS_E_USAGE);	/* the config's fault */
		goto out;
	}
	if (refuse_empty(c->agents[self].data, a.name, e) == -1) {
		cs_errkind(e, CS_E_USAGE);	/* the config's fault */
		goto out;
	}
	if (datalog_open(c->agents[self].data, &a.dl, e) == -1)
		goto out;
	if (agent_check_dropped(c, self, datalog_state(a.dl), e) == -1) {
		cs_errkind(e, CS_E_USAGE);	/* the config's fault */
		goto out;
	}
	log_info("agent %s starting (pid %d), data %s: %llu bytes, %llu "
	    "records", a.name, (int)getpid(), c->agents[self].data,
	    (unsigned long long)datalog_end(a.dl),
	    (unsigned long long)datalog_state(a.dl)->records);
	if (datalog_cut_bytes(a.dl) > 0)
		log_warn("recovery: cut %llu torn bytes from the end of %s",
		    (unsigned long long)datalog_cut_bytes(a.dl),
		    c->agents[self].data);
	else
		log_info("recovery: %s intact, state rebuilt from %llu records",
		    c->agents[self].data,
		    (unsigned long long)datalog_state(a.dl)->records);
	if ((a.ep = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		cs_errno(e, "epoll_create1");
		goto out;
	}
	if (signals_open(&a, &oldmask, e) == -1)
		goto out;
	masked = 1;
	if (ep_add(&a, a.sfd, &a.sfd, e) == -1)
		goto out;
	/* Test hook drop-reply:N (a count, read as cs_fault_ms reads). */
	a.drop_replies = cs_fault_ms("drop-reply", 1000000);
	if (agent_inch_init(&a) == -1) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	if (agent_outch_init(&a, e) == -1)
		goto out;
	if (agent_listen_open(&a, e) == -1)
		goto out;
	if (ep_add(&a, a.lfd, &a.lfd, e) == -1)
		goto out;
	if (agent_metrics_open(&a, e) == -1) {
		cs_errkind(e, CS_E_USAGE);	/* the config's fault */
		goto out;
	}
	log_info("agent %s listening on %s%s", a.name, a.tcp ?
	    c->agents[self].addr : c->agents[self].sock, a.tcp ?
	    " (TCP, mutual TLS 1.3)" : "");
	/* Connections are accepted from here on (they queue on the
	 * listener until the loop's first turn). */
	agent_sd_init(&a);
	agent_sd_notify(&a, "READY=1");
	a.wd_next = cs_now_ms();
	agent_compact_init(&a);
	agent_fence_start(&a);

	run_loop(&a);
	rc = a.fatal ? -1 : 0;
	if (a.fatal)
		cs_errf(e, "agent %s stopped after a fatal error (see its log)",
		    a.name);
	shutdown_agent(&a);
	log_info("agent %s stopped", a.name);
out:
	agent_metrics_close(&a);
	if (rc != 0 && a.lfd != -1)
		agent_listen_close(&a);
	agent_outch_free(&a);
	agent_inch_free(&a);
	agent_conn_lists_free(&a);
	xport_ctx_free(a.tls);
	if (a.sfd != -1)
		close(a.sfd);
	if (a.ep != -1)
		close(a.ep);
	/* Back to the caller's mask. If SIGTERM or SIGINT is unblocked
	 * there, one sent from now on takes its default action: a caller
	 * that exits after us keeps them blocked itself (cmd_agent does);
	 * reading the signalfd empty here would not help, the next signal
	 * can come after the read. */
	if (masked)
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
	datalog_close(a.dl);
	return rc;
}
