/* role_policy.h - what a role may ask of an agent (role_policy.c). */
#ifndef CUTSNAP_ROLE_POLICY_H
#define CUTSNAP_ROLE_POLICY_H

#include <stdint.h>

#include "role.h"

/* 1 when role r may send a request or snapshot frame of type (wire.h),
 * else 0 (CS_ROLE_NONE and CS_ROLE_BAD may send none). */
int cs_role_may(enum cs_role r, uint8_t type);
/* The request type's name for messages ("transfer", "snapshot"). */
const char *cs_role_req_name(uint8_t type);

#endif
