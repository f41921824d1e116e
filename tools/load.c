/* load.c - "cutsnap load": a pgbench-like load of random transfers, with
 * optional periodic snapshots, ending with a conservation check. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/agstat.h"
#include "../lib/json.h"
#include "../net/wire.h"
#include "../coordinator/coordinator.h"
#include "cmd.h"
#include "load.h"

#define DRAIN_TIMEOUT_MS 60000
#define STATUS_TIMEOUT_MS 5000

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

/* What the agents' status replies add up to. */
struct cluster_stat {
	uint64_t syncs;		/* fdatasync calls */
	uint64_t writes;	/* client write requests */
	int drained;		/* every channel: acked == sent */
};

static int
cluster_status(const struct cfg *c, struct cluster_stat *st,
    struct cs_err *e)
{
	struct agstat as;
	size_t k;
	int i;

	memset(st, 0, sizeof(*st));
	st->drained = 1;
	for (i = 0; i < c->nagents; i++) {
		if (api_agent_stat(c, i, STATUS_TIMEOUT_MS, &as, e) == -1)
			return -1;
		st->syncs += as.syncs;
		st->writes += as.writes;
		for (k = 0; k < as.nout; k++)
			if (as.out[k].seq != as.out[k].acked)
				st->drained = 0;
		agstat_free(&as);
	}
	return 0;
}

/* Wait (bounded) until every message sent has been applied and acked. */
static int
drain(const struct cfg *c, struct cluster_stat *st, struct cs_err *e)
{
	int64_t end = cs_now_ms() + DRAIN_TIMEOUT_MS;

	for (;;) {
		if (cluster_status(c, st, e) == -1)
			return -1;
		if (st->drained)
			return 0;
		if (cs_now_ms() >= end)
			return cs_errf(e, "channels did not drain within %d s "
			    "(is a channel held?)", DRAIN_TIMEOUT_MS / 1000);
		cs_sleep_ms(20);
	}
}

/* One agent's balance; absent: *found = 0. */
static int
get_bal(const struct cfg *c, int i, int64_t *v, int *found,
    struct cs_err *e)
{
	struct api_reply r;
	struct wbuf req;
	char txt[32], *end;
	int rc = -1;

	wbuf_init(&req);
	wbuf_put_bytes(&req, LOAD_KEY, strlen(LOAD_KEY));
	if (api_call(c, i, W_REQ_GET, &req, &r, CMD_REQ_TIMEOUT_MS, e) == -1)
		goto out;
	*found = r.code == REPLY_OK;
	*v = 0;
	if (r.code == REPLY_NOTFOUND) {
		rc = 0;
		goto out;
	}
	cs_printable(r.body, r.blen, txt, sizeof(txt), 0);
	if (r.code != REPLY_OK || r.blen == 0 || r.blen >= sizeof(txt) ||
	    (*v = strtoll(txt, &end, 10), *end != '\0')) {
		cs_errf(e, "agent %s: %s is not an integer: '%s'",
		    c->agents[i].name, LOAD_KEY, txt);
		goto out;
	}
	rc = 0;
out:
	api_reply_free(&r);
	wbuf_free(&req);
	return rc;
}

/* Deposit `initial` where bal is absent (ADD never overwrites a balance a
 * message may just have credited), then sum every balance. */
static int
balances(const struct cfg *c, int64_t initial, int64_t *total,
    struct cs_err *e)
{
	struct api_reply r = { 0, NULL, 0 };
	struct wbuf req;
	int64_t v;
	int i, found, rc = -1;

	wbuf_init(&req);
	*total = 0;
	for (i = 0; i < c->nagents; i++) {
		if (get_bal(c, i, &v, &found, e) == -1)
			goto out;
		if (!found && initial > 0) {
			wbuf_reset(&req);
			wbuf_put_bytes(&req, LOAD_KEY, strlen(LOAD_KEY));
			wbuf_put_i64(&req, initial);
			if (api_call(c, i, W_REQ_ADD, &req, &r,
			    CMD_REQ_TIMEOUT_MS, e) == -1)
				goto out;
			if (r.code != REPLY_OK) {
				cs_errf(e, "agent %s: deposit refused",
				    c->agents[i].name);
				goto out;
			}
			api_reply_free(&r);
			if (get_bal(c, i, &v, &found, e) == -1)
				goto out;
		}
		if (__builtin_add_overflow(*total, v, total)) {
			cs_errf(e, "the total of the balances overflows");
			goto out;
		}
	}
	rc = 0;
out:
	api_reply_free(&r);
	wbuf_free(&req);
	return rc;
}

struct summary {
	double secs, tps, p50, p99, max;
	double during_p50, during_p99, during_max;
	double outside_p50, outside_p99, outside_max, snap_p50;
	size_t snaps_ok, snaps_failed, during_n;
	uint64_t syncs, writes;
	int64_t total0, total1;
	int checked;		/* total1 was read (not --no-drain) */
};

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The q-quantile (0..1) of sorted v[0, n) in ms; 0 when empty. */
static double
quant_ms(const int64_t *v, size_t n, double q)
{
	size_t i;

	if (n == 0)
		return 0;
	i = (size_t)(q * (double)(n - 1) + 0.5);
	return (double)v[i] / 1000.0;
}

/* Latency quantiles; requests overlapping a snapshot against the rest. */
static int
summarize(const struct load_result *r, struct summary *s)
{
	int64_t *all = NULL, *out = NULL, *dur = NULL, *sd = NULL, b, en;
	size_t i, j, nout = 0, nsd = 0;
	int during, rc = -1;

	if ((all = malloc((r->nreqs + 1) * sizeof(*all))) == NULL ||
	    (out = malloc((r->nreqs + 1) * sizeof(*out))) == NULL ||
	    (dur = malloc((r->nreqs + 1) * sizeof(*dur))) == NULL ||
	    (sd = malloc((r->nsnaps + 1) * sizeof(*sd))) == NULL)
		goto done;
	s->secs = (double)r->elapsed_us / 1e6;
	s->tps = s->secs > 0 ? (double)r->nreqs / s->secs : 0;
	for (i = 0; i < r->nreqs; i++) {
		all[i] = r->reqs[i].dur_us;
		b = r->reqs[i].start_us;
		en = b + r->reqs[i].dur_us;
		for (during = 0, j = 0; j < r->nsnaps && !during; j++)
			during = b < r->snaps[j].end_us &&
			    en > r->snaps[j].start_us;
		if (during)
			dur[s->during_n++] = all[i];
		else
			out[nout++] = all[i];
	}
	for (i = 0; i < r->nsnaps; i++) {
		if (r->snaps[i].ok) {
			s->snaps_ok++;
			sd[nsd++] = r->snaps[i].end_us - r->snaps[i].start_us;
		} else
			s->snaps_failed++;
	}
	qsort(all, r->nreqs, sizeof(*all), cmp_i64);
	qsort(out, nout, sizeof(*out), cmp_i64);
	qsort(dur, s->during_n, sizeof(*dur), cmp_i64);
	qsort(sd, nsd, sizeof(*sd), cmp_i64);
	s->p50 = quant_ms(all, r->nreqs, 0.5);
	s->p99 = quant_ms(all, r->nreqs, 0.99);
	s->max = quant_ms(all, r->nreqs, 1.0);
	s->during_p50 = quant_ms(dur, s->during_n, 0.5);
	s->during_p99 = quant_ms(dur, s->during_n, 0.99);
	s->during_max = quant_ms(dur, s->during_n, 1.0);
	s->outside_p50 = quant_ms(out, nout, 0.5);
	s->outside_p99 = quant_ms(out, nout, 0.99);
	s->outside_max = quant_ms(out, nout, 1.0);
	s->snap_p50 = quant_ms(sd, nsd, 0.5);
	rc = 0;
done:
	free(all);
	free(out);
	free(dur);
	free(sd);
	return rc;
}

/* key + a real number, for the summary object. */
static void
kreal(struct json *j, const char *key, double v)
{
	json_key(j, key);
	json_real(j, v);
}

static int
print_json(const struct load_result *r, const struct summary *s,
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
print_summary(const struct load_result *r, const struct summary *s,
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
	struct load_opts o = { NULL, 10, 4, 0, 10, 0, NULL };
	struct load_result r;
	struct cluster_stat st0, st1;
	struct summary s;
	struct cfg *c = NULL;
	struct cs_err e;
	const char *conf = NULL;
	int64_t initial = 1000000;
	int rc, json = 0, no_drain = 0, d, t, nch = 0;

	memset(&r, 0, sizeof(r));
	memset(&s, 0, sizeof(s));
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
	if ((!no_drain && drain(c, &st0, &e) == -1) ||
	    balances(c, initial, &s.total0, &e) == -1 ||
	    cluster_status(c, &st0, &e) == -1) {
		cmd_warn("%s", e.msg);
		goto out;
	}
	if (load_catch_stop() == -1) {
		cmd_warn("sigaction: %s", strerror(errno));
		goto out;
	}
	rc = load_run(&o, &r, &e);
	load_release_stop();
	if (rc == -1) {
		rc = EXIT_FAILED;
		cmd_warn("%s", e.msg);
		goto out;
	}
	rc = EXIT_FAILED;
	s.checked = !no_drain;
	if ((no_drain ? cluster_status(c, &st1, &e) :
	    drain(c, &st1, &e)) == -1 ||
	    (!no_drain && balances(c, 0, &s.total1, &e) == -1) ||
	    summarize(&r, &s) == -1) {
		cmd_warn("%s", e.msg);
		goto out;
	}
	s.syncs = st1.syncs - st0.syncs;
	s.writes = st1.writes - st0.writes;
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
