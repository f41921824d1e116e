/* load.c - the load generator's measurement: drain the channels, deposit
 * and sum the balances, run the clients (load_run.c), drain and sum
 * again, and the latency quantiles of what was run. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../api/api.h"
#include "../proto/agstat.h"
#include "../lib/util.h"
#include "../net/wire.h"
#include "load.h"

#define DRAIN_TIMEOUT_MS 60000
#define STATUS_TIMEOUT_MS 5000

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
	if (api_call(c, i, W_REQ_GET, &req, &r, LOAD_REQ_TIMEOUT_MS, e) == -1)
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
			    LOAD_REQ_TIMEOUT_MS, e) == -1)
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
summarize(const struct load_result *r, struct load_summary *s)
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

int
load_measure(const struct load_opts *o, int64_t initial, int no_drain,
    struct load_result *r, struct load_summary *s, struct cs_err *e)
{
	struct cluster_stat st0, st1;
	int rc;

	memset(r, 0, sizeof(*r));
	memset(s, 0, sizeof(*s));
	if ((!no_drain && drain(o->c, &st0, e) == -1) ||
	    balances(o->c, initial, &s->total0, e) == -1 ||
	    cluster_status(o->c, &st0, e) == -1)
		return -1;
	if (load_catch_stop() == -1)
		return cs_errno(e, "sigaction");
	rc = load_run(o, r, e);
	load_release_stop();
	if (rc == -1)
		return -1;
	s->checked = !no_drain;
	if ((no_drain ? cluster_status(o->c, &st1, e) :
	    drain(o->c, &st1, e)) == -1 ||
	    (!no_drain && balances(o->c, 0, &s->total1, e) == -1) ||
	    summarize(r, s) == -1) {
		load_result_free(r);
		return -1;
	}
	s->syncs = st1.syncs - st0.syncs;
	s->writes = st1.writes - st0.writes;
	return 0;
}
