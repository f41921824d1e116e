/* objrepo.c - repositories on an object store: -r s3://BUCKET/PREFIX.
 * Every object is read and written through a storage backend (backend.h).
 *
 * A command runs unchanged on a local repository directory that stands in
 * for the bucket, and this file moves what it needs in and out:
 *
 *   PREFIX/blobs/XX/NAME         a blob, immutable, created only once
 *   PREFIX/blobs/.repository-id  the repository's identity
 *   PREFIX/manifests/GEN-R.db    a whole manifest (SQLite), immutable
 *   PREFIX/manifests/GEN-R.delta a manifest delta (store/mdelta.c),
 *                                immutable
 *   PREFIX/manifests/GEN-R.idx   an index of older deltas (objchain.c),
 *                                immutable
 *   PREFIX/commits/GEN           "cutsnap-commit 1" (2, 3), the manifest's
 *                                key, its SHA-256 and size, the index and
 *                                the deltas after it (objchain.c), the
 *                                generation and highest snapshot id
 *                                (objgen.c); created only once
 *   PREFIX/lease                 the writer lease: owner and expiry
 *
 * GEN is 20 decimal digits, so the newest commit is the last key of a
 * listing. A writer (snapshot, forget, init, key, load) takes the lease,
 * brings its cache (CUTSNAP_CACHE_DIR, else $XDG_CACHE_HOME/cutsnap or
 * ~/.cache/cutsnap, one directory per bucket and prefix) to the newest
 * commit, runs the command there and publishes: the blobs the bucket
 * lacks (create-only, in parallel), then the manifest's change since the
 * commit it read (a delta, now and then after an index, or the whole
 * manifest: objchain.c), then the commit GEN+1, create-only and last.
 * The blobs a writer copies go up while it runs, and only there: the
 * store hands each chunk object, once checked and encoded, to an upload
 * pipe (store_pipe: worker threads, each with a connection of its own)
 * from memory (at most 64 MiB queued), so the cache holds no blob and
 * the local disk none of the snapshot's bytes, and the command's wall
 * time is about the longer of the copy and the upload, not their sum;
 * publishing first waits for every queued upload to be acknowledged (a
 * failed upload fails the copy, or at the latest the publishing, so
 * nothing is committed) and checks the bucket lists each one. A reader (ls, show, verify, restore) needs no local state: it
 * reads the newest commit, fetches the manifest it names into a new
 * temporary directory, checks its SHA-256, and runs the command there
 * with the store reading each chunk object straight from the bucket as
 * it needs it (store/backend.h: a worker's buffer, never a file); verify
 * and restore check every blob against its name as they do locally, so
 * a changed or deleted object is found and restore writes nothing.
 *
 * Invariants: a snapshot is visible only through a commit, which is
 * created after everything it names; a commit, a manifest or a blob is
 * never overwritten; the cache is only a cache (a marker names the commit
 * it holds, and anything else is fetched again, or, for a blob the
 * bucket has, never needed: the copy consults the bucket's listing) and
 * bounded (after a commit it keeps only the newest snapshot's blobs,
 * cache_collect); prune deletes only
 * blobs no manifest of the newest commit refers to, and manifest pieces
 * no commit it keeps names, and only those older than its grace period,
 * while holding the lease (and its fence commit folds the manifest's
 * deltas into a whole one). */
#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "objchain.h"
#include "objgen.h"
#include "objrepo.h"
#include "store.h"
#include "upload_pipe.h"
#include "../crypto/sha.h"
#include "../lib/fsutil.h"
#include "../lib/util.h"
#include "../proto/chunkobj.h"

#define COMMIT_CAP 4096
#define LEASE_CAP 4096
#define LEASE_TTL 60		/* seconds a lease lasts without renewal, */
#define LEASE_TTL_MIN 6		/* unless CUTSNAP_S3_LEASE_SECONDS says */
#define LEASE_TTL_MAX 3600


/* A set of blob names: appended to, sorted when looked up. */
struct shaset {
	uint8_t (*v)[SHA_LEN];
	size_t n, cap, sorted;
	int oom;
};

struct lease {
	struct store_backend *b;	/* for the renewing thread */
	char etag[STORE_TAG_MAX];
	char owner[128];
	int ttl;		/* seconds */
	time_t expires;		/* of the last successful renewal */
	int lost;		/* a renewal found the lease taken */
	int stop;
	int running;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

struct objrepo {
	struct store_backend *b;	/* the bucket */
	char url[PATH_MAX];	/* its name for messages */
	struct objrepo_args a;
	enum objrepo_kind kind;
	char dir[PATH_MAX];	/* the local repository the command uses */
	int temp;		/* dir is ours to remove */
	uint64_t gen;		/* the commit read, 0 when none */
	uint64_t top;		/* the highest commit number listed */
	char ctext[COMMIT_CAP];	/* the text of the commit read */
	int cache_fd;		/* holds the cache's lock, or -1 */
	uint64_t want;		/* --commit N of a reader, 0: the newest */
	struct objgen rec;	/* the generations known outside its manifest */
	struct store_gen_floor floor;	/* what rec says, for the store's
					 * check at open */
	struct objchain chain;	/* the manifest it names (objchain.c) */
	struct lease lease;
	int leased;
	uint64_t up_blobs, up_bytes, had_blobs;
	uint64_t up_manifest;	/* bytes of manifest pieces it uploaded */
	int up_full;		/* the last one was a whole manifest */
	int based;		/* dir/.s3-base.db holds the state the
				 * commit read: publish uploads a delta */
	uint64_t collected;	/* cached blobs dropped after the commit */
	struct store_pipe *pipe;	/* a writer's uploads during the command */
	struct store_pipe_stats piped;	/* its counts at the last drain */
	uint64_t fresh;		/* blobs it created since the drain before */
	/* Agents' own uploads (blob_target): the bucket's blobs, listed at
	 * the first question, and the names the coordinator did not store
	 * through the cache (an agent stored them, or the bucket had them),
	 * which the publishing finds in the bucket or commits nothing. */
	struct blob_target target;
	char **listed;
	size_t nlisted;
	int list_tried;
	pthread_mutex_t setmu;	/* vouched and put: the copy's threads
				 * stream blobs while agents report theirs */
	struct shaset vouched;	/* everything the publishing checks */
	struct shaset put;	/* of those, what the agents stored or the
				 * copy streamed */
	char **stand_keys;	/* a prune's stand-ins (stand_ins) */
	size_t nstand;
	enum { SYNC_CURRENT, SYNC_CAUGHT_UP, SYNC_FETCHED } synced;
	size_t caught_up;	/* the deltas it applied (SYNC_CAUGHT_UP) */
	char fold[PATH_MAX + 32];	/* a prune's copy of the manifest
					 * read, when its chain has deltas
					 * (fence_commit), or "" */
};

#define WARN(ss, ...) ((ss)->a.warn(__VA_ARGS__))

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

static int
rm_rf(const char *path)
{
	if (access(path, F_OK) < 0)
		return 0;
	return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int
write_small(const char *path, const void *p, size_t n, struct cs_err *e)
{
	char tmp[PATH_MAX + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((f = fopen(tmp, "we")) == NULL)
		return cs_errno(e, "create %s", tmp);
	if (fwrite(p, 1, n, f) != n || fflush(f) != 0 || fsync(fileno(f)) < 0) {
		cs_errno(e, "write %s", tmp);
		fclose(f);
		unlink(tmp);
		return -1;
	}
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		cs_errno(e, "write %s", path);
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* The hex SHA-256 of a file's bytes and its size. */
static int
file_sha(const char *path, char hex[SHA_HEX_LEN], uint64_t *size,
    struct cs_err *e)
{
	uint8_t d[SHA_LEN];
	struct stat sb;
	FILE *f;
	int rc;

	if ((f = fopen(path, "re")) == NULL)
		return cs_errno(e, "open %s", path);
	rc = fstat(fileno(f), &sb) < 0 ? cs_errno(e, "stat %s", path) :
	    sha256_fd(fileno(f), (uint64_t)sb.st_size, d, e);
	fclose(f);
	if (rc < 0)
		return -1;
	sha_hex(d, hex);
	*size = (uint64_t)sb.st_size;
	return 0;
}

/* The whole of a local file into *body (malloc'd): 1, or 0 when there
 * is no such file, or -1 (e set). */
static int
read_file(const char *path, uint8_t **body, size_t *len, struct cs_err *e)
{
	struct stat sb;
	int fd, rc = -1;

	*body = NULL;
	*len = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : cs_errno(e, "open %s", path);
	if (fstat(fd, &sb) < 0) {
		cs_errno(e, "stat %s", path);
		goto out;
	}
	if ((*body = malloc((size_t)sb.st_size + 1)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	if (fs_pread_all(fd, *body, (size_t)sb.st_size, 0) < 0) {
		cs_errno(e, "read %s", path);
		free(*body);
		*body = NULL;
		goto out;
	}
	*len = (size_t)sb.st_size;
	rc = 1;
out:
	close(fd);
	return rc;
}

/* ---- commits ---- */

static int
parse_commit(struct objrepo *ss, const char *t, struct cs_err *e)
{
	if (objchain_parse(t, &ss->chain) < 0)
		return cs_errf(e, "%s: commit %020llu is malformed",
		    ss->url, (unsigned long long)ss->gen);
	ss->rec.head = ss->gen;
	objgen_fields(t, &ss->rec.head_gen, &ss->rec.head_max);
	return 0;
}

/* The number of a commit's key: "commits/" and exactly 20 digits that
 * print back the same (so no overflow); 0 for anything else. */
static uint64_t
commit_num(const char *key)
{
	char back[32];
	unsigned long long g;
	char *end;

	if (strlen(key) != 28 || strncmp(key, "commits/", 8) != 0 ||
	    !isdigit((unsigned char)key[8]))
		return 0;
	errno = 0;
	g = strtoull(key + 8, &end, 10);
	if (errno != 0 || *end != '\0')
		return 0;
	snprintf(back, sizeof(back), "commits/%020llu", g);
	return strcmp(back, key) == 0 ? g : 0;
}

static int
desc_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The first piece chain c names itself that the listing o lacks, or
 * NULL. (The deltas its index names are checked as they are fetched.) */
static const char *
unlisted(const struct objchain *c, struct store_obj *o, size_t n)
{
	const char *key;
	size_t i, k;

	for (k = 0; k <= c->n + 1; k++) {
		key = k == 0 ? c->base.key : k == 1 ? c->idx.key :
		    c->d[k - 2].key;
		if (key[0] == '\0')
			continue;
		for (i = 0; i < n && strcmp(o[i].key, key) != 0; i++)
			;
		if (i == n)
			return key;
	}
	return NULL;
}

/* Commit g, read and parsed into ss, when it names a manifest the bucket
 * has: 1; 0 (with a warning) when it is gone, malformed or names a
 * missing manifest; -1 on a failure to read (e set). */
static int
try_commit(struct objrepo *ss, uint64_t g, struct store_obj *man, size_t nman,
    struct cs_err *e)
{
	char key[64], *body = NULL;
	const char *gone;
	size_t len;
	struct cs_err pe;
	int rc = 0;

	snprintf(key, sizeof(key), "commits/%020llu", (unsigned long long)g);
	if (ss->b->ops->read(ss->b, key, COMMIT_CAP, &body, &len, NULL, e) <
	    0) {
		if (cs_err_code(e) != CS_E_NOTFOUND)
			return -1;
		WARN(ss, "warning: %s: %s vanished while being read; using the "
		    "one before it", ss->url, key);
	} else {
		ss->gen = g;
		if (parse_commit(ss, body, &pe) < 0)
			WARN(ss, "warning: %s; using the commit before it", pe.msg);
		else if (snprintf(ss->ctext, sizeof(ss->ctext), "%s", body) < 0)
			rc = cs_errf(e, "%s: cannot keep commit text",
			    ss->url);
		else if ((gone = unlisted(&ss->chain, man, nman)) != NULL)
			WARN(ss, "warning: %s: commit %020llu names %s, which the bucket "
			    "does not have; reading the newest commit whose "
			    "manifest exists (a writer then refuses it as a "
			    "rollback: snapshot --accept-rollback continues "
			    "from it)", ss->url, (unsigned long long)g,
			    gone);
		else
			rc = 1;
	}
	free(body);
	return rc;
}

/* A reader's --commit N: that commit and no other, whole. */
static int
read_wanted(struct objrepo *ss, const uint64_t *nums, size_t nc,
    struct store_obj *man, size_t nman, struct cs_err *e)
{
	size_t i;
	int k;

	for (i = 0; i < nc && nums[i] != ss->want; i++)
		;
	if (i == nc)
		return cs_errf(e, "%s: there is no commit %llu (the bucket has "
		    "%zu, the newest %llu)", ss->url,
		    (unsigned long long)ss->want, nc,
		    (unsigned long long)nums[0]);
	if ((k = try_commit(ss, ss->want, man, nman, e)) < 0)
		return -1;
	if (k == 0)
		return cs_errf(e, "%s: commit %llu cannot be read (see the "
		    "warning above)", ss->url,
		    (unsigned long long)ss->want);
	ss->top = nums[0];
	return 0;
}

/* How many commits below an unusable newest one are tried before giving
 * up: enough for a few damaged ones, few enough to stay quick. */
#define COMMIT_FALLBACK 16

/* The newest usable commit into ss (gen 0 when there is none). Keys under
 * commits/ that are not commit numbers are ignored with a warning (a
 * stray commits/99999999999999999999 must not stop every command); a
 * newest commit that is malformed or whose manifest is gone is passed
 * over, with a warning, for the newest one before it that is whole. */
static int
read_head(struct objrepo *ss, struct cs_err *e)
{
	struct store_obj *o = NULL, *man = NULL;
	size_t n = 0, nman = 0, i, nc = 0, tried;
	uint64_t *nums = NULL, prev[2] = { 0, 0 }, g;
	int rc = -1, k = 0;

	ss->gen = 0;
	memset(&ss->chain, 0, sizeof(ss->chain));
	if (ss->b->ops->list(ss->b, "commits/", &o, &n, e) < 0)
		return -1;
	if (n > 0 && (nums = malloc(n * sizeof(*nums))) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if ((g = commit_num(o[i].key)) != 0)
			nums[nc++] = g;
		else
			WARN(ss, "warning: %s: ignoring %s: not a commit's name",
			    ss->url, o[i].key);
	}
	if (nc == 0) {
		rc = 0;
		goto out;
	}
	qsort(nums, nc, sizeof(*nums), desc_u64);
	if (ss->b->ops->list(ss->b, "manifests/", &man, &nman, e) < 0)
		goto out;
	if (ss->want != 0) {
		rc = read_wanted(ss, nums, nc, man, nman, e);
		goto out;
	}
	for (tried = 0; tried < nc && tried < COMMIT_FALLBACK; tried++)
		if ((k = try_commit(ss, nums[tried], man, nman, e)) != 0)
			break;
	if (k < 0)
		goto out;
	if (k == 0) {
		cs_errf(e, "%s: none of the newest %zu commits names a manifest "
		    "the bucket has", ss->url, tried);
		goto out;
	}
	/* The two commits before it, and any passed over above it, for
	 * the generations they say: the rollback check weighs them. */
	ss->top = nums[0];
	for (i = tried + 1; i < nc && i < tried + 3; i++)
		prev[i - tried - 1] = nums[i];
	rc = objgen_earlier(ss->b, &ss->rec, prev, prev[1] ? 2 : prev[0] ?
	    1 : 0, e);
	if (rc == 0 && tried > 0)
		rc = objgen_earlier(ss->b, &ss->rec, nums, tried, e);
out:
	free(nums);
	store_objs_free(o, n);
	store_objs_free(man, nman);
	return rc;
}

/* Fetches key into path; 404 is an error naming what is missing. */
static int
fetch(struct objrepo *ss, const char *key, const char *path, struct cs_err *e)
{
	if (ss->b->ops->get_file(ss->b, key, path, e) == 0)
		return 0;
	if (cs_err_code(e) == CS_E_NOTFOUND)
		return cs_errf(e, "%s: %s is missing from the bucket",
		    ss->url, key);
	return -1;
}

/* The newest commit's manifest as dir/manifest.db (its base and each
 * delta checked against the commit's SHA-256s, the deltas applied), and
 * the identity as dir/blobs/.repository-id. */
static int
fetch_manifest(struct objrepo *ss, struct cs_err *e)
{
	char path[PATH_MAX + 32], hex[SHA_HEX_LEN];
	uint64_t size;

	snprintf(path, sizeof(path), "%s/blobs", ss->dir);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return cs_errno(e, "mkdir %s", path);
	snprintf(path, sizeof(path), "%s/blobs/.repository-id", ss->dir);
	if (fetch(ss, "blobs/.repository-id", path, e) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/manifest.db", ss->dir);
	if (fetch(ss, ss->chain.base.key, path, e) < 0 ||
	    file_sha(path, hex, &size, e))
		return -1;
	if (strcmp(hex, ss->chain.base.hex) != 0) {
		unlink(path);
		return cs_errf(e, "%s: %s does not match its commit %020llu "
		    "(sha256 %.12s..., expected %.12s...): the object was "
		    "changed in the bucket", ss->url, ss->chain.base.key,
		    (unsigned long long)ss->gen, hex, ss->chain.base.hex);
	}
	if (objchain_apply(ss->b, &ss->chain, path, e) < 0) {
		unlink(path);
		return -1;
	}
	return 0;
}

static void fault_commit_pause(struct objrepo *ss);

/* ---- the lease ---- */

static void
lease_text(struct lease *l, time_t expires, char *buf, size_t cap)
{
	snprintf(buf, cap, "cutsnap-lease 1\nowner %s\nexpires %lld\n",
	    l->owner, (long long)expires);
}

static void *
renewer(void *arg)
{
	struct lease *l = arg;
	struct cs_err e;
	struct timespec ts;
	char text[LEASE_CAP], etag[STORE_TAG_MAX];
	time_t exp;
	int st;

	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += l->ttl / 3;
		pthread_cond_timedwait(&l->cv, &l->mu, &ts);
		if (l->stop)
			break;
		exp = time(NULL) + l->ttl;
		lease_text(l, exp, text, sizeof(text));
		snprintf(etag, sizeof(etag), "%s", l->etag);
		pthread_mutex_unlock(&l->mu);
		st = l->b->ops->put(l->b, "lease", text, strlen(text),
		    STORE_PUT_IFMATCH, etag, etag, &e);
		pthread_mutex_lock(&l->mu);
		if (st == 0) {
			snprintf(l->etag, sizeof(l->etag), "%s", etag);
			l->expires = exp;
		} else if (cs_err_code(&e) == CS_E_EXISTS) {
			l->lost = 1;
		}
		/* Other failures: try again; the expiry says how long
		 * the lease still holds. */
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

static int
lease_take(struct objrepo *ss, struct cs_err *e)
{
	struct lease *l = &ss->lease;
	char text[LEASE_CAP], host[64], *body = NULL, etag[STORE_TAG_MAX];
	const char *p;
	long long exp = 0;
	size_t len;
	time_t now = time(NULL);
	int st, rc = -1;

	const char *t = getenv("CUTSNAP_S3_LEASE_SECONDS");

	l->ttl = LEASE_TTL;
	if (t != NULL && *t != '\0') {
		char *end;
		long v = strtol(t, &end, 10);

		if (*end != '\0' || v < LEASE_TTL_MIN || v > LEASE_TTL_MAX)
			return cs_errc(e, CS_E_USAGE, "CUTSNAP_S3_LEASE_SECONDS "
			    "must be %d to %d", LEASE_TTL_MIN, LEASE_TTL_MAX);
		l->ttl = (int)v;
	}
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	snprintf(l->owner, sizeof(l->owner), "%s pid %ld", host, (long)getpid());
	l->b = ss->b;
	lease_text(l, now + l->ttl, text, sizeof(text));
	st = ss->b->ops->put(ss->b, "lease", text, strlen(text),
	    STORE_PUT_CREATE, NULL, l->etag, e);
	if (st < 0 && cs_err_code(e) == CS_E_EXISTS) {
		/* Held or left behind: take it over only once expired. */
		if (ss->b->ops->read(ss->b, "lease", LEASE_CAP, &body, &len,
		    etag, e) < 0) {
			if (cs_err_code(e) == CS_E_NOTFOUND)
				cs_errf(e, "%s: the writer lease changed "
				    "hands; try again", ss->url);
			goto out;
		}
		if ((p = strstr(body, "\nexpires ")) == NULL ||
		    sscanf(p, "\nexpires %lld", &exp) != 1) {
			cs_errf(e, "%s: the lease object is malformed; delete "
			    "PREFIX/lease if no writer runs", ss->url);
			goto out;
		}
		if (exp > (long long)now) {
			char owner[128] = "?";

			if ((p = strstr(body, "\nowner ")) != NULL)
				sscanf(p, "\nowner %127[^\n]", owner);
			cs_errc(e, CS_E_LOCKED, "%s: another writer holds the "
			    "repository "
			    "(%s) for %llds more; try again later",
			    ss->url, owner, exp - (long long)now);
			goto out;
		}
		st = ss->b->ops->put(ss->b, "lease", text, strlen(text),
		    STORE_PUT_IFMATCH, etag, l->etag, e);
		if (st < 0 && cs_err_code(e) == CS_E_EXISTS) {
			cs_errf(e, "%s: another writer took the expired lease "
			    "first; try again later", ss->url);
			goto out;
		}
	}
	if (st < 0)
		goto out;
	l->expires = now + l->ttl;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	ss->leased = 1;
	if (pthread_create(&l->th, NULL, renewer, l) == 0)
		l->running = 1;
	rc = 0;
out:
	free(body);
	return rc;
}

/* Still ours for a while: checked right before a commit. */
static int
lease_held(struct objrepo *ss, struct cs_err *e)
{
	struct lease *l = &ss->lease;
	int ok;

	pthread_mutex_lock(&l->mu);
	ok = !l->lost && l->expires > time(NULL) + 2;
	pthread_mutex_unlock(&l->mu);
	return ok ? 0 : cs_errf(e, "%s: the writer lease was lost (another "
	    "writer took it, or it could not be renewed); nothing was "
	    "committed", ss->url);
}

/* Stops the lease's renewal thread, if it runs, and waits for it. */
static void
renewal_stop(struct lease *l)
{
	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
	if (l->running)
		pthread_join(l->th, NULL);
	l->running = 0;
}

static void
lease_drop(struct objrepo *ss)
{
	struct lease *l = &ss->lease;
	struct cs_err e;
	char *body = NULL, etag[STORE_TAG_MAX];
	size_t len;

	if (!ss->leased)
		return;
	renewal_stop(l);
	/* Delete it only while it is still ours. */
	if (ss->b->ops->read(ss->b, "lease", LEASE_CAP, &body, &len, etag,
	    &e) == 0 && !l->lost && strcmp(etag, l->etag) == 0)
		ss->b->ops->del(ss->b, "lease", &e);
	free(body);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	ss->leased = 0;
}

/* ---- local directories ---- */

/* One writer at a time per cache: a second one (the first's lease
 * lapsed while it still runs, so the second got the lease) would rewrite
 * the cache under the first. The lock is the file .writer-lock in it,
 * held until the session ends. */
static int
cache_lock(struct objrepo *ss, struct cs_err *e)
{
	char path[PATH_MAX + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/.writer-lock", ss->dir);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return cs_errno(e, "open %s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno;

		close(fd);
		if (err == EWOULDBLOCK)
			return cs_errc(e, CS_E_LOCKED, "%s: another writer on "
			    "this host still "
			    "uses the cache %s (its lease lapsed, but it has not "
			    "ended); try again once it has", ss->url,
			    ss->dir);
		errno = err;
		return cs_errno(e, "lock %s", path);
	}
	ss->cache_fd = fd;
	return 0;
}

static int
cache_dir(struct objrepo *ss, struct cs_err *e)
{
	const char *base = getenv("CUTSNAP_CACHE_DIR"), *x, *home;
	char root[PATH_MAX], id[2 * PATH_MAX + 8], hex[SHA_HEX_LEN], *p;
	uint8_t d[SHA_LEN];

	if (base != NULL && *base != '\0') {
		snprintf(root, sizeof(root), "%s", base);
	} else if ((x = getenv("XDG_CACHE_HOME")) != NULL && *x == '/') {
		snprintf(root, sizeof(root), "%s/cutsnap", x);
	} else if ((home = getenv("HOME")) != NULL && *home == '/') {
		snprintf(root, sizeof(root), "%s/.cache/cutsnap", home);
	} else {
		return cs_errf(e, "no cache directory: set CUTSNAP_CACHE_DIR");
	}
	/* One per endpoint, bucket and prefix. */
	x = getenv("AWS_ENDPOINT_URL");
	snprintf(id, sizeof(id), "%s %s", x ? x : "", ss->url);
	sha256_buf(id, strlen(id), d);
	sha_hex(d, hex);
	for (p = root + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(root, 0700) < 0 && errno != EEXIST)
				return cs_errno(e, "mkdir %s", root);
			*p = '/';
		}
	if (mkdir(root, 0700) < 0 && errno != EEXIST)
		return cs_errno(e, "mkdir %s", root);
	if (snprintf(ss->dir, sizeof(ss->dir), "%s/s3-%.16s", root, hex) >=
	    (int)sizeof(ss->dir))
		return cs_errf(e, "cache directory path too long");
	if (mkdir(ss->dir, 0700) < 0 && errno != EEXIST)
		return cs_errno(e, "mkdir %s", ss->dir);
	return cache_lock(ss, e);
}

static int
temp_dir(struct objrepo *ss, struct cs_err *e)
{
	const char *t = getenv("TMPDIR");

	snprintf(ss->dir, sizeof(ss->dir), "%s/cutsnap-s3.XXXXXX",
	    t != NULL && *t == '/' ? t : "/tmp");
	if (mkdtemp(ss->dir) == NULL)
		return cs_errno(e, "mkdtemp %s", ss->dir);
	ss->temp = 1;
	return 0;
}

/* A cache whose marker (have) names a state the newest commit's chain
 * passes through, brought to the newest by the deltas after it: 1. 0
 * when it cannot be (another chain, a new base), so that it is fetched
 * whole; a failure to apply is a warning and fetches it whole too (the
 * cache is only a cache); -1 when the bucket cannot be read. */
static int
catch_up(struct objrepo *ss, const char *have, struct cs_err *e)
{
	char hex[SHA_HEX_LEN] = "", path[PATH_MAX + 16];
	size_t n;
	int r;

	if (sscanf(have, "%*s %64s", hex) != 1 || strlen(hex) != 64)
		return 0;
	snprintf(path, sizeof(path), "%s/manifest.db", ss->dir);
	if (access(path, F_OK) < 0)
		return 0;
	r = objchain_catch_up(ss->b, &ss->chain, hex, path, &n, e);
	if (r < 0 && cs_err_code(e) != CS_E_CORRUPT)
		return -1;
	if (r < 0) {
		WARN(ss, "warning: %s: cache %s not brought up to date (%s); "
		    "fetching the manifest again", ss->url, ss->dir, e->msg);
		return 0;
	}
	if (r == 1 && n > 0) {
		ss->synced = SYNC_CAUGHT_UP;
		ss->caught_up = n;
	}
	return r;
}

/* The cache at the newest commit: its marker names the commit it holds;
 * a cache at another one gets that commit's manifest (its blobs stay
 * where the identity is the same: they are named by their contents). */
static int
sync_cache(struct objrepo *ss, struct cs_err *e)
{
	char marker[PATH_MAX + 16], want[128], have[128] = "", path[PATH_MAX +
	    32], idl[64] = "", idr[64] = "";
	FILE *f;
	int rc;

	snprintf(marker, sizeof(marker), "%s/.s3-commit", ss->dir);
	snprintf(want, sizeof(want), "%020llu %s\n",
	    (unsigned long long)ss->gen, ss->gen ? objchain_state(&ss->chain) :
	    "-");
	if ((f = fopen(marker, "re")) != NULL) {
		if (fgets(have, sizeof(have), f) == NULL)
			have[0] = '\0';
		fclose(f);
	}
	if (strcmp(have, want) == 0)
		return 0;
	unlink(marker);
	if (ss->gen > 0) {
		int r = catch_up(ss, have, e);

		if (r != 0)
			return r < 0 ? -1 : write_small(marker, want,
			    strlen(want), e);
	}
	snprintf(path, sizeof(path), "%s/blobs/.repository-id", ss->dir);
	if ((f = fopen(path, "re")) != NULL) {
		if (fgets(idl, sizeof(idl), f) == NULL)
			idl[0] = '\0';
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/manifest.db", ss->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/manifest.db-wal", ss->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/manifest.db-shm", ss->dir);
	unlink(path);
	if (ss->gen == 0) {
		/* A new repository: none of the old cache belongs to it. */
		snprintf(path, sizeof(path), "%s/blobs", ss->dir);
		if (rm_rf(path) < 0)
			return cs_errno(e, "remove %s", path);
	} else {
		ss->synced = SYNC_FETCHED;
		if (fetch_manifest(ss, e) < 0)
			return -1;
		snprintf(path, sizeof(path), "%s/blobs/.repository-id", ss->dir);
		if ((f = fopen(path, "re")) != NULL) {
			if (fgets(idr, sizeof(idr), f) == NULL)
				idr[0] = '\0';
			fclose(f);
		}
		if (idl[0] != '\0' && strcmp(idl, idr) != 0) {
			/* Another repository's blobs: drop them. */
			char b[PATH_MAX + 16];
			int r;

			snprintf(b, sizeof(b), "%s/blobs", ss->dir);
			for (r = 0; r < 256; r++) {
				snprintf(path, sizeof(path), "%s/%02x", b, r);
				if (rm_rf(path) < 0)
					return cs_errno(e, "remove %s", path);
			}
		}
	}
	rc = write_small(marker, want, strlen(want), e);
	return rc;
}

/* ---- blobs ---- */

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
is_blob_name(const char *n)
{
	return strlen(n) == 64 && strspn(n, "0123456789abcdef") == 64;
}

static void
strs_free(char **v, size_t n)
{
	while (n > 0)
		free(v[--n]);
	free(v);
}

static int
cmp_sha(const void *a, const void *b)
{
	return memcmp(a, b, SHA_LEN);
}

static void
set_add(struct shaset *t, const uint8_t name[SHA_LEN])
{
	uint8_t (*nv)[SHA_LEN];
	size_t cap;

	if (t->n == t->cap) {
		cap = t->cap ? t->cap * 2 : 256;
		if ((nv = realloc(t->v, cap * SHA_LEN)) == NULL) {
			t->oom = 1;
			return;
		}
		t->v = nv;
		t->cap = cap;
	}
	memcpy(t->v[t->n++], name, SHA_LEN);
}

static int
set_has(struct shaset *t, const uint8_t name[SHA_LEN])
{
	if (t->sorted != t->n) {
		qsort(t->v, t->n, SHA_LEN, cmp_sha);
		t->sorted = t->n;
	}
	return t->n > 0 && bsearch(name, t->v, t->n, SHA_LEN, cmp_sha) != NULL;
}

/* blob_target.stored: an agent put blob name into the bucket. */
static void
target_stored(void *ctx, const uint8_t name[SHA_LEN])
{
	struct objrepo *ss = ctx;

	pthread_mutex_lock(&ss->setmu);
	set_add(&ss->put, name);
	set_add(&ss->vouched, name);
	pthread_mutex_unlock(&ss->setmu);
}

/* blob_target.has: the bucket had blob name when first asked (one
 * listing), or an agent stored it since (load takes several snapshots).
 * A failed listing answers no: the agent then uploads it, and a 412
 * says it was there. */
static int
target_has(void *ctx, const uint8_t name[SHA_LEN])
{
	struct objrepo *ss = ctx;
	struct store_obj *o = NULL;
	struct cs_err e;
	char hex[SHA_HEX_LEN], key[96], *kp = key;
	size_t no = 0, i;
	int has;

	if (!ss->list_tried) {
		ss->list_tried = 1;
		if (ss->b->ops->list(ss->b, "blobs/", &o, &no, &e) == 0 &&
		    (ss->listed = calloc(no + 1, sizeof(*ss->listed))) != NULL) {
			for (i = 0; i < no; i++) {
				ss->listed[i] = o[i].key;
				o[i].key = NULL;
			}
			ss->nlisted = no;
			qsort(ss->listed, no, sizeof(*ss->listed), cmp_str);
		}
		store_objs_free(o, no);
	}
	sha_hex(name, hex);
	chunkobj_key(hex, key, sizeof(key));
	pthread_mutex_lock(&ss->setmu);
	has = (ss->nlisted > 0 && bsearch(&kp, ss->listed, ss->nlisted,
	    sizeof(*ss->listed), cmp_str) != NULL) || set_has(&ss->put, name);
	if (has)
		set_add(&ss->vouched, name);
	pthread_mutex_unlock(&ss->setmu);
	return has;
}

/* Every blob an agent stored, or the bucket had, that the manifest
 * refers to is in the bucket's listing have[0, no) (sorted keys). */
static int
check_vouched(struct objrepo *ss, char **names, size_t nn, char **have,
    size_t no, struct cs_err *e)
{
	uint8_t sha[SHA_LEN];
	char key[96], *kp = key;
	size_t i;

	if (ss->vouched.oom || ss->put.oom)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	for (i = 0; ss->vouched.n > 0 && i < nn; i++) {
		if (sha_unhex(names[i], sha) < 0 ||
		    !set_has(&ss->vouched, sha))
			continue;
		chunkobj_key(names[i], key, sizeof(key));
		if (bsearch(&kp, have, no, sizeof(*have), cmp_str) == NULL)
			return cs_errf(e, "%s: blob %s, which an agent uploaded "
			    "or the bucket had, is not in the bucket; nothing "
			    "was committed", ss->url, names[i]);
	}
	return 0;
}

/* Uploads what the manifest refers to and the bucket lacks, from the
 * cache, and the identity: blobs of a snapshot that was never committed
 * stay local (prune's business is only the bucket's). A blob that is in
 * neither place (deleted from the bucket, the cache cleared) belongs to
 * an older snapshot, which verify reports: it is skipped. */
static int
put_blobs(struct objrepo *ss, struct cs_err *e)
{
	struct store_obj *o = NULL;
	char **have = NULL, **names = NULL;
	char man[PATH_MAX + 16], path[PATH_MAX + 96];
	size_t no = 0, nn = 0, i;
	uint64_t listed = 0;
	int rc = -1;

	snprintf(man, sizeof(man), "%s/manifest.db", ss->dir);
	if (store_manifest_blobs(man, STORE_BLOBS_ALL, &names, &nn, e) < 0)
		return -1;
	if (ss->b->ops->list(ss->b, "blobs/", &o, &no, e) < 0)
		goto out;
	if ((have = calloc(no + 1, sizeof(*have))) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < no; i++)
		have[i] = o[i].key;
	qsort(have, no, sizeof(*have), cmp_str);
	if (check_vouched(ss, names, nn, have, no, e) < 0)
		goto out;
	for (i = 0; i <= nn; i++) {
		char key[96], *kp = key;
		uint8_t *body;
		size_t len;
		int st;

		if (i < nn)
			chunkobj_key(names[i], key, sizeof(key));
		else
			snprintf(key, sizeof(key), "blobs/.repository-id");
		if (bsearch(&kp, have, no, sizeof(*have), cmp_str) != NULL) {
			listed += i < nn;
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", ss->dir, key);
		if ((st = read_file(path, &body, &len, e)) == 0)
			continue;	/* not in the cache either */
		if (st < 0)
			goto out;
		st = ss->b->ops->put(ss->b, key, body, len, STORE_PUT_CREATE,
		    NULL, NULL, e);
		free(body);
		if (st < 0 && cs_err_code(e) == CS_E_EXISTS) {
			ss->had_blobs++;	/* another writer's, the same bytes */
			continue;
		}
		if (st < 0)
			goto out;
		if (i < nn) {
			ss->up_blobs++;
			ss->up_bytes += len;
		}
	}
	/* Those the pipe created were not there before this command. */
	ss->had_blobs += listed > ss->fresh ? listed - ss->fresh : 0;
	rc = 0;
out:
	free(have);
	strs_free(names, nn);
	store_objs_free(o, no);
	return rc;
}

/* After a commit: drop the cached copies of the blobs the newest
 * complete snapshot of the manifest just published does not refer to.
 * The cache serves only to tell which chunks need no upload; a chunk it
 * lacks is looked up in the bucket's listing (blob_target.has, one LIST
 * per command) and never sent again. So the cache holds its manifest and
 * at most the newest snapshot's blobs (what the next incremental
 * snapshot reuses), not the history: forget shrinks it with the
 * snapshots it removes, and a snapshot's blobs leave it once a newer one
 * no longer refers to them. */
static int
cache_collect(struct objrepo *ss, struct cs_err *e)
{
	char man[PATH_MAX + 16], dir[PATH_MAX + 16], path[PATH_MAX + 96];
	char **keep = NULL, *np;
	size_t nk = 0;
	struct dirent *de;
	DIR *d;
	int r;

	snprintf(man, sizeof(man), "%s/manifest.db", ss->dir);
	if (store_manifest_blobs(man, 0, &keep, &nk, e) < 0)
		return -1;
	for (r = 0; r < 256; r++) {
		snprintf(dir, sizeof(dir), "%s/blobs/%02x", ss->dir, r);
		if ((d = opendir(dir)) == NULL)
			continue;
		while ((de = readdir(d)) != NULL) {
			np = de->d_name;
			if (!is_blob_name(np) || (nk > 0 && bsearch(&np, keep,
			    nk, sizeof(*keep), cmp_str) != NULL))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, np);
			if (unlink(path) == 0)
				ss->collected++;
		}
		closedir(d);
	}
	strs_free(keep, nk);
	return 0;
}

/* ---- publishing ---- */

/* blob_stream_fn: a chunk object the snapshot made, queued for upload
 * from memory (the pipe holds at most 64 MiB of them): no blob is
 * written to the cache, so the local disk holds none of the snapshot's
 * bytes. The publishing then finds each one in the bucket's listing
 * (check_vouched) or commits nothing. */
static int
stream(void *ctx, const uint8_t name[SHA_LEN], const void *blob, size_t len,
    struct cs_err *e)
{
	struct objrepo *ss = ctx;
	char hex[SHA_HEX_LEN], key[96];

	sha_hex(name, hex);
	chunkobj_key(hex, key, sizeof(key));
	if (store_pipe_put(ss->pipe, key, blob, len, e) < 0)
		return -1;
	pthread_mutex_lock(&ss->setmu);
	set_add(&ss->put, name);
	set_add(&ss->vouched, name);
	pthread_mutex_unlock(&ss->setmu);
	return 0;
}

/* Waits for the pipe's uploads: every one acknowledged, or -1. */
static int
drain(struct objrepo *ss, struct cs_err *e)
{
	struct store_pipe_stats st;

	if (store_pipe_drain(ss->pipe, &st, e) < 0)
		return -1;
	ss->fresh = st.put - ss->piped.put;
	ss->up_blobs += ss->fresh;
	ss->up_bytes += st.bytes - ss->piped.bytes;
	ss->piped = st;
	return 0;
}

/* New blobs, then the manifest, then commit gen+1: the snapshot (or the
 * forget, ...) becomes visible only at that last create-only write. */
static int
publish(struct objrepo *ss, struct cs_err *e)
{
	char man[PATH_MAX + 16], tmp[PATH_MAX + 32], base[PATH_MAX + 32];
	char ckey[64], text[COMMIT_CAP], marker[PATH_MAX + 16];
	struct objupload up[2];
	struct objchain next;
	uint64_t mgen, mmax;
	size_t nup = 0, off, i;
	int full, rc = -1;

	if ((ss->pipe != NULL && drain(ss, e) < 0) || put_blobs(ss, e) < 0)
		return -1;
	snprintf(man, sizeof(man), "%s/manifest.db", ss->dir);
	snprintf(tmp, sizeof(tmp), "%s/.s3-upload.db", ss->dir);
	snprintf(base, sizeof(base), "%s/.s3-base.db", ss->dir);
	if (store_manifest_copy(man, tmp, e) < 0 ||
	    store_manifest_gen(tmp, &mgen, &mmax, e) < 0)
		goto out;
	/* Past every commit listed, also one passed over as unusable: its
	 * number is taken. */
	if (ss->top > ss->gen)
		ss->gen = ss->top;
	/* A delta from the state the commit read (after an index of the
	 * deltas before it, now and then), or the whole manifest
	 * (objchain.c says when). */
	if (objchain_next(&ss->chain, ss->based ? base : NULL, tmp,
	    ss->gen + 1, &next, up, &nup, &full, e) < 0)
		goto out;
	for (i = 0; i < nup; i++) {
		if (ss->b->ops->put(ss->b, up[i].p->key, up[i].body, up[i].len,
		    STORE_PUT_CREATE, NULL, NULL, e) < 0)
			goto out;
		ss->up_manifest += up[i].len;
	}
	ss->up_full = full;
	if (lease_held(ss, e) < 0)
		goto out;
	fault_commit_pause(ss);
	snprintf(ckey, sizeof(ckey), "commits/%020llu",
	    (unsigned long long)ss->gen + 1);
	if (objchain_text(&next, text, sizeof(text) - 64) < 0) {
		cs_errf(e, "%s: the commit's text is too long", ss->url);
		goto out;
	}
	off = strlen(text);
	snprintf(text + off, sizeof(text) - off, "generation %llu\n"
	    "max_snapshot_id %llu\n", (unsigned long long)mgen,
	    (unsigned long long)mmax);
	if (ss->b->ops->put(ss->b, ckey, text, strlen(text), STORE_PUT_CREATE,
	    NULL, NULL, e) < 0) {
		if (cs_err_code(e) == CS_E_EXISTS)
			cs_errf(e, "%s: another writer committed %s first; "
			    "nothing was committed", ss->url, ckey);
		goto out;
	}
	ss->gen++;
	ss->chain = next;
	objgen_published(ss->dir, mgen, mmax);
	/* What the next publish (load's next snapshot) makes its delta
	 * from. */
	ss->based = rename(tmp, base) == 0;
	snprintf(marker, sizeof(marker), "%s/.s3-commit", ss->dir);
	snprintf(text, sizeof(text), "%020llu %s\n",
	    (unsigned long long)ss->gen, objchain_state(&ss->chain));
	if (write_small(marker, text, strlen(text), e) < 0)
		goto out;
	rc = 0;
out:
	unlink(tmp);
	for (i = 0; i < nup; i++)
		free(up[i].body);
	return rc;
}

/* A copy of the cache's manifest at the commit read, before the command
 * changes it: what publish makes its delta from. None for a new
 * repository (its first commit uploads the whole manifest). */
static int
base_copy(struct objrepo *ss, struct cs_err *e)
{
	char man[PATH_MAX + 16], base[PATH_MAX + 32];

	snprintf(base, sizeof(base), "%s/.s3-base.db", ss->dir);
	unlink(base);
	ss->based = 0;
	if (ss->gen == 0)
		return 0;
	snprintf(man, sizeof(man), "%s/manifest.db", ss->dir);
	if (store_manifest_copy(man, base, e) < 0)
		return -1;
	ss->based = 1;
	return 0;
}

/* The cache's marker, removed while the command changes the cache: a
 * writer killed before its commit leaves a cache that names no commit,
 * which the next writer fetches again (so its half-done snapshot is
 * never published by someone else). */
static int
unmark(struct objrepo *ss, struct cs_err *e)
{
	char marker[PATH_MAX + 16];

	snprintf(marker, sizeof(marker), "%s/.s3-commit", ss->dir);
	if (unlink(marker) < 0 && errno != ENOENT)
		return cs_errno(e, "remove %s", marker);
	return 0;
}

int
store_objrepo_publish(struct objrepo *ss, int more, struct cs_err *e)
{
	/* A command that goes on changing the cache (load) leaves it
	 * without a marker again until its next publish. */
	if (publish(ss, e) < 0)
		return -1;
	return more ? unmark(ss, e) : 0;
}

/* ---- prune ---- */

/* dir/blobs gets an empty sparse stand-in, of the object's size, for
 * every blob older than the grace period: what the local prune deletes
 * among them is deleted in the bucket afterwards. */
static int
stand_ins(struct objrepo *ss, int64_t grace, char ***keys, size_t *nk,
    struct cs_err *e)
{
	struct store_obj *o = NULL;
	char **v = NULL;
	size_t n = 0, i, cnt = 0;
	time_t now = time(NULL);
	int rc = -1;

	*keys = NULL;
	*nk = 0;
	if (ss->b->ops->list(ss->b, "blobs/", &o, &n, e) < 0)
		return -1;
	if ((v = calloc(n + 1, sizeof(*v))) == NULL)
		goto oom;
	for (i = 0; i < n; i++) {
		char path[PATH_MAX + 96], sub[PATH_MAX + 16];
		const char *k = o[i].key;
		FILE *f;

		if (strlen(k) != 6 + 3 + 64 || strncmp(k, "blobs/", 6) != 0 ||
		    !is_blob_name(k + 9) || strncmp(k + 6, k + 9, 2) != 0 ||
		    k[8] != '/')
			continue;
		if (o[i].mtime > (int64_t)now - grace)
			continue;
		snprintf(sub, sizeof(sub), "%s/blobs/%.2s", ss->dir, k + 9);
		if (mkdir(sub, 0700) < 0 && errno != EEXIST) {
			cs_errno(e, "mkdir %s", sub);
			goto out;
		}
		snprintf(path, sizeof(path), "%s/%s", ss->dir, k);
		if ((f = fopen(path, "we")) == NULL ||
		    ftruncate(fileno(f), (off_t)o[i].size) < 0) {
			cs_errno(e, "create %s", path);
			if (f != NULL)
				fclose(f);
			goto out;
		}
		fclose(f);
		if ((v[cnt] = strdup(k)) == NULL)
			goto oom;
		cnt++;
	}
	*keys = v;
	*nk = cnt;
	v = NULL;
	rc = 0;
	goto out;
oom:
	cs_errc(e, CS_E_NOMEM, "out of memory");
out:
	if (v != NULL)
		strs_free(v, cnt);
	store_objs_free(o, n);
	return rc;
}

/* Test hook: CUTSNAP_FAULT=s3-commit-pause:PATH makes a writer that has
 * checked its lease stop renewing it, create PATH.reached and wait, for
 * as long as PATH exists (at most two minutes), before its commit PUT:
 * the window in which a slow commit (retries) meets a prune that took the
 * lapsed lease, which the prune's fence commit must close. */
static void
fault_commit_pause(struct objrepo *ss)
{
	char path[PATH_MAX], reached[PATH_MAX + 16];
	struct lease *l = &ss->lease;
	struct cs_err e;
	int n;

	if (cs_fault_value("s3-commit-pause", path, sizeof(path)) == NULL)
		return;
	renewal_stop(l);
	snprintf(reached, sizeof(reached), "%s.reached", path);
	write_small(reached, "", 0, &e);
	for (n = 0; n < 2400 && access(path, F_OK) == 0; n++)
		cs_sleep_ms(50);
}

/* The text of a fence that names chain c: c's lines, then the lines
 * after them in the commit read (its generation and highest id). */
static int
fence_text(struct objrepo *ss, const struct objchain *c, char *out,
    size_t cap, struct cs_err *e)
{
	const char *tail = strstr(ss->ctext, "\ngeneration ");
	size_t off;

	if (objchain_text(c, out, cap) < 0)
		return cs_errf(e, "%s: the fence's text is too long", ss->url);
	off = strlen(out);
	if (tail != NULL &&
	    snprintf(out + off, cap - off, "%s", tail + 1) >= (int)(cap - off))
		return cs_errf(e, "%s: the fence's text is too long", ss->url);
	return 0;
}

/* A prune's fence: the commit it read, again, under the next number. A
 * writer that read an earlier commit can then no longer commit (its
 * create-only PUT of that number is refused), so no snapshot is
 * committed that refers to a blob this prune deletes, however long the
 * writer's commit took after its lease lapsed. 412: a writer committed
 * since this prune read the bucket; nothing is deleted.
 *
 * The fence also folds the manifest chain (objchain.c): when the commit
 * read names deltas, the fence names the manifest they build (the copy
 * taken at open, before the local prune ran) as a whole one instead, so
 * readers fetch one object again; the pieces it replaces are deleted
 * once no kept commit names them (prune_bucket). */
static int
fence_commit(struct objrepo *ss, struct cs_err *e)
{
	char key[64], text[COMMIT_CAP];
	uint64_t num = (ss->top > ss->gen ? ss->top : ss->gen) + 1;
	struct objchain folded;
	struct objupload up = { NULL, NULL, 0 };

	snprintf(text, sizeof(text), "%s", ss->ctext);
	folded = ss->chain;
	if (ss->fold[0] != '\0') {
		int r = objchain_whole(ss->fold, num, &folded, &up, e);

		/* A cache at the state folded is current (catch_up). */
		snprintf(folded.folded, sizeof(folded.folded), "%s",
		    objchain_state(&ss->chain));
		if (r == 0)
			r = ss->b->ops->put(ss->b, up.p->key, up.body, up.len,
			    STORE_PUT_CREATE, NULL, NULL, e);
		free(up.body);
		if (r < 0 || fence_text(ss, &folded, text, sizeof(text), e) < 0)
			return -1;
		ss->up_manifest += up.len;
		ss->up_full = 1;
	}
	snprintf(key, sizeof(key), "commits/%020llu", (unsigned long long)num);
	if (ss->b->ops->put(ss->b, key, text, strlen(text),
	    STORE_PUT_CREATE, NULL, NULL, e) < 0) {
		if (cs_err_code(e) == CS_E_EXISTS)
			cs_errf(e, "%s: a writer committed %s since this prune "
			    "started; nothing was deleted; run prune again",
			    ss->url, key);
		return -1;
	}
	ss->gen = ss->top = num;
	ss->chain = folded;
	snprintf(ss->ctext, sizeof(ss->ctext), "%s", text);
	ss->fold[0] = '\0';
	return 0;
}

/* *floor: the lowest commit number whose manifest pieces a commit this
 * prune keeps (o[0..n) less those older than the grace period) may
 * name. A chain's pieces are never older than its base, and a base
 * never older than an earlier commit's, so that is the base of the
 * oldest commit kept. 0 (nothing may go) when that commit cannot be
 * read. */
static int
piece_floor(struct objrepo *ss, struct store_obj *o, size_t n, time_t cut,
    uint64_t *floor, struct cs_err *e)
{
	uint64_t g, oldest = ss->gen;
	struct objchain c;
	char key[64], *body = NULL;
	size_t i, len;

	for (i = 0; i < n; i++)
		if ((g = commit_num(o[i].key)) != 0 && g < oldest &&
		    o[i].mtime > (int64_t)cut)
			oldest = g;
	*floor = objchain_piece_gen(ss->chain.base.key);
	if (oldest == ss->gen)
		return 0;
	snprintf(key, sizeof(key), "commits/%020llu",
	    (unsigned long long)oldest);
	if (ss->b->ops->read(ss->b, key, COMMIT_CAP, &body, &len, NULL, e) <
	    0) {
		if (cs_err_code(e) != CS_E_NOTFOUND)
			return -1;
		*floor = 0;
		return 0;
	}
	*floor = objchain_parse(body, &c) < 0 ? 0 :
	    objchain_piece_gen(c.base.key);
	free(body);
	return 0;
}

/* Deletes the bucket's blobs whose stand-ins the prune removed, then
 * commits older than the newest and manifest pieces no kept commit
 * names, all older than the grace period. */
static int
prune_bucket(struct objrepo *ss, char **keys, size_t nk, int64_t grace,
    struct cs_err *e)
{
	struct store_obj *o = NULL;
	size_t n = 0, i;
	time_t cut = time(NULL) - grace;
	uint64_t g, floor;
	int rc = -1;

	if (fence_commit(ss, e) < 0)
		return -1;
	for (i = 0; i < nk; i++) {
		char path[PATH_MAX + 96];

		snprintf(path, sizeof(path), "%s/%s", ss->dir, keys[i]);
		if (access(path, F_OK) == 0)
			continue;
		if (ss->b->ops->del(ss->b, keys[i], e) < 0)
			return -1;
	}
	if (ss->b->ops->list(ss->b, "commits/", &o, &n, e) < 0)
		return -1;
	if (piece_floor(ss, o, n, cut, &floor, e) < 0)
		goto out;
	for (i = 0; i < n; i++)
		if ((g = commit_num(o[i].key)) != 0 && g < ss->gen &&
		    o[i].mtime <= (int64_t)cut &&
		    ss->b->ops->del(ss->b, o[i].key, e) < 0)
			goto out;
	store_objs_free(o, n);
	o = NULL;
	n = 0;
	if (ss->b->ops->list(ss->b, "manifests/", &o, &n, e) < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (!objchain_names(&ss->chain, o[i].key) &&
		    (g = objchain_piece_gen(o[i].key)) != 0 && g < floor &&
		    o[i].mtime <= (int64_t)cut &&
		    ss->b->ops->del(ss->b, o[i].key, e) < 0)
			goto out;
	/* A lease that lapsed while deleting: a writer may have taken it
	 * and chosen to reuse a blob deleted after that; a second fence
	 * stops that writer's commit too. */
	if (lease_held(ss, e) < 0) {
		if (fence_commit(ss, e) < 0) {
			cs_errctx(e, "the lease lapsed while prune deleted "
			    "blobs, and a writer committed meanwhile: verify "
			    "the newest snapshot");
			goto out;
		}
		WARN(ss, "warning: %s: the lease lapsed while prune deleted "
		    "blobs; a second fence commit stops any writer that "
		    "began meanwhile", ss->url);
	}
	rc = 0;
out:
	store_objs_free(o, n);
	return rc;
}


/* ---- the session ---- */

/* A prune's copy of the manifest it read, before the local prune opens
 * it: what its fence folds the chain into. */
static int
fold_copy(struct objrepo *ss, struct cs_err *e)
{
	char man[PATH_MAX + 16];

	snprintf(man, sizeof(man), "%s/manifest.db", ss->dir);
	snprintf(ss->fold, sizeof(ss->fold), "%s/.s3-fold.db", ss->dir);
	if (store_manifest_copy(man, ss->fold, e) < 0) {
		ss->fold[0] = '\0';
		return -1;
	}
	return 0;
}

int
store_objrepo_is(const char *url)
{
	return strncmp(url, "s3://", 5) == 0;
}

/* The chunk objects the command writes go to the bucket as it makes
 * them, and agents may upload their own: both found in the bucket by
 * the publishing. */
static int
writer_start(struct objrepo *ss, struct cs_err *e)
{
	if (store_pipe_start(ss->b, &ss->pipe, e) < 0)
		return -1;
	ss->target = (struct blob_target){ store_backend_s3_url(ss->b),
	    store_backend_s3_endpoint(ss->b), store_backend_s3_region(ss->b),
	    target_has, target_stored, ss };
	return 0;
}

int
store_objrepo_open(const char *url, const struct objrepo_args *args,
    struct objrepo **out, struct cs_err *e)
{
	struct objrepo *ss;
	const char *name;

	*out = NULL;
	if ((ss = calloc(1, sizeof(*ss))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	ss->a = *args;
	ss->kind = args->kind;
	ss->want = args->want;
	ss->cache_fd = -1;
	pthread_mutex_init(&ss->setmu, NULL);
	*out = ss;
	if (store_backend_s3(url, NULL, NULL, &ss->b, e) < 0) {
		/* A bad URL or missing credentials: the user's to fix. */
		if (cs_err_code(e) == CS_E_FAILED)
			cs_errkind(e, CS_E_USAGE);
		return -1;
	}
	name = store_backend_s3_url(ss->b);
	snprintf(ss->url, sizeof(ss->url), "%s", name != NULL ? name : url);
	if ((ss->kind == OBJREPO_WRITE || ss->kind == OBJREPO_PRUNE) &&
	    lease_take(ss, e) < 0)
		return -1;
	if (objgen_start(ss->b, &ss->rec, e) < 0 || read_head(ss, e) < 0)
		return -1;
	if (ss->kind == OBJREPO_WRITE) {
		if (cache_dir(ss, e) < 0 || sync_cache(ss, e) < 0 ||
		    base_copy(ss, e) < 0 || unmark(ss, e) < 0 ||
		    writer_start(ss, e) < 0)
			return -1;
	} else {
		if (ss->gen == 0)
			/* A usage error (exit 2) as it has always been,
			 * not CS_E_NOREPO: scripts test for 2 here. */
			return cs_errc(e, CS_E_USAGE, "%s: no repository there "
			    "(no commit under its commits/)", ss->url);
		if (temp_dir(ss, e) < 0 || fetch_manifest(ss, e) < 0)
			return -1;
		if (ss->kind == OBJREPO_PRUNE && objchain_deltas(&ss->chain) &&
		    fold_copy(ss, e) < 0)
			return -1;
		/* ls: every blob stands in, for stored_bytes. */
		if ((ss->kind == OBJREPO_PRUNE || ss->kind == OBJREPO_META) &&
		    stand_ins(ss, ss->kind == OBJREPO_META ?
		    -((int64_t)1 << 40) : ss->a.grace, &ss->stand_keys,
		    &ss->nstand, e) < 0)
			return -1;
	}
	/* Readers get a read-only stand-in: verify only reports a damaged
	 * blob, as on a read-only medium (the object in the bucket is what
	 * is damaged; moving the local copy aside would repair nothing). */
	if ((ss->kind == OBJREPO_META || ss->kind == OBJREPO_BLOBS) &&
	    chmod(ss->dir, 0555) < 0)
		return cs_errno(e, "chmod %s", ss->dir);
	/* An older commit read on purpose is no rollback to warn about. */
	if (ss->gen > 0 && ss->want == 0)
		objgen_floor(&ss->rec, &ss->floor);
	return 0;
}

const char *
store_objrepo_dir(const struct objrepo *ss)
{
	return ss->dir;
}

const char *
store_objrepo_name(const struct objrepo *ss)
{
	return ss->url;
}

void
store_objrepo_opts(struct objrepo *ss, struct store_opts *o)
{
	/* The local stand-in is not the repository: its commit is not the
	 * bucket's (an upload may still fail), and the bucket has its own
	 * numbered commits. */
	o->no_gen_records = 1;
	if (ss->kind == OBJREPO_WRITE) {
		o->blob_stream = stream;
		o->blob_stream_ctx = ss;
		o->blob_target = &ss->target;
	}
	/* show, verify and restore read the chunk objects straight from
	 * the bucket, as they need them: nothing of the snapshot's size
	 * lands on the local disk. */
	if (ss->kind == OBJREPO_BLOBS)
		o->blob_backend = ss->b;
	if (ss->gen > 0 && ss->want == 0)
		o->gen_floor = &ss->floor;
}

void
store_objrepo_opts_clear(struct store_opts *o)
{
	o->blob_stream = NULL;
	o->blob_stream_ctx = NULL;
	o->blob_target = NULL;
	o->blob_backend = NULL;
	o->gen_floor = NULL;
	o->no_gen_records = 0;
}

void
store_objrepo_collect(struct objrepo *ss)
{
	struct cs_err ce;

	if (cache_collect(ss, &ce) < 0)
		WARN(ss, "warning: %s: cache %s not collected: %s", ss->url,
		    ss->dir, ce.msg);
}

int
store_objrepo_prune(struct objrepo *ss, struct cs_err *e)
{
	return prune_bucket(ss, ss->stand_keys, ss->nstand, ss->a.grace, e);
}

void
store_objrepo_report(const struct objrepo *ss, FILE *f)
{
	if (ss->kind == OBJREPO_BLOBS)
		fprintf(f, "s3: read %llu objects (%llu bytes) from the "
		    "bucket\n", (unsigned long long)atomic_load(&ss->b->gets),
		    (unsigned long long)atomic_load(&ss->b->bytes));
	if (ss->kind == OBJREPO_WRITE && ss->synced == SYNC_CAUGHT_UP)
		fprintf(f, "s3: cache brought up to date by %zu manifest "
		    "deltas\n", ss->caught_up);
	if (ss->kind == OBJREPO_WRITE && ss->synced == SYNC_FETCHED)
		fprintf(f, "s3: cache fetched the manifest from the bucket\n");
	if (ss->kind == OBJREPO_WRITE)
		fprintf(f, "s3: uploaded %llu blobs (%llu bytes), %llu "
		    "already there, commit %llu, %llu cached blobs "
		    "collected, manifest %s of %llu bytes\n",
		    (unsigned long long)ss->up_blobs,
		    (unsigned long long)ss->up_bytes,
		    (unsigned long long)ss->had_blobs,
		    (unsigned long long)ss->gen,
		    (unsigned long long)ss->collected,
		    ss->up_full ? "whole" : "delta",
		    (unsigned long long)ss->up_manifest);
}

void
store_objrepo_close(struct objrepo *ss)
{
	if (ss == NULL)
		return;
	store_pipe_stop(ss->pipe);
	if (ss->listed != NULL)
		strs_free(ss->listed, ss->nlisted);
	free(ss->vouched.v);
	free(ss->put.v);
	pthread_mutex_destroy(&ss->setmu);
	lease_drop(ss);
	if (ss->cache_fd >= 0)
		close(ss->cache_fd);
	if (ss->temp) {
		chmod(ss->dir, 0700);
		rm_rf(ss->dir);
	}
	if (ss->stand_keys != NULL)
		strs_free(ss->stand_keys, ss->nstand);
	store_backend_close(ss->b);
	free(ss);
}
