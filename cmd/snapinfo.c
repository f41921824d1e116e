/* snapinfo.c - one snapshot's listing row, for the commands that report on
 * a snapshot they just took, verified or restored. */
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"
#include "cmd.h"

int
cmd_snap_info(struct store *st, uint64_t id, struct snap_info *out)
{
	struct snap_info *v = NULL;
	struct cs_err e;
	size_t n = 0, i;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (store_list(st, &v, &n, &e) == -1)
		return -1;
	for (i = 0; i < n; i++) {
		if (v[i].id == id) {
			*out = v[i];
			rc = 0;
		}
	}
	free(v);
	return rc;
}

int
cmd_snapshot_exists(struct store *st, uint64_t id)
{
	struct cs_err e;
	int rc;

	if (id == 0)
		return EXIT_OK;
	if ((rc = store_has_snapshot(st, id, &e)) < 0)
		return cmd_fail(EXIT_FAILED, "%s", e.msg);
	if (rc == 0)
		return cmd_fail(EXIT_USAGE, "snapshot %llu does not exist "
		    "(cutsnap ls lists the snapshots)", (unsigned long long)id);
	return EXIT_OK;
}

void
cmd_json_snap_info(struct json *j, const struct snap_info *s)
{
	json_kuint(j, "id", s->id);
	json_kstr(j, "started", s->started);
	json_kstr(j, "finished", s->finished);
	json_kstr(j, "status", s->status);
	json_kstr(j, "initiator", s->initiator);
	json_key(j, "uid");
	if (s->uid[0] != '\0')
		json_str(j, s->uid);
	else
		json_null(j);
	json_kint(j, "agents", s->nagents);
	json_kuint(j, "bytes", s->bytes);
	json_kuint(j, "stored_bytes", s->stored);
	json_kuint(j, "msgs", s->nmsgs);
	json_kstr(j, "reason", s->reason);
	json_kbool(j, "stale", s->stale);
	json_key(j, "repository");
	if (s->repo_id[0] != '\0')
		json_str(j, s->repo_id);
	else
		json_null(j);
}
