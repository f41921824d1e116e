/* coord_int.h - what the coordinator's files share; not a public API. */
#ifndef CUTSNAP_COORD_INT_H
#define CUTSNAP_COORD_INT_H

#include <stddef.h>
#include "coordinator.h"

/* Mark in seen[] (nagents bytes) every agent that markers sent from
 * `from` reach over c's channels, `from` included. 0, or -1 on OOM. */
int reach_mark(const struct cfg *c, int from, unsigned char *seen);

#endif
