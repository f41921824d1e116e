/* load_io.h - the load generator's worker threads (load_io.c): each runs
 * an epoll loop over the non-blocking connections of its share of the
 * clients. Used by load_run.c only. */
#ifndef CUTSNAP_TOOLS_LOAD_IO_H
#define CUTSNAP_TOOLS_LOAD_IO_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/buf.h"
#include "../net/conn.h"
#include "load.h"

struct load_pair {
	int src, dst;
};

/* One connection of a client to one agent. gen counts its connects, so an
 * epoll event queued for an fd closed since is recognised and dropped. */
struct load_conn {
	int fd;			/* -1 until connected */
	uint32_t gen;
	struct netconn *nc;	/* its transport (net/conn.h), owning fd:
				 * over TLS driven by this thread
				 * (xport_client_open), or NULL */
};

/* One logical client: at most one TRANSFER outstanding, on conns[cur]. */
struct load_client {
	uint64_t rng;		/* xorshift64 state, never 0 */
	struct load_conn *conns;	/* one per agent */
	int cur;		/* agent with the outstanding request, or -1 */
	int done;		/* ran out of time (or memory): starts no more */
	int64_t start_us, deadline_us;	/* of the outstanding request */
	struct wbuf out;	/* its request frame */
	size_t sent;		/* bytes of out already written */
	int pollout;		/* EPOLLOUT asked for: out is not all sent */
	uint8_t *in;		/* its reply, as read so far */
	size_t inlen, incap;
	struct load_req *reqs;	/* completed transfers */
	size_t n, cap;
	uint64_t insufficient, failures;
	char first_failure[256];
	int oom;
};

/* One worker thread and the clients it multiplexes. */
struct load_worker {
	const struct load_opts *o;
	const struct load_pair *pairs;
	size_t npairs;
	int64_t t0_us, end_us;	/* monotonic us: run start, run end */
	struct load_client *cls;	/* borrowed: a slice of all clients */
	int ncls;
	int epfd;		/* -1 until load_io_init */
	int active;		/* clients not done yet */
	int *ready;		/* idle clients to start next, ncls slots */
	int nready;
};

/* Allocate a client's connections (all unconnected); 0 / -1 on no memory. */
int load_client_init(struct load_client *cl, int nagents, uint64_t seed);
void load_client_free(struct load_client *cl, int nagents);
/* The worker's epoll instance and ready list; 0, or -1 with e set. */
int load_io_init(struct load_worker *w, struct cs_err *e);
void load_io_free(struct load_worker *w);
/* Before the run: connect each of w's clients to every agent it may send
 * from, so that the run's time is spent on transfers, not on connection
 * setup (a TLS handshake each). A connection that fails here is tried
 * again, and counted, when the client first needs it. */
void load_io_connect(struct load_worker *w);
/* Thread body: run w's clients until the end time and their last replies. */
void *load_io_main(void *arg);

#endif
