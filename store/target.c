/* target.c - the config of a cluster restored into a directory of its own
 * (restore --target): the snapshot's agents and channels, each agent's
 * data file NAME.data and the sockets in run/ beside the config, on this
 * host (no addr, no tls_dir: the copy is for inspection or a trial start,
 * not a second member of the live cluster). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

int
store_target_config(struct store *st, uint64_t id, uint64_t *resolved,
    char **out, struct cs_err *e)
{
	struct snap_rows r;
	struct cfg *c = NULL;
	char *text = NULL;
	size_t cap, off = 0, n;
	int i, d, chans = 0, rc = -1;

	*out = NULL;
	memset(&r, 0, sizeof(r));
	if (store_snap_resolve(st, id, resolved, e) < 0)
		return -1;
	r.id = *resolved;
	if (store_rows_load(st, *resolved, &r, e) < 0)
		goto out;
	/* The recorded config gives the agents in their order and the
	 * channels; its paths are not used. */
	if (cfg_parse(r.config, "/snapshot.conf", &c, e) < 0) {
		cs_errf(e, "snapshot %llu: its recorded config does not parse: "
		    "%s", (unsigned long long)*resolved, e->msg);
		goto out;
	}
	n = (size_t)c->nagents;
	/* Every line bounded by its names: "A>B " per channel, two lines
	 * of at most 80 + 2 names per agent, 256 for the header. */
	cap = 256 + n * (2 * NAME_MAX_LEN + 96) + n * n * (2 * NAME_MAX_LEN + 2);
	if ((text = malloc(cap)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	off += (size_t)snprintf(text + off, cap - off, "; the cluster of "
	    "snapshot %llu, restored by cutsnap restore --target\n"
	    "[cluster]\nrun_dir = run\n", (unsigned long long)*resolved);
	for (i = 0; i < c->nagents; i++)
		for (d = 0; d < c->nagents; d++)
			if (cfg_has_channel(c, i, d))
				off += (size_t)snprintf(text + off, cap - off,
				    "%s%s>%s", chans++ ? " " : "channels = ",
				    c->agents[i].name, c->agents[d].name);
	if (chans > 0)
		off += (size_t)snprintf(text + off, cap - off, "\n");
	for (i = 0; i < c->nagents; i++)
		off += (size_t)snprintf(text + off, cap - off,
		    "\n[agent %s]\ndata = %s.data\n", c->agents[i].name,
		    c->agents[i].name);
	assert(off < cap);
	*out = text;
	text = NULL;
	rc = 0;
out:
	free(text);
	cfg_free(c);
	store_rows_free(&r);
	return rc;
}
