/* role_policy.c - what each role of a client certificate may send
 * (role_policy.h). One table, so that what a role may do is read in one
 * place. Apart from role.c, which only names the roles, so that the
 * connection layer can carry a role without depending on the wire's
 * request types. */
#include <stddef.h>
#include <string.h>

#include "role_policy.h"
#include "wire.h"

/* What each role may send: reads for read-only; the snapshot frames
 * besides for backup (a coordinator also reads each agent's status). */
static const struct {
	uint8_t type;
	const char *name;
	uint8_t backup, readonly;
} reqs[] = {
	{ W_HELLO, "hello", 1, 1 },
	{ W_REQ_STATUS, "status", 1, 1 },
	{ W_REQ_GET, "get", 1, 1 },
	{ W_REQ_GETV, "get", 1, 1 },
	{ W_REQ_RECV, "receive messages", 1, 1 },
	{ W_REQ_INBOX, "list the inbox", 1, 1 },
	{ W_REQ_DEAD_LIST, "list dead letters", 1, 1 },
	{ W_SNAP_JOIN, "snapshot", 1, 0 },
	{ W_SNAP_START, "snapshot", 1, 0 },
	{ W_SNAP_DONE, "snapshot", 1, 0 },
	{ W_SNAP_FETCH, "snapshot", 1, 0 },
	{ W_SNAP_UPLOAD, "snapshot", 1, 0 },
	{ W_SNAP_ALIVE, "snapshot", 1, 0 },
	{ W_REQ_PUT, "put", 0, 0 },
	{ W_REQ_DEL, "del", 0, 0 },
	{ W_REQ_ADD, "add", 0, 0 },
	{ W_REQ_TXN, "commit a transaction", 0, 0 },
	{ W_REQ_TRANSFER, "transfer", 0, 0 },
	{ W_REQ_HOLD, "hold a channel", 0, 0 },
	{ W_REQ_RELEASE, "release a channel", 0, 0 },
	{ W_REQ_STOP, "stop", 0, 0 },
	{ W_REQ_DEAD_RESOLVE, "resolve dead letters", 0, 0 },
	{ W_REQ_COMPACT, "compact", 0, 0 },
};

#define NREQS	(sizeof(reqs) / sizeof(reqs[0]))

int
cs_role_may(enum cs_role r, uint8_t type)
{
	size_t i;

	if (r == CS_ROLE_ADMIN)
		return 1;	/* unknown types too: their handler answers */
	for (i = 0; i < NREQS; i++)
		if (reqs[i].type == type)
			return r == CS_ROLE_BACKUP ? reqs[i].backup :
			    r == CS_ROLE_READONLY ? reqs[i].readonly : 0;
	return 0;
}

const char *
cs_role_req_name(uint8_t type)
{
	size_t i;

	for (i = 0; i < NREQS; i++)
		if (reqs[i].type == type)
			return reqs[i].name;
	return "send this request";
}
