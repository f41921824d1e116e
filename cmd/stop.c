/* stop.c - "cutsnap stop": ask every agent to stop and wait until each
 * process has exited. */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../net/client.h"
#include "../net/wire.h"
#include "cmd.h"

#define STOP_POLL_MS 20

static const char usage_text[] =
    "usage: cutsnap stop -c CONF [--timeout SEC]\n"
    "\n"
    "Stop every running agent of CONF gracefully (each finishes its pending\n"
    "writes) and wait until every agent process has exited. Agents that are\n"
    "not running are fine. An agent that does not answer but still holds\n"
    "its data file's lock (paused, or overloaded) is sent SIGTERM and\n"
    "waited for like the others. An agent with an addr (possibly on\n"
    "another host) counts as exited once it no longer answers there.\n"
    "\n"
    "  -c, --config CONF   the cluster config file\n"
    "  -t, --timeout SEC   how long to wait for the agents (default 10)\n"
    "\n"
    "Exit status: 0 once all agents have exited, 1 if one did not exit in\n"
    "time (named with its pid), 2 bad usage or bad config.\n";

/* The state letter of process pid ("pid (comm) S ..."; comm may hold
 * spaces and parentheses), or 0 if it cannot be read. */
static char
proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
		return 0;
	return p[2];
}

/* 1 once process pid has exited (reaped here if it was our child). A
 * zombie has exited and only waits for its parent (an agent started by
 * `cutsnap start` is reparented, and a busy or minimal init may reap it
 * late). */
static int
gone(pid_t pid)
{
	(void)waitpid(pid, NULL, WNOHANG);
	return (kill(pid, 0) == -1 && errno == ESRCH) || proc_state(pid) == 'Z';
}

/* The command name of process pid ("self" for ours) in out, or "". */
static void
proc_comm(const char *pid, char *out, size_t sz)
{
	char p[64];
	FILE *f;

	out[0] = '\0';
	snprintf(p, sizeof(p), "/proc/%s/comm", pid);
	if ((f = fopen(p, "re")) == NULL)
		return;
	if (fgets(out, (int)sz, f) == NULL)
		out[0] = '\0';
	fclose(f);
}

/* 1 if pid is a process of this machine running this same program. An
 * exiting process loses its exe link (with its memory) a little before
 * it becomes a zombie: then its command name says whether it is ours. */
static int
local_cutsnap(pid_t pid)
{
	char p[64], mine[PATH_MAX], theirs[PATH_MAX];
	ssize_t n, m;

	snprintf(p, sizeof(p), "/proc/%d/exe", (int)pid);
	if ((n = readlink("/proc/self/exe", mine, sizeof(mine) - 1)) <= 0)
		return 0;
	if ((m = readlink(p, theirs, sizeof(theirs) - 1)) <= 0) {
		snprintf(p, sizeof(p), "%d", (int)pid);
		proc_comm(p, theirs, sizeof(theirs));
		proc_comm("self", mine, sizeof(mine));
		return mine[0] != '\0' && strcmp(mine, theirs) == 0;
	}
	return n == m && memcmp(mine, theirs, (size_t)n) == 0;
}

/* Agent i of c with pid has exited. An agent with an addr may run on
 * another host, where its pid means nothing here: it is gone once it no
 * longer answers at its address and no process of this machine with that
 * pid runs cutsnap. */
static int
agent_gone(const struct cfg *c, int i, pid_t pid)
{
	struct cs_err se;
	int fd;

	if (c->agents[i].addr[0] == '\0')
		return gone(pid);
	if ((fd = client_connect_agent(c, i, -1, &se)) != -1) {
		client_close(fd);
		return 0;
	}
	return !local_cutsnap(pid) || gone(pid);
}

/* The pid holding a lock on the file at path, from /proc/locks (its
 * lines: "N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE START END", device
 * numbers in hex), or 0 if none is found. */
static pid_t
lock_holder(const char *path)
{
	char line[256], type[16];
	unsigned long long ino;
	unsigned int maj, min;
	struct stat sb;
	pid_t pid = 0;
	long p;
	FILE *f;

	if (stat(path, &sb) == -1 ||
	    (f = fopen("/proc/locks", "re")) == NULL)
		return 0;
	while (pid == 0 && fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%*s %15s %*s %*s %ld %x:%x:%llu", type, &p,
		    &maj, &min, &ino) != 5 || strcmp(type, "FLOCK") != 0)
			continue;
		if (ino == (unsigned long long)sb.st_ino &&
		    maj == major(sb.st_dev) && min == minor(sb.st_dev) && p > 0)
			pid = (pid_t)p;
	}
	fclose(f);
	return pid;
}

/* 1 if another process holds the lock an agent takes on its data file
 * while it runs (a file that cannot be opened is no running agent's). */
static int
locked(const char *path)
{
	int fd, rc = 0;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return 0;
	if (flock(fd, LOCK_EX | LOCK_NB) == -1)
		rc = errno == EWOULDBLOCK;
	else
		(void)flock(fd, LOCK_UN);
	close(fd);
	return rc;
}

/* Agent i does not answer: is its process there all the same? Its data
 * file's lock says so. *pid: the process to wait for, or 0 when the agent
 * is not running. 0, or -1 with e set when a process holds the lock but
 * cannot be found. */
static int
silent_agent(const struct cfg *c, int i, pid_t *pid, struct cs_err *e)
{
	*pid = 0;
	if (!locked(c->agents[i].data))
		return 0;
	if ((*pid = lock_holder(c->agents[i].data)) == 0)
		return cs_errf(e, "agent %s does not answer, yet its data file "
		    "%s is locked by a process that cannot be found",
		    c->agents[i].name, c->agents[i].data);
	/* SIGTERM is its graceful stop too (taken when it next runs). */
	if (kill(*pid, SIGTERM) == -1 && errno != ESRCH)
		return cs_errf(e, "agent %s (pid %ld) does not answer and "
		    "cannot be signalled: %s", c->agents[i].name, (long)*pid,
		    strerror(errno));
	return 0;
}

int
cmd_stop_cluster(const struct cfg *c, int timeout_s, struct cs_err *e)
{
	struct api_reply r;
	struct cs_err se;
	pid_t *pid;
	int64_t deadline;
	int i, left = 0, rc = -1;

	if ((pid = calloc((size_t)c->nagents, sizeof(*pid))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	for (i = 0; i < c->nagents; i++) {
		if (cmd_agent_status(c, i, 2000, &pid[i], &se) == -1 ||
		    pid[i] <= 0) {
			/* Not running, or running but not answering (paused,
			 * or overloaded): its lock tells. */
			if (silent_agent(c, i, &pid[i], e) == -1)
				goto out;
			left += pid[i] != 0;
			continue;
		}
		/* The agent may close the connection as it goes: what counts
		 * is that the process exits. */
		if (api_call(c, i, W_REQ_STOP, NULL, &r, 5000, &se) == 0 &&
		    r.code == REPLY_DENIED) {
			/* Its certificate's role may not stop it: it will
			 * not exit, so say why now rather than wait. */
			cs_errf(e, "%.*s", (int)(r.blen > 300 ? 300 : r.blen),
			    r.body ? (const char *)r.body : "");
			api_reply_free(&r);
			goto out;
		}
		api_reply_free(&r);	/* api_call set it, even failing */
		left++;
	}
	deadline = cs_now_ms() + (int64_t)timeout_s * 1000;
	while (left > 0) {
		for (i = 0; i < c->nagents; i++) {
			if (pid[i] != 0 && agent_gone(c, i, pid[i])) {
				pid[i] = 0;
				left--;
			}
		}
		if (left == 0)
			break;
		if (cs_now_ms() >= deadline) {
			for (i = 0; pid[i] == 0; i++)
				;
			if (proc_state(pid[i]) == 'T')
				cs_errf(e, "agent %s (pid %d) did not exit within "
				    "%d s: it is stopped (SIGSTOP); resume it "
				    "with kill -CONT %d and it exits",
				    c->agents[i].name, (int)pid[i], timeout_s,
				    (int)pid[i]);
			else
				cs_errf(e, "agent %s (pid %d) did not exit within "
				    "%d s", c->agents[i].name, (int)pid[i],
				    timeout_s);
			goto out;
		}
		cs_sleep_ms(STOP_POLL_MS);
	}
	rc = 0;
out:
	free(pid);
	return rc;
}

int
cmd_stop(int argc, char **argv)
{
	const char *conf = NULL;
	uint64_t timeout;
	struct cfg *c = NULL;
	struct cs_err e;
	int rc;

	if ((rc = cmd_cluster_opts(argc, argv, usage_text, 0, &conf,
	    &timeout)) >= 0)
		return rc;
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	if (cmd_stop_cluster(c, (int)timeout, &e) == -1)
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
	cfg_free(c);
	return rc;
}
