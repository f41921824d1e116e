/* show.c - "cutsnap show": one snapshot's cut in detail, read back from the
 * recorded files and messages, and the conserved total of a key. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/chmsg.h"
#include "../log/datalog.h"
#include "../log/kvmap.h"
#include "../crypto/sha.h"
#include "../store/store.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap show -r REPO [ID] [--sum KEY] [--json]\n"
    "\n"
    "Show snapshot ID (default: the newest complete one) of REPO as it was\n"
    "recorded: the repository's identity, each agent's file (size,\n"
    "SHA-256, its sent and applied watermarks) and each channel with\n"
    "traffic (its sent seq at the\n"
    "sender, its applied seq at the receiver, and its recorded in-flight\n"
    "messages: count, seqs, and for add messages the key and amount). The\n"
    "values come from the recorded files themselves. Run verify to check\n"
    "the cut.\n"
    "\n"
    "  -r, --repo REPO   the repository directory, or\n"
    "                    s3://BUCKET/PREFIX (an object store)\n"
    "      --sum KEY     also print the conserved total of KEY: its value\n"
    "                    in every agent's file plus the amounts in flight\n"
    "                    plus the open dead letters of KEY (credits an agent\n"
    "                    could not apply, see cutsnap deadletter), e.g.\n"
    "                    \"bal: A=90 + B=50 + in flight A->B 10 = 150\" or\n"
    "                    \"... + dead letters at B 5 = 150\"\n"
    "  -j, --json        one JSON object (schema in the README)\n"
    "\n"
    "Only reads REPO: it works on read-only media and changes nothing.\n"
    "\n"
    "An encrypted repository (cutsnap init --encrypt) needs its password:\n"
    "--password-file FILE, else --password-command CMD (its output), else\n"
    "CUTSNAP_PASSWORD_FILE, CUTSNAP_PASSWORD_COMMAND or CUTSNAP_PASSWORD,\n"
    "else it is asked on the terminal; a missing or wrong one fails at\n"
    "once, in one line, before anything is written.\n"
    "\n"
    "--retry-lock DURATION: while the repository is locked, try again for\n"
    "up to DURATION (30s, 5m, 1h) before giving up.\n"
    "\n"
    "Exit status: 0 success, 1 a recorded file that does not match the\n"
    "manifest, or a KEY value that is not an integer, 2 bad usage, no such\n"
    "snapshot, or a bad repository.\n"
    "Also: 10 no such repository, 11 locked (after --retry-lock), 12 a\n"
    "wrong password (cutsnap(1) EXIT STATUS).\n";

/* Options without a short form (cmd_getopt). */
enum { OPT_SUM = CMD_OPT_LONG };

static const struct option opts[] = {
	{ "repo", required_argument, NULL, 'r' },
	{ "sum", required_argument, NULL, OPT_SUM },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* One recorded file, replayed. */
struct agent_view {
	const struct store_file *f;
	struct dl_state st;
	char sha[SHA_HEX_LEN];
	int64_t sum;		/* KEY's value (0 if absent) */
	int64_t dead;		/* KEY's open dead letters' amounts */
};

/* Channel src->dst: its watermarks in the recorded files and its
 * messages msgs[first, first+n). */
struct chan_view {
	const char *src, *dst;
	uint64_t sent, applied;
	size_t first, n;
};

struct view {
	struct snap_info info;
	struct store_contents ct;
	struct agent_view *ag;
	size_t nag;
	struct chan_view *ch;
	size_t nch;
	const char *key;	/* --sum, or NULL */
	int64_t inflight, dead, total;
};

static int
decimal(const uint8_t *p, size_t n, int64_t *out)
{
	char s[32], *end;

	if (n == 0 || n >= sizeof(s))
		return -1;
	memcpy(s, p, n);
	s[n] = '\0';
	errno = 0;
	*out = strtoll(s, &end, 10);
	return *end == '\0' && errno == 0 ? 0 : -1;
}

static int
add_i64(int64_t *acc, int64_t v)
{
	return __builtin_add_overflow(*acc, v, acc) ? -1 : 0;
}

/* Is src->dst already listed? */
static int
have_chan(const struct view *v, const char *src, const char *dst)
{
	size_t i;

	for (i = 0; i < v->nch; i++)
		if (strcmp(v->ch[i].src, src) == 0 &&
		    strcmp(v->ch[i].dst, dst) == 0)
			return 1;
	return 0;
}

static int
chan_cmp(const void *a, const void *b)
{
	const struct chan_view *x = a, *y = b;
	int c = strcmp(x->src, y->src);

	return c ? c : strcmp(x->dst, y->dst);
}

/* The channels with traffic: a sent or applied watermark, or messages. */
static int
build_channels(struct view *v)
{
	size_t i, k, cap = v->ct.nmsgs;

	for (i = 0; i < v->nag; i++)
		cap += v->ag[i].st.sent.n + v->ag[i].st.applied.n;
	if ((v->ch = calloc(cap + 1, sizeof(*v->ch))) == NULL)
		return -1;
	for (i = 0; i < v->nag; i++) {
		const struct dl_state *s = &v->ag[i].st;
		const char *me = v->ag[i].f->agent;

		for (k = 0; k < s->sent.n; k++)
			if (!have_chan(v, me, s->sent.v[k].peer))
				v->ch[v->nch++] = (struct chan_view){ me,
				    s->sent.v[k].peer, 0, 0, 0, 0 };
		for (k = 0; k < s->applied.n; k++)
			if (!have_chan(v, s->applied.v[k].peer, me))
				v->ch[v->nch++] = (struct chan_view){
				    s->applied.v[k].peer, me, 0, 0, 0, 0 };
	}
	for (i = 0; i < v->ct.nmsgs; i++)
		if (!have_chan(v, v->ct.msgs[i].src, v->ct.msgs[i].dst))
			v->ch[v->nch++] = (struct chan_view){
			    v->ct.msgs[i].src, v->ct.msgs[i].dst, 0, 0, 0, 0 };
	qsort(v->ch, v->nch, sizeof(*v->ch), chan_cmp);
	for (k = 0; k < v->nch; k++) {
		for (i = 0; i < v->nag; i++) {
			if (strcmp(v->ag[i].f->agent, v->ch[k].src) == 0)
				v->ch[k].sent = dl_wm_get(&v->ag[i].st.sent,
				    v->ch[k].dst);
			if (strcmp(v->ag[i].f->agent, v->ch[k].dst) == 0)
				v->ch[k].applied = dl_wm_get(
				    &v->ag[i].st.applied, v->ch[k].src);
		}
	}
	/* Messages are ordered by src, dst, seq: each channel's are a run. */
	for (k = 0; k < v->nch; k++) {
		for (i = 0; i < v->ct.nmsgs; i++) {
			if (strcmp(v->ct.msgs[i].src, v->ch[k].src) != 0 ||
			    strcmp(v->ct.msgs[i].dst, v->ch[k].dst) != 0)
				continue;
			if (v->ch[k].n++ == 0)
				v->ch[k].first = i;
		}
	}
	return 0;
}

/* Add a's open dead letters of KEY to a->dead and the totals. */
static int
sum_dead(struct view *v, struct agent_view *a)
{
	const struct dl_dead *d;
	size_t i, kl = strlen(v->key);

	for (i = 0; i < a->st.ndead; i++) {
		d = &a->st.dead[i];
		if (d->resolved || d->klen != kl ||
		    memcmp(d->key, v->key, kl) != 0)
			continue;
		if (add_i64(&a->dead, d->amount) == -1 ||
		    add_i64(&v->dead, d->amount) == -1 ||
		    add_i64(&v->total, d->amount) == -1)
			return -1;
	}
	return 0;
}

/* Replay each file, take KEY's values, the amounts in flight and the
 * open dead letters. */
static int
build(struct view *v, struct cs_err *e)
{
	const uint8_t *val;
	struct chmsg m;
	uint8_t sha[SHA_LEN];
	size_t i, vlen;
	int64_t x;

	if ((v->ag = calloc(v->ct.nfiles + 1, sizeof(*v->ag))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	for (i = 0; i < v->ct.nfiles; i++) {
		struct agent_view *a = &v->ag[i];

		a->f = &v->ct.files[i];
		if (dl_state_init(&a->st, 0) == -1)
			return cs_errc(e, CS_E_NOMEM, "out of memory");
		v->nag++;
		if (dl_replay(a->f->data, a->f->len, a->f->agent, 0, &a->st,
		    NULL, e) == -1)
			return cs_errctx(e, "recorded file of agent %s",
			    a->f->agent);
		if (sha256_buf(a->f->len ? a->f->data : (const uint8_t *)"",
		    a->f->len, sha) == -1)
			return cs_errf(e, "sha256 failed");
		sha_hex(sha, a->sha);
		if (v->key != NULL && sum_dead(v, a) == -1)
			return cs_errf(e, "the total of %s overflows", v->key);
		if (v->key == NULL ||
		    !kvmap_get(a->st.kv, v->key, strlen(v->key), &val, &vlen))
			continue;
		if (decimal(val, vlen, &a->sum) == -1)
			return cs_errf(e, "the value of %s at %s is not an "
			    "integer", v->key, a->f->agent);
		if (add_i64(&v->total, a->sum) == -1)
			return cs_errf(e, "the total of %s overflows", v->key);
	}
	for (i = 0; v->key != NULL && i < v->ct.nmsgs; i++) {
		const struct store_msg *sm = &v->ct.msgs[i];

		if (chmsg_decode(sm->data, sm->len, &m) == -1 ||
		    m.klen != strlen(v->key) ||
		    memcmp(m.key, v->key, m.klen) != 0)
			continue;
		x = m.amount;
		if (add_i64(&v->inflight, x) == -1 ||
		    add_i64(&v->total, x) == -1)
			return cs_errf(e, "the total of %s overflows", v->key);
	}
	if (build_channels(v) == -1)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	return 0;
}

static void
view_free(struct view *v)
{
	size_t i;

	for (i = 0; i < v->nag; i++)
		dl_state_free(&v->ag[i].st);
	free(v->ag);
	free(v->ch);
	store_contents_free(&v->ct);
}

/* "A=3 C=0" or "-". */
static void
print_wms(const struct wm_set *s)
{
	size_t i;

	if (s->n == 0)
		fputs("-", stdout);
	for (i = 0; i < s->n; i++)
		printf("%s%s=%" PRIu64, i ? "," : "", s->v[i].peer,
		    s->v[i].seq);
}

static void
print_text(const struct view *v)
{
	char name[2 * NAME_MAX_LEN + 8], key[80];
	size_t i, k;
	struct chmsg m;
	int w = 0;

	printf("snapshot %" PRIu64 "  %s  started %s  initiator %s  "
	    "%d agent%s  %" PRIu64 " bytes (%" PRIu64 " stored)  %" PRIu64
	    " in-flight message%s\n", v->info.id, v->info.status,
	    v->info.started, v->info.initiator, v->info.nagents,
	    v->info.nagents == 1 ? "" : "s", v->info.bytes, v->info.stored,
	    v->info.nmsgs, v->info.nmsgs == 1 ? "" : "s");
	if (v->info.repo_id[0] != '\0')
		printf("repository %s\n", v->info.repo_id);
	for (i = 0; i < v->nag; i++)
		if ((int)strlen(v->ag[i].f->agent) > w)
			w = (int)strlen(v->ag[i].f->agent);
	for (i = 0; i < v->nag; i++) {
		const struct agent_view *a = &v->ag[i];

		printf("agent %-*s  size %zu  sha256 %s  sent ", w, a->f->agent,
		    a->f->len, a->sha);
		print_wms(&a->st.sent);
		fputs("  applied ", stdout);
		print_wms(&a->st.applied);
		if (a->st.nopen > 0)
			printf("  dead letters %zu", a->st.nopen);
		putchar('\n');
	}
	for (k = 0; k < v->nch; k++) {
		const struct chan_view *c = &v->ch[k];

		snprintf(name, sizeof(name), "%s->%s", c->src, c->dst);
		printf("channel %s  sent %" PRIu64 "  applied %" PRIu64
		    "  %zu message%s", name, c->sent, c->applied, c->n,
		    c->n == 1 ? "" : "s");
		for (i = c->first; i < c->first + c->n; i++) {
			const struct store_msg *sm = &v->ct.msgs[i];

			if (chmsg_decode(sm->data, sm->len, &m) == 0) {
				cs_printable(m.key, m.klen, key, sizeof(key),
				    0);
				printf("%s seq %" PRIu64 " add %s %" PRId64,
				    i == c->first ? ":" : ",", sm->seq, key,
				    m.amount);
			} else {
				printf("%s seq %" PRIu64 " (%zu bytes)",
				    i == c->first ? ":" : ",", sm->seq,
				    sm->len);
			}
		}
		putchar('\n');
	}
	if (v->key == NULL)
		return;
	printf("%s: ", v->key);
	for (i = 0; i < v->nag; i++)
		printf("%s%s=%" PRId64, i ? " + " : "", v->ag[i].f->agent,
		    v->ag[i].sum);
	for (k = 0; k < v->nch; k++) {
		const struct chan_view *c = &v->ch[k];
		int64_t s = 0;
		int any = 0;

		for (i = c->first; i < c->first + c->n; i++) {
			const struct store_msg *sm = &v->ct.msgs[i];

			if (chmsg_decode(sm->data, sm->len, &m) == 0 &&
			    m.klen == strlen(v->key) &&
			    memcmp(m.key, v->key, m.klen) == 0) {
				s += m.amount;	/* bounded: total did not
						 * overflow */
				any = 1;
			}
		}
		if (any)
			printf(" + in flight %s->%s %" PRId64, c->src, c->dst,
			    s);
	}
	for (i = 0; i < v->nag; i++)
		if (v->ag[i].dead != 0)
			printf(" + dead letters at %s %" PRId64,
			    v->ag[i].f->agent, v->ag[i].dead);
	printf(" = %" PRId64 "\n", v->total);
}

static void
json_wms(struct json *j, const char *name, const struct wm_set *s)
{
	size_t i;

	json_key(j, name);
	json_obj(j);
	for (i = 0; i < s->n; i++)
		json_kuint(j, s->v[i].peer, s->v[i].seq);
	json_obj_end(j);
}

static int
print_json(const struct view *v)
{
	struct json j;
	struct chmsg m;
	size_t i, k;

	json_init(&j, stdout);
	json_obj(&j);
	json_key(&j, "snapshot");
	json_obj(&j);
	cmd_json_snap_info(&j, &v->info);
	json_obj_end(&j);
	json_key(&j, "agents");
	json_arr(&j);
	for (i = 0; i < v->nag; i++) {
		const struct agent_view *a = &v->ag[i];

		json_obj(&j);
		json_kstr(&j, "agent", a->f->agent);
		json_kuint(&j, "size", a->f->len);
		json_kstr(&j, "sha256", a->sha);
		json_kuint(&j, "keys", kvmap_count(a->st.kv));
		json_wms(&j, "sent", &a->st.sent);
		json_wms(&j, "applied", &a->st.applied);
		json_key(&j, "dead_letters");
		json_arr(&j);
		for (k = 0; k < a->st.ndead; k++)
			cmd_dead_json(&j, &a->st.dead[k], a->f->agent);
		json_arr_end(&j);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_key(&j, "channels");
	json_arr(&j);
	for (k = 0; k < v->nch; k++) {
		const struct chan_view *c = &v->ch[k];

		json_obj(&j);
		json_kstr(&j, "src", c->src);
		json_kstr(&j, "dst", c->dst);
		json_kuint(&j, "sent", c->sent);
		json_kuint(&j, "applied", c->applied);
		json_kuint(&j, "count", c->n);
		json_key(&j, "messages");
		json_arr(&j);
		for (i = c->first; i < c->first + c->n; i++) {
			const struct store_msg *sm = &v->ct.msgs[i];

			json_obj(&j);
			json_kuint(&j, "seq", sm->seq);
			if (chmsg_decode(sm->data, sm->len, &m) == 0) {
				json_kstr(&j, "op", "add");
				json_key(&j, "key");
				json_strn(&j, m.key, m.klen);
				json_kint(&j, "amount", m.amount);
			} else {
				json_key(&j, "op");
				json_null(&j);
				json_kuint(&j, "bytes", sm->len);
			}
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_key(&j, "sum");
	if (v->key == NULL) {
		json_null(&j);
	} else {
		json_obj(&j);
		json_kstr(&j, "key", v->key);
		json_key(&j, "agents");
		json_obj(&j);
		for (i = 0; i < v->nag; i++)
			json_kint(&j, v->ag[i].f->agent, v->ag[i].sum);
		json_obj_end(&j);
		json_kint(&j, "in_flight", v->inflight);
		json_kint(&j, "dead_letters", v->dead);
		json_key(&j, "dead_letters_at");
		json_obj(&j);
		for (i = 0; i < v->nag; i++)
			if (v->ag[i].dead != 0)
				json_kint(&j, v->ag[i].f->agent,
				    v->ag[i].dead);
		json_obj_end(&j);
		json_kint(&j, "total", v->total);
		json_obj_end(&j);
	}
	json_obj_end(&j);
	return json_end(&j);
}

int
cmd_show(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, 0);
	const char *repo = NULL;
	struct store *st = NULL;
	struct view v;
	struct cs_err e;
	uint64_t id = 0, resolved = 0;
	int ch, json = 0, rc;

	memset(&v, 0, sizeof(v));
	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'r':
			repo = optarg;
			break;
		case OPT_SUM:
			v.key = optarg;
			break;
		case 'j':
			json = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (argc - optind > 1)
		return cmd_usage_error("unexpected argument '%s'",
		    argv[optind + 1]);
	if (argc - optind == 1 &&
	    cmd_parse_pos(argv[optind], "snapshot id", INT64_MAX, &id) == -1)
		return EXIT_USAGE;
	if (repo == NULL)
		return cmd_usage_error("missing -r REPO");
	if (v.key != NULL && v.key[0] == '\0')
		return cmd_usage_error("empty KEY for --sum");
	if ((rc = cmd_open_repo(repo, STORE_READ, NULL, &st)) != EXIT_OK)
		return rc;
	if (cmd_lock(st, 0, &e) == -1) {
		rc = cmd_fail_err(&e);
		goto out;
	}
	if ((rc = cmd_snapshot_exists(st, id)) != EXIT_OK)
		goto out;
	if (store_read_contents(st, id, &resolved, &v.ct, &e) == -1 ||
	    build(&v, &e) == -1) {
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
		goto out;
	}
	if (cmd_snap_info(st, resolved, &v.info) == -1) {
		rc = cmd_fail(EXIT_FAILED, "snapshot %" PRIu64 " is not "
		    "listed", resolved);
		goto out;
	}
	rc = EXIT_OK;
	if (json) {
		if (print_json(&v) == -1)
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	} else {
		print_text(&v);
	}
out:
	view_free(&v);
	store_close(st);
	return rc;
}
