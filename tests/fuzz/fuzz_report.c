/* fuzz_report.c - libFuzzer target: the snapshot report decoder (what an
 * agent sends the coordinator); an accepted report re-encodes to the same
 * bytes, and nothing leaks on any path. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../proto/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct report r;
	struct cs_err e;
	struct wbuf w;

	if (report_decode(data, size, &r, &e) < 0) {
		/* A refused report holds nothing. */
		if (r.sent != NULL || r.applied != NULL || r.channels != NULL ||
		    e.msg[0] == '\0')
			abort();
		return 0;
	}
	wbuf_init(&w);
	report_encode(&w, &r);
	if (w.oom || w.len != size || memcmp(w.data, data, size) != 0)
		abort();
	wbuf_free(&w);
	report_free(&r);
	return 0;
}
