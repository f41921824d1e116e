/* status.c - the one-line STATUS reply: pid, uptime, file, channels. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent_int.h"

#define STATUS_MAX 16384

struct line {
	char *p;
	size_t len, cap;
};

static void __attribute__((format(printf, 2, 3)))
add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (l->len + 1 >= l->cap)
		return;
	va_start(ap, fmt);
	k = vsnprintf(l->p + l->len, l->cap - l->len, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	l->len += (size_t)k;
	if (l->len >= l->cap)
		l->len = l->cap - 1;	/* truncated */
}

/* "pid=1 uptime_s=5 size=1234 records=10 syncs=4 writes=9 snapshot=none
 *  held=A>B
 *  out=A>B:sent=3,acked=2,queued=1,up=1;A>C:... in=B>A:applied=4,up=1"
 * Lists are ';'-separated, "none" when empty. */
void
status_reply(struct agent *a, struct conn *c)
{
	const struct dl_state *s = datalog_state(a->dl);
	const char *nm;
	char text[STATUS_MAX], sn[64];
	struct line l = { text, 0, sizeof(text) };
	struct wbuf w;
	int d, first;

	text[0] = '\0';
	add(&l, "pid=%d uptime_s=%lld size=%llu records=%llu syncs=%llu "
	    "writes=%llu snapshot=%s", (int)getpid(),
	    (long long)((now_ms() - a->start_ms) / 1000),
	    (unsigned long long)datalog_end(a->dl),
	    (unsigned long long)s->records,
	    (unsigned long long)datalog_syncs(a->dl),
	    (unsigned long long)a->writes,
	    snap_describe(a, sn, sizeof(sn)));
	add(&l, " held=");
	for (first = 1, d = 0; d < a->n; d++)
		if (a->out[d].configured && a->out[d].held) {
			add(&l, "%s%s>%s", first ? "" : ";", a->name,
			    a->c->agents[d].name);
			first = 0;
		}
	if (first)
		add(&l, "none");
	add(&l, " out=");
	for (first = 1, d = 0; d < a->n; d++) {
		if (!a->out[d].configured)
			continue;
		nm = a->c->agents[d].name;
		add(&l, "%s%s>%s:sent=%llu,acked=%llu,queued=%zu,up=%d",
		    first ? "" : ";", a->name, nm,
		    (unsigned long long)wm_get(&s->sent, nm),
		    (unsigned long long)wm_get(&s->acked, nm),
		    outch_queued(a, d), a->out[d].up);
		first = 0;
	}
	if (first)
		add(&l, "none");
	add(&l, " in=");
	for (first = 1, d = 0; d < a->n; d++) {
		if (!a->in[d].configured)
			continue;
		nm = a->c->agents[d].name;
		add(&l, "%s%s>%s:applied=%llu,up=%d", first ? "" : ";", nm,
		    a->name, (unsigned long long)wm_get(&s->applied, nm),
		    a->in[d].conn != NULL);
		first = 0;
	}
	if (first)
		add(&l, "none");

	wbuf_init(&w);
	wbuf_put_u32(&w, (uint32_t)getpid());
	wbuf_put_bytes(&w, text, l.len);
	if (w.oom)
		conn_replyf(a, c, REPLY_FAIL, "out of memory");
	else
		conn_reply(a, c, REPLY_OK, w.data, w.len, datalog_need(a->dl));
	wbuf_free(&w);
}
