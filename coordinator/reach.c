/* reach.c - which agents the markers of an initiator reach: a breadth-
 * first search over the config's directed channels. */
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"

int
coord_reach_mark(const struct cfg *c, int from, unsigned char *seen)
{
	int *queue, head = 0, tail = 0, s, d;

	memset(seen, 0, (size_t)c->nagents);
	if (from < 0 || from >= c->nagents)
		return 0;
	if ((queue = malloc((size_t)c->nagents * sizeof(*queue))) == NULL)
		return -1;
	seen[from] = 1;
	queue[tail++] = from;
	while (head < tail) {
		s = queue[head++];
		for (d = 0; d < c->nagents; d++) {
			if (seen[d] || !cfg_has_channel(c, s, d))
				continue;
			seen[d] = 1;
			queue[tail++] = d;
		}
	}
	free(queue);
	return 0;
}

int
coord_reachable(const struct cfg *c, int from)
{
	unsigned char *seen;
	int i, all = 0;

	if (c->nagents <= 0 || from < 0 || from >= c->nagents)
		return 0;
	if ((seen = malloc((size_t)c->nagents)) == NULL)
		return 0;
	if (coord_reach_mark(c, from, seen) == 0) {
		all = 1;
		for (i = 0; i < c->nagents; i++)
			if (!seen[i])
				all = 0;
	}
	free(seen);
	return all;
}
