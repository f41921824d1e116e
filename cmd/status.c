/* status.c - "cutsnap status": each agent's process, data file, snapshot
 * and channels. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../proto/agstat.h"
#include "../log/datalog.h"
#include "../lib/json.h"
#include "cmd.h"

#define STATUS_TIMEOUT_MS 3000

static const char usage_text[] =
    "usage: cutsnap status -c CONF [--json]\n"
    "\n"
    "Print each agent of CONF: a line \"NAME  up  pid=PID  uptime=T\n"
    "size=BYTES  records=N  syncs=N  writes=N  snapshot=none|ID:PHASE[,...]\"\n"
    "(syncs: fsyncs of the data file, writes: client write requests, both\n"
    "since the agent started) when it answers,\n"
    "\"NAME  down  (REASON)\" when it does not; under an agent that answers,\n"
    "a line per outgoing channel \"S->D  sent=SEQ  acked=SEQ  queued=N\n"
    "unacked=N  up|down  [held]  [diverged]\" and per incoming channel\n"
    "\"S->D  applied=SEQ  queued=N  up|down  [diverged]\" (queued:\n"
    "entries waiting to be written, or messages held back until their\n"
    "turn). snapshot lists every snapshot the agent takes part in (up to 8\n"
    "at once), by its id in its repository; PHASE is joined, recording,\n"
    "recorded or reported.\n"
    "\n"
    "diverged: the channel's two ends come from different histories (a\n"
    "restore that stopped half-way, a data file copied back by hand or\n"
    "lost); nothing flows on it and transfers over it fail until the\n"
    "restore is finished (run it again) or every agent is restored from\n"
    "one snapshot. The agents' logs say why.\n"
    "\n"
    "fenced (restored alone from snapshot N): the agent was restored by\n"
    "restore --agent without the rest of its cluster; it sends, applies\n"
    "and snapshots nothing, and refuses transfers, until every one of its\n"
    "channels has checked its history with the peer (those not yet\n"
    "checked show \"unchecked\"), then lifts the fence by itself. A channel\n"
    "that diverged instead means the other agents moved on since the\n"
    "snapshot: restore them from the same snapshot.\n"
    "\n"
    "An agent with dead letters (credits it consumed but could not apply)\n"
    "shows \"dead_letters=N\" on its line and a line per dead letter \"dead\n"
    "letter S->D  seq=SEQ  key=KEY  amount=N  from=KEY  (REASON)\"; resolve\n"
    "them with cutsnap deadletter. Dead letters are not an error of the\n"
    "agent: they leave the exit status alone.\n"
    "A line \"    file  size=BYTES  live=BYTES  generation=N\n"
    "compacted=never|TIME [BEFORE->AFTER in MS ms]  [compacting]\" follows:\n"
    "live is what the file would shrink to if compacted now, generation\n"
    "counts its rewrites (cutsnap compact).\n"
    "\n"
    "  -c, --config CONF   the cluster config file\n"
    "  -j, --json          a JSON array, one object per agent (schema in\n"
    "                      the README)\n"
    "\n"
    "Exit status: 0 if every agent answers, no channel is diverged and no\n"
    "agent is fenced, 1 otherwise, 2 bad usage or bad config.\n";

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Channels of st whose two ends come from different histories. */
static size_t
count_diverged(const struct agstat *st)
{
	size_t k, n = 0;

	for (k = 0; k < st->nout; k++)
		n += st->out[k].diverged != 0;
	for (k = 0; k < st->nin; k++)
		n += st->in[k].diverged != 0;
	return n;
}

/* The data file's line: its size, its live size, its last rewrite. */
static void
print_file(const struct agstat *st)
{
	char when[32];
	time_t t = (time_t)st->compacted_at;
	struct tm tm;

	if (st->compacted_at == 0 || gmtime_r(&t, &tm) == NULL ||
	    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(when, sizeof(when), "never");
	printf("    file  size=%llu  live=%llu  generation=%llu  compacted=%s",
	    (unsigned long long)st->size, (unsigned long long)st->live,
	    (unsigned long long)st->gen, when);
	if (st->compactions > 0)
		printf(" %llu->%llu in %llu ms",
		    (unsigned long long)st->cbefore,
		    (unsigned long long)st->cafter,
		    (unsigned long long)st->cms);
	printf("%s\n", st->compacting ? "  compacting" : "");
}

static void
print_text(const char *name, int width, const struct agstat *st,
    const struct cmd_dead_list *dl)
{
	char up[32];
	size_t k;

	cmd_human_secs(st->uptime_s, up, sizeof(up));
	printf("%-*s  up  pid=%d  uptime=%s  size=%llu  records=%llu  "
	    "syncs=%llu  writes=%llu  snapshot=", width, name, st->pid, up,
	    (unsigned long long)st->size, (unsigned long long)st->records,
	    (unsigned long long)st->syncs, (unsigned long long)st->writes);
	if (st->nsnaps == 0)
		printf("none");
	for (k = 0; k < st->nsnaps; k++)
		printf("%s%llu:%s", k ? "," : "",
		    (unsigned long long)st->snaps[k].id, st->snaps[k].phase);
	if (st->dead > 0)
		printf("  dead_letters=%llu", (unsigned long long)st->dead);
	if (st->fenced > 0)
		printf("  fenced (restored alone from snapshot %llu)",
		    (unsigned long long)st->fenced);
	printf("\n");
	for (k = 0; k < st->nout; k++) {
		const struct agstat_ch *o = &st->out[k];

		printf("    %s->%s  sent=%llu  acked=%llu  queued=%llu  "
		    "unacked=%llu  %s%s%s%s\n", name, o->peer,
		    (unsigned long long)o->seq, (unsigned long long)o->acked,
		    (unsigned long long)o->queued,
		    (unsigned long long)o->unacked, o->up ? "up" : "down",
		    o->held ? "  held" : "", o->diverged ? "  diverged" : "",
		    st->fenced && !o->checked ? "  unchecked" : "");
	}
	for (k = 0; k < st->nin; k++) {
		const struct agstat_ch *in = &st->in[k];

		printf("    %s->%s  applied=%llu  queued=%llu  %s%s%s\n",
		    in->peer, name, (unsigned long long)in->seq,
		    (unsigned long long)in->queued, in->up ? "up" : "down",
		    in->diverged ? "  diverged" : "",
		    st->fenced && !in->checked ? "  unchecked" : "");
	}
	for (k = 0; k < dl->n; k++)
		cmd_dead_text(stdout, "    ", &dl->v[k], name);
	if (dl->total > dl->n)
		printf("    ... and %llu more dead letters (cutsnap "
		    "deadletter list)\n", (unsigned long long)(dl->total -
		    dl->n));
	print_file(st);
}

/* "fenced": null, or {"snapshot": N, "waiting": ["A>B", ...]}: the
 * channels whose history check has not passed yet. */
static void
fence_json(struct json *j, const struct agstat *st, const char *self)
{
	char ch[2 * NAME_MAX_LEN + 2];
	size_t k;

	json_key(j, "fenced");
	if (st->fenced == 0) {
		json_null(j);
		return;
	}
	json_obj(j);
	json_kuint(j, "snapshot", st->fenced);
	json_key(j, "waiting");
	json_arr(j);
	for (k = 0; k < st->nout; k++)
		if (!st->out[k].checked) {
			snprintf(ch, sizeof(ch), "%s>%s", self,
			    st->out[k].peer);
			json_str(j, ch);
		}
	for (k = 0; k < st->nin; k++)
		if (!st->in[k].checked) {
			snprintf(ch, sizeof(ch), "%s>%s", st->in[k].peer,
			    self);
			json_str(j, ch);
		}
	json_arr_end(j);
	json_obj_end(j);
}

static void
print_json(struct json *j, const struct cfg_agent *ag, const struct agstat *st,
    const struct cmd_dead_list *dl, const char *err)
{
	size_t k;

	json_obj(j);
	json_kstr(j, "agent", ag->name);
	json_kbool(j, "up", st != NULL);
	json_kstr(j, "data", ag->data);
	if (st == NULL) {
		json_kstr(j, "error", err);
		json_obj_end(j);
		return;
	}
	json_kint(j, "pid", st->pid);
	json_kint(j, "uptime_s", st->uptime_s);
	json_kuint(j, "size", st->size);
	json_kuint(j, "records", st->records);
	json_kuint(j, "syncs", st->syncs);
	json_kuint(j, "writes", st->writes);
	json_kuint(j, "live_size", st->live);
	json_key(j, "compaction");
	json_obj(j);
	json_kuint(j, "generation", st->gen);
	json_kuint(j, "last_at", st->compacted_at);
	json_kuint(j, "count", st->compactions);
	json_kuint(j, "last_before", st->cbefore);
	json_kuint(j, "last_after", st->cafter);
	json_kuint(j, "last_ms", st->cms);
	json_kbool(j, "running", st->compacting);
	json_obj_end(j);
	json_key(j, "snapshot");
	if (st->snap_id == 0) {
		json_null(j);
	} else {
		json_obj(j);
		json_kuint(j, "id", st->snap_id);
		json_kstr(j, "phase", st->phase);
		json_obj_end(j);
	}
	json_key(j, "snapshots");
	json_arr(j);
	for (k = 0; k < st->nsnaps; k++) {
		json_obj(j);
		json_kuint(j, "id", st->snaps[k].id);
		json_kstr(j, "uid", st->snaps[k].uid);
		json_kstr(j, "phase", st->snaps[k].phase);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_key(j, "held");
	json_arr(j);
	for (k = 0; k < st->nout; k++)
		if (st->out[k].held)
			json_str(j, st->out[k].peer);
	json_arr_end(j);
	json_key(j, "out");
	json_arr(j);
	for (k = 0; k < st->nout; k++) {
		const struct agstat_ch *o = &st->out[k];

		json_obj(j);
		json_kstr(j, "dst", o->peer);
		json_kuint(j, "sent", o->seq);
		json_kuint(j, "acked", o->acked);
		json_kuint(j, "queued", o->queued);
		json_kuint(j, "unacked", o->unacked);
		json_kbool(j, "up", o->up);
		json_kbool(j, "held", o->held);
		json_kbool(j, "diverged", o->diverged);
		json_kuint(j, "stalled_ms", o->stalled_ms);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_key(j, "in");
	json_arr(j);
	for (k = 0; k < st->nin; k++) {
		const struct agstat_ch *in = &st->in[k];

		json_obj(j);
		json_kstr(j, "src", in->peer);
		json_kuint(j, "applied", in->seq);
		json_kuint(j, "queued", in->queued);
		json_kbool(j, "up", in->up);
		json_kbool(j, "diverged", in->diverged);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_key(j, "inbox");
	json_obj(j);
	json_kuint(j, "messages", st->inbox_msgs);
	json_kuint(j, "bytes", st->inbox_bytes);
	json_kuint(j, "max_bytes", st->inbox_max);
	json_kbool(j, "full", st->inbox_max != 0 &&
	    st->inbox_bytes >= st->inbox_max);
	json_kuint(j, "recv_parked", st->recv_parked);
	json_obj_end(j);
	/* The open ones; dead_letters_total counts those not listed too. */
	json_kuint(j, "dead_letters_total", st->dead);
	fence_json(j, st, ag->name);
	json_key(j, "dead_letters");
	json_arr(j);
	for (k = 0; k < dl->n; k++)
		cmd_dead_json(j, &dl->v[k], ag->name);
	json_arr_end(j);
	json_obj_end(j);
}

int
cmd_status(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, CMD_OPT_NO_OPERANDS);
	const char *conf = NULL;
	struct cfg *c = NULL;
	struct cmd_dead_list dl;
	struct agstat st;
	struct cs_err e;
	struct json j;
	int ch, i, json = 0, width = 0, down = 0, rc, up;
	size_t diverged = 0;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case 'j':
			json = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	for (i = 0; i < c->nagents; i++)
		if ((int)strlen(c->agents[i].name) > width)
			width = (int)strlen(c->agents[i].name);
	if (json) {
		cmd_json_init(&j);
		json_arr(&j);
	}
	for (i = 0; i < c->nagents; i++) {
		memset(&dl, 0, sizeof(dl));
		up = api_agent_stat(c, i, STATUS_TIMEOUT_MS, &st, &e) == 0;
		/* Dead letters are listed by a second request, asked only
		 * when there are some. */
		if (up && st.dead > 0 && cmd_dead_fetch(c, i, 0,
		    STATUS_TIMEOUT_MS, &dl, &e) == -1)
			up = 0;
		if (!up)
			down++;
		else
			diverged += count_diverged(&st) + (st.fenced > 0);
		if (json)
			print_json(&j, &c->agents[i], up ? &st : NULL, &dl,
			    e.msg);
		else if (up)
			print_text(c->agents[i].name, width, &st, &dl);
		else
			printf("%-*s  down  (%s)\n", width, c->agents[i].name,
			    e.msg);
		agstat_free(&st);
		cmd_dead_list_free(&dl);
	}
	rc = down || diverged ? EXIT_FAILED : EXIT_OK;
	if (json) {
		json_arr_end(&j);
		if (json_end(&j) == -1)
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	}
	cfg_free(c);
	return rc;
}
