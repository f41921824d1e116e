/* role.h - what a client certificate may ask of an agent.
 *
 * A client certificate carries its role as the Subject's OU (one of
 * "admin", "backup", "read-only"); an agent's certificate carries none
 * and only ever acts as a peer. A role-less certificate with CN "client"
 * (made before roles existed) is an admin, as is a Unix-socket client
 * (the same uid: SO_PEERCRED). */
#ifndef CUTSNAP_ROLE_H
#define CUTSNAP_ROLE_H

#include <stdint.h>

enum cs_role {
	CS_ROLE_NONE = 0,	/* no role: an agent's certificate */
	CS_ROLE_ADMIN = 1,	/* every request */
	CS_ROLE_BACKUP = 2,	/* snapshots, status and reads */
	CS_ROLE_READONLY = 3,	/* status and reads */
	CS_ROLE_BAD = 4,	/* an unknown role, or more than one */
};

/* "admin", "backup", "read-only", "none" or "unknown". */
const char *cs_role_name(enum cs_role r);
/* The role named s, or CS_ROLE_BAD. */
enum cs_role cs_role_parse(const char *s);

#endif
