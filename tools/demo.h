/* demo.h - the bank example end to end (demo.c), run by "cutsnap demo"
 * (cmd/demo.c), which gives it the way to start and stop the agents and
 * to say what went wrong. */
#ifndef CUTSNAP_TOOLS_DEMO_H
#define CUTSNAP_TOOLS_DEMO_H

#include <stddef.h>
#include <sys/types.h>
#include "../lib/config.h"
#include "../lib/err.h"

/* What the demo needs from the program that runs it: the agents are
 * this program started as "agent", so only the command can start them. */
struct demo_env {
	/* Start every agent of c within timeout_s (their pids in pids;
	 * running: those already up, may be NULL). 0, or -1 with e set. */
	int (*start)(const struct cfg *c, int timeout_s, pid_t *pids,
	    pid_t *running, struct cs_err *e);
	/* Stop every running agent of c within timeout_s. 0, or -1. */
	int (*stop)(const struct cfg *c, int timeout_s, struct cs_err *e);
	/* One line on stderr: a total that is off, a case that failed. */
	void (*warn)(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2)));
};

/* Run every case in a directory of its own under top, telling the story
 * on stdout. Returns how many cases did not give the expected totals (or
 * failed, said through env->warn); *ncases is how many there are. Stops
 * early once demo_interrupted. */
int demo_run(const struct demo_env *env, const char *top, size_t *ncases);

/* SIGINT, SIGTERM and SIGHUP end the demo after the case under way
 * (demo_catch_signals installs the handler); demo_interrupted is 1 once
 * one came. */
void demo_catch_signals(void);
int demo_interrupted(void);

#endif
