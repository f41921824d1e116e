/* fuzz_wire.c - libFuzzer target: the wire frame decoder (wire_parse) over
 * a stream of frames, with the frame invariants its callers rely on. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../net/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *payload;
	size_t off = 0, plen, used;
	struct cs_err e;
	struct wbuf w;
	uint8_t type;
	int r;

	while (off < size) {
		r = wire_parse(data + off, size - off, &type, &payload, &plen,
		    &used, &e);
		if (r != 1)
			break;
		/* A whole frame lies inside the input, its payload right
		 * after the header, and re-framing it gives the same bytes. */
		if (used != WIRE_HDR_LEN + plen || used > size - off ||
		    payload != data + off + WIRE_HDR_LEN ||
		    plen > WIRE_MAX_FRAME)
			abort();
		wbuf_init(&w);
		wire_frame(&w, type, payload, plen);
		if (w.oom || w.len != used || memcmp(w.data, data + off,
		    used) != 0)
			abort();
		wbuf_free(&w);
		off += used;
	}
	return 0;
}
