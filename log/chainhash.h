/* chainhash.h - the hash chain over a channel's messages (chain.h says
 * what it is for). Its own module, below both the data log, which keeps
 * the chain in its SEND and APPLY records, and chain.h's connect-time
 * check, which reads the data log's state. */
#ifndef CUTSNAP_CHAINHASH_H
#define CUTSNAP_CHAINHASH_H

#include <stddef.h>
#include <stdint.h>

#define CHAIN_HASH_LEN 32

/* out = SHA-256(prev | le64 seq | msg); prev NULL (an unknown chain from
 * an older file) counts as genesis. 0, or -1 if hashing failed. */
int chain_next(const uint8_t *prev, uint64_t seq, const uint8_t *msg,
    size_t n, uint8_t out[CHAIN_HASH_LEN]);

/* The receiver's chain after applying message seq (msg[0, n)) on a
 * channel whose chain was prev (NULL: unknown). A message with an id
 * (CHMSG_ADD_ID, what every sender that keeps a chain writes) gives
 * chain_next(prev, ...) in out and *known = 1, as does an application
 * message (CHMSG_APP, which always has one); one without (from an older
 * sender, whose SEND record has no chain either) leaves the chain unknown,
 * *known = 0, so that both ends of the channel agree on that too. 0, or
 * -1 if hashing failed. */
int chain_after(const uint8_t *prev, uint64_t seq, const uint8_t *msg,
    size_t n, uint8_t out[CHAIN_HASH_LEN], int *known);

#endif
