/* snap.c - libcutsnap's cs_snapshot: an application takes a snapshot of
 * its cluster with the coordinator the cutsnap command uses. */
#include <stdio.h>

#include "../coordinator/coordinator.h"
#include "../store/store.h"
#include "api_int.h"

int
cs_snapshot(const char *config, const char *repo, int timeout_s,
    uint64_t *id, char *err, size_t errlen)
{
	struct coord_opts o = { .timeout_s = 60, .recheck_age_s = -1 };
	struct cfg *c = NULL;
	struct cs_err e;
	uint64_t sid = 0;
	int rc = -1;

	if (id != NULL)
		*id = 0;
	if (config == NULL || repo == NULL) {
		cs_errf(&e, "cs_snapshot: a config and a repository are "
		    "needed");
		goto out;
	}
	if (timeout_s > 0)
		o.timeout_s = timeout_s;
	o.repo = repo;
	if (store_check_path(repo, STORE_CREATE, &e) < 0)
		goto out;
	if (cfg_load(config, &c, &e) == -1) {
		c = NULL;
		goto out;
	}
	o.max_rate = c->snapshot_max_rate;
	if (!coord_reachable(c, 0)) {
		cs_errf(&e, "markers from %s cannot reach every agent over the "
		    "configured channels", c->agents[0].name);
		goto out;
	}
	if (coord_snapshot(c, &o, &sid, &e) < 0)
		goto out;
	if (id != NULL)
		*id = sid;
	rc = CS_OK;
out:
	if (rc != CS_OK && err != NULL && errlen > 0)
		snprintf(err, errlen, "%s", e.msg);
	cfg_free(c);
	return rc;
}
