/* load.h - the load generator's run (load_run.c, load_io.c), driven by
 * load.c. */
#ifndef CUTSNAP_CMD_LOAD_H
#define CUTSNAP_CMD_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/config.h"

#define LOAD_KEY "bal"

struct load_opts {
	const struct cfg *c;
	int seconds;		/* how long the clients run */
	int clients;		/* concurrent clients, each one request at a time */
	int threads;		/* worker threads sharing them; 0: default */
	int64_t max_amount;	/* transfers move 1..max_amount */
	int snap_every_ms;	/* 0: no snapshots */
	const char *repo;	/* with snap_every_ms */
};

/* One request: when it started (us since the run began) and how long. */
struct load_req {
	int64_t start_us;
	int64_t dur_us;
};

/* One snapshot taken during the run. */
struct load_snap {
	int64_t start_us, end_us;
	uint64_t id;
	int ok;
};

struct load_result {
	struct load_req *reqs;	/* completed transfers, malloc'ed */
	size_t nreqs;
	uint64_t insufficient;	/* refused: not enough money at SRC */
	uint64_t failures;	/* any other failed request */
	char first_failure[256];	/* the first failure's message */
	struct load_snap *snaps;	/* malloc'ed */
	size_t nsnaps;
	char first_snap_failure[256];
	int64_t elapsed_us;	/* wall time of the client phase */
	int interrupted;	/* ended early by SIGINT or SIGTERM */
};

/* Run the clients (and the snapshot thread) for o->seconds. 0, or -1 with
 * e set when the run could not start (no memory, no thread). Request
 * failures are counted in r, not returned. */
int load_run(const struct load_opts *o, struct load_result *r,
    struct cs_err *e);
void load_result_free(struct load_result *r);

/* SIGTERM, and SIGINT unless the shell started us with it ignored (a
 * background job), end the run early: load_catch_stop installs the
 * handler (one signal; a second one has the default effect), and
 * load_release_stop puts the default back once the run is over.
 * load_stopping tells the clients and the snapshot thread to retire. */
int load_catch_stop(void);
void load_release_stop(void);
int load_stopping(void);

#endif
