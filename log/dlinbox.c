/* dlinbox.c - a data file's inbox (datalog.h): the application messages
 * an agent received (INBOX records, HELD after a compaction) and no
 * transaction has consumed yet, in arrival order, and the checks of the
 * records that fill it. datalog.c and dltxn.c call these. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "datalog.h"
#include "dl_int.h"
#include "../proto/chmsg.h"

long
dl_inbox_find(const struct dl_state *st, const char *src, uint64_t seq)
{
	size_t i;

	/* Usually the oldest: applications consume in the order they
	 * receive. */
	for (i = 0; i < st->ninbox; i++)
		if (st->inbox[i].seq == seq &&
		    strcmp(st->inbox[i].peer, src) == 0)
			return (long)i;
	return -1;
}

int
dl_inbox_add(struct dl_state *st, const char *src, uint64_t seq,
    const uint8_t *msg, size_t len)
{
	struct dl_inmsg *v, *m;
	uint8_t *copy;
	size_t ncap;

	if (st->ninbox == st->capinbox) {
		ncap = st->capinbox ? st->capinbox * 2 : 16;
		if ((v = realloc(st->inbox, ncap * sizeof(*v))) == NULL)
			return -1;
		st->inbox = v;
		st->capinbox = ncap;
	}
	if ((copy = malloc(len ? len : 1)) == NULL)
		return -1;
	if (len > 0)
		memcpy(copy, msg, len);
	m = &st->inbox[st->ninbox++];
	memset(m, 0, sizeof(*m));
	memcpy(m->peer, src, strlen(src) + 1);
	m->seq = seq;
	m->msg = copy;
	m->len = len;
	st->inbox_bytes += len;
	return 0;
}

void
dl_inbox_remove(struct dl_state *st, size_t i)
{
	st->inbox_bytes -= st->inbox[i].len;
	free(st->inbox[i].msg);
	memmove(&st->inbox[i], &st->inbox[i + 1],
	    (st->ninbox - i - 1) * sizeof(st->inbox[0]));
	st->ninbox--;
}

void
dl_inbox_free(struct dl_state *st)
{
	size_t i;

	for (i = 0; i < st->ninbox; i++)
		free(st->inbox[i].msg);
	free(st->inbox);
	st->inbox = NULL;
	st->ninbox = st->capinbox = 0;
	st->inbox_bytes = 0;
}

int
dl_inbox_check(const struct dl_state *st, const struct dl_record *r,
    struct cs_err *e)
{
	struct chmsg_app m;
	uint64_t cur = dl_wm_get(&st->applied, r->peer);

	if (chmsg_decode_app(r->msg, r->msglen, &m) == -1)
		return cs_errf(e, "inbox message seq %" PRIu64 " from %s is "
		    "not an application message", r->seq, r->peer);
	if (r->type == DL_INBOX) {
		if (cur == UINT64_MAX || r->seq != cur + 1)
			return cs_errf(e, "inbox seq %" PRIu64 " from %s, "
			    "expected %" PRIu64, r->seq, r->peer, cur + 1);
		return 0;
	}
	/* HELD: carried over, so consumed from its channel already. */
	if (r->seq == 0 || r->seq > cur)
		return cs_errf(e, "held inbox message seq %" PRIu64 " from %s "
		    "beyond applied seq %" PRIu64, r->seq, r->peer, cur);
	if (dl_inbox_find(st, r->peer, r->seq) != -1)
		return cs_errf(e, "inbox message seq %" PRIu64 " from %s held "
		    "twice", r->seq, r->peer);
	return 0;
}
