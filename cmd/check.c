/* check.c - "cutsnap check": one command for monitoring. Every agent
 * answers, no channel is down, diverged or stuck, no agent is fenced, no
 * dead letter is open, and (with -r) the newest complete snapshot is
 * recent enough; otherwise each problem on a line of its own and exit 1. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../proto/agstat.h"
#include "../lib/json.h"
#include "../store/store.h"
#include "cmd.h"

#define CHECK_TIMEOUT_MS 3000
#define CHECK_STUCK_S 300	/* --stuck-after's default: 5m */

static const char usage_text[] =
    "usage: cutsnap check -c CONF [-r REPO] [--max-age DURATION]\n"
    "                     [--stuck-after DURATION] [--json]\n"
    "\n"
    "Check the health of a cluster and its backups in one run, for a\n"
    "monitoring system or a cron job. Each problem found is a line\n"
    "\"problem: KIND WHERE: DETAIL\" on stdout, then a summary line\n"
    "\"check: N problems\" (or \"check: ok ...\" when there is none). KIND is\n"
    "one of:\n"
    "  agent_down        the agent does not answer\n"
    "  fenced            restored alone, waiting for its channels' check\n"
    "  dead_letters      the agent has open dead letters (cutsnap\n"
    "                    deadletter resolves them)\n"
    "  channel_down      S>D is not connected though both agents answer\n"
    "  diverged          S>D's two ends come from different histories\n"
    "  stuck             S>D has entries waiting and no acknowledgement\n"
    "                    for longer than --stuck-after (a held channel, a\n"
    "                    receiver that stopped applying)\n"
    "  repository        REPO cannot be read\n"
    "  no_snapshot       REPO has no complete snapshot\n"
    "  snapshot_too_old  the newest complete snapshot started longer ago\n"
    "                    than --max-age\n"
    "A channel whose agent at either end is down is not reported again.\n"
    "\n"
    "  -c, --config CONF          the cluster config file\n"
    "  -r, --repo REPO            also check the snapshots of REPO (a\n"
    "                             directory or s3://BUCKET/PREFIX; no\n"
    "                             password needed)\n"
    "      --max-age DURATION     with -r: the newest complete snapshot\n"
    "                             must have started less than DURATION ago\n"
    "                             (90s, 15m, 6h, 2d, 1w; default: any age)\n"
    "      --stuck-after DURATION a channel is stuck when entries wait\n"
    "                             this long with no acknowledgement\n"
    "                             (default 5m)\n"
    "  -j, --json                 one JSON object {\"ok\": BOOL, \"problems\":\n"
    "                             [{\"kind\", \"agent\", \"channel\", \"detail\"}],\n"
    "                             \"checked\": {counts}} (schema in the README)\n"
    "\n"
    "Exit status: 0 no problem, 1 a problem was found, 2 bad usage or bad\n"
    "config.\n";

enum { OPT_MAX_AGE = 256, OPT_STUCK };

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "repo", required_argument, NULL, 'r' },
	{ "max-age", required_argument, NULL, OPT_MAX_AGE },
	{ "stuck-after", required_argument, NULL, OPT_STUCK },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct problem {
	const char *kind;
	char agent[NAME_MAX_LEN + 1];	/* "" when about the repository */
	char channel[2 * NAME_MAX_LEN + 2];	/* "S>D", or "" */
	char detail[384];
};

/* What one run found, and what it looked at. */
struct check_report {
	struct problem *v;
	size_t n, cap;
	int oom;
	int agents, up, channels, dead;
	int repo;		/* -r was given */
	uint64_t newest;	/* newest complete snapshot, 0: none */
	int64_t age_s;		/* its age */
	char started[32];
};

static void __attribute__((format(printf, 5, 6)))
add(struct check_report *r, const char *kind, const char *agent,
    const char *channel, const char *fmt, ...)
{
	struct problem *p, *nv;
	va_list ap;

	if (r->n == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 8;

		if ((nv = realloc(r->v, ncap * sizeof(*nv))) == NULL) {
			r->oom = 1;
			return;
		}
		r->v = nv;
		r->cap = ncap;
	}
	p = &r->v[r->n++];
	p->kind = kind;
	snprintf(p->agent, sizeof(p->agent), "%s", agent ? agent : "");
	snprintf(p->channel, sizeof(p->channel), "%s", channel ? channel : "");
	va_start(ap, fmt);
	vsnprintf(p->detail, sizeof(p->detail), fmt, ap);
	va_end(ap);
}

/* The agents' own problems: down, fenced, dead letters. */
static void
check_agents(const struct cfg *c, const struct agstat *st, const int *up,
    char (*why)[CS_ERR_MAX], struct check_report *r)
{
	int i;

	for (i = 0; i < c->nagents; i++) {
		const char *nm = c->agents[i].name;

		if (!up[i]) {
			add(r, "agent_down", nm, NULL, "%s", why[i]);
			continue;
		}
		r->up++;
		r->dead += (int)st[i].dead;
		if (st[i].fenced > 0)
			add(r, "fenced", nm, NULL, "restored alone from "
			    "snapshot %llu; waiting for its channels' history "
			    "check (cutsnap status lists them)",
			    (unsigned long long)st[i].fenced);
		if (st[i].dead > 0)
			add(r, "dead_letters", nm, NULL, "%llu open dead "
			    "letter%s (cutsnap deadletter list)",
			    (unsigned long long)st[i].dead,
			    st[i].dead == 1 ? "" : "s");
	}
}

/* The incoming end at d of channel S>D, or NULL. */
static const struct agstat_ch *
in_end(const struct agstat *d, const char *src)
{
	size_t k;

	for (k = 0; k < d->nin; k++)
		if (strcmp(d->in[k].peer, src) == 0)
			return &d->in[k];
	return NULL;
}

/* One channel s>d seen from its sender (both agents answer). */
static void
check_channel(const char *s, const struct agstat_ch *o,
    const struct agstat_ch *in, int64_t stuck_ms, struct check_report *r)
{
	char ch[2 * NAME_MAX_LEN + 2], t[32];

	snprintf(ch, sizeof(ch), "%s>%s", s, o->peer);
	if (o->diverged || (in != NULL && in->diverged)) {
		add(r, "diverged", s, ch, "its two ends come from different "
		    "histories; nothing flows (the agents' logs say why)");
		return;
	}
	if (!o->up) {
		add(r, "channel_down", s, ch, "not connected; %llu queued, "
		    "%llu unacknowledged", (unsigned long long)o->queued,
		    (unsigned long long)o->unacked);
		return;
	}
	if (o->stalled_ms > (uint64_t)stuck_ms) {
		cmd_human_secs((int64_t)(o->stalled_ms / 1000), t, sizeof(t));
		add(r, "stuck", s, ch, "%llu queued, %llu unacknowledged, no "
		    "acknowledgement for %s%s", (unsigned long long)o->queued,
		    (unsigned long long)o->unacked, t,
		    o->held ? " (held: cutsnap channel release)" : "");
	}
}

static void
check_channels(const struct cfg *c, const struct agstat *st, const int *up,
    int64_t stuck_ms, struct check_report *r)
{
	int i, d;
	size_t k;

	for (i = 0; i < c->nagents; i++) {
		if (!up[i])
			continue;
		for (k = 0; k < st[i].nout; k++) {
			r->channels++;
			if ((d = cfg_find(c, st[i].out[k].peer)) < 0 || !up[d])
				continue;
			check_channel(c->agents[i].name, &st[i].out[k],
			    in_end(&st[d], c->agents[i].name), stuck_ms, r);
		}
	}
}

/* The newest complete snapshot of repo (by its start: the cut's time)
 * and its age. Only the listing is read: no password is needed. */
static void
check_repo(const char *repo, int64_t max_age, struct check_report *r)
{
	struct store *st = NULL;
	struct snap_info *v = NULL;
	struct cs_err e;
	char t[32], lim[32];
	int64_t best = -1, at;
	size_t n = 0, i;

	r->repo = 1;
	if (store_open_listing(repo, &st, &e) == -1 ||
	    store_lock(st, 0, &e) == -1 || store_list(st, &v, &n, &e) == -1) {
		add(r, "repository", NULL, NULL, "%s", e.msg);
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(v[i].status, "complete") != 0 ||
		    (at = store_parse_utc(v[i].started)) < best)
			continue;
		best = at;
		r->newest = v[i].id;
		snprintf(r->started, sizeof(r->started), "%s", v[i].started);
	}
	if (r->newest == 0) {
		add(r, "no_snapshot", NULL, NULL, "repository %s has no "
		    "complete snapshot", cmd_repo_name(repo));
		goto out;
	}
	r->age_s = best < 0 ? 0 : (int64_t)time(NULL) - best;
	if (max_age >= 0 && r->age_s > max_age) {
		cmd_human_secs(r->age_s, t, sizeof(t));
		cmd_human_secs(max_age, lim, sizeof(lim));
		add(r, "snapshot_too_old", NULL, NULL, "newest complete "
		    "snapshot %llu started %s ago (%s), more than %s",
		    (unsigned long long)r->newest, t, r->started, lim);
	}
out:
	free(v);
	store_close(st);
}

static void
print_text(const struct check_report *r)
{
	char t[32];
	size_t i;

	for (i = 0; i < r->n; i++) {
		const struct problem *p = &r->v[i];
		const char *where = p->channel[0] ? p->channel : p->agent;

		printf("problem: %s%s%s: %s\n", p->kind, where[0] ? " " : "",
		    where, p->detail);
	}
	if (r->n > 0) {
		printf("check: %zu problem%s\n", r->n, r->n == 1 ? "" : "s");
		return;
	}
	printf("check: ok (%d agents, %d channels", r->agents, r->channels);
	if (r->newest != 0) {
		cmd_human_secs(r->age_s, t, sizeof(t));
		printf(", newest snapshot %llu started %s ago",
		    (unsigned long long)r->newest, t);
	}
	printf(")\n");
}

static void
json_str_or_null(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	if (s[0] != '\0')
		json_str(j, s);
	else
		json_null(j);
}

static int
print_json(const struct check_report *r)
{
	struct json j;
	size_t i;

	cmd_json_init(&j);
	json_obj(&j);
	json_kbool(&j, "ok", r->n == 0);
	json_key(&j, "problems");
	json_arr(&j);
	for (i = 0; i < r->n; i++) {
		json_obj(&j);
		json_kstr(&j, "kind", r->v[i].kind);
		json_str_or_null(&j, "agent", r->v[i].agent);
		json_str_or_null(&j, "channel", r->v[i].channel);
		json_kstr(&j, "detail", r->v[i].detail);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_key(&j, "checked");
	json_obj(&j);
	json_kint(&j, "agents", r->agents);
	json_kint(&j, "agents_up", r->up);
	json_kint(&j, "channels", r->channels);
	json_kint(&j, "dead_letters", r->dead);
	json_key(&j, "newest_snapshot");
	if (r->newest == 0) {
		json_null(&j);
	} else {
		json_obj(&j);
		json_kuint(&j, "id", r->newest);
		json_kstr(&j, "started", r->started);
		json_kint(&j, "age_s", r->age_s);
		json_obj_end(&j);
	}
	json_kbool(&j, "repository", r->repo);
	json_obj_end(&j);
	json_obj_end(&j);
	return json_end(&j);
}

/* Every agent's STATUS, then the problems of agents and channels. */
static int
check_cluster(const struct cfg *c, int64_t stuck_ms, struct check_report *r)
{
	struct agstat *st;
	char (*why)[CS_ERR_MAX];
	struct cs_err e;
	int *up, i;

	st = calloc((size_t)c->nagents, sizeof(*st));
	up = calloc((size_t)c->nagents, sizeof(*up));
	why = calloc((size_t)c->nagents, sizeof(*why));
	if (st == NULL || up == NULL || why == NULL)
		goto out;
	for (i = 0; i < c->nagents; i++) {
		up[i] = api_agent_stat(c, i, CHECK_TIMEOUT_MS, &st[i], &e) == 0;
		if (!up[i])
			snprintf(why[i], sizeof(why[i]), "%s", e.msg);
	}
	r->agents = c->nagents;
	check_agents(c, st, up, why, r);
	check_channels(c, st, up, stuck_ms, r);
out:
	for (i = 0; st != NULL && i < c->nagents; i++)
		agstat_free(&st[i]);
	if (st == NULL || up == NULL || why == NULL)
		r->oom = 1;
	free(st);
	free(up);
	free(why);
	return r->oom ? -1 : 0;
}

int
cmd_check(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, CMD_OPT_NO_OPERANDS);
	const char *conf = NULL, *repo = NULL;
	int64_t max_age = -1, stuck_s = CHECK_STUCK_S;
	struct check_report r;
	struct cfg *c = NULL;
	int ch, json = 0, rc;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case 'r':
			repo = optarg;
			break;
		case OPT_MAX_AGE:
			if (cmd_parse_duration(optarg, &max_age) == -1)
				return EXIT_USAGE;
			break;
		case OPT_STUCK:
			if (cmd_parse_duration(optarg, &stuck_s) == -1)
				return EXIT_USAGE;
			break;
		case 'j':
			json = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (max_age >= 0 && repo == NULL)
		return cmd_usage_error("--max-age needs -r REPO");
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	memset(&r, 0, sizeof(r));
	if (check_cluster(c, stuck_s * 1000, &r) == 0 && repo != NULL)
		check_repo(repo, max_age, &r);
	if (r.oom) {
		rc = cmd_fail(EXIT_FAILED, "out of memory");
		goto out;
	}
	rc = r.n > 0 ? EXIT_FAILED : EXIT_OK;
	if (json) {
		if (print_json(&r) == -1)
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	} else {
		print_text(&r);
	}
out:
	free(r.v);
	cfg_free(c);
	return rc;
}
