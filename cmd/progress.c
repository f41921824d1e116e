/* progress.c - the progress line of snapshot, verify and restore on a
 * terminal's stderr: bytes done of total, rate, ETA, current agent. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

#define PROGRESS_EVERY_MS 100

void
cmd_human_bytes(uint64_t n, char *out, size_t outsz)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	int u = -1;

	if (n < 1024) {
		snprintf(out, outsz, "%llu B", (unsigned long long)n);
		return;
	}
	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(out, outsz, "%.1f %s", v, unit[u]);
}

void
cmd_progress_init(struct cmd_progress *p, const char *verb, int verbosity)
{
	memset(p, 0, sizeof(*p));
	p->verb = verb;
	p->verbosity = verbosity;
	/* Only a person watching a terminal wants a line redrawn in place. */
	p->on = verbosity >= 0 && isatty(STDERR_FILENO);
	p->start_ms = cs_now_ms();
}

static void
draw(struct cmd_progress *p, int64_t now)
{
	char d[32], t[32], r[32], eta[32];
	double secs = (double)(now - p->start_ms) / 1000.0;
	double rate = secs > 0.05 ? (double)p->done / secs : 0;

	cmd_human_bytes(p->done, d, sizeof(d));
	cmd_human_bytes(p->total, t, sizeof(t));
	if (rate > 0)
		cmd_human_bytes((uint64_t)rate, r, sizeof(r));
	else
		snprintf(r, sizeof(r), "-");
	if (rate > 0 && p->total >= p->done) {
		uint64_t left = (uint64_t)((double)(p->total - p->done) /
		    rate + 0.5);

		snprintf(eta, sizeof(eta), "%llu:%02llu",
		    (unsigned long long)(left / 60),
		    (unsigned long long)(left % 60));
	} else {
		snprintf(eta, sizeof(eta), "-:--");
	}
	/* \r and erase to the end of the line: redrawn in place. */
	fprintf(stderr, "\r%s: %s / %s  %3d%%  %s/s  ETA %s  agent %s\033[K",
	    p->verb, d, t, p->total ? (int)(p->done * 100 / p->total) : 100,
	    r, eta, p->agent[0] ? p->agent : "-");
	fflush(stderr);
	p->drawn = 1;
	p->last_ms = now;
}

void
cmd_progress_fn(void *ctx, const char *agent, uint64_t done, uint64_t total)
{
	struct cmd_progress *p = ctx;
	int64_t now;

	p->done = done;
	p->total = total;
	snprintf(p->agent, sizeof(p->agent), "%s", agent ? agent : "");
	if (!p->on)
		return;
	now = cs_now_ms();
	/* The first frame at once, the last one always, others at most
	 * every PROGRESS_EVERY_MS. */
	if (p->drawn && done < total && now - p->last_ms < PROGRESS_EVERY_MS)
		return;
	draw(p, now);
}

void
cmd_progress_end(struct cmd_progress *p)
{
	char d[32], r[32];
	double secs = (double)(cs_now_ms() - p->start_ms) / 1000.0;

	if (p->drawn) {
		fputs("\r\033[K", stderr);
		p->drawn = 0;
	}
	if (p->verbosity > 0) {
		cmd_human_bytes(p->done, d, sizeof(d));
		cmd_human_bytes(secs > 0.001 ? (uint64_t)((double)p->done /
		    secs) : p->done, r, sizeof(r));
		fprintf(stderr, "%s: %s in %.2f s (%s/s)\n", p->verb, d, secs,
		    r);
	}
	fflush(stderr);
}
