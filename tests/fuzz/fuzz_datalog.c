/* fuzz_datalog.c - libFuzzer target: replaying a data file image
 * (dl_replay), as dump, verify and restore do with untrusted bytes, with
 * and without torn-tail tolerance; the second pass also keeps the request
 * ids, as an agent's recovery does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../log/datalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dl_state st;
	struct cs_err e;
	size_t valid = (size_t)-1;
	int torn, rc;

	for (torn = 0; torn <= 1; torn++) {
		if (dl_state_init(&st, torn) < 0)
			abort();
		st.track_reqs = torn;
		e.msg[0] = '\0';
		rc = dl_replay(data, size, "fuzz", torn, &st, &valid, &e);
		if (rc == 0 && torn && valid > size)
			abort();
		if (rc < 0 && e.msg[0] == '\0')
			abort();
		dl_state_free(&st);
	}
	return 0;
}
