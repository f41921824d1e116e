/* dropped.c - refuse a config that drops a channel with messages in
 * flight: the data file's unacknowledged sends to a peer the config no
 * longer has a channel to would never be delivered, and no snapshot
 * could hold them (its cut has no such channel), so their money would
 * silently leave every later backup. The operator puts the channel back
 * or drains it (runs with the old config until it is acknowledged). */
#include <inttypes.h>

#include "agent_int.h"

int
agent_check_dropped(const struct cfg *c, int self, const struct dl_state *st,
    struct cs_err *e)
{
	const char *peer;
	uint64_t sent, acked;
	size_t k;
	int d;

	for (k = 0; k < st->sent.n; k++) {
		peer = st->sent.v[k].peer;
		sent = st->sent.v[k].seq;
		acked = dl_wm_get(&st->acked, peer);
		d = cfg_find(c, peer);
		if (sent <= acked || (d >= 0 && d != self &&
		    cfg_has_channel(c, self, d)))
			continue;
		return cs_errf(e, "channel %s->%.64s is not in config %s, but "
		    "data file %s holds %" PRIu64 " unacknowledged message%s "
		    "on it: put the channel back in the config, or start with "
		    "the old config until the channel is drained",
		    c->agents[self].name, peer, c->path, c->agents[self].data,
		    sent - acked, sent - acked == 1 ? "" : "s");
	}
	return 0;
}
