/* reportset.c - the agents' reports of one snapshot, looked up by name:
 * shared by the commit (commit.c) and its cut check (commit_cut.c), so
 * that neither depends on the other for it. */
#include <string.h>

#include "store_int.h"

const struct report *
store_find_report(const struct report *reps, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(reps[i].agent, name) == 0)
			return &reps[i];
	return NULL;
}
