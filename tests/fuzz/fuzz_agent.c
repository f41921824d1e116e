/* fuzz_agent.c - libFuzzer target: the agent's frame handling, driven from
 * a buffer. A real agent (config A, B, C, full mesh; this is B) on a fresh
 * data file gets three connections made of socketpairs instead of
 * accepted sockets: a client/coordinator, an accepted connection that may
 * turn into the incoming channel A>B with a HELLO, and the outgoing
 * channel B>C as if B had connected to C. The input is a sequence of
 * chunks "u8 sel | u8 len | len bytes": the bytes go to connection sel%3
 * (frames may span chunks), then the agent reads them, and runs one group
 * commit as its loop would. Every input starts from a fresh agent, and
 * everything is torn down, so ASan's leak check covers each run. */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/agent_int.h"
#include "../../log/dlfile.h"
#include "../../lib/log.h"

#define NCONN 3

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cfg *cfg;
static char dir[64], datapath[128];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char text[256], cpath[128];
	struct cs_err e;
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	(void)argc;
	(void)argv;
	log_init("fuzz", LOG_ERROR);
	snprintf(dir, sizeof(dir), "%s/cs-fuzz.XXXXXX", base);
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(cpath, sizeof(cpath), "%s/cluster.ini", dir);
	snprintf(datapath, sizeof(datapath), "%s/b.data", dir);
	snprintf(text, sizeof(text), "[cluster]\nrun_dir = run\n"
	    "[agent A]\ndata = a.data\n[agent B]\ndata = b.data\n"
	    "[agent C]\ndata = c.data\n");
	if (cfg_parse(text, cpath, &cfg, &e) < 0) {
		fprintf(stderr, "fuzz_agent: %s\n", e.msg);
		exit(1);
	}
	return 0;
}

/* Read and drop whatever the agent wrote to the far end of a pair. */
static void
drain(int fd)
{
	char buf[4096];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent a;
	struct conn *c[NCONN];
	struct cs_err e;
	int far[NCONN], sv[2], i, d;
	size_t off = 0, n;
	ssize_t w;

	memset(&a, 0, sizeof(a));
	for (i = 0; i < NCONN; i++) {
		far[i] = -1;
		c[i] = NULL;
	}
	a.c = cfg;
	a.self = 1;
	a.name = cfg->agents[1].name;
	a.n = cfg->nagents;
	a.ep = a.lfd = a.sfd = a.spare = -1;
	a.start_ms = cs_now_ms();
	unlink(datapath);
	if (datalog_open(datapath, &a.dl, &e) < 0) {
		fprintf(stderr, "fuzz_agent: %s\n", e.msg);
		abort();
	}
	if ((a.ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    agent_inch_init(&a) < 0 || agent_outch_init(&a, &e) < 0)
		abort();
	/* No real connects: the channels' sockets are the pairs below. */
	for (d = 0; d < a.n; d++)
		a.out[d].retry_at = 0;
	for (i = 0; i < NCONN; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0, sv) < 0)
			abort();
		far[i] = sv[1];
		c[i] = agent_conn_new(&a, sv[0],
		    i == 2 ? ROLE_PEER_OUT : ROLE_NEW, 0);
		if (c[i] == NULL)
			abort();
	}
	c[2]->peer = 2;
	a.out[2].conn = c[2];
	agent_outch_connected(&a, c[2]);

	while (off + 2 <= size && !a.stop && !a.fatal) {
		i = data[off] % NCONN;
		n = data[off + 1];
		off += 2;
		if (n > size - off)
			n = size - off;
		if (!c[i]->dead && n > 0) {
			w = write(far[i], data + off, n);
			if (w < 0 && errno != EAGAIN)
				abort();
			agent_conn_event(&a, c[i], EPOLLIN);
		}
		off += n;
		agent_commit(&a);
		for (i = 0; i < NCONN; i++)
			drain(far[i]);
	}

	/* Shut down as the agent does (loop.c's shutdown_agent): abort a
	 * compaction or upload under way, close, free, forget. */
	agent_compact_free(&a);
	agent_upload_free(&a);
	if (!a.fatal)
		agent_commit(&a);
	for (i = 0; i < NCONN; i++)
		if (!c[i]->dead)
			agent_conn_close(&a, c[i], NULL);
	agent_conn_reap(&a);
	agent_snap_free(&a);
	agent_outch_free(&a);
	agent_inch_free(&a);
	agent_conn_lists_free(&a);
	close(a.ep);
	datalog_close(a.dl);
	for (i = 0; i < NCONN; i++)
		close(far[i]);
	return 0;
}
