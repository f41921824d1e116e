/* chain.c - a channel's history chain and the connect-time check (chain.h). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "../proto/chmsg.h"
#include "../crypto/sha.h"

int
chain_sent_at(const struct dl_state *st, const char *dst, uint64_t seq,
    const uint8_t **chain)
{
	const struct dl_send *s;
	size_t i;

	*chain = NULL;
	if (seq > dl_wm_get(&st->sent, dst))
		return 0;
	if (seq == dl_wm_get(&st->sent, dst)) {
		*chain = dl_wm_chain(&st->sent, dst);
		return 1;
	}
	if (seq == dl_wm_get(&st->acked, dst)) {
		*chain = dl_wm_chain(&st->acked, dst);
		return 1;
	}
	/* Kept sends: those after the acknowledged seq (all of them in a
	 * replay that keeps every send). */
	for (i = 0; i < st->nsends; i++) {
		s = &st->sends[i];
		if (s->seq == seq && strcmp(s->peer, dst) == 0) {
			*chain = s->chain_known ? s->chain : NULL;
			return 1;
		}
	}
	/* A live data file keeps none in memory: read the SEND back. The
	 * buffer lives until the next call (the agent has one thread). */
	if (st->no_sends && st->send_chain != NULL &&
	    seq > dl_wm_get(&st->acked, dst)) {
		static uint8_t buf[DL_CHAIN_LEN];

		switch (st->send_chain(st->send_chain_ctx, dst, seq, buf)) {
		case 1:
			*chain = buf;
			return 1;
		case 0:
			return 1;
		default:
			return 0;
		}
	}
	return 0;
}

enum chain_verdict
chain_check(const struct dl_state *st, const char *dst, uint64_t applied,
    const uint8_t *chain, char *why, size_t whysz)
{
	const uint8_t *mine;
	uint64_t sent = dl_wm_get(&st->sent, dst), acked = dl_wm_get(&st->acked,
	    dst);

	if (applied > sent) {
		snprintf(why, whysz, "the receiver applied seq %" PRIu64
		    ", but this sender's file sent only %" PRIu64, applied,
		    sent);
		return CHAIN_AHEAD;
	}
	if (!chain_sent_at(st, dst, applied, &mine)) {
		snprintf(why, whysz, "the receiver applied seq %" PRIu64
		    ", but this sender's file has seq %" PRIu64 " already "
		    "acknowledged", applied, acked);
		return CHAIN_GONE;
	}
	if (mine == NULL || chain == NULL) {
		snprintf(why, whysz, "no history chain yet at seq %" PRIu64
		    " (a data file from an older version); accepted unchecked",
		    applied);
		return CHAIN_UNCHECKED;
	}
	if (memcmp(mine, chain, DL_CHAIN_LEN) != 0) {
		snprintf(why, whysz, "both ends are at seq %" PRIu64 " but "
		    "their histories differ", applied);
		return CHAIN_DIFFER;
	}
	snprintf(why, whysz, "same history at seq %" PRIu64, applied);
	return CHAIN_OK;
}

int
chain_accepts(enum chain_verdict v)
{
	return v == CHAIN_OK || v == CHAIN_UNCHECKED;
}
