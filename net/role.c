/* role.c - the roles of client certificates: their names (role.h). What
 * each may send is role_policy.c's table. */
#include <string.h>

#include "role.h"

const char *
cs_role_name(enum cs_role r)
{
	switch (r) {
	case CS_ROLE_NONE:
		return "none";
	case CS_ROLE_ADMIN:
		return "admin";
	case CS_ROLE_BACKUP:
		return "backup";
	case CS_ROLE_READONLY:
		return "read-only";
	default:
		return "unknown";
	}
}

enum cs_role
cs_role_parse(const char *s)
{
	if (strcmp(s, "admin") == 0)
		return CS_ROLE_ADMIN;
	if (strcmp(s, "backup") == 0)
		return CS_ROLE_BACKUP;
	if (strcmp(s, "read-only") == 0)
		return CS_ROLE_READONLY;
	return CS_ROLE_BAD;
}
