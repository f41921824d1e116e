/* cutcheck.c - the consistency rule of a cut, channel by channel: applied
 * <= sent, and the recorded messages are exactly seqs applied+1..sent;
 * between agents of the cut without a channel, applied == sent. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cutcheck.h"

static int problem(const struct cut_channel *, problem_fn, void *,
    const char *, ...) __attribute__((format(printf, 4, 5)));

static int
problem(const struct cut_channel *ch, problem_fn fn, void *ctx,
    const char *fmt, ...)
{
	char line[512], msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "channel %s->%s: %s", ch->src, ch->dst,
	    msg);
	if (fn != NULL)
		fn(ctx, line);
	return 1;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
range(char *out, size_t outsz, uint64_t lo, uint64_t hi)
{
	snprintf(out, outsz, "%llu..%llu", (unsigned long long)lo,
	    (unsigned long long)hi);
}

/* One line per run of missing seqs [lo, hi], so a huge gap stays one
 * line. */
static int
missing(const struct cut_channel *ch, problem_fn fn, void *ctx, uint64_t lo,
    uint64_t hi, const char *want)
{
	if (lo == hi)
		return problem(ch, fn, ctx, "message seq %llu missing "
		    "(expected seqs %s, in flight)", (unsigned long long)lo,
		    want);
	return problem(ch, fn, ctx, "message seqs %llu..%llu missing "
	    "(expected seqs %s, in flight)", (unsigned long long)lo,
	    (unsigned long long)hi, want);
}

int
store_cut_check(const struct cut_channel *ch, problem_fn fn, void *ctx)
{
	uint64_t *v = NULL, lo = 0, hi = 0, next = 0;
	char want[48];
	size_t i, j;
	int n = 0, empty, past;

	/* The expected seqs are [lo, hi]; written without overflow even for
	 * the nonsense a tampered file can hold. */
	empty = ch->applied >= ch->sent;
	if (!empty) {
		lo = ch->applied + 1;
		hi = ch->sent;
		range(want, sizeof(want), lo, hi);
	} else
		snprintf(want, sizeof(want), "none");
	if (ch->applied > ch->sent)
		n += problem(ch, fn, ctx, "applied %llu > sent %llu (receive "
		    "without send)", (unsigned long long)ch->applied,
		    (unsigned long long)ch->sent);
	if (ch->nseqs > 0) {
		if ((v = malloc(ch->nseqs * sizeof(*v))) == NULL)
			return n + problem(ch, fn, ctx, "out of memory "
			    "checking the cut");
		memcpy(v, ch->seqs, ch->nseqs * sizeof(*v));
		qsort(v, ch->nseqs, sizeof(*v), cmp_u64);
	}
	/* Walk the sorted seqs once: runs of equal seqs are duplicates,
	 * seqs outside [lo, hi] are unexpected, gaps inside are missing.
	 * next is the lowest seq not yet seen; past: all of [lo, hi] seen. */
	next = lo;
	past = empty;
	for (i = 0; i < ch->nseqs; i = j) {
		for (j = i + 1; j < ch->nseqs && v[j] == v[i]; j++)
			;
		if (empty || v[i] < lo || v[i] > hi) {
			n += problem(ch, fn, ctx, "unexpected message seq %llu "
			    "(expected seqs %s)", (unsigned long long)v[i],
			    want);
			continue;
		}
		if (j - i > 1)
			n += problem(ch, fn, ctx, "message seq %llu recorded "
			    "%zu times", (unsigned long long)v[i], j - i);
		if (v[i] > next)
			n += missing(ch, fn, ctx, next, v[i] - 1, want);
		if (v[i] == hi)
			past = 1;
		else
			next = v[i] + 1;
	}
	if (!past)
		n += missing(ch, fn, ctx, next, hi, want);
	free(v);
	return n;
}

int
store_cut_check_unlisted(const char *src, const char *dst, uint64_t sent,
    uint64_t applied, problem_fn fn, void *ctx)
{
	struct cut_channel ch;

	if (sent == applied)
		return 0;
	memset(&ch, 0, sizeof(ch));
	ch.src = src;
	ch.dst = dst;
	if (applied > sent)
		return problem(&ch, fn, ctx, "not a channel of the config, "
		    "but applied %llu > sent %llu (receive without send)",
		    (unsigned long long)applied, (unsigned long long)sent);
	return problem(&ch, fn, ctx, "not a channel of the config, but %llu "
	    "message%s in flight on it (sent %llu, applied %llu) that the "
	    "cut does not hold: restore the channel in the config, or drain "
	    "it first", (unsigned long long)(sent - applied),
	    sent - applied == 1 ? " is" : "s are", (unsigned long long)sent,
	    (unsigned long long)applied);
}
