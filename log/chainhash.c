/* chainhash.c - a channel's history chain: the hash of each message onto
 * the chain before it (chainhash.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chainhash.h"
#include "../lib/buf.h"
#include "../proto/chmsg.h"
#include "../crypto/sha.h"

int
chain_next(const uint8_t *prev, uint64_t seq, const uint8_t *msg, size_t n,
    uint8_t out[CHAIN_HASH_LEN])
{
	static const uint8_t genesis[CHAIN_HASH_LEN];
	uint8_t small[256], *b = small;
	size_t len = CHAIN_HASH_LEN + 8 + n;
	int rc;

	/* A channel message is a few dozen bytes: hashed from the stack,
	 * without a heap buffer per message. */
	if (n > SIZE_MAX - CHAIN_HASH_LEN - 8 ||
	    (len > sizeof(small) && (b = malloc(len)) == NULL))
		return -1;
	memcpy(b, prev != NULL ? prev : genesis, CHAIN_HASH_LEN);
	buf_le32_put(b + CHAIN_HASH_LEN, (uint32_t)seq);
	buf_le32_put(b + CHAIN_HASH_LEN + 4, (uint32_t)(seq >> 32));
	if (n > 0)
		memcpy(b + CHAIN_HASH_LEN + 8, msg, n);
	rc = sha256_buf(b, len, out);
	if (b != small)
		free(b);
	return rc;
}

int
chain_after(const uint8_t *prev, uint64_t seq, const uint8_t *msg, size_t n,
    uint8_t out[CHAIN_HASH_LEN], int *known)
{
	struct chmsg_app app;
	struct chmsg m;

	/* An application message always has its id. */
	*known = (chmsg_decode(msg, n, &m) == 0 && m.id != NULL) ||
	    chmsg_decode_app(msg, n, &app) == 0;
	if (!*known)
		return 0;
	return chain_next(prev, seq, msg, n, out);
}
