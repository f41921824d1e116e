/* mdelta_apply.c - the tests' way to read the manifest an object-store
 * commit names: MANIFEST (its base, fetched) brought to the chain's end
 * by applying each DELTA file in order (store/mdelta.c), as a reader
 * does. Usage: mdelta-apply MANIFEST [DELTA...]; exit 1 with the reason
 * on stderr when one does not apply. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../lib/fsutil.h"
#include "../../store/store.h"

int
main(int argc, char **argv)
{
	struct cs_err e;
	uint8_t *d;
	size_t n;
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: mdelta-apply MANIFEST [DELTA...]\n");
		return 2;
	}
	for (i = 2; i < argc; i++) {
		if (fs_read_file(argv[i], (size_t)1 << 30, &d, &n, &e) < 0 ||
		    store_mdelta_apply(argv[1], d, n, &e) < 0) {
			fprintf(stderr, "mdelta-apply: %s: %s\n", argv[i],
			    e.msg);
			return 1;
		}
		free(d);
	}
	return 0;
}
