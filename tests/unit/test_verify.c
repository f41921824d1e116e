/* test_verify.c - verify and restore on small real snapshots built by
 * hand: data files written with datalog, blobs, a commit with the seed's
 * in-flight message. A good snapshot verifies and restores (twice, and
 * after a crash half-way) to A=90, B=60; every kind of damage is named
 * and stops restore; inconsistent cuts are caught from the files. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "../../lib/bigbuf.h"
#include "../../log/chain.h"
#include "../../proto/chmsg.h"
#include "../../log/chunkhash.h"
#include "../../log/datalog.h"
#include "../../log/dlfile.h"
#include "../../lib/fsutil.h"
#include "../../crypto/sha.h"
#include "../../store/backend.h"
#include "../../store/store_int.h"
#include "unit.h"

struct fix {
	char dir[64];
	char repo[128];
	char rconf[128];	/* the restore target's config */
	char ra[128], rb[128];	/* its data files */
	struct cfg *cfg;	/* the cluster's config */
	uint8_t sha[2][32];	/* recorded files of A and B */
	uint8_t chunks[2][8][32];	/* their chunk digests */
	size_t nchunks[2];
};

/* When set, verify and restore read the blobs through a directory
 * backend over this directory (store_opts.blob_backend), as they read
 * an object store's, instead of REPO/blobs. */
static const char *via_dir;


/* History chains in the seed's files (chain.h): CHAIN_NONE as older
 * versions wrote them; CHAIN_SAME: SEND and APPLY carry the chain; CHAIN_OTHER:
 * B's APPLY carries a chain of another history. */
enum { CHAIN_NONE, CHAIN_SAME, CHAIN_OTHER };
static int seed_chain = CHAIN_NONE;
static uint8_t seed_c1[DL_CHAIN_LEN];	/* the chain after A->B seq 1 */
static const uint8_t seed_id[CHMSG_ID_LEN] = { 7, 7, 7 };

static void
append(struct datalog *dl, enum dl_type type, const char *peer,
    uint64_t seq, const char *val, const struct wbuf *msg)
{
	static const uint8_t other[DL_CHAIN_LEN] = { 0x0d, 0x1f };
	struct dl_record r;
	struct cs_err e;

	memset(&r, 0, sizeof(r));
	if (seed_chain != CHAIN_NONE && (type == DL_SEND || type == DL_APPLY))
		r.chain = seed_chain == CHAIN_OTHER && type == DL_APPLY ?
		    other : seed_c1;
	r.type = type;
	r.peer = peer;
	r.seq = seq;
	r.key = (const uint8_t *)"x";
	r.klen = 1;
	r.val = (const uint8_t *)val;
	r.vlen = strlen(val);
	if (msg != NULL) {
		r.msg = msg->data;
		r.msglen = msg->len;
	}
	assert_int_equal(datalog_append(dl, &r, &e), 0);
}

/* The chunk digests of dl's file into f and the report (which points at
 * f's copy). */
static void
take_chunks(struct fix *f, int i, struct datalog *dl, struct report *r)
{
	const struct chunkhash *h = datalog_chunks(dl);
	size_t k;

	r->chunk_size = chunkhash_size(h);
	assert_int_equal(r->chunk_size, chunk_size_default());
	r->nchunks = (size_t)chunk_count(r->size, r->chunk_size);
	assert_true(r->nchunks >= 1 && r->nchunks <= 8);
	for (k = 0; k < chunkhash_nfull(h); k++)
		memcpy(f->chunks[i][k], chunkhash_digest(h, k), 32);
	if (k < r->nchunks)
		assert_int_equal(chunkhash_peek(h, f->chunks[i][k]), 0);
	f->nchunks[i] = r->nchunks;
	r->chunks = f->chunks[i];
}

/* The seed, with variations: A=100 and, if a_sent, a transfer of 10 to B
 * (A=90, sent 1); B=50 and, if b_applied, that message applied (B=60).
 * The report of B's incoming channel carries `amount` as seq 1 if
 * amount != 0, and the channel A->B as applied b_applied, sent a_sent. */
/* When set, build() reports a consistent cut whatever the files hold (an
 * agent that lies about its watermarks), so only verify, which reads the
 * files, can find the problem; when clear, the commit checks the reports
 * and build() expects commit_want from it (its error in commit_err). */
static int lie;
static int a_acked;	/* A's file also holds an ACK of seq 1 from B */
static int commit_want;
static char commit_err[CS_ERR_MAX];

static void
build(struct fix *f, int a_sent, int b_applied, int64_t amount)
{
	struct store *st;
	struct datalog *dl;
	struct report r[2];
	struct rep_wm a_sent_wm = { "B", 1 }, b_app_wm = { "A", 1 };
	struct rep_channel a_in, b_in;
	struct rep_msg m;
	struct wbuf msg, rep;
	struct chunk_stats cs;
	const char *paths[2];
	char pad[9001];
	struct cs_err e;
	uint64_t id;
	int i;

	memset(pad, 'p', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	wbuf_init(&msg);
	wbuf_init(&rep);
	if (seed_chain == CHAIN_NONE) {
		chmsg_encode(&msg, "x", 1, 10);
		chmsg_encode(&rep, "x", 1, amount);
	} else {	/* a chained sender's messages carry an id */
		chmsg_encode_id(&msg, "x", 1, 10, seed_id);
		chmsg_encode_id(&rep, "x", 1, amount, seed_id);
	}
	assert_int_equal(chain_next(NULL, 1, msg.data, msg.len, seed_c1), 0);
	memset(r, 0, sizeof(r));
	memset(&a_in, 0, sizeof(a_in));
	memset(&b_in, 0, sizeof(b_in));
	for (i = 0; i < 2; i++) {
		assert_int_equal(datalog_open(f->cfg->agents[i].data, &dl, &e),
		    0);
		append(dl, DL_PUT, NULL, 0, i == 0 ? "100" : "50", NULL);
		if (i == 0)	/* A's file spans three 4 KiB chunks */
			append(dl, DL_PUT, NULL, 0, pad, NULL);
		if (i == 0 && a_sent)
			append(dl, DL_SEND, "B", 1, "90", &msg);
		if (i == 0 && a_sent && a_acked)
			append(dl, DL_ACK, "B", 1, "", NULL);
		if (i == 1 && b_applied)
			append(dl, DL_APPLY, "A", 1, "60", NULL);
		assert_int_equal(datalog_sync(dl, &e), 0);
		r[i].size = datalog_end(dl);
		assert_int_equal(datalog_prefix_sha(dl, r[i].sha), 0);
		memcpy(f->sha[i], r[i].sha, 32);
		take_chunks(f, i, dl, &r[i]);
		datalog_close(dl);
		snprintf(r[i].agent, sizeof(r[i].agent), "%s",
		    f->cfg->agents[i].name);
	}
	snprintf(a_in.src, sizeof(a_in.src), "B");
	snprintf(b_in.src, sizeof(b_in.src), "A");
	b_in.applied = (uint64_t)b_applied;
	b_in.sent = (uint64_t)a_sent;
	m.seq = 1;
	m.data = rep.data;
	m.len = rep.len;
	b_in.nmsgs = amount != 0;
	b_in.msgs = &m;
	r[0].nsent = a_sent != 0;
	r[0].sent = &a_sent_wm;
	r[0].nchannels = 1;
	r[0].channels = &a_in;
	r[1].napplied = b_applied != 0;
	r[1].applied = &b_app_wm;
	r[1].nchannels = 1;
	r[1].channels = &b_in;
	if (lie && a_sent != b_applied && amount == 0) {
		r[0].nsent = r[1].napplied = 1;
		b_in.applied = b_in.sent = 1;
	}

	/* The damage tests below write into the chunks themselves. */
	if (access(f->repo, F_OK) != 0) {
		struct store_settings set = { STORE_COMPRESS_NONE };

		assert_int_equal(store_init(f->repo, &set, &e), 0);
	}
	assert_int_equal(store_open(f->repo, 1, &st, &e), 0);
	assert_int_equal(store_begin_snapshot(st, "B", f->cfg->text,
	    unit_uid(), &id, &e),
	    0);
	for (i = 0; i < 2; i++) {
		r[i].snap_id = id;
		paths[i] = f->cfg->agents[i].data;
	}
	assert_int_equal(store_put_chunks(st, paths, r, 2, &cs, &e), 0);
	assert_int_equal(cs.chunks, f->nchunks[0] + f->nchunks[1]);
	assert_int_equal(store_commit_snapshot(st, id, f->cfg, r, 2, &e),
	    commit_want);
	snprintf(commit_err, sizeof(commit_err), "%s", commit_want ? e.msg :
	    "");
	store_close(st);
	wbuf_free(&msg);
	wbuf_free(&rep);
}

static int
setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	char path[160];
	struct cs_err e;

	assert_non_null(f);
	/* Small chunks: the recorded files span several. */
	setenv("CUTSNAP_CHUNK_SIZE", "4096", 1);
	assert_int_equal(unit_mkdtemp(f->dir, sizeof(f->dir)), 0);
	snprintf(f->repo, sizeof(f->repo), "%s/repo", f->dir);
	snprintf(path, sizeof(path), "%s/c.conf", f->dir);
	unit_write_text(path, "[agent A]\ndata = a.data\n"
	    "[agent B]\ndata = b.data\n");
	assert_int_equal(cfg_load(path, &f->cfg, &e), 0);
	snprintf(path, sizeof(path), "%s/r", f->dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(f->rconf, sizeof(f->rconf), "%s/r/c.conf", f->dir);
	unit_write_text(f->rconf, "[agent A]\ndata = d/a.data\n"
	    "[agent B]\ndata = d/b.data\n");
	snprintf(f->ra, sizeof(f->ra), "%s/r/d/a.data", f->dir);
	snprintf(f->rb, sizeof(f->rb), "%s/r/d/b.data", f->dir);
	*state = f;
	return 0;
}

static int
setup_seed(void **state)
{
	setup(state);
	build(*state, 1, 0, 10);
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;

	via_dir = NULL;
	cfg_free(f->cfg);
	assert_int_equal(unit_rmtree(f->dir), 0);
	free(f);
	return 0;
}

/* The blob of chunk k of the agent's recorded file. */
static void
chunk_of(const struct fix *f, int agent, size_t k, char *out, size_t outsz)
{
	char hex[SHA_HEX_LEN];

	assert_true(k < f->nchunks[agent]);
	sha_hex(f->chunks[agent][k], hex);
	snprintf(out, outsz, "%s/blobs/%.2s/%s", f->repo, hex, hex);
}

static void
open_repo(const struct fix *f, struct store **st, struct store_backend **b,
    struct cs_err *e)
{
	struct store_opts o;

	*b = NULL;
	if (via_dir == NULL) {
		assert_int_equal(store_open(f->repo, 0, st, e), 0);
		return;
	}
	memset(&o, 0, sizeof(o));
	assert_int_equal(store_backend_dir(via_dir, b, e), 0);
	o.blob_backend = *b;
	assert_int_equal(store_open_with(f->repo, 0, &o, st, e), 0);
}

/* Verify snapshot 0 (the newest complete); the result, problems in p.
 * Every chunk buffer verify maps is unmapped again, whatever it found
 * (LeakSanitizer does not see mappings: bigbuf counts them). */
static int
verify(const struct fix *f, struct unit_probs *p)
{
	struct store_backend *b;
	struct store *st;
	struct cs_err e;
	uint64_t got;
	long live = bigbuf_live();
	int n;

	memset(p, 0, sizeof(*p));
	open_repo(f, &st, &b, &e);
	n = store_verify(st, 0, &got, unit_collect, p, &e);
	store_close(st);
	store_backend_close(b);
	assert_int_equal(bigbuf_live(), live);
	return n;
}

/* Restore the newest snapshot into the restore config; e gets the error.
 * Its buffers are all unmapped again, as verify's. */
static int
restore(const struct fix *f, struct cs_err *e)
{
	struct store_backend *b;
	struct store *st;
	struct cfg *c;
	struct unit_probs p;
	uint64_t got;
	long live = bigbuf_live();
	int rc;

	memset(&p, 0, sizeof(p));
	assert_int_equal(cfg_load(f->rconf, &c, e), 0);
	open_repo(f, &st, &b, e);
	rc = store_restore(st, 0, c, &got, unit_collect, &p, e);
	store_close(st);
	store_backend_close(b);
	cfg_free(c);
	assert_int_equal(bigbuf_live(), live);
	return rc;
}

/* x and the applied seq from src in the data file at path. */
static void
expect_file(const char *path, const char *x, const char *src,
    uint64_t applied)
{
	struct dl_state st;
	struct cs_err e;
	const uint8_t *v;
	uint8_t *buf;
	size_t len, vlen;

	assert_int_equal(fs_read_file(path, 1 << 20, &buf, &len, &e), 0);
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(buf, len, path, 0, &st, NULL, &e), 0);
	assert_int_equal(kvmap_get(st.kv, "x", 1, &v, &vlen), 1);
	assert_int_equal(vlen, strlen(x));
	assert_memory_equal(v, x, vlen);
	assert_int_equal(dl_wm_get(&st.applied, src), applied);
	dl_state_free(&st);
	free(buf);
}

static void
expect_refused(const struct fix *f, const char *needle)
{
	struct cs_err e;

	assert_int_equal(restore(f, &e), -1);
	assert_non_null(strstr(e.msg, needle));
	assert_int_equal(access(f->ra, F_OK), -1);
	assert_int_equal(access(f->rb, F_OK), -1);
}

static void
good_snapshot_verifies(void **state)
{
	struct unit_probs p;

	assert_int_equal(verify(*state, &p), 0);
	assert_int_equal(p.n, 0);
}

static void
flipped_byte_in_chunk(void **state)
{
	struct fix *f = *state;
	struct unit_probs p;
	char path[256], want[128];
	uint8_t c;
	int fd;

	assert_int_equal(f->nchunks[0], 3);
	chunk_of(f, 0, 1, path, sizeof(path));
	assert_true((fd = open(path, O_RDWR)) >= 0);
	assert_int_equal(pread(fd, &c, 1, 20), 1);
	c ^= 0x40;
	assert_int_equal(pwrite(fd, &c, 1, 20), 1);
	close(fd);
	/* One problem, naming the damaged chunk and no other. */
	assert_int_equal(verify(f, &p), 1);
	snprintf(want, sizeof(want), "snapshot 1: agent A: chunk 1 (%.12s) "
	    "sha256 mismatch", strrchr(path, '/') + 1);
	assert_true(unit_has(&p, want));
	expect_refused(f, "snapshot 1 failed verification; nothing was "
	    "restored");
}

static void
truncated_chunk(void **state)
{
	struct fix *f = *state;
	struct unit_probs p;
	char path[256], want[128];
	struct stat sb;

	chunk_of(f, 1, 0, path, sizeof(path));
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(truncate(path, 10), 0);
	snprintf(want, sizeof(want), "size mismatch: expected %lld bytes, "
	    "found 10", (long long)sb.st_size);
	assert_int_equal(verify(f, &p), 1);
	assert_true(unit_has(&p, "agent B: chunk 0 ("));
	assert_true(unit_has(&p, want));
	expect_refused(f, "failed verification");
}

static void
deleted_chunk(void **state)
{
	struct fix *f = *state;
	struct unit_probs p;
	char path[256];

	chunk_of(f, 0, 2, path, sizeof(path));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(verify(f, &p), 1);
	assert_true(unit_has(&p, "agent A: chunk 2 ("));
	assert_true(unit_has(&p, "missing"));
	expect_refused(f, "failed verification");
}

/* Every chunk blob of the snapshot copied to DIR/mirror/blobs (which
 * via_dir then names), and the originals removed: what verify and
 * restore read can only come through the backend. */
static void
mirror_chunks(struct fix *f, char *mirror, size_t n)
{
	char src[256], dst[512], sub[512];
	struct cs_err e;
	uint8_t *buf;
	size_t len, k;
	int a, fd;

	snprintf(mirror, n, "%s/mirror", f->dir);
	for (a = 0; a < 2; a++)
		for (k = 0; k < f->nchunks[a]; k++) {
			chunk_of(f, a, k, src, sizeof(src));
			if (access(src, F_OK) < 0)
				continue;	/* a chunk both agents share */
			snprintf(dst, sizeof(dst), "%s/blobs/%s", mirror,
			    strstr(src, "/blobs/") + 7);
			snprintf(sub, sizeof(sub), "%s", dst);
			*strrchr(sub, '/') = '\0';
			assert_int_equal(fs_mkdir_p(sub, 0700, &e), 0);
			assert_int_equal(fs_read_file(src, 1 << 20, &buf, &len,
			    &e), 0);
			assert_true((fd = open(dst, O_WRONLY | O_CREAT | O_EXCL,
			    0600)) >= 0);
			assert_int_equal(write(fd, buf, len), (ssize_t)len);
			close(fd);
			free(buf);
			assert_int_equal(unlink(src), 0);
		}
	via_dir = mirror;
}

static void
backend_verifies_and_restores(void **state)
{
	struct fix *f = *state;
	struct unit_probs p;
	struct cs_err e;
	char mirror[128], path[256];

	mirror_chunks(f, mirror, sizeof(mirror));
	chunk_of(f, 0, 0, path, sizeof(path));
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(verify(f, &p), 0);
	assert_int_equal(p.n, 0);
	assert_int_equal(restore(f, &e), 0);
	expect_file(f->ra, "90", "B", 0);
	expect_file(f->rb, "60", "A", 1);
	via_dir = NULL;
	/* Without the backend the blobs are gone. */
	assert_true(verify(f, &p) > 0);
}

static void
backend_names_damage(void **state)
{
	struct fix *f = *state;
	struct unit_probs p;
	char mirror[128], path[256], want[512], *m;
	uint8_t c;
	int fd;

	mirror_chunks(f, mirror, sizeof(mirror));
	/* A's chunk 1 flipped, B's chunk 0 deleted, in the mirror. */
	chunk_of(f, 0, 1, path, sizeof(path));
	m = strstr(path, "/blobs/");
	snprintf(want, sizeof(want), "%s%s", mirror, m);
	assert_true((fd = open(want, O_RDWR)) >= 0);
	assert_int_equal(pread(fd, &c, 1, 20), 1);
	c ^= 0x40;
	assert_int_equal(pwrite(fd, &c, 1, 20), 1);
	close(fd);
	chunk_of(f, 1, 0, path, sizeof(path));
	snprintf(want, sizeof(want), "%s%s", mirror, strstr(path, "/blobs/"));
	assert_int_equal(unlink(want), 0);
	assert_true(verify(f, &p) > 0);
	assert_true(unit_has(&p, "agent A: chunk 1 ("));
	assert_true(unit_has(&p, "sha256 mismatch"));
	/* Not moved aside: the backend's object is what is damaged. */
	assert_true(unit_has(&p, "not quarantined: the object is "));
	chunk_of(f, 0, 1, path, sizeof(path));
	snprintf(want, sizeof(want), "%s%s", mirror, strstr(path, "/blobs/"));
	assert_int_equal(access(want, F_OK), 0);
	snprintf(want, sizeof(want), "%s/quarantine", f->repo);
	assert_int_equal(access(want, F_OK), -1);
	assert_true(unit_has(&p, "agent B: chunk 0 ("));
	/* The missing object is named where the backend looked. */
	snprintf(want, sizeof(want), "missing (expected %s", "");
	assert_true(unit_has(&p, want));
	assert_true(unit_has(&p, mirror));
	expect_refused(f, "failed verification");
	via_dir = NULL;
}

/* A report of A's whole data file (first appending a PUT of val, unless
 * NULL), as its agent would send it. */
static void
report_a(struct fix *f, const char *val, struct report *r)
{
	struct datalog *dl;
	struct cs_err e;

	assert_int_equal(datalog_open(f->cfg->agents[0].data, &dl, &e), 0);
	if (val != NULL) {
		append(dl, DL_PUT, NULL, 0, val, NULL);
		assert_int_equal(datalog_sync(dl, &e), 0);
	}
	memset(r, 0, sizeof(*r));
	snprintf(r->agent, sizeof(r->agent), "A");
	r->size = datalog_end(dl);
	assert_int_equal(datalog_prefix_sha(dl, r->sha), 0);
	take_chunks(f, 0, dl, r);
	datalog_close(dl);
}

/* A's file grows by one record after the snapshot: storing the new prefix
 * copies only the chunk that changed (the partial last one), and a data
 * file whose bytes differ from the report is refused, naming the chunk. */
static void
second_store_copies_only_new_chunks(void **state)
{
	struct fix *f = *state;
	const char *path = f->cfg->agents[0].data;
	struct chunk_stats cs;
	struct report r;
	struct store *st;
	struct cs_err e;

	report_a(f, "7", &r);
	assert_int_equal(r.nchunks, 3);
	assert_int_equal(store_open(f->repo, 0, &st, &e), 0);
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(cs.chunks, 3);
	assert_int_equal(cs.copied, 1);
	assert_true(cs.bytes == r.size - 2 * 4096);
	/* Everything stored now: nothing to copy. */
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(cs.copied, 0);
	assert_true(cs.bytes == 0);
	/* The file's last chunk is not what the report says (a digest not
	 * stored yet, so it is read): refused, naming the chunk. */
	f->chunks[0][2][0] ^= 1;
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), -1);
	assert_non_null(strstr(e.msg, "agent A: data file "));
	assert_non_null(strstr(e.msg, "changed under the snapshot: chunk 2 "
	    "(bytes 8192.."));
	store_close(st);
}

/* r, grown to chunks of twice its chunk size, with their digests taken
 * from the file at path into big. */
static void
big_report(struct report *r, const char *path, uint8_t big[8][32])
{
	uint8_t *buf;
	size_t k, len;
	int fd;

	r->chunk_size *= 2;
	r->nchunks = (size_t)chunk_count(r->size, r->chunk_size);
	assert_non_null(buf = malloc(r->chunk_size));
	assert_true((fd = open(path, O_RDONLY)) >= 0);
	for (k = 0; k < r->nchunks; k++) {
		len = r->size - k * r->chunk_size < r->chunk_size ?
		    (size_t)(r->size - k * r->chunk_size) : r->chunk_size;
		assert_true(pread(fd, buf, len, (off_t)(k * r->chunk_size)) ==
		    (ssize_t)len);
		assert_int_equal(sha256_buf(buf, len, big[k]), 0);
	}
	close(fd);
	free(buf);
	r->chunks = big;
}

/* A process keeps its copy workers' buffers from one run to the next
 * (chunkstore.c: bufs_take): runs from one process into two framed
 * repositories (the buffers reused), a raw one (no object buffers: the
 * kept ones are freed), a framed one again, and one with chunks twice
 * as large (the kept buffers too small) each store every chunk so that
 * its blob decodes to the chunk's bytes. */
static void
runs_in_one_process_store_exact_chunks(void **state)
{
	struct fix *f = *state;
	const char *path = f->cfg->agents[0].data;
	struct store_settings zstd = { .compress = STORE_COMPRESS_ZSTD };
	char repo[5][192], hex[SHA_HEX_LEN], blob[PATH_MAX];
	uint8_t got[SHA_LEN], name[SHA_LEN], *plain, big[8][32];
	struct chunk_stats cs;
	struct report r;
	struct store *st;
	struct cs_err e;
	size_t i, k, len;

	report_a(f, "9", &r);
	assert_non_null(plain = malloc(r.chunk_size));
	for (i = 0; i < 5; i++) {
		if (i == 4) {
			/* Chunks twice as large: the kept buffers are too
			 * small and must not be used. */
			big_report(&r, path, big);
			free(plain);
			assert_non_null(plain = malloc(r.chunk_size));
		}
		if (i == 2)
			snprintf(repo[i], sizeof(repo[i]), "%s", f->repo);
		else
			snprintf(repo[i], sizeof(repo[i]), "%s/z%zu", f->dir, i);
		if (i != 2)
			assert_int_equal(store_init(repo[i], &zstd, &e), 0);
		assert_int_equal(store_open(repo[i], 0, &st, &e), 0);
		assert_int_equal(store_obj_framed(st), i != 2);
		assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e),
		    0);
		assert_int_equal(cs.chunks, r.nchunks);
		for (k = 0; k < r.nchunks; k++) {
			len = r.size - k * r.chunk_size < r.chunk_size ?
			    (size_t)(r.size - k * r.chunk_size) : r.chunk_size;
			store_name(st, r.chunks[k], name);
			sha_hex(name, hex);
			assert_int_equal(store_blob_path(st, hex, blob,
			    sizeof(blob), &e), 0);
			assert_int_equal(store_obj_load(st, name, blob, plain,
			    len, &e), 0);
			assert_int_equal(sha256_buf(plain, len, got), 0);
			assert_memory_equal(got, r.chunks[k], SHA_LEN);
		}
		store_close(st);
	}
	free(plain);
}

/* chunk_fetch_fn over a file: what an agent on another host sends;
 * flip != 0 damages the bytes of each piece on the way. */
struct fetch_ctx {
	const char *path;
	int flip;
	size_t calls;
	uint64_t bytes;
};

static int
fetch_file(void *ctx, size_t i, uint64_t off, uint8_t *buf, size_t len,
    struct cs_err *e)
{
	struct fetch_ctx *fc = ctx;
	int fd, rc;

	assert_true(i == 0);
	if ((fd = open(fc->path, O_RDONLY)) < 0)
		return cs_errno(e, "open %s", fc->path);
	rc = pread(fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -1;
	close(fd);
	if (rc < 0)
		return cs_errf(e, "short read");
	if (fc->flip)
		buf[len - 1] ^= 0x40;
	fc->calls++;
	fc->bytes += len;
	return 0;
}

/* A recorded file with no path (on another host) comes through the fetch
 * function, only its new chunks; one damaged on the way is refused and
 * leaves no blob; without a fetch function it is refused too. */
static void
fetched_chunks_are_checked(void **state)
{
	struct fix *f = *state;
	struct fetch_ctx fc = { f->cfg->agents[0].data, 1, 0, 0 };
	const char *path = NULL;
	struct chunk_stats cs;
	struct report r;
	struct store *st;
	struct cs_err e;

	report_a(f, "8", &r);
	assert_int_equal(r.nchunks, 3);
	assert_int_equal(store_open(f->repo, 0, &st, &e), 0);
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), -1);
	assert_non_null(strstr(e.msg, "no way to read its recorded file"));
	store_set_fetch(st, fetch_file, &fc);
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), -1);
	assert_non_null(strstr(e.msg, "agent A: chunk 2 (bytes 8192.."));
	assert_non_null(strstr(e.msg, "arrived damaged: sha256 mismatch"));
	assert_int_equal(fc.calls, 1);
	fc.flip = 0;
	fc.calls = 0;
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(fc.calls, 1);
	assert_int_equal(cs.copied, 1);
	assert_true(cs.fetched == r.size - 2 * 4096);
	assert_true(cs.bytes == cs.fetched);
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(fc.calls, 1);
	assert_true(cs.fetched == 0);
	store_close(st);
	assert_int_equal(verify(f, &(struct unit_probs){ 0 }), 0);
}

/* blob_target.has of the test below: every name is in the "bucket". */
static int
has_all(void *ctx, const uint8_t name[SHA_LEN])
{
	(*(int *)ctx)++;
	(void)name;
	return 1;
}

/* A chunk the repository lacks but the blob target (an object store) has
 * is neither read nor written; without the target it is copied. */
static void
chunk_in_target_is_not_copied(void **state)
{
	struct fix *f = *state;
	const char *path = f->cfg->agents[0].data;
	struct chunk_stats cs;
	struct report r;
	struct store *st;
	struct cs_err e;
	int asked = 0;
	struct blob_target t = { "s3://b/p", NULL, NULL, has_all, NULL,
	    &asked };

	struct store_opts o = { .blob_target = &t };

	report_a(f, "8", &r);
	assert_int_equal(store_open_with(f->repo, 0, &o, &st, &e), 0);
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	store_close(st);
	assert_int_equal(asked, 1);
	assert_int_equal(cs.copied, 0);
	assert_true(cs.bytes == 0);
	assert_int_equal(store_open(f->repo, 0, &st, &e), 0);
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(cs.copied, 1);
	store_close(st);
}

/* Flip one byte of the blob at path, in place (the blob's ctime moves,
 * as any write's does). */
static void
flip_blob(const char *path, off_t at)
{
	uint8_t c;
	int fd;

	assert_true((fd = open(path, O_RDWR)) >= 0);
	assert_int_equal(pread(fd, &c, 1, at), 1);
	c ^= 0x01;
	assert_int_equal(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

/* Run stmt on REPO/blobchecks.db (blobcheck.c). */
static void
bcheck_sql(const struct fix *f, const char *stmt)
{
	char path[PATH_MAX];
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/blobchecks.db", f->repo);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE,
	    NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	assert_int_equal(sqlite3_exec(db, stmt, NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

/* A blob edited in place is hashed again before its reuse even within
 * the recheck age, found bad, quarantined and copied again from the data
 * file; the blobs left alone are trusted by their records. Before, an
 * edit's fresh mtime read as "checked just now". */
static void
edited_blob_is_rechecked(void **state)
{
	struct fix *f = *state;
	const char *path = f->cfg->agents[0].data;
	char blob[256], q[256];
	struct chunk_stats cs;
	struct report r;
	struct store *st;
	struct cs_err e;

	report_a(f, NULL, &r);
	assert_int_equal(r.nchunks, 3);
	chunk_of(f, 0, 1, blob, sizeof(blob));
	flip_blob(blob, 7);
	assert_int_equal(store_open(f->repo, 0, &st, &e), 0);
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(cs.rechecked, 1);
	assert_int_equal(cs.healed, 1);
	assert_int_equal(cs.copied, 1);
	/* Healed and recorded: the next store reads nothing back. */
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(cs.rechecked, 0);
	assert_int_equal(cs.copied, 0);
	store_close(st);
	snprintf(q, sizeof(q), "%s/quarantine/%s", f->repo,
	    strrchr(blob, '/') + 1);
	assert_int_equal(access(q, F_OK), 0);
	assert_int_equal(verify(f, &(struct unit_probs){ 0 }), 0);
}

/* Put a new file with the same bytes over the blob at path, as a copy
 * renamed over it does: another inode under the name. */
static void
replace_blob(const char *path)
{
	char tmp[300], buf[65536];
	ssize_t n;
	int in, out;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	assert_true((in = open(path, O_RDONLY)) >= 0);
	assert_true((out = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	assert_int_equal(close(out), 0);
	assert_int_equal(rename(tmp, path), 0);
}

/* A blob replaced by another file with the same bytes (a new inode) is
 * hashed again, found good and reused; so is one without a record. */
static void
replaced_blob_is_rechecked_and_reused(void **state)
{
	struct fix *f = *state;
	const char *path = f->cfg->agents[0].data;
	char blob[256];
	struct chunk_stats cs;
	struct report r;
	struct store *st;
	struct cs_err e;
	struct stat a, b;

	report_a(f, NULL, &r);
	chunk_of(f, 0, 0, blob, sizeof(blob));
	assert_int_equal(stat(blob, &a), 0);
	replace_blob(blob);
	assert_int_equal(stat(blob, &b), 0);
	assert_true(a.st_ino != b.st_ino);
	assert_int_equal(store_open(f->repo, 0, &st, &e), 0);
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(cs.rechecked, 1);
	assert_int_equal(cs.healed, 0);
	assert_int_equal(cs.copied, 0);
	/* Every record gone: each reused blob is hashed once, then
	 * trusted again. */
	bcheck_sql(f, "DELETE FROM checks");
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(cs.rechecked, 3);
	assert_int_equal(cs.copied, 0);
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(cs.rechecked, 0);
	store_close(st);
	assert_int_equal(verify(f, &(struct unit_probs){ 0 }), 0);
}

/* A blob that rotted without a trace (its record still matches: here
 * the record is made to match the bad bytes' look): with a recheck age
 * of 0, or once its check is older than the age, the next store hashes
 * it, quarantines it and copies the chunk again; good ones are reused. */
static void
recheck_heals_a_bad_blob(void **state)
{
	struct fix *f = *state;
	const char *path = f->cfg->agents[0].data;
	char blob[256], q[256], sql[512];
	struct chunk_stats cs;
	struct report r;
	struct store *st;
	struct cs_err e;
	struct stat sb;

	report_a(f, NULL, &r);
	chunk_of(f, 0, 1, blob, sizeof(blob));
	flip_blob(blob, 7);
	assert_int_equal(stat(blob, &sb), 0);
	snprintf(sql, sizeof(sql), "UPDATE checks SET ctime_ns = %lld "
	    "WHERE name = x'%s'", (long long)sb.st_ctim.tv_sec * 1000000000 +
	    (long long)sb.st_ctim.tv_nsec, strrchr(blob, '/') + 1);
	bcheck_sql(f, sql);
	assert_int_equal(store_open(f->repo, 0, &st, &e), 0);
	/* Within the default age the blob is trusted by its record. */
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(cs.rechecked, 0);
	assert_int_equal(cs.copied, 0);
	store_set_recheck_age(st, 0);
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(cs.rechecked, 3);
	assert_int_equal(cs.healed, 1);
	assert_int_equal(cs.copied, 1);
	/* Checked a day ago, with an age of an hour: hashed, good. */
	store_set_recheck_age(st, 3600);
	bcheck_sql(f, "UPDATE checks SET checked = checked - 86400");
	assert_int_equal(store_put_chunks(st, &path, &r, 1, &cs, &e), 0);
	assert_int_equal(cs.rechecked, 3);
	assert_int_equal(cs.healed, 0);
	store_close(st);
	snprintf(q, sizeof(q), "%s/quarantine/%s", f->repo,
	    strrchr(blob, '/') + 1);
	assert_int_equal(access(q, F_OK), 0);
	assert_int_equal(verify(f, &(struct unit_probs){ 0 }), 0);
}

static void
deleted_messages_row(void **state)
{
	struct fix *f = *state;
	struct unit_probs p;

	unit_sql(f->repo, "DELETE FROM messages");
	assert_int_equal(verify(f, &p), 2);
	assert_true(unit_has(&p, "snapshot 1: manifest digest mismatch: rows were "
	    "edited or deleted"));
	assert_true(unit_has(&p, "snapshot 1: channel A->B: message seq 1 missing "
	    "(expected seqs 1..1, in flight)"));
	expect_refused(f, "failed verification");
}

static void
tampered_types_and_sizes(void **state)
{
	struct fix *f = *state;
	struct unit_probs p;

	unit_sql(f->repo, "UPDATE messages SET seq = 'one', data = 'text'");
	unit_sql(f->repo, "UPDATE agents SET size = 1e300 WHERE name = 'A'");
	unit_sql(f->repo, "UPDATE agents SET size = 9223372036854775807, "
	    "sha256 = x'00' WHERE name = 'B'");
	unit_sql(f->repo, "UPDATE snapshots SET config = 'nonsense', "
	    "digest = NULL");
	assert_true(verify(f, &p) >= 4);
	assert_true(unit_has(&p, "message row 1: malformed"));
	assert_true(unit_has(&p, "agent A: malformed manifest row"));
	assert_true(unit_has(&p, "manifest digest mismatch"));
	assert_true(unit_has(&p, "config does not parse"));
	expect_refused(f, "failed verification");
}

static void
schema_version_changed(void **state)
{
	struct fix *f = *state;
	struct store *st = NULL;
	struct cs_err e;

	unit_sql(f->repo, "PRAGMA user_version = 4");
	assert_int_equal(store_open(f->repo, 0, &st, &e), -1);
	assert_non_null(strstr(e.msg, "unsupported manifest schema version 4 "
	    "(expected 3)"));
}

static void
garbage_manifest(void **state)
{
	struct fix *f = *state;
	struct store *st = NULL;
	struct unit_probs p;
	struct cs_err e;
	char path[256], junk[4096];
	uint64_t got;
	int fd, rc;

	/* Garbage over the middle: open may work, verify must not crash. */
	snprintf(path, sizeof(path), "%s/manifest.db", f->repo);
	memset(junk, 0x5a, sizeof(junk));
	assert_true((fd = open(path, O_WRONLY)) >= 0);
	assert_int_equal(pwrite(fd, junk, sizeof(junk), 4096), sizeof(junk));
	close(fd);
	memset(&p, 0, sizeof(p));
	if (store_open(f->repo, 0, &st, &e) == 0) {
		rc = store_verify(st, 1, &got, unit_collect, &p, &e);
		assert_true(rc != 0);
		store_close(st);
	}
	/* Garbage all over: a clear error. */
	assert_true((fd = open(path, O_WRONLY | O_TRUNC)) >= 0);
	assert_int_equal(write(fd, junk, sizeof(junk)), sizeof(junk));
	close(fd);
	assert_int_equal(store_open(f->repo, 0, &st, &e), -1);
	assert_non_null(strstr(e.msg, "not a usable manifest"));
}

static void
restore_replays_in_flight_message_once(void **state)
{
	struct fix *f = *state;
	struct cs_err e;
	uint8_t *a1, *b1, *a2, *b2;
	size_t la1, lb1, la2, lb2;

	assert_int_equal(restore(f, &e), 0);
	expect_file(f->ra, "90", "B", 0);
	expect_file(f->rb, "60", "A", 1);
	assert_int_equal(fs_read_file(f->ra, 1 << 20, &a1, &la1, &e), 0);
	assert_int_equal(fs_read_file(f->rb, 1 << 20, &b1, &lb1, &e), 0);
	/* Again: the same bytes, the message still applied once. */
	assert_int_equal(restore(f, &e), 0);
	assert_int_equal(fs_read_file(f->ra, 1 << 20, &a2, &la2, &e), 0);
	assert_int_equal(fs_read_file(f->rb, 1 << 20, &b2, &lb2, &e), 0);
	assert_int_equal(la1, la2);
	assert_int_equal(lb1, lb2);
	assert_memory_equal(a1, a2, la1);
	assert_memory_equal(b1, b2, lb1);
	expect_file(f->rb, "60", "A", 1);
	free(a1);
	free(b1);
	free(a2);
	free(b2);
}

/* The first column of the first row of stmt, as an int. */
static int
query_int(const struct fix *f, const char *stmt)
{
	char path[256];
	sqlite3_stmt *s;
	sqlite3 *db;
	int v;

	snprintf(path, sizeof(path), "%s/manifest.db", f->repo);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, stmt, -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	return v;
}

/* Turn f's repository (built with one chunk per file) into what
 * version 1 wrote: no chunk rows, the digest over version 1's rows (or
 * `digest` when not NULL), user_version 1. Version 1's blob of a file is
 * the file itself, which is also its one chunk. */
static void
make_version_1(struct fix *f, const char *digest)
{
	char hex[SHA_HEX_LEN], stmt[256];
	struct store *st;
	struct cs_err e;
	int i;

	for (i = 0; i < 2; i++) {
		assert_int_equal(f->nchunks[i], 1);
		assert_memory_equal(f->chunks[i][0], f->sha[i], 32);
	}
	unit_sql(f->repo, "DROP TABLE agent_chunks");
	assert_int_equal(store_open(f->repo, 0, &st, &e), 0);
	assert_int_equal(store_digest_v(st, 1, 1, hex, &e), 0);
	store_close(st);
	snprintf(stmt, sizeof(stmt), "UPDATE snapshots SET digest = '%s'; "
	    "PRAGMA user_version = 1", digest ? digest : hex);
	unit_sql(f->repo, stmt);
}

/* A writer's open upgrades a version 1 repository (a reader refuses it):
 * it verifies and restores as before, and the schema is current. */
static void
upgrade(const struct fix *f)
{
	struct store *st;
	struct cs_err e;

	assert_int_equal(store_open(f->repo, STORE_READ, &st, &e), -1);
	assert_non_null(strstr(e.msg, "needs an upgrade"));
	assert_int_equal(store_open(f->repo, STORE_WRITE, &st, &e), 0);
	store_close(st);
}

static void
version_1_repository_is_migrated(void **state)
{
	struct fix *f = *state;
	struct unit_probs p;
	struct cs_err e;

	setenv("CUTSNAP_CHUNK_SIZE", "4194304", 1);
	build(f, 1, 0, 10);
	make_version_1(f, NULL);
	upgrade(f);
	assert_int_equal(verify(f, &p), 0);
	assert_int_equal(p.n, 0);
	assert_int_equal(query_int(f, "PRAGMA user_version"),
	    STORE_SCHEMA_VERSION);
	assert_int_equal(query_int(f, "SELECT count(*) FROM agent_chunks "
	    "WHERE idx = 0 AND offset = 0"), 2);
	assert_int_equal(restore(f, &e), 0);
	expect_file(f->ra, "90", "B", 0);
	expect_file(f->rb, "60", "A", 1);
}

/* A version 1 manifest whose digest no longer matched its rows is not
 * re-sealed by the migration: verify still says so. */
static void
version_1_tampering_survives_migration(void **state)
{
	struct fix *f = *state;
	struct unit_probs p;

	setenv("CUTSNAP_CHUNK_SIZE", "4194304", 1);
	build(f, 1, 0, 10);
	make_version_1(f, "0000000000000000000000000000000000000000000000000000"
	    "000000000000");
	upgrade(f);
	assert_int_equal(verify(f, &p), 1);
	assert_true(unit_has(&p, "manifest digest mismatch: rows were edited or "
	    "deleted (expected 0000000000000000"));
}

/* A version 1 manifest with a snapshot id below 1 (edited: SQLite gives
 * none) cannot be re-sealed: the writer's open fails as corrupt, with a
 * message naming the id, and leaves version 1. */
static void
version_1_bad_id_fails_migration(void **state)
{
	struct fix *f = *state;
	struct store *st;
	struct cs_err e;

	setenv("CUTSNAP_CHUNK_SIZE", "4194304", 1);
	build(f, 1, 0, 10);
	make_version_1(f, NULL);
	unit_sql(f->repo, "UPDATE snapshots SET id = 0");
	memset(&e, 0, sizeof(e));
	assert_int_equal(store_open(f->repo, STORE_WRITE, &st, &e), -1);
	assert_int_equal(cs_err_code(&e), CS_E_CORRUPT);
	assert_non_null(strstr(e.msg, "a snapshot with id 0"));
	assert_int_equal(query_int(f, "PRAGMA user_version"), 1);
}

static void
restore_killed_half_way_then_again(void **state)
{
	struct fix *f = *state;
	struct cs_err e;
	struct stat sb;
	pid_t pid;
	int status;

	if ((pid = fork()) == 0) {
		setenv("CUTSNAP_FAULT", "restore-after-file:1", 1);
		restore(f, &e);
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 99);
	/* A is wholly restored; B is still the empty file restore created
	 * to hold its lock on (so no agent could create it meanwhile). */
	expect_file(f->ra, "90", "B", 0);
	assert_int_equal(stat(f->rb, &sb), 0);
	assert_int_equal(sb.st_size, 0);
	assert_int_equal(restore(f, &e), 0);
	expect_file(f->ra, "90", "B", 0);
	expect_file(f->rb, "60", "A", 1);
}

static void
restore_refused_while_locked(void **state)
{
	struct fix *f = *state;
	struct datalog *dl;
	struct cs_err e;
	char want[256], dir[160];

	snprintf(dir, sizeof(dir), "%s/r/d", f->dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	/* An "agent" holds B's file. */
	assert_int_equal(datalog_open(f->rb, &dl, &e), 0);
	snprintf(want, sizeof(want), "agent B is running (data file %s is "
	    "locked); stop the cluster first", f->rb);
	assert_int_equal(restore(f, &e), -1);
	assert_string_equal(e.msg, want);
	assert_int_equal(access(f->ra, F_OK), -1);
	datalog_close(dl);
	assert_int_equal(restore(f, &e), 0);
	expect_file(f->rb, "60", "A", 1);
}

static void
restore_needs_the_same_agents(void **state)
{
	struct fix *f = *state;

	unit_write_text(f->rconf, "[agent A]\ndata = d/a.data\n"
	    "[agent C]\ndata = d/c.data\n");
	expect_refused(f, "has agent C, which snapshot 1 does not have");
}

/* The 160: B applied the message, A recorded before sending it. */
static void
receive_without_send_from_files(void **state)
{
	struct unit_probs p;

	setup(state);
	lie = 1;
	build(*state, 0, 1, 0);
	lie = 0;
	assert_int_equal(verify(*state, &p), 1);
	assert_string_equal(p.line[0], "snapshot 1: channel A->B: applied 1 "
	    "> sent 0 (receive without send)");
	expect_refused(*state, "failed verification");
	teardown(state);
}

/* The 140: A sent, B did not apply, and nothing recorded in flight. */
static void
dropped_in_flight_from_files(void **state)
{
	struct unit_probs p;

	setup(state);
	lie = 1;
	build(*state, 1, 0, 0);
	lie = 0;
	assert_int_equal(verify(*state, &p), 1);
	assert_string_equal(p.line[0], "snapshot 1: channel A->B: message "
	    "seq 1 missing (expected seqs 1..1, in flight)");
	teardown(state);
}

/* The same cuts reported as they are: the commit refuses them, so they
 * are never listed complete. */
static void
commit_refuses_inconsistent_reports(void **state)
{
	struct unit_probs p;

	setup(state);
	commit_want = -1;
	build(*state, 1, 0, 0);
	assert_string_equal(commit_err, "the cut is inconsistent: channel "
	    "A->B: message seq 1 missing (expected seqs 1..1, in flight)");
	build(*state, 0, 1, 0);
	commit_want = 0;
	assert_string_equal(commit_err, "the cut is inconsistent: channel "
	    "A->B: applied 1 > sent 0 (receive without send)");
	memset(&p, 0, sizeof(p));
	assert_int_equal(verify(*state, &p), -1);
	teardown(state);
}

/* The recorded message is not what A's file says it sent; also when A's
 * file holds B's ACK of it although B's recorded file has not applied it
 * (an ACK can overtake B's marker): verify keeps only unacknowledged
 * sends on its first replay, so it must replay A's file again for the
 * send it compares the message with. */
static void
message_differs_from_send(void **state)
{
	struct unit_probs p;

	for (a_acked = 0; a_acked < 2; a_acked++) {
		setup(state);
		build(*state, 1, 0, 20);
		assert_int_equal(verify(*state, &p), 1);
		assert_string_equal(p.line[0], "snapshot 1: channel A->B: "
		    "message seq 1 differs from the SEND record in A's "
		    "recorded file");
		teardown(state);
	}
	a_acked = 0;
}

/* The chain in the files: files of one history verify and restore; the
 * restored receiver's chain is the sender's, as the live agents check. */
static void
chains_of_one_history(void **state)
{
	struct fix *f;
	struct unit_probs p;
	struct cs_err e;
	struct dl_state st;
	uint8_t *buf;
	size_t len;

	setup(state);
	f = *state;
	seed_chain = CHAIN_SAME;
	build(f, 1, 0, 10);		/* the 10 in flight */
	seed_chain = CHAIN_NONE;
	assert_int_equal(verify(f, &p), 0);
	assert_int_equal(restore(f, &e), 0);
	expect_file(f->rb, "60", "A", 1);
	assert_int_equal(fs_read_file(f->rb, 1 << 20, &buf, &len, &e), 0);
	assert_int_equal(dl_state_init(&st, 0), 0);
	assert_int_equal(dl_replay(buf, len, f->rb, 0, &st, NULL, &e), 0);
	assert_non_null(dl_wm_chain(&st.applied, "A"));
	assert_memory_equal(dl_wm_chain(&st.applied, "A"), seed_c1,
	    DL_CHAIN_LEN);
	dl_state_free(&st);
	free(buf);
	teardown(state);
}

/* B applied seq 1 of another history: the seqs agree, the chains do not;
 * verify says so and restore writes nothing. */
static void
chains_of_two_histories(void **state)
{
	struct fix *f;
	struct unit_probs p;
	struct cs_err e;

	setup(state);
	f = *state;
	seed_chain = CHAIN_OTHER;
	build(f, 1, 1, 0);
	seed_chain = CHAIN_NONE;
	assert_int_equal(verify(f, &p), 1);
	assert_string_equal(p.line[0], "snapshot 1: channel A->B: B's history "
	    "at applied seq 1 and the recorded messages do not lead to A's at "
	    "sent seq 1: the recorded files come from different histories");
	assert_int_equal(restore(f, &e), -1);
	assert_int_equal(access(f->rb, F_OK), -1);
	teardown(state);
}

/* Both moved on consistently: nothing in flight, still consistent. */
static void
delivered_message_is_consistent(void **state)
{
	struct unit_probs p;
	struct cs_err e;

	setup(state);
	build(*state, 1, 1, 0);
	assert_int_equal(verify(*state, &p), 0);
	assert_int_equal(restore(*state, &e), 0);
	expect_file(((struct fix *)*state)->rb, "60", "A", 1);
	teardown(state);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_seed, teardown)
	const struct CMUnitTest tests[] = {
		T(good_snapshot_verifies),
		cmocka_unit_test_setup_teardown(
		    version_1_repository_is_migrated, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    version_1_tampering_survives_migration, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    version_1_bad_id_fails_migration, setup, teardown),
		T(second_store_copies_only_new_chunks),
		T(runs_in_one_process_store_exact_chunks),
		T(recheck_heals_a_bad_blob),
		T(edited_blob_is_rechecked),
		T(chunk_in_target_is_not_copied),
		T(replaced_blob_is_rechecked_and_reused),
		T(fetched_chunks_are_checked),
		T(flipped_byte_in_chunk),
		T(truncated_chunk),
		T(deleted_chunk),
		T(backend_verifies_and_restores),
		T(backend_names_damage),
		T(deleted_messages_row),
		T(tampered_types_and_sizes),
		T(schema_version_changed),
		T(garbage_manifest),
		T(restore_replays_in_flight_message_once),
		T(restore_killed_half_way_then_again),
		T(restore_refused_while_locked),
		T(restore_needs_the_same_agents),
		cmocka_unit_test(receive_without_send_from_files),
		cmocka_unit_test(dropped_in_flight_from_files),
		cmocka_unit_test(commit_refuses_inconsistent_reports),
		cmocka_unit_test(message_differs_from_send),
		cmocka_unit_test(delivered_message_is_consistent),
		cmocka_unit_test(chains_of_one_history),
		cmocka_unit_test(chains_of_two_histories),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
