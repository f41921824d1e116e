/* admit.c - bounds on the connections an agent accepted that have not
 * authenticated yet (their TLS handshake is under way): a flood of them
 * must not take the descriptors, memory and log that authenticated work
 * needs.
 *
 * Invariants: agent.aq_old..aq_new lists exactly the connections with
 * in_aq set, in accept order (oldest first); naq is their number and
 * never exceeds aq_cap once agent_admit returns; a connection leaves the
 * list when its handshake succeeds or it is closed (agent_conn_close),
 * never later. Peers and clients that authenticate are never counted:
 * a flood slows nothing but other unauthenticated connections, which
 * lose their place oldest first (an idle flood connection is older than
 * a real client's handshake, which takes a few round trips). */
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../lib/log.h"
#include "../net/xport.h"
#include "agent_int.h"

/* Once this many connections were queued and none is left, give the
 * memory their TLS state took back to the system (glibc keeps freed heap
 * otherwise), at most once per ADMIT_TRIM_MS. */
#define ADMIT_TRIM_AFTER	64
#define ADMIT_TRIM_MS		10000

/* The caps: ADMIT_MAX, but never more than a quarter of the descriptors
 * (so that a flood cannot exhaust them); per source ADMIT_SRC_MAX, at
 * most the whole cap. */
static void
caps_init(struct agent *a)
{
	struct rlimit rl;
	size_t cap = ADMIT_MAX;

	if (a->aq_cap != 0)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
	    && rl.rlim_cur / 4 < cap)
		cap = rl.rlim_cur / 4;
	if (cap < 4)
		cap = 4;
	a->aq_cap = cap;
	a->aq_src_cap = ADMIT_SRC_MAX < cap ? ADMIT_SRC_MAX : cap;
}

/* The source address of c's socket, as bytes (no port). */
static void
src_of(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	c->srclen = 0;
	if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) == -1)
		return;
	if (ss.ss_family == AF_INET) {
		memcpy(c->src, &((struct sockaddr_in *)&ss)->sin_addr, 4);
		c->srclen = 4;
	} else if (ss.ss_family == AF_INET6) {
		memcpy(c->src, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
		c->srclen = 16;
	}
}

static int
same_src(const struct conn *x, const struct conn *y)
{
	return x->srclen == y->srclen && memcmp(x->src, y->src, x->srclen)
	    == 0;
}

void
agent_admit_done(struct agent *a, struct conn *c)
{
	if (!c->in_aq)
		return;
	if (c->aq_prev != NULL)
		c->aq_prev->aq_next = c->aq_next;
	else
		a->aq_old = c->aq_next;
	if (c->aq_next != NULL)
		c->aq_next->aq_prev = c->aq_prev;
	else
		a->aq_new = c->aq_prev;
	c->aq_prev = c->aq_next = NULL;
	c->in_aq = 0;
	a->naq--;
}

/* Close the pending connection c to make room; why says which cap. */
static void
evict(struct agent *a, struct conn *c, const char *why)
{
	char who[64];

	xport_peer_name(c->fd, who, sizeof(who));
	agent_admit_log(a, "refused a connection from %s: %s; closed it, "
	    "the oldest not yet authenticated", who, why);
	agent_conn_close(a, c, NULL);	/* leaves the queue */
}

int
agent_admit_evict_oldest(struct agent *a, const char *why)
{
	if (a->aq_old == NULL)
		return -1;
	evict(a, a->aq_old, why);
	return 0;
}

void
agent_admit(struct agent *a, struct conn *c)
{
	struct conn *o, *first = NULL;
	size_t n = 0;
	char why[96];

	caps_init(a);
	src_of(c);
	for (o = a->aq_old; o != NULL; o = o->aq_next)
		if (same_src(o, c) && n++ == 0)
			first = o;
	if (first != NULL && n >= a->aq_src_cap) {
		snprintf(why, sizeof(why), "too many unauthenticated "
		    "connections from one address (%zu)", n);
		evict(a, first, why);
	}
	if (a->naq >= a->aq_cap) {
		snprintf(why, sizeof(why), "too many unauthenticated "
		    "connections (%zu)", a->naq);
		evict(a, a->aq_old, why);
	}
	c->aq_prev = a->aq_new;
	c->aq_next = NULL;
	if (a->aq_new != NULL)
		a->aq_new->aq_next = c;
	else
		a->aq_old = c;
	a->aq_new = c;
	c->in_aq = 1;
	a->naq++;
	a->aq_admitted++;
}

void
agent_admit_log(struct agent *a, const char *fmt, ...)
{
	char line[400];
	int64_t now = cs_now_ms();
	va_list ap;

	(void)agent_admit_tick(a, now);
	if (a->rl_logged == 0)
		a->rl_start = now;
	if (a->rl_logged >= ADMIT_LOG_BURST) {
		a->rl_dropped++;
		return;
	}
	a->rl_logged++;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_warn("%s", line);
}

int
agent_admit_tick(struct agent *a, int64_t now)
{
	int64_t left;

	if (a->aq_admitted >= ADMIT_TRIM_AFTER && a->naq == 0 &&
	    now - a->aq_trim_ms >= ADMIT_TRIM_MS) {
		/* After agent_conn_reap freed them: the loop ticks after
		 * reaping. */
		(void)malloc_trim(0);
		a->aq_admitted = 0;
		a->aq_trim_ms = now;
	}
	if (a->rl_logged == 0)
		return -1;
	left = a->rl_start + ADMIT_LOG_MS - now;
	if (left > 0)
		return a->rl_dropped > 0 ? (int)left : -1;
	if (a->rl_dropped > 0)
		log_warn("%u more refused connections not logged in the last "
		    "%d s", a->rl_dropped, ADMIT_LOG_MS / 1000);
	a->rl_logged = a->rl_dropped = 0;
	return -1;
}
