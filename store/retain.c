/* retain.c - retention: forget snapshots by policy (a manifest change in
 * one transaction) and prune the blobs no snapshot refers to any more.
 *
 * Crash safety: forget only deletes rows, atomically; prune deletes only
 * files that no row names, so whenever either is killed every remaining
 * snapshot still has all its blobs and verifies. Both hold the exclusive
 * repository lock, so no snapshot can be between storing its chunks and
 * committing the rows that name them while prune decides what is unused.
 * prune depends on the blob layout only through store_blob_referenced (the
 * names still in use) and the rule that a blob is a file under blobs/
 * named by 64 hex digits. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "keep.h"
#include "store_int.h"
#include "../lib/fsutil.h"
#include "../lib/util.h"

/* The names store_blob_referenced lists, growing. */
struct names {
	char **v;
	size_t n, cap;
};

static int
add_name(void *ctx, sqlite3_stmt *s, struct cs_err *e)
{
	struct names *l = ctx;
	char **nv;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		if ((nv = realloc(l->v, l->cap * sizeof(*nv))) == NULL)
			return cs_errc(e, CS_E_NOMEM, "out of memory");
		l->v = nv;
	}
	if ((l->v[l->n] = strdup(store_col_text(s, 0))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	l->n++;
	return 0;
}

/* Every blob name (lowercase hex) some snapshot's rows refer to, sorted
 * and distinct; *out malloc'ed, each name too. Also for the blobs an
 * aborted snapshot wrote (orphans.c). */
int
store_blob_referenced(struct store *st, char ***out, size_t *n,
    struct cs_err *e)
{
	struct names l = { NULL, 0, 0 };

	*out = NULL;
	*n = 0;
	if (store_db_each(st, "SELECT DISTINCT lower(sha256) FROM agent_chunks "
	    "ORDER BY 1", NULL, add_name, &l, "list referenced blobs", e) < 0) {
		while (l.n > 0)
			free(l.v[--l.n]);
		free(l.v);
		return -1;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int
is_hex(const char *s, size_t len)
{
	size_t i;

	if (strlen(s) != len)
		return 0;
	for (i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]) ||
		    isupper((unsigned char)s[i]))
			return 0;
	return 1;
}

/* How many complete snapshots go when none stays; 0 otherwise. */
static size_t
forgets_all(const struct store_forget_item *v, const struct keep_snap *k,
    size_t n)
{
	size_t i, gone = 0;

	for (i = 0; i < n; i++) {
		if (strcmp(v[i].status, "complete") != 0)
			continue;
		if (k[i].why != 0)
			return 0;
		gone++;
	}
	return gone;
}

static int
state_of(const char *status)
{
	if (strcmp(status, "complete") == 0)
		return KEEP_COMPLETE;
	return strcmp(status, "running") == 0 ? KEEP_RUNNING : KEEP_ABORTED;
}

/* Every snapshot row, newest first (by start time, then id), into *v and
 * *k (malloc'ed, n each). */
static int
load_rows(struct store *st, struct store_forget_item **v,
    struct keep_snap **k, size_t *n, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	struct store_forget_item *nv;
	struct keep_snap *nk;
	size_t cap = 0;
	int step, rc = -1;

	if (store_db_prepare(st, "SELECT id, status, started_at FROM snapshots "
	    "ORDER BY started_at DESC, id DESC", &s, e) < 0)
		return -1;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((nv = realloc(*v, cap * sizeof(**v))) != NULL)
				*v = nv;
			if ((nk = realloc(*k, cap * sizeof(**k))) != NULL)
				*k = nk;
			if (nv == NULL || nk == NULL) {
				cs_errc(e, CS_E_NOMEM, "out of memory");
				goto out;
			}
		}
		memset(&(*v)[*n], 0, sizeof(**v));
		if (store_col_u64(s, 0, &(*v)[*n].id) < 0) {
			cs_errf(e, "repository %s: malformed snapshot id",
			    st->repo);
			goto out;
		}
		snprintf((*v)[*n].status, sizeof((*v)[*n].status), "%s",
		    store_col_text(s, 1));
		snprintf((*v)[*n].started, sizeof((*v)[*n].started), "%s",
		    store_col_text(s, 2));
		(*k)[*n].started = store_parse_utc((*v)[*n].started);
		(*k)[*n].state = state_of((*v)[*n].status);
		(*n)++;
	}
	if (step != SQLITE_DONE) {
		store_db_fail(st, e, "list snapshots");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

/* Split v into res's kept and forgotten lists, and (for real, or inside
 * a transaction a dry run rolls back) delete the forgotten rows. */
static int
apply(struct store *st, const struct store_forget_item *v,
    const struct keep_snap *k, size_t n, int del_rows,
    struct store_forget_result *res, struct cs_err *e)
{
	sqlite3_stmt *del = NULL;
	struct store_forget_item *it;
	size_t i;
	int rc = -1;

	if ((res->forgotten = calloc(n + 1, sizeof(*it))) == NULL ||
	    (res->kept = calloc(n + 1, sizeof(*it))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if (store_db_prepare(st, "DELETE FROM snapshots WHERE id = ?", &del,
	    e) < 0)
		return -1;
	for (i = n; i-- > 0;) {		/* oldest first */
		it = k[i].why ? &res->kept[res->nkept++] :
		    &res->forgotten[res->nforgotten++];
		*it = v[i];
		it->why = k[i].why;
		if (k[i].why || !del_rows)
			continue;
		sqlite3_reset(del);
		sqlite3_bind_int64(del, 1, (sqlite3_int64)v[i].id);
		if (sqlite3_step(del) != SQLITE_DONE) {
			store_db_fail(st, e, "delete snapshot");
			goto out;
		}
	}
	rc = 0;
out:
	sqlite3_finalize(del);
	return rc;
}

static int prune_with(struct store *st, char **ref, size_t nref,
    int dry_run, int force, struct store_prune_result *r, struct cs_err *e);

/* The forget of p on the open transaction; a dry run that prunes deletes
 * the rows too, to learn what stays referenced, then rolls back. */
static int
forget_tx(struct store *st, const struct store_forget_policy *p,
    struct store_forget_result *res, char ***ref, size_t *nref,
    struct cs_err *e)
{
	struct store_forget_item *v = NULL;
	struct keep_snap *k = NULL;
	size_t n = 0;
	int rc = -1;

	if (load_rows(st, &v, &k, &n, e) < 0)
		goto out;
	keep_decide(p, k, n, store_clock());
	if (!p->force && !p->dry_run && forgets_all(v, k, n) > 0) {
		cs_errf(e, "repository %s: this would forget every complete "
		    "snapshot (%zu); add --force if that is what you mean",
		    st->repo, forgets_all(v, k, n));
		goto out;
	}
	if (apply(st, v, k, n, !p->dry_run || p->prune, res, e) < 0)
		goto out;
	if (p->dry_run && p->prune && store_blob_referenced(st, ref, nref, e) < 0)
		goto out;
	rc = 0;
out:
	free(v);
	free(k);
	return rc;
}

int
store_forget(struct store *st, const struct store_forget_policy *p,
    struct store_forget_result *res, struct cs_err *e)
{
	char **ref = NULL;
	size_t nref = 0, r;
	int rc = -1, in_tx = 0, done = 0, any = p->keep_within_s >= 0;

	memset(res, 0, sizeof(*res));
	for (r = 0; r < STORE_KEEP_NRULES; r++)
		any |= p->keep[r] >= 0;
	if (!any)
		return cs_errf(e, "no retention rule given");
	if (store_lock(st, 1, e) < 0)
		return -1;
	if (store_db_begin(st, e) < 0)
		return -1;
	in_tx = 1;
	if (forget_tx(st, p, res, &ref, &nref, e) < 0)
		goto out;
	if (p->dry_run) {
		store_db_rollback(st);
		in_tx = 0;
	} else {
		if (store_gen_step(st, e) < 0 || store_db_commit(st, e) < 0)
			goto out;
		in_tx = 0;
		if (store_gen_publish(st, e) < 0)
			goto out;
		done = 1;
	}
	if (p->prune && !p->dry_run && store_blob_referenced(st, &ref, &nref, e) < 0)
		goto out;
	if (p->prune && prune_with(st, ref, nref, p->dry_run, p->force,
	    &res->prune, e) < 0) {
		ref = NULL;	/* prune_with freed it */
		goto out;
	}
	ref = NULL;
	rc = 0;
out:
	if (in_tx)
		store_db_rollback(st);
	if (ref != NULL) {
		while (nref > 0)
			free(ref[--nref]);
		free(ref);
	}
	/* A forget done stays reported when its prune fails. */
	if (rc < 0 && !done)
		store_forget_result_free(res);
	return rc;
}

void
store_forget_result_free(struct store_forget_result *r)
{
	if (r == NULL)
		return;
	free(r->forgotten);
	free(r->kept);
	memset(r, 0, sizeof(*r));
}

/* Test hook: CUTSNAP_FAULT=prune-after-delete:N makes the process exit
 * with status 99 right after prune's N-th unlink, so the tests can prove
 * that a prune killed half-way leaves a repository that verifies. */
static void
fault_after_delete(uint64_t nth)
{
	char v[32];

	if (cs_fault_value("prune-after-delete", v, sizeof(v)) != NULL &&
	    strtoull(v, NULL, 10) == nth)
		_exit(99);
}

/* Delete path (a blob of size bytes, or a temp file) unless dry_run. */
static int
drop(const char *path, off_t size, int dry_run, struct store_prune_result *r,
    int tmp, struct cs_err *e)
{
	if (!dry_run && unlink(path) < 0 && errno != ENOENT)
		return cs_errno(e, "unlink %s", path);
	if (tmp) {
		r->temps++;
	} else {
		r->deleted++;
		r->bytes += (uint64_t)size;
	}
	if (!dry_run)
		fault_after_delete(r->deleted + r->temps);
	return 0;
}

/* One fan-out directory blobs/xx: drop what is not referenced. */
static int
prune_dir(struct store *st, const char *dir, char **ref, size_t nref,
    int dry_run, struct store_prune_result *r, struct cs_err *e)
{
	char path[PATH_MAX];
	const char *key;
	struct dirent *d;
	struct stat sb;
	DIR *dp;
	int rc = -1, removed = 0;

	if ((dp = opendir(dir)) == NULL)
		return cs_errno(e, "open %s", dir);
	while ((errno = 0, d = readdir(dp)) != NULL) {
		if (d->d_name[0] == '.' && (d->d_name[1] == '\0' ||
		    (d->d_name[1] == '.' && d->d_name[2] == '\0')))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, d->d_name) >=
		    (int)sizeof(path)) {
			cs_errf(e, "repository path too long: %s", st->repo);
			goto out;
		}
		if (lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
			continue;
		if (strncmp(d->d_name, ".tmp.", 5) == 0) {
			if (drop(path, sb.st_size, dry_run, r, 1, e) < 0)
				goto out;
			removed = 1;
			continue;
		}
		if (!is_hex(d->d_name, SHA_HEX_LEN - 1))
			continue;	/* not ours: leave it */
		key = d->d_name;
		if (nref > 0 &&
		    bsearch(&key, ref, nref, sizeof(*ref), str_cmp) != NULL) {
			r->kept++;
			continue;
		}
		if (drop(path, sb.st_size, dry_run, r, 0, e) < 0)
			goto out;
		removed = 1;
	}
	if (errno != 0) {
		cs_errno(e, "read %s", dir);
		goto out;
	}
	if (removed && !dry_run && fs_fsync_dir(dir, e) < 0)
		goto out;
	rc = 0;
out:
	closedir(dp);
	return rc;
}

/* One pass over blobs/: drop (or, dry, count) what is not referenced. */
static int
prune_walk(struct store *st, char **ref, size_t nref, int dry_run,
    struct store_prune_result *r, struct cs_err *e)
{
	char path[PATH_MAX];
	struct dirent *d;
	struct stat sb;
	DIR *dp = NULL;
	int rc = -1;

	if ((dp = opendir(st->blobs)) == NULL) {
		if (errno == ENOENT)
			return 0;
		return cs_errno(e, "open %s", st->blobs);
	}
	while ((errno = 0, d = readdir(dp)) != NULL) {
		if (d->d_name[0] == '.' && (d->d_name[1] == '\0' ||
		    (d->d_name[1] == '.' && d->d_name[2] == '\0')))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", st->blobs,
		    d->d_name) >= (int)sizeof(path)) {
			cs_errf(e, "repository path too long: %s", st->repo);
			goto out;
		}
		if (lstat(path, &sb) < 0)
			continue;
		/* Under the exclusive lock no snapshot is writing: a temp
		 * file is a leftover of a killed one. */
		if (S_ISREG(sb.st_mode) && strncmp(d->d_name, ".tmp.", 5) == 0) {
			if (drop(path, sb.st_size, dry_run, r, 1, e) < 0)
				goto out;
			continue;
		}
		if (S_ISDIR(sb.st_mode) && is_hex(d->d_name, 2) &&
		    prune_dir(st, path, ref, nref, dry_run, r, e) < 0)
			goto out;
	}
	if (errno != 0) {
		cs_errno(e, "read %s", st->blobs);
		goto out;
	}
	if (r->temps > 0 && !dry_run && fs_fsync_dir(st->blobs, e) < 0)
		goto out;
	rc = 0;
out:
	closedir(dp);
	return rc;
}

/* Prune against the referenced names ref (sorted; freed here). */
static int
prune_with(struct store *st, char **ref, size_t nref, int dry_run,
    int force, struct store_prune_result *r, struct cs_err *e)
{
	size_t i;
	uint64_t all;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	/* Count first: deleting most blobs, or any while the manifest names
	 * none, is what a manifest from elsewhere (or an emptied one) would
	 * do, so it needs --force. */
	if (prune_walk(st, ref, nref, 1, r, e) < 0)
		goto out;
	all = r->deleted + r->kept;
	if (!force && !dry_run && r->deleted > 0 &&
	    (nref == 0 || r->deleted > all / 2)) {
		cs_errf(e, "repository %s: prune would delete %llu of %llu "
		    "blobs (%llu bytes)%s; check that manifest.db is this "
		    "repository's (cutsnap ls -r %s), then run prune --force",
		    st->repo, (unsigned long long)r->deleted,
		    (unsigned long long)all, (unsigned long long)r->bytes,
		    nref == 0 ? " while the manifest refers to none" :
		    ", more than half", st->repo);
		goto out;
	}
	if (!dry_run) {
		memset(r, 0, sizeof(*r));
		if (prune_walk(st, ref, nref, 0, r, e) < 0 ||
		    store_bcheck_purge(st, e) < 0)
			goto out;
	}
	r->referenced = nref;
	rc = 0;
out:
	for (i = 0; i < nref; i++)
		free(ref[i]);
	free(ref);
	return rc;
}

int
store_prune(struct store *st, int dry_run, int force,
    struct store_prune_result *r, struct cs_err *e)
{
	char **ref = NULL;
	size_t nref = 0;

	memset(r, 0, sizeof(*r));
	if (store_lock(st, 1, e) < 0)
		return -1;
	if (store_blob_referenced(st, &ref, &nref, e) < 0)
		return -1;
	return prune_with(st, ref, nref, dry_run, force, r, e);
}
