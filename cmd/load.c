/* load.c - "cutsnap load": a pgbench-like load of random transfers, with
 * optional periodic snapshots, ending with a conservation check. Options
 * and output here; the measurement is tools/load.c's. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../lib/json.h"
#include "../coordinator/coordinator.h"
#include "../tools/load.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap load -c CONF [--seconds S] [--clients K] [--threads T]\n"
    "                    [--snapshot-every MS -r REPO] [--max-amount N]\n"
    "                    [--initial N] [--no-drain] [--json]\n"
    "\n"
    "Run random transfers of 1..N between the agents' \"bal\" keys from K\n"
    "concurrent clients for S seconds, each client waiting for its reply\n"
    "before the next request (like pgbench). The clients share T worker\n"
    "threads, each waiting on its clients' connections with epoll, so the\n"
    "load generator takes little of the CPU the agents need. An agent\n"
    "without a \"bal\" key first gets the initial amount added (a deposit;\n"
    "an existing balance is never overwritten). The starting total is read\n"
    "once the channels have drained; at the end the tool waits until every\n"
    "message sent has been applied and checks that the total is unchanged.\n"
    "The agents must be running and nothing else may change \"bal\"\n"
    "meanwhile.\n"
    "\n"
    "Prints one summary line: transfers/s=N p50_ms=X p99_ms=Y snapshots=K,\n"
    "insufficient-funds refusals, failures, the slowest request during a\n"
    "snapshot against the median outside one, fsyncs per transfer, and\n"
    "whether the total was conserved.\n"
    "\n"
    "SIGTERM, or SIGINT (Ctrl-C), ends the run early: each client waits\n"
    "for the reply to its request in flight, then load drains, checks the\n"
    "total and prints its summary as if the seconds were up, with\n"
    "interrupted=yes. A second signal ends load at once.\n"
    "\n"
    "  -c, --config CONF         the cluster config file\n"
    "  -s, --seconds S           how long to run (default 10)\n"
    "      --clients K           concurrent clients (default 4)\n"
    "      --threads T           worker threads the clients share (default\n"
    "                            1, at most K)\n"
    "      --snapshot-every MS   take a snapshot into REPO every MS ms\n"
    "                            (at [cluster] snapshot_max_rate, if set)\n"
    "  -r, --repo REPO           the repository for --snapshot-every (a\n"
    "                            directory, or s3://BUCKET/PREFIX: each\n"
    "                            snapshot is committed there as taken)\n"
    "      --max-amount N        largest amount moved (default 10)\n"
    "      --initial N           deposit for an absent balance (default\n"
    "                            1000000)\n"
    "      --no-drain            for drills with a held channel: neither\n"
    "                            wait for the channels to drain before and\n"
    "                            after, nor check the total (total_after\n"
    "                            and conserved: unchecked, null in JSON)\n"
    "  -j, --json                the summary as one JSON object\n"
    "\n"
    "An encrypted repository (cutsnap init --encrypt) needs its password:\n"
    "--password-file FILE, else --password-command CMD (its output), else\n"
    "CUTSNAP_PASSWORD_FILE, CUTSNAP_PASSWORD_COMMAND or CUTSNAP_PASSWORD,\n"
    "else it is asked on the terminal; a missing or wrong one fails at\n"
    "once, in one line, before anything is written.\n"
    "\n"
    "Exit status: 0 the total was conserved and every request and snapshot\n"
    "succeeded (insufficient funds is not a failure), 1 otherwise, 2 bad\n"
    "usage or bad config.\n";

/* Options without a short form. */
enum { OPT_NO_DRAIN = CMD_OPT_LONG, OPT_CLIENTS, OPT_THREADS, OPT_EVERY,
    OPT_MAX_AMOUNT, OPT_INITIAL };

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "seconds", required_argument, NULL, 's' },
	{ "clients", required_argument, NULL, OPT_CLIENTS },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "snapshot-every", required_argument, NULL, OPT_EVERY },
	{ "repo", required_argument, NULL, 'r' },
	{ "max-amount", required_argument, NULL, OPT_MAX_AMOUNT },
	{ "initial", required_argument, NULL, OPT_INITIAL },
	{ "json", no_argument, NULL, 'j' },
	{ "no-drain", no_argument, NULL, OPT_NO_DRAIN },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* key + a real number, for the summary object. */
static void
kreal(struct json *j, const char *key, double v)
{
	json_key(j, key);
	json_real(j, v);
}

static int
print_json(const struct load_result *r, const struct load_summary *s,
    int clients)
{
	struct json j;

	cmd_json_init(&j);
	json_obj(&j);
	json_kuint(&j, "transfers", r->nreqs);
	kreal(&j, "seconds", s->secs);
	json_key(&j, "interrupted");
	json_bool(&j, r->interrupted);
	json_kint(&j, "clients", clients);
	kreal(&j, "transfers_per_s", s->tps);
	kreal(&j, "p50_ms", s->p50);
	kreal(&j, "p99_ms", s->p99);
	kreal(&j, "max_ms", s->max);
	json_kuint(&j, "insufficient", r->insufficient);
	json_kuint(&j, "failures", r->failures);
	json_kuint(&j, "snapshots", s->snaps_ok);
	json_kuint(&j, "snapshot_failures", s->snaps_failed);
	kreal(&j, "snapshot_p50_ms", s->snap_p50);
	json_kuint(&j, "during_snapshot_requests", s->during_n);
	kreal(&j, "during_snapshot_p50_ms", s->during_p50);
	kreal(&j, "during_snapshot_p99_ms", s->during_p99);
	kreal(&j, "during_snapshot_max_ms", s->during_max);
	kreal(&j, "outside_snapshot_p50_ms", s->outside_p50);
	kreal(&j, "outside_snapshot_p99_ms", s->outside_p99);
	kreal(&j, "outside_snapshot_max_ms", s->outside_max);
	json_kuint(&j, "fsyncs", s->syncs);
	kreal(&j, "fsyncs_per_transfer", r->nreqs ?
	    (double)s->syncs / (double)r->nreqs : 0);
	json_kint(&j, "total_before", s->total0);
	json_key(&j, "total_after");
	if (s->checked)
		json_int(&j, s->total1);
	else
		json_null(&j);
	json_key(&j, "conserved");
	if (s->checked)
		json_bool(&j, s->total0 == s->total1);
	else
		json_null(&j);
	json_obj_end(&j);
	return json_end(&j);
}

static void
print_summary(const struct load_result *r, const struct load_summary *s,
    int clients)
{
	double fpt = r->nreqs ? (double)s->syncs / (double)r->nreqs : 0;
	char after[24] = "unchecked";

	if (s->checked)
		snprintf(after, sizeof(after), "%" PRId64, s->total1);

	printf("transfers=%zu seconds=%.2f clients=%d transfers/s=%.0f "
	    "p50_ms=%.3f p99_ms=%.3f max_ms=%.3f insufficient=%" PRIu64
	    " failures=%" PRIu64 " snapshots=%zu snapshot_failures=%zu "
	    "snapshot_p50_ms=%.1f during_snapshot_requests=%zu "
	    "during_snapshot_p50_ms=%.3f during_snapshot_p99_ms=%.3f "
	    "during_snapshot_max_ms=%.3f outside_snapshot_p50_ms=%.3f "
	    "outside_snapshot_p99_ms=%.3f outside_snapshot_max_ms=%.3f "
	    "fsyncs=%" PRIu64 " fsyncs_per_transfer=%.3f total_before=%"
	    PRId64 " total_after=%s conserved=%s interrupted=%s\n",
	    r->nreqs, s->secs, clients, s->tps, s->p50, s->p99, s->max,
	    r->insufficient, r->failures, s->snaps_ok, s->snaps_failed,
	    s->snap_p50, s->during_n, s->during_p50, s->during_p99,
	    s->during_max, s->outside_p50,
	    s->outside_p99, s->outside_max, s->syncs, fpt, s->total0, after,
	    !s->checked ? "unchecked" : s->total0 == s->total1 ? "yes" : "no",
	    r->interrupted ? "yes" : "no");
}

static int
parse_opts(int argc, char **argv, const char **conf, struct load_opts *o,
    int64_t *initial, int *json, int *no_drain)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, CMD_OPT_NO_OPERANDS);
	uint64_t v;
	int ch;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			*conf = optarg;
			break;
		case 's':
			if (cmd_parse_pos(optarg, "seconds", 86400, &v) == -1)
				return EXIT_USAGE;
			o->seconds = (int)v;
			break;
		case OPT_CLIENTS:
			if (cmd_parse_pos(optarg, "clients", 1024, &v) == -1)
				return EXIT_USAGE;
			o->clients = (int)v;
			break;
		case OPT_THREADS:
			if (cmd_parse_pos(optarg, "threads", 1024, &v) == -1)
				return EXIT_USAGE;
			o->threads = (int)v;
			break;
		case OPT_EVERY:
			if (cmd_parse_pos(optarg, "interval", 86400000, &v)
			    == -1)
				return EXIT_USAGE;
			o->snap_every_ms = (int)v;
			break;
		case 'r':
			o->repo = optarg;
			break;
		case OPT_MAX_AMOUNT:
			if (cmd_parse_pos(optarg, "amount", 1000000000, &v)
			    == -1)
				return EXIT_USAGE;
			o->max_amount = (int64_t)v;
			break;
		case OPT_INITIAL:
			if (cmd_parse_pos(optarg, "initial", INT64_MAX / 1024,
			    &v) == -1)
				return EXIT_USAGE;
			*initial = (int64_t)v;
			break;
		case 'j':
			*json = 1;
			break;
		case OPT_NO_DRAIN:
			*no_drain = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (o->snap_every_ms > 0 && o->repo == NULL)
		return cmd_usage_error("--snapshot-every needs -r REPO");
	if (o->snap_every_ms == 0 && o->repo != NULL)
		return cmd_usage_error("-r REPO is only used with "
		    "--snapshot-every MS");
	return -1;
}

int
cmd_load(int argc, char **argv)
{
	struct load_opts o = { NULL, 10, 4, 0, 10, 0, NULL, &cmd_store_opts,
	    cmd_repo_published };
	struct load_result r;
	struct load_summary s;
	struct cfg *c = NULL;
	struct cs_err e;
	const char *conf = NULL;
	int64_t initial = 1000000;
	int rc, json = 0, no_drain = 0, d, t, nch = 0;

	memset(&r, 0, sizeof(r));
	if ((rc = parse_opts(argc, argv, &conf, &o, &initial, &json,
	    &no_drain)) != -1)
		return rc;
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	o.c = c;
	for (d = 0; d < c->nagents; d++)
		for (t = 0; t < c->nagents; t++)
			nch += d != t && cfg_has_channel(c, d, t);
	if (nch == 0) {
		rc = cmd_fail(EXIT_USAGE, "the config has no channels: a "
		    "transfer needs two agents and a channel between them");
		goto out;
	}
	if (o.snap_every_ms > 0 && !coord_reachable(c, 0)) {
		rc = cmd_fail(EXIT_USAGE, "markers from %s cannot reach every "
		    "agent over the configured channels", c->agents[0].name);
		goto out;
	}
	rc = EXIT_FAILED;
	if (load_measure(&o, initial, no_drain, &r, &s, &e) == -1) {
		cmd_warn("%s", e.msg);
		goto out;
	}
	if (json) {
		if (print_json(&r, &s, o.clients) == -1) {
			cmd_warn("writing the JSON summary failed");
			goto out;
		}
	} else
		print_summary(&r, &s, o.clients);
	fflush(stdout);
	if (s.checked && s.total0 != s.total1)
		cmd_warn("total not conserved: %" PRId64 " before, %" PRId64
		    " after", s.total0, s.total1);
	else if (r.failures > 0)
		cmd_warn("%" PRIu64 " request%s failed, the first: %s",
		    r.failures, r.failures == 1 ? "" : "s", r.first_failure);
	else if (s.snaps_failed > 0)
		cmd_warn("%zu snapshot%s failed, the first: %s",
		    s.snaps_failed, s.snaps_failed == 1 ? "" : "s",
		    r.first_snap_failure);
	else
		rc = EXIT_OK;
out:
	load_result_free(&r);
	cfg_free(c);
	return rc;
}
