/* start.c - "cutsnap start": start every agent in the background and wait
 * until all of them answer. */
#include <sys/wait.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/agstat.h"
#include "../lib/fsutil.h"
#include "cmd.h"

#define START_POLL_MS 50

static const char usage_text[] =
    "usage: cutsnap start -c CONF [--timeout SEC] [--log-level LEVEL]\n"
    "\n"
    "Start every agent of CONF that is not running yet, in the background\n"
    "('cutsnap agent -c CONF --name NAME' in its own session, its output\n"
    "appended to run_dir/NAME.log), and wait until every agent answers.\n"
    "Then print a line per agent: \"NAME started (pid PID)\" or \"NAME\n"
    "already running (pid PID)\". An agent restored alone (restore --agent)\n"
    "starts fenced until each of its channels has checked its history with\n"
    "the peer: start waits for that too, up to the timeout, and says on\n"
    "stderr which agents stay fenced and why (see cutsnap status).\n"
    "\n"
    "  -c, --config CONF   the cluster config file\n"
    "  -t, --timeout SEC   how long to wait for the agents (default 10)\n"
    "      --log-level LEVEL\n"
    "                      the agents' log level: error, warn, info\n"
    "                      (default) or debug\n"
    "\n"
    "Exit status: 0 once all agents answer, 1 if one failed to start, 2 bad\n"
    "usage or bad config.\n";

/* Agent i was started here as pid; 1 if it has exited (e set), else 0. */
static int
exited_early(const struct cfg *c, int i, pid_t pid, struct cs_err *e)
{
	char log[PATH_MAX + NAME_MAX_LEN + 8], last[256];
	int status;

	if (pid <= 0 || waitpid(pid, &status, WNOHANG) != pid)
		return 0;
	snprintf(log, sizeof(log), "%s/%s.log", c->run_dir, c->agents[i].name);
	cmd_last_line(log, last, sizeof(last));
	if (WIFSIGNALED(status))
		cs_errf(e, "agent %s was killed by signal %d before it answered"
		    "%s%s", c->agents[i].name, WTERMSIG(status),
		    last[0] ? ": " : "", last);
	else
		cs_errf(e, "agent %s exited with status %d before it answered"
		    "%s%s", c->agents[i].name, WEXITSTATUS(status),
		    last[0] ? ": " : "", last);
	return 1;
}

int
cmd_start_cluster(const struct cfg *c, int timeout_s, pid_t *pids,
    pid_t *running, struct cs_err *e)
{
	char log[PATH_MAX + NAME_MAX_LEN + 8];
	pid_t *pid = NULL;
	char *ready = NULL;
	int64_t deadline;
	int i, left, rc = -1;
	struct cs_err se;
	pid_t p;

	pid = calloc((size_t)c->nagents, sizeof(*pid));
	ready = calloc((size_t)c->nagents, 1);
	if (pid == NULL || ready == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	if (fs_mkdir_p(c->run_dir, 0700, e) == -1)
		goto out;
	left = 0;
	for (i = 0; i < c->nagents; i++) {
		if (cmd_agent_status(c, i, 2000, &p, &se) == 0) {
			ready[i] = 1;
			if (running != NULL)
				running[i] = p;
			continue;
		}
		snprintf(log, sizeof(log), "%s/%s.log", c->run_dir,
		    c->agents[i].name);
		if ((pid[i] = cmd_spawn_agent(c->path, c->agents[i].name, log,
		    e)) == -1) {
			pid[i] = 0;
			goto out;
		}
		left++;
	}
	deadline = cs_now_ms() + (int64_t)timeout_s * 1000;
	while (left > 0) {
		for (i = 0; i < c->nagents; i++) {
			if (ready[i])
				continue;
			if (exited_early(c, i, pid[i], e))
				goto out;
			if (cmd_agent_status(c, i, 1000, &p,
			    &se) == 0) {
				ready[i] = 1;
				left--;
				/* The pid the agent itself reports. */
				if (p > 0)
					pid[i] = p;
			}
		}
		if (left == 0)
			break;
		if (cs_now_ms() >= deadline) {
			for (i = 0; ready[i]; i++)
				;
			cs_errf(e, "agent %s did not answer within %d s; "
			    "see %s/%s.log", c->agents[i].name, timeout_s,
			    c->run_dir, c->agents[i].name);
			goto out;
		}
		cs_sleep_ms(START_POLL_MS);
	}
	rc = 0;
out:
	if (pids != NULL && pid != NULL)
		memcpy(pids, pid, (size_t)c->nagents * sizeof(*pid));
	free(pid);
	free(ready);
	return rc;
}

/* Agent i's fence (agent/fence.c): 0 none, 1 waiting for channels still
 * unchecked, 2 stuck (a channel diverged: only a restore of the others
 * lifts it), with the snapshot in *snap. -1: the agent did not answer. */
static int
fence_state(const struct cfg *c, int i, uint64_t *snap)
{
	struct agstat st;
	struct cs_err e;
	size_t k;
	int rc = 1;

	if (api_agent_stat(c, i, 2000, &st, &e) == -1)
		return -1;
	*snap = st.fenced;
	if (st.fenced == 0)
		rc = 0;
	for (k = 0; rc && k < st.nout; k++)
		if (st.out[k].diverged)
			rc = 2;
	for (k = 0; rc && k < st.nin; k++)
		if (st.in[k].diverged)
			rc = 2;
	agstat_free(&st);
	return rc;
}

/* An agent restored alone starts fenced and lifts the fence itself once
 * every channel has checked its history with the peer, which takes the
 * peers' first connections: wait for that (a whole cluster restored host
 * by host then works as soon as start returns), then say which agents
 * stay fenced and why. */
static void
wait_fences(const struct cfg *c, int timeout_s)
{
	int64_t deadline = cs_now_ms() + (int64_t)timeout_s * 1000;
	uint64_t snap;
	int i, s, waiting;

	do {
		waiting = 0;
		for (i = 0; i < c->nagents; i++)
			waiting += fence_state(c, i, &snap) == 1;
		if (waiting > 0)
			cs_sleep_ms(START_POLL_MS);
	} while (waiting > 0 && cs_now_ms() < deadline);
	for (i = 0; i < c->nagents; i++) {
		if ((s = fence_state(c, i, &snap)) == 2)
			cmd_warn("agent %s is fenced: it was restored alone "
			    "from snapshot %llu and a channel's history "
			    "moved on since (see cutsnap status): restore "
			    "the other agents from the same snapshot",
			    c->agents[i].name, (unsigned long long)snap);
		else if (s == 1)
			cmd_warn("agent %s is fenced: it was restored alone "
			    "from snapshot %llu and waits for its peers to "
			    "check each channel's history (see cutsnap "
			    "status)", c->agents[i].name,
			    (unsigned long long)snap);
	}
}

int
cmd_start(int argc, char **argv)
{
	const char *conf = NULL;
	uint64_t timeout;
	struct cfg *c = NULL;
	pid_t *pids = NULL, *running = NULL;
	struct cs_err e;
	int rc, i;

	if ((rc = cmd_cluster_opts(argc, argv, usage_text, 1, &conf,
	    &timeout)) >= 0)
		return rc;
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	if ((pids = calloc((size_t)c->nagents, sizeof(*pids))) == NULL ||
	    (running = calloc((size_t)c->nagents, sizeof(*running))) ==
	    NULL) {
		rc = cmd_fail(EXIT_FAILED, "out of memory");
		goto out;
	}
	if (cmd_start_cluster(c, (int)timeout, pids, running, &e) == -1) {
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
		goto out;
	}
	wait_fences(c, (int)timeout);
	for (i = 0; i < c->nagents; i++) {
		if (pids[i] > 0)
			printf("%s started (pid %ld)\n", c->agents[i].name,
			    (long)pids[i]);
		else
			printf("%s already running (pid %ld)\n",
			    c->agents[i].name, (long)running[i]);
	}
	if (fflush(stdout) == EOF || ferror(stdout))
		rc = cmd_fail(EXIT_FAILED, "write stdout failed");
out:
	free(pids);
	free(running);
	cfg_free(c);
	return rc;
}
