/* test_dlrewrite.c - compaction: the state replayed from a rewritten file
 * equals the state before, for every kind of state (values inline and by
 * reference, deletions, sent/applied/acked watermarks with their history
 * chains, unacknowledged sends with theirs, dead letters open, retried
 * and refunded, key versions), with records appended during the rewrite; a reopened file has
 * the same state; generations count up; an aborted rewrite changes
 * nothing; base records outside a base section are corruption. */
#include <sys/stat.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../log/datalog.h"
#include "../../log/dlfile.h"
#include "../../log/dlrewrite.h"
#include "../../lib/fsutil.h"
#include "unit.h"

/* --- building a history ----------------------------------------------------- */

static void
put(struct datalog *dl, const char *k, const char *v)
{
	struct dl_record r = { .type = DL_PUT };
	struct cs_err e;

	r.key = (const uint8_t *)k;
	r.klen = strlen(k);
	r.val = (const uint8_t *)v;
	r.vlen = strlen(v);
	assert_int_equal(datalog_append(dl, &r, &e), 0);
}

static void
del(struct datalog *dl, const char *k)
{
	struct dl_record r = { .type = DL_DEL };
	struct cs_err e;

	r.key = (const uint8_t *)k;
	r.klen = strlen(k);
	assert_int_equal(datalog_append(dl, &r, &e), 0);
}

static void
chan(struct datalog *dl, enum dl_type t, const char *peer, uint64_t seq,
    const char *k, const char *v)
{
	struct dl_record r = { .type = t };
	uint8_t chain[DL_CHAIN_LEN];
	char msg[64];
	struct cs_err e;

	r.peer = peer;
	r.seq = seq;
	/* A history chain value per message (the datalog keeps what it is
	 * given; chain.c computes real ones); an ACK carries the chain of
	 * the SEND it acknowledges, as an agent writes it. */
	memset(chain, (int)(seq * 7 + (t == DL_APPLY ? 1u : 0u)),
	    sizeof(chain));
	memcpy(chain, peer, strlen(peer));
	r.chain = chain;
	if (t != DL_ACK) {
		r.key = (const uint8_t *)k;
		r.klen = strlen(k);
		r.val = (const uint8_t *)v;
		r.vlen = strlen(v);
	}
	if (t == DL_SEND) {
		snprintf(msg, sizeof(msg), "msg %s %llu", peer,
		    (unsigned long long)seq);
		r.msg = (const uint8_t *)msg;
		r.msglen = strlen(msg);
	}
	assert_int_equal(datalog_append(dl, &r, &e), 0);
}

/* A dead letter from C (its seq the next applied one), then, by how: left
 * open (0), retried, or refunded over self->C. */
static void
dead_letter(struct datalog *dl, int how)
{
	const struct dl_state *st = datalog_state(dl);
	uint64_t seq = dl_wm_get(&st->applied, "C") + 1;
	uint8_t chain[DL_CHAIN_LEN];
	struct dl_record r = { .type = DL_DEAD };
	struct cs_err e;
	char msg[64];

	memset(chain, (int)seq, sizeof(chain));
	r.peer = "C";
	r.seq = seq;
	r.code = DL_DEAD_NOT_INT;
	r.key = (const uint8_t *)"text";
	r.klen = 4;
	r.amount = (int64_t)seq;
	r.from = (const uint8_t *)"bal";
	r.flen = 3;
	r.chain = chain;
	assert_int_equal(datalog_append(dl, &r, &e), 0);
	if (how == 0)
		return;
	memset(&r, 0, sizeof(r));
	r.type = DL_RESOLVE;
	r.peer = "C";
	r.seq = seq;
	r.code = (uint8_t)how;
	if (how == DL_RESOLVE_RETRY) {
		r.key = (const uint8_t *)"text";
		r.klen = 4;
		r.val = (const uint8_t *)"7";
		r.vlen = 1;
	} else {
		r.sseq = dl_wm_get(&st->sent, "C") + 1;
		snprintf(msg, sizeof(msg), "refund %llu",
		    (unsigned long long)seq);
		r.msg = (const uint8_t *)msg;
		r.msglen = strlen(msg);
		r.chain = chain;
	}
	assert_int_equal(datalog_append(dl, &r, &e), 0);
}

/* Every kind of state: values inline and by reference (longer than
 * DL_INLINE_MAX), a deleted key, sends acknowledged in part (to B) and in
 * whole (to C), applies from two peers. */
static void
history(struct datalog *dl, int rounds)
{
	char k[32], v[256];
	uint64_t s = datalog_state(dl)->sent.n ? dl_wm_get(&datalog_state(dl)->sent,
	    "B") : 0;
	uint64_t sc = dl_wm_get(&datalog_state(dl)->sent, "C");
	uint64_t ab = dl_wm_get(&datalog_state(dl)->applied, "B");
	int i;

	for (i = 0; i < rounds; i++) {
		snprintf(k, sizeof(k), "k%d", i % 7);
		snprintf(v, sizeof(v), "%d", i);
		put(dl, k, v);
		snprintf(k, sizeof(k), "big%d", i % 3);
		memset(v, 'a' + i % 26, 200);
		v[200] = '\0';
		put(dl, k, v);
		chan(dl, DL_SEND, "B", ++s, "bal", v + 190);
		chan(dl, DL_SEND, "C", ++sc, "bal", "7");
		chan(dl, DL_APPLY, "B", ++ab, "bal", "9");
		if (i % 5 == 4)
			chan(dl, DL_ACK, "C", sc, NULL, NULL);
		if (i % 9 == 0)
			dead_letter(dl, i % 27 == 0 ? DL_RESOLVE_REFUND :
			    i % 27 == 9 ? DL_RESOLVE_RETRY : 0);
		sc = dl_wm_get(&datalog_state(dl)->sent, "C");
	}
	put(dl, "gone", "x");
	del(dl, "gone");
	chan(dl, DL_ACK, "B", s - 3, NULL, NULL);	/* 3 unacknowledged */
	chan(dl, DL_ACK, "C", sc, NULL, NULL);
	chan(dl, DL_APPLY, "C", dl_wm_get(&datalog_state(dl)->applied, "C") + 1,
	    "from_c", "1");
}

/* --- a canonical text of a state ------------------------------------------ */

static void
addf(char **s, size_t *n, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	p = realloc(*s, *n + (size_t)k + 1);
	assert_non_null(p);
	*s = p;
	va_start(ap, fmt);
	vsnprintf(*s + *n, (size_t)k + 1, fmt, ap);
	va_end(ap);
	*n += (size_t)k;
}

static void
add_chain(char **s, size_t *n, const uint8_t *c, int known)
{
	size_t i;

	if (!known) {
		addf(s, n, " chain unknown");
		return;
	}
	addf(s, n, " chain ");
	for (i = 0; i < DL_CHAIN_LEN; i++)
		addf(s, n, "%02x", c[i]);
}

static void
add_wms(char **s, size_t *n, const char *what, const struct wm_set *w)
{
	size_t i;

	for (i = 0; i < w->n; i++) {
		if (w->v[i].seq == 0)
			continue;
		addf(s, n, "%s %s %llu", what, w->v[i].peer,
		    (unsigned long long)w->v[i].seq);
		add_chain(s, n, w->v[i].chain, w->v[i].chain_known);
		addf(s, n, "\n");
	}
}

/* The sends not yet acknowledged, as a live data file reads them back. */
struct sends_ctx {
	char **s;
	size_t *n;
	const char *peer;
	uint64_t count;
};

static int
one_send(void *ctx, uint64_t seq, const uint8_t *msg, size_t len,
    const uint8_t *chain)
{
	struct sends_ctx *c = ctx;

	addf(c->s, c->n, "send %s %llu %.*s", c->peer, (unsigned long long)seq,
	    (int)len, msg);
	add_chain(c->s, c->n, chain, chain != NULL);
	addf(c->s, c->n, "\n");
	c->count++;
	return 0;
}

static void
add_sends(struct datalog *dl, char **s, size_t *n)
{
	const struct dl_state *st = datalog_state(dl);
	struct sends_ctx c;
	struct cs_err e;
	uint64_t off, acked;
	size_t i;

	assert_int_equal(datalog_sync(dl, &e), 0);
	for (i = 0; i < st->sent.n; i++) {
		acked = dl_wm_get(&st->acked, st->sent.v[i].peer);
		if (st->sent.v[i].seq <= acked)
			continue;
		off = dl_wm_get(&st->sendoff, st->sent.v[i].peer);
		if (off < DL_HEADER_LEN)
			off = DL_HEADER_LEN;
		c.s = s;
		c.n = n;
		c.peer = st->sent.v[i].peer;
		c.count = 0;
		assert_int_equal(datalog_read_sends(dl, c.peer, &off,
		    acked + 1, one_send, &c, &e), 0);
		assert_int_equal(c.count, st->sent.v[i].seq - acked);
	}
}

static int
cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lines sorted, so that the order of watermarks does not matter. */
static char *
canon(struct datalog *dl)
{
	const struct dl_state *st = datalog_state(dl);
	const struct kv_entry **v = NULL;
	struct cs_err e;
	char *s = NULL, *out = NULL, *lines[4096], *p, *save = NULL;
	size_t n = 0, m = 0, on = 0, i, k;
	uint8_t *val;

	addf(&s, &n, "");
	assert_int_equal(kvmap_sorted(st->kv, &v, &k), 0);
	for (i = 0; i < k; i++) {
		if (v[i]->val == NULL) {
			assert_int_equal(datalog_read_value(dl, v[i], &val, &e),
			    0);
			addf(&s, &n, "key %.*s v%llu = %.*s\n",
			    (int)v[i]->klen, v[i]->key,
			    (unsigned long long)v[i]->ver, (int)v[i]->vlen,
			    val);
			free(val);
		} else {
			addf(&s, &n, "key %.*s v%llu = %.*s\n",
			    (int)v[i]->klen, v[i]->key,
			    (unsigned long long)v[i]->ver, (int)v[i]->vlen,
			    v[i]->val);
		}
	}
	free(v);
	add_wms(&s, &n, "sent", &st->sent);
	add_wms(&s, &n, "applied", &st->applied);
	add_wms(&s, &n, "acked", &st->acked);
	for (i = 0; i < st->ndead; i++)
		addf(&s, &n, "dead %s %llu reason %d %s amount %lld key %.*s "
		    "from %.*s refund %llu\n", st->dead[i].peer,
		    (unsigned long long)st->dead[i].seq, st->dead[i].reason,
		    dl_resolve_name(st->dead[i].resolved),
		    (long long)st->dead[i].amount, (int)st->dead[i].klen,
		    st->dead[i].key, (int)st->dead[i].flen,
		    st->dead[i].from ? (const char *)st->dead[i].from : "",
		    (unsigned long long)st->dead[i].refund_seq);
	addf(&s, &n, "open %zu\n", st->nopen);
	assert_true(st->no_sends && st->nsends == 0);
	add_sends(dl, &s, &n);
	for (p = strtok_r(s, "\n", &save); p != NULL && m < 4096;
	    p = strtok_r(NULL, "\n", &save))
		lines[m++] = p;
	qsort(lines, m, sizeof(lines[0]), cmp_line);
	addf(&out, &on, "");
	for (i = 0; i < m; i++)
		addf(&out, &on, "%s\n", lines[i]);
	free(s);
	return out;
}

/* Rewrite dl with tail_rounds of history appended while the thread runs;
 * *before (if not NULL) is the state just before the switch. */
static int
do_rewrite(struct datalog *dl, int tail_rounds,
    struct dl_rewrite_result *res, char **before)
{
	struct dl_rewrite *rw;
	struct timespec ts = { 0, 1000000L };
	struct cs_err e;
	int n = 0;

	assert_int_equal(dl_rewrite_start(dl, &rw, &e), 0);
	/* Records appended while the thread runs land in the tail. */
	if (tail_rounds > 0)
		history(dl, tail_rounds);
	while (!dl_rewrite_done(rw) && n++ < 20000)
		nanosleep(&ts, NULL);
	assert_true(dl_rewrite_done(rw));
	if (before != NULL)
		*before = canon(dl);
	if (dl_rewrite_finish(dl, rw, res, &e) == -1) {
		print_error("rewrite: %s\n", e.msg);
		return -1;
	}
	return 0;
}

/* --- cases ------------------------------------------------------------------ */

static void
test_rewrite_keeps_state(void **state)
{
	struct dl_rewrite_result res;
	struct datalog *dl;
	struct cs_err e;
	char *before, *after, *reopened;
	uint64_t big;

	(void)state;
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	history(dl, 300);
	assert_int_equal(datalog_sync(dl, &e), 0);
	big = datalog_end(dl);
	assert_int_equal(do_rewrite(dl, 5, &res, &before), 0);
	after = canon(dl);
	assert_string_equal(before, after);
	free(before);
	assert_int_equal(res.gen, 1);
	assert_true(res.before > big);
	assert_true(res.after < res.before / 10);
	assert_true(res.base <= res.after);
	assert_int_equal(unit_file_size(unit_data), res.after);
	assert_int_equal(datalog_state(dl)->gen, 1);
	assert_int_equal(dl_wm_get(&datalog_state(dl)->sent, "B") -
	    dl_wm_get(&datalog_state(dl)->acked, "B"), 3);
	assert_non_null(strstr(after, "send B "));
	/* Dead letters of every kind made it: one every 9 rounds (34, and
	 * one in the tail), 13 refunded and 11 retried. */
	assert_int_equal(datalog_state(dl)->ndead, 35);
	assert_int_equal(datalog_state(dl)->nopen, 11);
	/* Appends go on into the new file. */
	put(dl, "after", "1");
	assert_int_equal(datalog_sync(dl, &e), 0);
	free(after);
	before = canon(dl);
	datalog_close(dl);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	reopened = canon(dl);
	assert_string_equal(before, reopened);
	assert_int_equal(datalog_state(dl)->gen, 1);
	datalog_close(dl);
	free(before);
	free(reopened);
	(void)unlink(unit_data);
}

static void
test_state_equal_without_tail(void **state)
{
	struct dl_rewrite_result res;
	struct datalog *dl;
	struct cs_err e;
	char *before, *after, *reopened;

	(void)state;
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	history(dl, 120);
	before = canon(dl);
	assert_int_equal(do_rewrite(dl, 0, &res, NULL), 0);
	after = canon(dl);
	assert_string_equal(before, after);
	/* With no tail the file is its base; the live size estimates it
	 * (the unacknowledged sends at a typical message's size). */
	assert_int_equal(res.after, res.base);
	assert_true(dl_live_size(datalog_state(dl)) >= res.after / 2 &&
	    dl_live_size(datalog_state(dl)) <= res.after * 2);
	datalog_close(dl);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	reopened = canon(dl);
	assert_string_equal(before, reopened);
	datalog_close(dl);
	free(before);
	free(after);
	free(reopened);
	(void)unlink(unit_data);
}

static void
test_generations_and_tails(void **state)
{
	struct dl_rewrite_result res;
	struct datalog *dl;
	struct cs_err e;
	char *want, *got;
	int g;

	(void)state;
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	history(dl, 50);
	for (g = 1; g <= 3; g++) {
		assert_int_equal(do_rewrite(dl, 7, &res, &want), 0);
		assert_int_equal(res.gen, (uint64_t)g);
		got = canon(dl);
		assert_string_equal(want, got);
		free(want);
		free(got);
		history(dl, 3);
	}
	want = canon(dl);
	assert_int_equal(datalog_sync(dl, &e), 0);
	datalog_close(dl);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	got = canon(dl);
	assert_string_equal(want, got);
	assert_int_equal(datalog_state(dl)->gen, 3);
	assert_true(datalog_state(dl)->gen_time > 0);
	datalog_close(dl);
	free(want);
	free(got);
	(void)unlink(unit_data);
}

static void
test_abort_changes_nothing(void **state)
{
	struct dl_rewrite *rw;
	struct datalog *dl;
	struct cs_err e;
	char tmp[600], *before, *after;
	off_t size;

	(void)state;
	snprintf(tmp, sizeof(tmp), "%s%s", unit_data, DL_REWRITE_SUFFIX);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	history(dl, 40);
	assert_int_equal(datalog_sync(dl, &e), 0);
	before = canon(dl);
	size = unit_file_size(unit_data);
	assert_int_equal(dl_rewrite_start(dl, &rw, &e), 0);
	dl_rewrite_abort(rw);
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(unit_file_size(unit_data), size);
	after = canon(dl);
	assert_string_equal(before, after);
	datalog_close(dl);
	/* A new file a killed compaction left is removed by the next open. */
	assert_int_equal(fs_atomic_write_file(tmp, "junk", 4, 0600, &e), 0);
	assert_int_equal(datalog_open(unit_data, &dl, &e), 0);
	assert_int_equal(access(tmp, F_OK), -1);
	datalog_close(dl);
	free(before);
	free(after);
	(void)unlink(unit_data);
}

static void
test_base_records_only_in_base(void **state)
{
	struct dl_state st;
	struct dl_record r = { .type = DL_WM };
	uint8_t id[DL_GEN_ID_LEN] = { 1 };
	struct cs_err e;

	(void)state;
	assert_int_equal(dl_state_init(&st, 0), 0);
	r.wm_kind = DL_WM_SENT;
	r.peer = "B";
	r.seq = 5;
	assert_int_equal(dl_state_check(&st, &r, &e), -1);	/* no GEN */
	r.type = DL_GEN;
	r.seq = 1;
	r.gen_id = id;
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);
	assert_int_equal(dl_state_apply(&st, &r, &e), -1);	/* not first */
	r = (struct dl_record){ .type = DL_WM, .wm_kind = DL_WM_SENT,
	    .peer = "B", .seq = 5 };
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);
	assert_int_equal(dl_state_apply(&st, &r, &e), -1);	/* twice */
	r.wm_kind = DL_WM_ACKED;
	r.seq = 6;
	assert_int_equal(dl_state_check(&st, &r, &e), -1);	/* > sent */
	r.seq = 5;
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);
	r = (struct dl_record){ .type = DL_KEPT, .peer = "B", .seq = 7 };
	assert_int_equal(dl_state_check(&st, &r, &e), -1);	/* gap */
	r.seq = 6;
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);
	assert_int_equal(dl_wm_get(&st.sent, "B"), 6);
	r = (struct dl_record){ .type = DL_DEL, .key = (const uint8_t *)"x",
	    .klen = 1 };
	assert_int_equal(dl_state_apply(&st, &r, &e), 0);	/* closes */
	r = (struct dl_record){ .type = DL_WM, .wm_kind = DL_WM_APPLIED,
	    .peer = "C", .seq = 1 };
	assert_int_equal(dl_state_check(&st, &r, &e), -1);
	dl_state_free(&st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rewrite_keeps_state),
		cmocka_unit_test(test_state_equal_without_tail),
		cmocka_unit_test(test_generations_and_tails),
		cmocka_unit_test(test_abort_changes_nothing),
		cmocka_unit_test(test_base_records_only_in_base),
	};

	return cmocka_run_group_tests(tests, unit_setup_data, unit_teardown);
}
