/* fuzz_chmsg.c - libFuzzer target: the channel message decoder; whatever
 * it accepts must encode back to the very same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../proto/chmsg.h"
#include "../../net/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct chmsg m;
	struct wbuf w;

	if (chmsg_decode(data, size, &m) < 0)
		return 0;
	if ((m.op != CHMSG_ADD && m.op != CHMSG_ADD_ID &&
	    m.op != CHMSG_ADD_FROM) || (m.op != CHMSG_ADD) != (m.id != NULL) ||
	    (m.op == CHMSG_ADD_FROM) != (m.flen > 0) || m.klen > WIRE_MAX_KEY ||
	    (m.klen > 0 && (m.key < data || m.key + m.klen > data + size)))
		abort();
	wbuf_init(&w);
	if (m.flen > 0)
		chmsg_encode_from(&w, m.key, m.klen, m.amount, m.id, m.from,
		    m.flen);
	else if (m.id != NULL)
		chmsg_encode_id(&w, m.key, m.klen, m.amount, m.id);
	else
		chmsg_encode(&w, m.key, m.klen, m.amount);
	if (w.oom || w.len != size || memcmp(w.data, data, size) != 0)
		abort();
	wbuf_free(&w);
	return 0;
}
