/* demo.c - the bank example end to end with real agents in a directory
 * of the caller's ("cutsnap demo", cmd/demo.c): naive file copies against
 * a consistent cut, a non-FIFO drill, restore. Every figure printed is
 * read from real files. */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../proto/chmsg.h"
#include "../log/datalog.h"
#include "../lib/fsutil.h"
#include "../lib/util.h"
#include "../log/kvmap.h"
#include "../net/wire.h"
#include "../coordinator/coordinator.h"
#include "../store/store.h"
#include "../proto/agstat.h"
#include "../api/api.h"
#include "demo.h"

#define KEY "bal"
#define MAX_COPY ((size_t)64 << 20)
#define WAIT_MARKER_MS 10000	/* for the marker to queue at the source */
#define WAIT_CREDIT_MS 10000	/* for the credit to land at the target */
#define SNAP_TIMEOUT_S 30
#define REQ_TIMEOUT_MS 30000	/* one request's wait for its reply */

/* One scenario: agents A and B (indexes 0 and 1) hold KEY; a transfer of
 * amount from src to the other agent is held on the channel while a
 * snapshot started by initiator records. */
struct demo_case {
	const char *title;
	int64_t init[2];	/* A, B */
	int src;		/* the transfer's source; dst = 1 - src */
	int64_t amount;
	int initiator;
	int reverse;		/* release the held queue marker first */
};

static const struct demo_case cases[] = {
	{ "Case 1: A=100, B=50; 10 in flight A->B; snapshot started by B",
	    { 100, 50 }, 0, 10, 1, 0 },
	{ "Non-FIFO control: case 1 again, the held queue released in "
	    "reverse (marker first)", { 100, 50 }, 0, 10, 1, 1 },
	{ "Case 2: A=100, B=100; 40 in flight B->A; snapshot started by A",
	    { 100, 100 }, 1, 40, 0, 0 },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* A running case: its directory, config, agents and snapshot child. */
struct demo {
	const struct demo_env *env;	/* how agents start and stop */
	char dir[PATH_MAX];
	char repo[PATH_MAX];
	struct cfg *c;
	pid_t pids[2];		/* the agents started here */
	int started;
	pid_t snap_pid;		/* the snapshot child, 0 when none */
	int wrong;		/* totals that are not the expected ones */
};

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int
check_interrupted(struct cs_err *e)
{
	if (interrupted)
		return cs_errf(e, "interrupted");
	return 0;
}

/* The integer value of KEY in a data file image. */
static int
image_value(const uint8_t *p, size_t len, const char *what, int64_t *v,
    struct cs_err *e)
{
	struct dl_state st;
	const uint8_t *val;
	size_t vlen, valid;
	char num[32];
	char *end;
	int rc = -1;

	if (dl_state_init(&st, 0) == -1)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if (dl_replay(p, len, what, 1, &st, &valid, e) == -1)
		goto out;
	if (!kvmap_get(st.kv, KEY, strlen(KEY), &val, &vlen)) {
		cs_errf(e, "%s: key %s is absent", what, KEY);
		goto out;
	}
	if (vlen == 0 || vlen >= sizeof(num)) {
		cs_errf(e, "%s: value of %s is not an integer", what, KEY);
		goto out;
	}
	memcpy(num, val, vlen);
	num[vlen] = '\0';
	errno = 0;
	*v = strtoll(num, &end, 10);
	if (errno != 0 || *end != '\0') {
		cs_errf(e, "%s: value of %s is not an integer", what, KEY);
		goto out;
	}
	rc = 0;
out:
	dl_state_free(&st);
	return rc;
}

/* The integer value of KEY in the data file at path. */
static int
file_value(const char *path, int64_t *v, struct cs_err *e)
{
	uint8_t *buf = NULL;
	size_t len;
	int rc;

	if (fs_read_file(path, MAX_COPY, &buf, &len, e) == -1)
		return -1;
	rc = image_value(buf, len, path, v, e);
	free(buf);
	return rc;
}

/* Copy agent i's data file, as it is now, to DIR/copies/NAME.LABEL: what a
 * backup that copies each file on its own gets. */
static int
copy_data(struct demo *d, int i, const char *label, struct cs_err *e)
{
	char path[PATH_MAX + 128];
	uint8_t *buf = NULL;
	size_t len;
	int rc = -1;

	if (fs_read_file(d->c->agents[i].data, MAX_COPY, &buf, &len, e) == -1)
		return -1;
	snprintf(path, sizeof(path), "%s/copies/%s.%s", d->dir,
	    d->c->agents[i].name, label);
	rc = fs_atomic_write_file(path, buf, len, 0600, e);
	free(buf);
	return rc;
}

static int
copy_value(struct demo *d, int i, const char *label, int64_t *v,
    struct cs_err *e)
{
	char path[PATH_MAX + 128];

	snprintf(path, sizeof(path), "%s/copies/%s.%s", d->dir,
	    d->c->agents[i].name, label);
	return file_value(path, v, e);
}

/* Copy both data files at one moment. */
static int
copy_both(struct demo *d, const char *label, struct cs_err *e)
{
	if (copy_data(d, 0, label, e) == -1 || copy_data(d, 1, label, e) == -1)
		return -1;
	return 0;
}

/* One request to agent i that must succeed; body kept in r if not NULL. */
static int
request(struct demo *d, int i, uint8_t type, const struct wbuf *req,
    struct api_reply *out, struct cs_err *e)
{
	struct api_reply r;
	char msg[256];

	if (api_call(d->c, i, type, req, &r, REQ_TIMEOUT_MS, e) == -1)
		return -1;
	if (r.code != REPLY_OK) {
		cs_printable(r.body, r.blen, msg, sizeof(msg), 0);
		cs_errf(e, "agent %s refused request %u: %s",
		    d->c->agents[i].name, type, msg);
		api_reply_free(&r);
		return -1;
	}
	if (out != NULL)
		*out = r;
	else
		api_reply_free(&r);
	return 0;
}

static int
put_int(struct demo *d, int i, int64_t v, struct cs_err *e)
{
	struct wbuf w;
	char num[32];
	int rc;

	snprintf(num, sizeof(num), "%lld", (long long)v);
	wbuf_init(&w);
	wbuf_put_bytes(&w, KEY, strlen(KEY));
	wbuf_put_bytes(&w, num, strlen(num));
	rc = request(d, i, W_REQ_PUT, &w, NULL, e);
	wbuf_free(&w);
	return rc;
}

/* KEY's value at agent i as the agent serves it now. */
static int
get_int(struct demo *d, int i, int64_t *v, struct cs_err *e)
{
	struct api_reply r;
	struct wbuf w;
	char num[32], *end;
	int rc = -1;

	wbuf_init(&w);
	wbuf_put_bytes(&w, KEY, strlen(KEY));
	if (request(d, i, W_REQ_GET, &w, &r, e) == -1)
		goto out;
	cs_printable(r.body, r.blen, num, sizeof(num), 0);
	api_reply_free(&r);
	errno = 0;
	*v = strtoll(num, &end, 10);
	if (num[0] == '\0' || *end != '\0' || errno != 0) {
		cs_errf(e, "agent %s: %s is not an integer",
		    d->c->agents[i].name, KEY);
		goto out;
	}
	rc = 0;
out:
	wbuf_free(&w);
	return rc;
}

static int
channel(struct demo *d, int src, int hold, int reverse, struct cs_err *e)
{
	struct wbuf w;
	int rc;

	wbuf_init(&w);
	wbuf_put_str(&w, d->c->agents[1 - src].name);
	if (!hold)
		wbuf_put_u8(&w, (uint8_t)reverse);
	rc = request(d, src, hold ? W_REQ_HOLD : W_REQ_RELEASE, &w, NULL, e);
	wbuf_free(&w);
	return rc;
}

static int
transfer(struct demo *d, int src, int64_t amount, struct cs_err *e)
{
	struct wbuf w;
	int rc;

	wbuf_init(&w);
	wbuf_put_bytes(&w, KEY, strlen(KEY));
	wbuf_put_str(&w, d->c->agents[1 - src].name);
	wbuf_put_bytes(&w, KEY, strlen(KEY));
	wbuf_put_i64(&w, amount);
	rc = request(d, src, W_REQ_TRANSFER, &w, NULL, e);
	wbuf_free(&w);
	return rc;
}

/* Entries queued on src's outgoing channel to dst in its status; -1 if
 * it has no such channel. */
static long
queued(const struct agstat *st, const char *dst)
{
	size_t k;

	for (k = 0; k < st->nout; k++)
		if (strcmp(st->out[k].peer, dst) == 0)
			return (long)st->out[k].queued;
	return -1;
}

/* Start a snapshot in a child process, as "cutsnap snapshot" would run
 * next to the agents; the child writes "ID MESSAGE" into fd. */
static int
snapshot_start(struct demo *d, int initiator, int *rfd, struct cs_err *e)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) == -1)
		return cs_errno(e, "pipe");
	fflush(NULL);
	if ((d->snap_pid = fork()) == -1) {
		d->snap_pid = 0;
		close(fds[0]);
		close(fds[1]);
		return cs_errno(e, "fork");
	}
	if (d->snap_pid == 0) {
		struct coord_opts o = { .repo = d->repo,
		    .initiator = d->c->agents[initiator].name,
		    .timeout_s = SNAP_TIMEOUT_S, .recheck_age_s = -1 };
		struct cs_err ce;
		uint64_t id = 0;
		int r;

		/* Interrupting the demo ends this process at once. */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		close(fds[0]);
		ce.msg[0] = '\0';
		r = coord_snapshot(d->c, &o, &id, &ce);
		dprintf(fds[1], "%llu %s", (unsigned long long)id,
		    r == 0 ? "" : ce.msg);
		_exit(r == 0 ? 0 : 1);
	}
	close(fds[1]);
	*rfd = fds[0];
	return 0;
}

/* Wait for the snapshot child; its snapshot id in *id. */
static int
snapshot_wait(struct demo *d, int rfd, uint64_t *id, struct cs_err *e)
{
	char buf[CS_ERR_MAX + 32], *sp;
	ssize_t n;
	size_t off = 0;
	int status, rc = -1;

	while (off < sizeof(buf) - 1) {
		n = read(rfd, buf + off, sizeof(buf) - 1 - off);
		if (n == -1 && errno == EINTR && !interrupted)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	buf[off] = '\0';
	if (interrupted) {
		cs_errf(e, "interrupted");
		goto out;
	}
	while (waitpid(d->snap_pid, &status, 0) == -1 && errno == EINTR)
		;
	d->snap_pid = 0;
	*id = strtoull(buf, &sp, 10);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		/* The child wrote coord_snapshot's message, which names
		 * the snapshot when one was created. */
		cs_errf(e, "%s", *sp ? sp + 1 : "the snapshot process died");
		goto out;
	}
	rc = 0;
out:
	close(rfd);
	return rc;
}

/* Wait until the snapshot's marker is queued behind the held message on
 * src->dst (the source has recorded its state). */
static int
wait_marker(struct demo *d, int src, struct cs_err *e)
{
	int64_t deadline = cs_now_ms() + WAIT_MARKER_MS;
	struct agstat st;
	long n;
	int status;

	for (;;) {
		if (check_interrupted(e) == -1)
			return -1;
		if (api_agent_stat(d->c, src, 2000, &st, e) == -1)
			return -1;
		n = queued(&st, d->c->agents[1 - src].name);
		agstat_free(&st);
		if (n >= 2)
			return 0;
		if (waitpid(d->snap_pid, &status, WNOHANG) == d->snap_pid) {
			d->snap_pid = 0;
			return cs_errf(e, "the snapshot ended before its "
			    "marker reached %s", d->c->agents[src].name);
		}
		if (cs_now_ms() >= deadline)
			return cs_errf(e, "no marker queued at %s after %d ms "
			    "(%ld entries queued to %s)",
			    d->c->agents[src].name, WAIT_MARKER_MS, n,
			    d->c->agents[1 - src].name);
		cs_sleep_ms(20);
	}
}

/* Wait until agent i serves KEY = want (the held transfer has landed). */
static int
wait_value(struct demo *d, int i, int64_t want, struct cs_err *e)
{
	int64_t deadline = cs_now_ms() + WAIT_CREDIT_MS, v = 0;

	for (;;) {
		if (check_interrupted(e) == -1 || get_int(d, i, &v, e) == -1)
			return -1;
		if (v == want)
			return 0;
		if (cs_now_ms() >= deadline)
			return cs_errf(e, "%s at %s is %lld after %d ms, "
			    "expected %lld", KEY, d->c->agents[i].name,
			    (long long)v, WAIT_CREDIT_MS, (long long)want);
		cs_sleep_ms(20);
	}
}

static void
expect(struct demo *d, const char *what, int64_t got, int64_t want)
{
	if (got == want)
		return;
	d->env->warn("%s: total is %lld, expected %lld", what, (long long)got,
	    (long long)want);
	d->wrong++;
}

/* The naive backups: each file copied on its own, at different moments. */
static int
show_copies(struct demo *d, const struct demo_case *dc, struct cs_err *e)
{
	/* Moments per line: the source before the debit (t0) with the
	 * target after the credit (t2), then the source after the debit (t1)
	 * with the target before the credit (t0). */
	static const char *const mom[2][2] = { { "t0", "t2" }, { "t1", "t0" } };
	int src = dc->src, dst = 1 - src, k, i;
	int64_t total = dc->init[0] + dc->init[1];
	const char *label[2];
	int64_t v[2];
	char note[256];

	for (k = 0; k < 2; k++) {
		label[src] = mom[k][0];
		label[dst] = mom[k][1];
		for (i = 0; i < 2; i++)
			if (copy_value(d, i, label[i], &v[i], e) == -1)
				return -1;
		snprintf(note, sizeof(note), "%s copied %s the debit, %s %s "
		    "the credit", d->c->agents[src].name, k == 0 ? "before" :
		    "after", d->c->agents[dst].name, k == 0 ? "after" :
		    "before");
		printf("  independent copies: %s(%s)=%lld + %s(%s)=%lld = %lld"
		    "   (%s)\n", d->c->agents[0].name, label[0],
		    (long long)v[0], d->c->agents[1].name, label[1],
		    (long long)v[1], (long long)(v[0] + v[1]), note);
		expect(d, "independent copies",
		    v[0] + v[1], k == 0 ? total + dc->amount :
		    total - dc->amount);
	}
	return 0;
}

static void
on_problem(void *ctx, const char *line)
{
	(void)ctx;
	printf("  problem: %s\n", line);
}

/* Verify the snapshot and print its cut, read from the repository: the
 * recorded files' values plus the recorded in-flight messages. */
static int
show_cut(struct demo *d, const struct demo_case *dc, struct store *st,
    uint64_t id, struct cs_err *e)
{
	struct store_contents sc;
	struct chmsg m;
	uint64_t resolved;
	int64_t v, total = 0, flight;
	char line[1024], what[128];
	size_t i, j, off;
	int n, rc = -1;

	memset(&sc, 0, sizeof(sc));
	if ((n = store_verify(st, id, &resolved, on_problem, NULL, e)) == -1)
		return -1;
	if (n > 0)
		return cs_errf(e, "snapshot %llu: %d problems",
		    (unsigned long long)id, n);
	if (store_read_contents(st, id, &resolved, &sc, e) == -1)
		return -1;
	off = (size_t)snprintf(line, sizeof(line), "cut:");
	for (i = 0; i < sc.nfiles; i++) {
		snprintf(what, sizeof(what), "snapshot %llu file of %s",
		    (unsigned long long)id, sc.files[i].agent);
		if (image_value(sc.files[i].data, sc.files[i].len, what, &v,
		    e) == -1)
			goto out;
		total += v;
		off += (size_t)snprintf(line + off, sizeof(line) - off,
		    " %s=%lld", sc.files[i].agent, (long long)v);
	}
	for (i = 0; i < sc.nmsgs; i = j) {
		flight = 0;
		for (j = i; j < sc.nmsgs && strcmp(sc.msgs[j].src,
		    sc.msgs[i].src) == 0 && strcmp(sc.msgs[j].dst,
		    sc.msgs[i].dst) == 0; j++) {
			if (chmsg_decode(sc.msgs[j].data, sc.msgs[j].len,
			    &m) == -1) {
				cs_errf(e, "snapshot %llu: message %llu on "
				    "%s->%s is malformed",
				    (unsigned long long)id,
				    (unsigned long long)sc.msgs[j].seq,
				    sc.msgs[j].src, sc.msgs[j].dst);
				goto out;
			}
			if (m.klen == strlen(KEY) &&
			    memcmp(m.key, KEY, m.klen) == 0)
				flight += m.amount;
		}
		total += flight;
		off += (size_t)snprintf(line + off, sizeof(line) - off,
		    ", in flight %s->%s: %lld", sc.msgs[i].src, sc.msgs[i].dst,
		    (long long)flight);
		if (off >= sizeof(line))
			off = sizeof(line) - 1;
	}
	if (sc.nmsgs == 0)
		off += (size_t)snprintf(line + off, sizeof(line) - off,
		    ", nothing in flight");
	if (off < sizeof(line))
		snprintf(line + off, sizeof(line) - off, ", total %lld",
		    (long long)total);
	printf("  snapshot %llu verified: %zu recorded files, %zu in-flight "
	    "message%s\n", (unsigned long long)id, sc.nfiles, sc.nmsgs,
	    sc.nmsgs == 1 ? "" : "s");
	printf("  %s\n", line);
	expect(d, "cut", total, dc->init[0] + dc->init[1]);
	rc = 0;
out:
	store_contents_free(&sc);
	return rc;
}

/* Stop the agents, restore the snapshot into their data paths and print
 * what the restored files hold. */
static int
restore_and_show(struct demo *d, const struct demo_case *dc,
    struct store *st, uint64_t id, struct cs_err *e)
{
	uint64_t resolved;
	int64_t v[2];
	int i;

	if (d->env->stop(d->c, 10, e) == -1)
		return -1;
	d->started = 0;
	if (store_restore(st, id, d->c, &resolved, on_problem, NULL, e) == -1)
		return -1;
	for (i = 0; i < 2; i++)
		if (file_value(d->c->agents[i].data, &v[i], e) == -1)
			return -1;
	printf("  restored: %s=%lld + %s=%lld = %lld\n", d->c->agents[0].name,
	    (long long)v[0], d->c->agents[1].name, (long long)v[1],
	    (long long)(v[0] + v[1]));
	expect(d, "restored", v[0] + v[1], dc->init[0] + dc->init[1]);
	return 0;
}

static int
write_config(struct demo *d, struct cs_err *e)
{
	static const char text[] =
	    "[cluster]\n"
	    "run_dir = run\n"
	    "\n"
	    "[agent A]\n"
	    "data = a.data\n"
	    "\n"
	    "[agent B]\n"
	    "data = b.data\n";
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/copies", d->dir);
	if (fs_mkdir_p(path, 0700, e) == -1)
		return -1;
	snprintf(path, sizeof(path), "%s/cluster.ini", d->dir);
	if (fs_atomic_write_file(path, text, sizeof(text) - 1, 0600, e) == -1)
		return -1;
	return cfg_load(path, &d->c, e);
}

/* The steps of one case, up to the snapshot's id. */
static int
record(struct demo *d, const struct demo_case *dc, uint64_t *id,
    struct cs_err *e)
{
	int src = dc->src, dst = 1 - src, rfd = -1, rc;

	d->started = 1;		/* some may run even if starting fails */
	if (d->env->start(d->c, 10, d->pids, NULL, e) == -1)
		return -1;
	if (put_int(d, 0, dc->init[0], e) == -1 ||
	    put_int(d, 1, dc->init[1], e) == -1 ||
	    copy_both(d, "t0", e) == -1 ||
	    channel(d, src, 1, 0, e) == -1 ||
	    transfer(d, src, dc->amount, e) == -1 ||
	    copy_both(d, "t1", e) == -1 ||
	    snapshot_start(d, dc->initiator, &rfd, e) == -1)
		return -1;
	rc = wait_marker(d, src, e);
	/* Release even when waiting failed, so that the snapshot ends. */
	if (channel(d, src, 0, dc->reverse, rc == 0 ? e : NULL) == -1)
		rc = -1;
	if (snapshot_wait(d, rfd, id, rc == 0 ? e : NULL) == -1)
		rc = -1;
	if (rc == 0 && (wait_value(d, dst, dc->init[dst] + dc->amount,
	    e) == -1 || copy_both(d, "t2", e) == -1))
		rc = -1;
	return rc;
}

static void
cleanup(struct demo *d)
{
	struct cs_err e;
	int i;

	if (d->snap_pid > 0) {
		kill(d->snap_pid, SIGTERM);
		while (waitpid(d->snap_pid, NULL, 0) == -1 && errno == EINTR)
			;
		d->snap_pid = 0;
	}
	if (d->started && d->env->stop(d->c, 10, &e) == -1) {
		d->env->warn("%s; killing the demo's agents", e.msg);
		for (i = 0; i < 2; i++) {
			if (d->pids[i] > 0 && kill(d->pids[i], SIGKILL) == 0)
				waitpid(d->pids[i], NULL, 0);
		}
	}
	d->started = 0;
	cfg_free(d->c);
	d->c = NULL;
}

static int
run_case(const struct demo_env *env, const char *top, int n,
    const struct demo_case *dc)
{
	struct demo d;
	struct store *st = NULL;
	struct cs_err e;
	uint64_t id = 0;
	int rc = -1;

	memset(&d, 0, sizeof(d));
	d.env = env;
	printf("%s\n", dc->title);
	e.msg[0] = '\0';
	if (snprintf(d.dir, sizeof(d.dir), "%s/case%d", top, n) >=
	    (int)sizeof(d.dir) || snprintf(d.repo, sizeof(d.repo), "%s/repo",
	    d.dir) >= (int)sizeof(d.repo)) {
		cs_errf(&e, "path too long: %s", top);
		goto out;
	}
	if (write_config(&d, &e) == -1 || record(&d, dc, &id, &e) == -1 ||
	    show_copies(&d, dc, &e) == -1)
		goto out;
	if (store_open(d.repo, 0, &st, &e) == -1 ||
	    show_cut(&d, dc, st, id, &e) == -1 ||
	    restore_and_show(&d, dc, st, id, &e) == -1)
		goto out;
	rc = d.wrong ? 1 : 0;
out:
	if (rc == -1)
		env->warn("%s", e.msg);
	store_close(st);
	cleanup(&d);
	putchar('\n');
	fflush(stdout);
	return rc;
}

void
demo_catch_signals(void)
{
	cs_catch_stop_signals(on_signal);
}

int
demo_interrupted(void)
{
	return interrupted != 0;
}

int
demo_run(const struct demo_env *env, const char *top, size_t *ncases)
{
	size_t i;
	int failed = 0;

	*ncases = NCASES;
	printf("Two agents A and B each own one data file holding '%s'. A "
	    "transfer is held\nin flight on a channel while the files are "
	    "copied one by one at moments\nt0 < t1 < t2, and while a snapshot "
	    "records a consistent cut.\n\n", KEY);
	for (i = 0; i < NCASES && !interrupted; i++)
		if (run_case(env, top, (int)i + 1, &cases[i]) != 0)
			failed++;
	return failed;
}
