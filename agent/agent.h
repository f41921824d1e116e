/* agent.h - the agent daemon: owns one data file, serves clients, talks to
 * its peers over channels and records its part of snapshots. */
#ifndef CUTSNAP_AGENT_H
#define CUTSNAP_AGENT_H

#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/log.h"

/* Run agent number self of c in the foreground until SIGTERM, SIGINT or a
 * STOP request. Returns 0 after a clean shutdown, or -1 with e set when
 * it could not start (data file locked or corrupt, socket in use...);
 * e's kind is CS_E_USAGE when the config is at fault (its certificates,
 * an empty data path, a metrics address, or it drops a channel on which
 * the data file has unacknowledged messages).
 * SIGTERM and SIGINT are blocked while it runs and read from a signalfd;
 * on return the caller's mask is back, so a caller that is about to exit
 * should block them itself beforehand, or a stop signal that comes late
 * kills it with the default action. */
int agent_run(const struct cfg *c, int self, struct cs_err *e);

#endif
