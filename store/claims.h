/* claims.h - the claims of the chunks a snapshot copies (claims.c), so
 * that snapshots taken at the same time into one repository copy each
 * chunk once. Internal to store/. */
#ifndef CUTSNAP_STORE_CLAIMS_H
#define CUTSNAP_STORE_CLAIMS_H

#include "../lib/err.h"

struct crun;

/* Claim every job of r; a job another run claimed moves to r->waiting.
 * 0, or -1 with e set. */
int store_claims_take(struct crun *r, struct cs_err *e);
/* With r's own claims dropped, wait for those of r->waiting: stored
 * meanwhile they are shared, else they become r's jobs. 0 / -1. */
int store_claims_wait(struct crun *r, struct cs_err *e);

#endif
