/* ca.h - the cluster's certificate authority, for "cutsnap cert" and the
 * tests: an EC P-256 CA in tls_dir, the certificates of the agents and of
 * the commands' "client" signed by it, and client certificates with a
 * role (role.h). Keys are written mode 0600, tls_dir is made mode 0700;
 * only what is missing is created. */
#ifndef CUTSNAP_TOOLS_CA_H
#define CUTSNAP_TOOLS_CA_H

#include "../lib/config.h"
#include "../lib/err.h"

#define CA_DAYS_DEFAULT	3650
#define CA_DAYS_MAX	36500

/* Told of each certificate created, with its key's path. */
typedef void ca_made_fn(void *arg, const char *crt, const char *key);

/* Create what is missing in c->tls_dir: ca.crt/ca.key, each agent's
 * NAME.crt/NAME.key (CN its name, a SAN with the host of its addr) and
 * the commands' admin client.crt/client.key, valid for days (negative:
 * expired, for tests; 0: CA_DAYS_DEFAULT for the CA). made_fn (may be
 * NULL) hears of each one. The number created, or -1 with e set. */
int ca_cluster(const struct cfg *c, long days, ca_made_fn *made_fn,
    void *arg, struct cs_err *e);
/* Issue the client certificate name with role ("admin", "backup",
 * "read-only") in out (c->tls_dir when NULL), signed by c's CA; refused
 * when it exists. 0, or -1 with e set. */
int ca_issue_client(const struct cfg *c, const char *name, const char *role,
    const char *out, long days, ca_made_fn *made_fn, void *arg,
    struct cs_err *e);

#endif
