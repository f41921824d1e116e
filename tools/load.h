/* load.h - the load generator: load_measure (load.c) drains, deposits,
 * runs the clients (load_run.c, load_io.c) and sums up; "cutsnap load"
 * (cmd/load.c) parses its options and prints what it measured. */
#ifndef CUTSNAP_TOOLS_LOAD_H
#define CUTSNAP_TOOLS_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/config.h"
#include "../lib/err.h"

#define LOAD_KEY "bal"
#define LOAD_REQ_TIMEOUT_MS 30000	/* one request's wait for its reply */

struct store_opts;

struct load_opts {
	const struct cfg *c;
	int seconds;		/* how long the clients run */
	int clients;		/* concurrent clients, each one request at a time */
	int threads;		/* worker threads sharing them; 0: default */
	int64_t max_amount;	/* transfers move 1..max_amount */
	int snap_every_ms;	/* 0: no snapshots */
	const char *repo;	/* with snap_every_ms */
	const struct store_opts *store;	/* the snapshots' (the password) */
	/* Called after each snapshot committed: 0, or -1 with e set when
	 * it could not be made visible (an object store); NULL: none. */
	int (*published)(struct cs_err *e);
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

/* What a run measured, summed up (load_measure). */
struct load_summary {
	double secs, tps, p50, p99, max;
	double during_p50, during_p99, during_max;
	double outside_p50, outside_p99, outside_max, snap_p50;
	size_t snaps_ok, snaps_failed, during_n;
	uint64_t syncs, writes;
	int64_t total0, total1;
	int checked;		/* total1 was read (not no_drain) */
};

/* The whole measurement: wait for the channels to drain (unless
 * no_drain), deposit `initial` where an agent has no balance and sum the
 * balances, run the clients (load_run, with the stop signals caught),
 * drain again and sum again. 0 with r and s filled (load_result_free r),
 * or -1 with e set. */
int load_measure(const struct load_opts *o, int64_t initial, int no_drain,
    struct load_result *r, struct load_summary *s, struct cs_err *e);

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
