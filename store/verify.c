/* verify.c - the integrity half of verify: the manifest database, the
 * blobs, the messages' hashes and the snapshot's digest. The consistency
 * of the cut is in verify_cut.c. Every problem is one line; nothing in a
 * tampered repository may crash it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

void
vproblem(struct vrun *v, const char *fmt, ...)
{
	char msg[700], line[800];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "snapshot %llu: %s",
	    (unsigned long long)v->id, msg);
	v->nproblems++;
	if (v->fn != NULL)
		v->fn(v->ctx, line);
}

/* PRAGMA integrity_check and foreign_key_check over the whole file. */
static void
check_db(struct vrun *v)
{
	sqlite3_stmt *s = NULL;
	int step;

	if (sqlite3_prepare_v2(v->st->db, "PRAGMA integrity_check", -1, &s,
	    NULL) != SQLITE_OK) {
		vproblem(v, "manifest integrity_check failed: %s",
		    sqlite3_errmsg(v->st->db));
		goto fk;
	}
	while ((step = sqlite3_step(s)) == SQLITE_ROW)
		if (strcmp(col_text(s, 0), "ok") != 0)
			vproblem(v, "manifest integrity_check: %s",
			    col_text(s, 0));
	if (step != SQLITE_DONE)
		vproblem(v, "manifest integrity_check failed: %s",
		    sqlite3_errmsg(v->st->db));
fk:
	sqlite3_finalize(s);
	s = NULL;
	if (sqlite3_prepare_v2(v->st->db, "PRAGMA foreign_key_check", -1, &s,
	    NULL) != SQLITE_OK) {
		vproblem(v, "manifest foreign_key_check failed: %s",
		    sqlite3_errmsg(v->st->db));
		goto out;
	}
	while ((step = sqlite3_step(s)) == SQLITE_ROW)
		vproblem(v, "manifest: row %lld of table %s has no matching "
		    "row in table %s", (long long)sqlite3_column_int64(s, 1),
		    col_text(s, 0), col_text(s, 2));
	if (step != SQLITE_DONE)
		vproblem(v, "manifest foreign_key_check failed: %s",
		    sqlite3_errmsg(v->st->db));
out:
	sqlite3_finalize(s);
}

/* The blob of agent row i exists, has its size and its sha256; keeps
 * the mapping for the cut check. */
static void
check_blob(struct vrun *v, size_t i)
{
	const struct row_agent *a = &v->rows.agents[i];
	struct blob_map *m = &v->maps[i];
	char path[PATH_MAX], hex[SHA_HEX_LEN];
	uint8_t sha[SHA_LEN];
	struct cs_err e;
	int rc;

	if (!a->ok) {
		vproblem(v, "agent %.64s: malformed manifest row (name, size "
		    "or sha256)", a->name);
		return;
	}
	if (blob_path(v->st, a->sha, path, sizeof(path), &e) < 0) {
		vproblem(v, "agent %s: %s", a->name, e.msg);
		return;
	}
	if ((rc = blob_map(path, m, &e)) == -2) {
		vproblem(v, "agent %s: blob %.*s missing (expected %llu bytes "
		    "at %s)", a->name, SHORT_SHA(a->sha),
		    (unsigned long long)a->size, path);
		return;
	}
	if (rc < 0) {
		vproblem(v, "agent %s: blob %.*s: %s", a->name,
		    SHORT_SHA(a->sha), e.msg);
		return;
	}
	if ((uint64_t)m->len != a->size) {
		vproblem(v, "agent %s: blob %.*s size mismatch: expected %llu "
		    "bytes, found %zu", a->name, SHORT_SHA(a->sha),
		    (unsigned long long)a->size, m->len);
		goto bad;
	}
	if (sha256_buf(m->p ? m->p : (const uint8_t *)"", m->len, sha) < 0) {
		vproblem(v, "agent %s: blob %.*s: sha256 failed", a->name,
		    SHORT_SHA(a->sha));
		goto bad;
	}
	sha_hex(sha, hex);
	if (strcmp(hex, a->sha) != 0) {
		vproblem(v, "agent %s: blob %.*s sha256 mismatch: expected "
		    "%s, found %s", a->name, SHORT_SHA(a->sha), a->sha, hex);
		goto bad;
	}
	v->blob_ok[i] = 1;
	return;
bad:
	blob_unmap(m);
}

static void
check_msgs(struct vrun *v)
{
	const struct row_msg *m;
	char hex[SHA_HEX_LEN];
	uint8_t sha[SHA_LEN];
	size_t i;

	for (i = 0; i < v->rows.nmsgs; i++) {
		m = &v->rows.msgs[i];
		if (!m->ok) {
			vproblem(v, "message row %lld: malformed (src %.64s, "
			    "dst %.64s, seq)", (long long)m->rowid, m->src,
			    m->dst);
			continue;
		}
		if (sha256_buf(m->data ? m->data : (const uint8_t *)"",
		    m->len, sha) < 0) {
			vproblem(v, "channel %s->%s: message seq %llu: sha256 "
			    "failed", m->src, m->dst,
			    (unsigned long long)m->seq);
			continue;
		}
		sha_hex(sha, hex);
		if (strcmp(hex, m->sha) != 0)
			vproblem(v, "channel %s->%s: message seq %llu sha256 "
			    "mismatch: expected %.64s, found %s", m->src,
			    m->dst, (unsigned long long)m->seq, m->sha, hex);
	}
}

static void
check_digest(struct vrun *v)
{
	char hex[SHA_HEX_LEN];
	struct cs_err e;

	if (store_digest(v->st, v->id, hex, &e) < 0)
		vproblem(v, "manifest digest could not be computed: %s",
		    e.msg);
	else if (strcmp(hex, v->rows.digest) != 0)
		vproblem(v, "manifest digest mismatch: rows were edited or "
		    "deleted (expected %.64s, found %s)",
		    v->rows.digest[0] ? v->rows.digest : "none", hex);
}

int
store_verify(struct store *st, uint64_t id, uint64_t *resolved,
    problem_fn fn, void *ctx, struct cs_err *e)
{
	struct vrun v;
	uint64_t rid;
	size_t i;
	int rc = -1;

	memset(&v, 0, sizeof(v));
	if (resolved != NULL)
		*resolved = 0;
	if (snap_resolve(st, id, &rid, e) < 0)
		return -1;
	if (resolved != NULL)
		*resolved = rid;
	v.st = st;
	v.id = rid;
	v.fn = fn;
	v.ctx = ctx;
	if (rows_load(st, rid, &v.rows, e) < 0)
		return -1;
	if (strcmp(v.rows.status, "complete") != 0) {
		vproblem(&v, "status is %s, not complete",
		    v.rows.status[0] ? v.rows.status : "empty");
		rc = v.nproblems;
		goto out;
	}
	v.maps = calloc(v.rows.nagents + 1, sizeof(*v.maps));
	v.blob_ok = calloc(v.rows.nagents + 1, sizeof(*v.blob_ok));
	if (v.maps == NULL || v.blob_ok == NULL) {
		cs_errf(e, "out of memory");
		goto out;
	}
	check_db(&v);
	for (i = 0; i < v.rows.nagents; i++)
		check_blob(&v, i);
	check_msgs(&v);
	check_digest(&v);
	verify_cut(&v);
	rc = v.nproblems;
out:
	for (i = 0; v.maps != NULL && i < v.rows.nagents; i++)
		blob_unmap(&v.maps[i]);
	free(v.maps);
	free(v.blob_ok);
	rows_free(&v.rows);
	return rc;
}
