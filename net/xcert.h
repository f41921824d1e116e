/* xcert.h - an agent's check of its own TLS certificate at start, so that
 * a wrong one (another agent's, expired, from another CA) stops it with
 * the reason rather than leaving the reason to its peers' logs. */
#ifndef CUTSNAP_XCERT_H
#define CUTSNAP_XCERT_H

#include "../lib/config.h"
#include "../lib/err.h"

/* tls_dir/ME.crt: its CN is me, now is within its validity, and it
 * verifies against tls_dir/ca.crt (with any further certificates of
 * the file as intermediates). Whether ME.key matches it is
 * xport_ctx_new's check. 0, or -1 with e set (one line naming the file
 * and what to do). */
int xcert_check_own(const struct cfg *c, const char *me, struct cs_err *e);

#endif
