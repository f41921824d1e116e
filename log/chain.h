/* chain.h - one history per channel: the hash chain over a channel's
 * messages and the check both ends of a channel make when they connect.
 *
 * chain_0 = 32 zero bytes (genesis); chain_n = SHA-256(chain_{n-1} |
 * u64 n (little-endian) | the message's chmsg bytes). The sender keeps
 * the chain after each SEND in that record, the receiver after each
 * APPLY in that record (datalog.h). Every message carries a random id
 * (chmsg.h), so two histories of a channel never share a chain value past
 * the point where they split. The receiver presents (applied, chain at
 * applied) when a sender connects; the sender accepts only a value it
 * still holds: the chain at its acknowledged seq, at every kept SEND
 * after it, and at its sent seq (dl_sent_chain). */
#ifndef CUTSNAP_CHAIN_H
#define CUTSNAP_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "chainhash.h"
#include "datalog.h"

/* The sender's chain at seq on its channel to dst. 1 when it holds that
 * seq (*chain set; NULL when the record had no chain), 0 when it does not
 * (seq beyond sent, or before the acknowledged seq and no longer kept). */
int chain_sent_at(const struct dl_state *st, const char *dst, uint64_t seq,
    const uint8_t **chain);

enum chain_verdict {
	CHAIN_OK,		/* same history: connect */
	CHAIN_UNCHECKED,	/* a side has no chain yet (an older file):
				 * connect, as older versions did */
	CHAIN_AHEAD,		/* the receiver applied more than was sent */
	CHAIN_GONE,		/* the receiver is behind what was
				 * acknowledged: that history is gone here */
	CHAIN_DIFFER,		/* same seq, different history */
};

/* The sender's decision when the receiver presents (applied, chain),
 * chain NULL when the receiver does not know its own: CHAIN_OK or
 * CHAIN_UNCHECKED accept, the others refuse. A one-line reason goes into
 * why (without the channel's name). */
enum chain_verdict chain_check(const struct dl_state *st, const char *dst,
    uint64_t applied, const uint8_t *chain, char *why, size_t whysz);

/* 1 when v lets the channel connect. */
int chain_accepts(enum chain_verdict v);

#endif
