/* reqtab.h - the client request ids an agent remembers: the last
 * REQTAB_MAX ids of the requests it applied (add, del, transfer), each
 * with a digest of the request and the value its reply carried.
 *
 * A client draws a random 128-bit id per request and sends it again when
 * it retries after a lost reply; the agent then answers with the first
 * outcome and applies nothing (client_req.c). The ids ride in the data
 * file on the records that apply the requests (datalog.h), so the table
 * is rebuilt by replay and carried over by compaction (REQS records).
 * Oldest ids are forgotten first: a retry later than REQTAB_MAX other
 * requests on the same agent is applied again. */
#ifndef CUTSNAP_REQTAB_H
#define CUTSNAP_REQTAB_H

#include <stddef.h>
#include <stdint.h>

#define REQ_ID_LEN 16
#define REQTAB_MAX 65536u	/* ids remembered per agent */
#define REQ_VAL_MAX 23		/* reply values: a decimal int64 */

/* One remembered request; val is its reply's body (not NUL-terminated). */
struct reqent {
	uint8_t id[REQ_ID_LEN];
	uint64_t digest;	/* reqtab_digest of the request */
	uint32_t next;		/* bucket chain: index + 1, 0 ends it */
	uint8_t vlen;
	char val[REQ_VAL_MAX];
};

/* Entries in insertion order in a ring (oldest at head once full),
 * indexed by a chained hash on the id. A zeroed struct is empty. */
struct reqtab {
	struct reqent *ring;
	size_t cap;		/* ring slots, a power of two <= REQTAB_MAX */
	size_t n;		/* entries held */
	size_t head;		/* the oldest entry once n == REQTAB_MAX */
	uint32_t *bucket;	/* 2 * cap heads: index + 1, 0 none */
};

void reqtab_free(struct reqtab *t);
/* The entry of id, or NULL. Borrowed until the table changes. */
const struct reqent *reqtab_find(const struct reqtab *t,
    const uint8_t id[REQ_ID_LEN]);
/* Make room so that the next k reqtab_add calls cannot fail. 0 / -1. */
int reqtab_reserve(struct reqtab *t, size_t k);
/* Remember id (not held yet) with its digest and reply value val[0, vlen)
 * (vlen <= REQ_VAL_MAX), forgetting the oldest entry when REQTAB_MAX are
 * held. 0, or -1 when out of memory (t unchanged). */
int reqtab_add(struct reqtab *t, const uint8_t id[REQ_ID_LEN],
    uint64_t digest, const void *val, size_t vlen);
/* The i-th entry, oldest first (i < t->n). */
const struct reqent *reqtab_at(const struct reqtab *t, size_t i);
/* A digest of a request: its frame type and its payload up to the id
 * (FNV-1a, 64 bits). It tells a retry from another request that reuses
 * the id; it is no defence against a client that wants to collide. */
uint64_t reqtab_digest(uint8_t type, const void *p, size_t n);

#endif
