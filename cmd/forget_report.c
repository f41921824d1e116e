/* forget_report.c - what "cutsnap forget" prints: the kept snapshots with
 * the rules that keep each (restic's "keep N snapshots" table), the
 * removed ones, a summary line; or all of it as one JSON object. */
#include <inttypes.h>
#include <stdio.h>

#include "../store/store.h"
#include "cmd.h"

static const char *const rule_names[STORE_KEEP_NRULES] = { "last",
    "hourly", "daily", "weekly", "monthly", "yearly" };

/* The i-th reason of why (in a fixed order) into buf; NULL past the
 * last. */
static const char *
reason(unsigned why, const char *within, int *i, char *buf, size_t sz)
{
	int r;

	for (; *i < 2 + 2 * STORE_KEEP_NRULES; (*i)++) {
		if (!(why & (1u << *i)))
			continue;
		r = (*i - 2) % STORE_KEEP_NRULES;
		if (*i == 0)
			snprintf(buf, sz, "running snapshot");
		else if (*i == 1)
			snprintf(buf, sz, "within %s", within ? within : "");
		else
			snprintf(buf, sz, "%s%s snapshot", *i >= 2 +
			    STORE_KEEP_NRULES ? "oldest " : "", rule_names[r]);
		(*i)++;
		return buf;
	}
	return NULL;
}

static void
json_items(struct json *j, const char *key,
    const struct store_forget_item *v, size_t n, const char *within)
{
	char buf[64];
	const char *s;
	size_t k;
	int i;

	json_key(j, key);
	json_arr(j);
	for (k = 0; k < n; k++) {
		json_obj(j);
		json_kuint(j, "id", v[k].id);
		json_kstr(j, "started", v[k].started);
		json_kstr(j, "status", v[k].status);
		json_key(j, "reasons");
		json_arr(j);
		for (i = 0; (s = reason(v[k].why, within, &i, buf,
		    sizeof(buf))) != NULL;)
			json_str(j, s);
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
}

static void
json_ids(struct json *j, const char *key, const struct store_forget_item *v,
    size_t n)
{
	size_t k;

	json_key(j, key);
	json_arr(j);
	for (k = 0; k < n; k++)
		json_uint(j, v[k].id);
	json_arr_end(j);
}

static int
print_json(const struct store_forget_result *r,
    const struct store_forget_policy *p, const char *within, int pruned)
{
	struct json j;

	cmd_json_init(&j);
	json_obj(&j);
	json_ids(&j, "forgotten", r->forgotten, r->nforgotten);
	json_ids(&j, "kept", r->kept, r->nkept);
	json_kbool(&j, "dry_run", p->dry_run);
	json_items(&j, "keep", r->kept, r->nkept, within);
	json_items(&j, "remove", r->forgotten, r->nforgotten, within);
	if (p->prune && pruned) {
		json_key(&j, "prune");
		json_obj(&j);
		json_kuint(&j, "deleted", r->prune.deleted);
		json_kuint(&j, "bytes", r->prune.bytes);
		json_kuint(&j, "kept", r->prune.kept);
		json_kuint(&j, "referenced", r->prune.referenced);
		json_kuint(&j, "temps", r->prune.temps);
		json_obj_end(&j);
	}
	json_obj_end(&j);
	return json_end(&j);
}

static void
print_table(const char *verb, const struct store_forget_item *v, size_t n,
    const char *within)
{
	char buf[64];
	const char *s;
	size_t k;
	int i, first;

	if (n == 0)
		return;
	printf("%s %zu snapshot%s:\n", verb, n, n == 1 ? "" : "s");
	/* Kept rows have a reason, removed ones none: no trailing blanks. */
	printf("%-6s  %-20s  %s\n", "ID", "STARTED", v[0].why ?
	    "STATUS    REASONS" : "STATUS");
	for (k = 0; k < n; k++) {
		printf("%-6" PRIu64 "  %-20s  %-*s", v[k].id, v[k].started,
		    v[k].why ? 8 : 0, v[k].status);
		first = 1;
		for (i = 0; (s = reason(v[k].why, within, &i, buf,
		    sizeof(buf))) != NULL; first = 0)
			printf("%s%s", first ? "  " : ", ", s);
		printf("\n");
	}
}

int
cmd_forget_report(const struct store_forget_result *r,
    const struct store_forget_policy *p, const char *within, int json,
    int pruned)
{
	char size[32];

	if (json)
		return print_json(r, p, within, pruned);
	print_table("keep", r->kept, r->nkept, within);
	print_table("remove", r->forgotten, r->nforgotten, within);
	printf("%s %zu snapshot%s, kept %zu%s\n",
	    p->dry_run ? "would forget" : "forgot", r->nforgotten,
	    r->nforgotten == 1 ? "" : "s", r->nkept,
	    r->nforgotten > 0 && !p->dry_run && !p->prune ? "; run 'cutsnap "
	    "prune' to delete their data" : "");
	if (p->prune && pruned) {
		cmd_human_bytes(r->prune.bytes, size, sizeof(size));
		printf("%s %" PRIu64 " blob%s (%s), kept %" PRIu64 "%s\n",
		    p->dry_run ? "would prune" : "pruned", r->prune.deleted,
		    r->prune.deleted == 1 ? "" : "s", size, r->prune.kept,
		    r->prune.temps ? ", and removed leftover temp files" : "");
	}
	return 0;
}
