/* agstat.c - the STATUS reply's text form: written by the agent, read by
 * "cutsnap status". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agstat.h"

static void __attribute__((format(printf, 2, 3)))
put(struct wbuf *w, const char *fmt, ...)
{
	char s[256], *h = NULL;
	va_list ap;
	int k;

	/* Whatever its length: a field is never cut short. */
	va_start(ap, fmt);
	k = vsnprintf(s, sizeof(s), fmt, ap);
	va_end(ap);
	if (k <= 0)
		return;
	if ((size_t)k < sizeof(s)) {
		wbuf_put_raw(w, s, (size_t)k);
		return;
	}
	if ((h = malloc((size_t)k + 1)) == NULL) {
		w->oom = 1;
		return;
	}
	va_start(ap, fmt);
	(void)vsnprintf(h, (size_t)k + 1, fmt, ap);
	va_end(ap);
	wbuf_put_raw(w, h, (size_t)k);
	free(h);
}

void
agstat_format(const struct agstat *st, const char *self, struct wbuf *w)
{
	size_t i;
	int first;

	put(w, "pid=%d uptime_s=%" PRId64 " size=%" PRIu64 " records=%" PRIu64
	    " syncs=%" PRIu64 " writes=%" PRIu64, st->pid, st->uptime_s,
	    st->size, st->records, st->syncs, st->writes);
	if (st->snap_id == 0)
		put(w, " snapshot=none");
	else
		put(w, " snapshot=%" PRIu64 ":%s", st->snap_id, st->phase);
	put(w, " snapshots=");
	for (i = 0; i < st->nsnaps; i++)
		put(w, "%s%" PRIu64 ":%s:%s", i ? ";" : "", st->snaps[i].id,
		    st->snaps[i].phase, st->snaps[i].uid);
	if (st->nsnaps == 0)
		put(w, "none");
	put(w, " held=");
	for (first = 1, i = 0; i < st->nout; i++) {
		if (!st->out[i].held)
			continue;
		put(w, "%s%s>%s", first ? "" : ";", self, st->out[i].peer);
		first = 0;
	}
	if (first)
		put(w, "none");
	put(w, " out=");
	for (i = 0; i < st->nout; i++) {
		const struct agstat_ch *c = &st->out[i];

		put(w, "%s%s>%s:sent=%" PRIu64 ",acked=%" PRIu64 ",queued=%"
		    PRIu64 ",unacked=%" PRIu64 ",up=%d,held=%d,diverged=%d,"
		    "checked=%d,stalled_ms=%" PRIu64, i ? ";" : "", self,
		    c->peer, c->seq, c->acked, c->queued, c->unacked, c->up,
		    c->held, c->diverged, c->checked, c->stalled_ms);
	}
	if (st->nout == 0)
		put(w, "none");
	put(w, " in=");
	for (i = 0; i < st->nin; i++) {
		const struct agstat_ch *c = &st->in[i];

		put(w, "%s%s>%s:applied=%" PRIu64 ",queued=%" PRIu64 ",up=%d,"
		    "diverged=%d,checked=%d", i ? ";" : "", c->peer, self,
		    c->seq, c->queued, c->up, c->diverged, c->checked);
	}
	if (st->nin == 0)
		put(w, "none");
	put(w, " dead=%" PRIu64, st->dead);
	put(w, " live=%" PRIu64 " gen=%" PRIu64 " compacted_at=%" PRIu64
	    " compactions=%" PRIu64 " compact_before=%" PRIu64
	    " compact_after=%" PRIu64 " compact_ms=%" PRIu64 " compacting=%d",
	    st->live, st->gen, st->compacted_at, st->compactions, st->cbefore,
	    st->cafter, st->cms, st->compacting);
	put(w, " fenced=%" PRIu64, st->fenced);
	put(w, " inbox_msgs=%" PRIu64 " inbox_bytes=%" PRIu64 " inbox_max=%"
	    PRIu64 " recv_parked=%" PRIu64, st->inbox_msgs, st->inbox_bytes,
	    st->inbox_max, st->recv_parked);
}

void
agstat_free(struct agstat *st)
{
	if (st == NULL)
		return;
	free(st->out);
	free(st->in);
	st->out = st->in = NULL;
	st->nout = st->nin = 0;
}

static int
parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	*v = strtoull(s, &end, 10);
	return *end == '\0' ? 0 : -1;
}

/* One channel "S>D:k=v,k=v"; peer is D for out, S for in. */
static int
parse_ch(char *s, int out, struct agstat_ch *c)
{
	char *colon, *gt, *kv, *save = NULL, *eq;
	const char *peer;
	uint64_t v;

	memset(c, 0, sizeof(*c));
	if ((colon = strchr(s, ':')) == NULL)
		return -1;
	*colon = '\0';
	if ((gt = strchr(s, '>')) == NULL)
		return -1;
	*gt = '\0';
	peer = out ? gt + 1 : s;
	if (strlen(peer) == 0 || strlen(peer) > NAME_MAX_LEN)
		return -1;
	strcpy(c->peer, peer);
	for (kv = strtok_r(colon + 1, ",", &save); kv != NULL;
	    kv = strtok_r(NULL, ",", &save)) {
		if ((eq = strchr(kv, '=')) == NULL)
			return -1;
		*eq++ = '\0';
		if (parse_u64(eq, &v) == -1)
			return -1;
		if (strcmp(kv, out ? "sent" : "applied") == 0)
			c->seq = v;
		else if (strcmp(kv, "acked") == 0)
			c->acked = v;
		else if (strcmp(kv, "queued") == 0)
			c->queued = v;
		else if (strcmp(kv, "unacked") == 0)
			c->unacked = v;
		else if (strcmp(kv, "up") == 0)
			c->up = v != 0;
		else if (strcmp(kv, "held") == 0)
			c->held = v != 0;
		else if (strcmp(kv, "diverged") == 0)
			c->diverged = v != 0;
		else if (strcmp(kv, "checked") == 0)
			c->checked = v != 0;
		else if (out && strcmp(kv, "stalled_ms") == 0)
			c->stalled_ms = v;
	}
	return 0;
}

/* The snapshots "ID:PHASE:UID;...", or "none". */
static int
parse_snaps(char *s, struct agstat *st)
{
	char *item, *save = NULL, *c1, *c2;
	struct agstat_snap *sn;
	struct snapuid u;

	if (st->nsnaps != 0)
		return -1;	/* the list given twice */
	if (strcmp(s, "none") == 0)
		return 0;
	for (item = strtok_r(s, ";", &save); item != NULL;
	    item = strtok_r(NULL, ";", &save)) {
		if (st->nsnaps == AGSTAT_MAX_SNAPS ||
		    (c1 = strchr(item, ':')) == NULL ||
		    (c2 = strchr(c1 + 1, ':')) == NULL)
			return -1;
		*c1 = *c2 = '\0';
		sn = &st->snaps[st->nsnaps];
		if (parse_u64(item, &sn->id) == -1 ||
		    strlen(c1 + 1) == 0 || strlen(c1 + 1) >= sizeof(sn->phase) ||
		    snapuid_parse(c2 + 1, &u) == -1)
			return -1;
		strcpy(sn->phase, c1 + 1);
		snapuid_hex(&u, sn->uid);
		st->nsnaps++;
	}
	return 0;
}

/* A ';'-separated channel list, or "none". */
static int
parse_list(char *s, int out, struct agstat_ch **v, size_t *n)
{
	char *item, *save = NULL;
	size_t cap = 1;
	const char *p;

	if (*v != NULL)
		return -1;	/* the list given twice */
	if (strcmp(s, "none") == 0)
		return 0;
	for (p = s; *p; p++)
		cap += *p == ';';
	if ((*v = calloc(cap, sizeof(**v))) == NULL)
		return -1;
	for (item = strtok_r(s, ";", &save); item != NULL;
	    item = strtok_r(NULL, ";", &save)) {
		if (*n == cap || parse_ch(item, out, &(*v)[*n]) == -1)
			return -1;
		(*n)++;
	}
	return 0;
}

static int
parse_field(char *key, char *val, struct agstat *st)
{
	uint64_t v;
	char *colon;

	if (strcmp(key, "pid") == 0) {
		if (parse_u64(val, &v) == -1 || v > INT32_MAX)
			return -1;
		st->pid = (int)v;
	} else if (strcmp(key, "uptime_s") == 0) {
		if (parse_u64(val, &v) == -1 || v > INT64_MAX)
			return -1;
		st->uptime_s = (int64_t)v;
	} else if (strcmp(key, "size") == 0) {
		return parse_u64(val, &st->size);
	} else if (strcmp(key, "records") == 0) {
		return parse_u64(val, &st->records);
	} else if (strcmp(key, "syncs") == 0) {
		return parse_u64(val, &st->syncs);
	} else if (strcmp(key, "writes") == 0) {
		return parse_u64(val, &st->writes);
	} else if (strcmp(key, "live") == 0) {
		return parse_u64(val, &st->live);
	} else if (strcmp(key, "gen") == 0) {
		return parse_u64(val, &st->gen);
	} else if (strcmp(key, "compacted_at") == 0) {
		return parse_u64(val, &st->compacted_at);
	} else if (strcmp(key, "compactions") == 0) {
		return parse_u64(val, &st->compactions);
	} else if (strcmp(key, "compact_before") == 0) {
		return parse_u64(val, &st->cbefore);
	} else if (strcmp(key, "compact_after") == 0) {
		return parse_u64(val, &st->cafter);
	} else if (strcmp(key, "compact_ms") == 0) {
		return parse_u64(val, &st->cms);
	} else if (strcmp(key, "compacting") == 0) {
		if (parse_u64(val, &v) == -1 || v > 1)
			return -1;
		st->compacting = (int)v;
	} else if (strcmp(key, "snapshot") == 0) {
		if (strcmp(val, "none") == 0)
			return 0;
		if ((colon = strchr(val, ':')) == NULL)
			return -1;
		*colon = '\0';
		if (parse_u64(val, &st->snap_id) == -1 || st->snap_id == 0 ||
		    strlen(colon + 1) >= sizeof(st->phase))
			return -1;
		strcpy(st->phase, colon + 1);
	} else if (strcmp(key, "snapshots") == 0) {
		return parse_snaps(val, st);
	} else if (strcmp(key, "dead") == 0) {
		return parse_u64(val, &st->dead);
	} else if (strcmp(key, "fenced") == 0) {
		return parse_u64(val, &st->fenced);
	} else if (strcmp(key, "inbox_msgs") == 0) {
		return parse_u64(val, &st->inbox_msgs);
	} else if (strcmp(key, "inbox_bytes") == 0) {
		return parse_u64(val, &st->inbox_bytes);
	} else if (strcmp(key, "inbox_max") == 0) {
		return parse_u64(val, &st->inbox_max);
	} else if (strcmp(key, "recv_parked") == 0) {
		return parse_u64(val, &st->recv_parked);
	} else if (strcmp(key, "out") == 0) {
		return parse_list(val, 1, &st->out, &st->nout);
	} else if (strcmp(key, "in") == 0) {
		return parse_list(val, 0, &st->in, &st->nin);
	}
	return 0;
}

int
agstat_parse(const char *text, size_t n, struct agstat *st,
    struct cs_err *e)
{
	char *s = NULL, *tok, *save = NULL, *eq;
	int rc = -1;

	memset(st, 0, sizeof(*st));
	strcpy(st->phase, "none");
	if (n > AGSTAT_MAX_TEXT) {
		cs_errf(e, "status reply too long (%zu bytes)", n);
		goto out;
	}
	if ((s = malloc(n + 1)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	memcpy(s, text, n);
	s[n] = '\0';
	if (strlen(s) != n) {
		cs_errf(e, "status reply holds a NUL byte");
		goto out;
	}
	for (tok = strtok_r(s, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save)) {
		if ((eq = strchr(tok, '=')) == NULL) {
			cs_errf(e, "status reply: field without '=' near '%.32s'",
			    tok);
			goto out;
		}
		*eq++ = '\0';
		if (parse_field(tok, eq, st) == -1) {
			cs_errf(e, "status reply: bad field %.32s", tok);
			goto out;
		}
	}
	rc = 0;
out:
	free(s);
	if (rc == -1)
		agstat_free(st);
	return rc;
}
