/* rows.c - resolving a snapshot id and loading its rows for verify and
 * restore, trusting nothing about their types or values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

int
store_snap_resolve(struct store *st, uint64_t id, uint64_t *resolved,
    struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int step, rc = -1;

	*resolved = 0;
	if (id > (uint64_t)INT64_MAX)
		return cs_errf(e, "snapshot %llu does not exist",
		    (unsigned long long)id);
	if (store_db_prepare(st, id == 0 ?
	    "SELECT id FROM snapshots WHERE status = 'complete' "
	    "ORDER BY id DESC LIMIT 1" :
	    "SELECT id FROM snapshots WHERE id = ?", &s, e) < 0)
		return -1;
	if (id != 0)
		sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	step = sqlite3_step(s);
	if (step == SQLITE_ROW && sqlite3_column_int64(s, 0) > 0) {
		*resolved = (uint64_t)sqlite3_column_int64(s, 0);
		rc = 0;
	} else if (step == SQLITE_ROW || step == SQLITE_DONE) {
		if (id == 0)
			cs_errf(e, "no complete snapshot in %s", st->repo);
		else
			cs_errf(e, "snapshot %llu does not exist",
			    (unsigned long long)id);
	} else
		store_db_fail(st, e, "reading snapshots");
	sqlite3_finalize(s);
	return rc;
}

static char *
dup_col(sqlite3_stmt *s, int i)
{
	return strdup(store_col_text(s, i));
}

static int
hex_ok(const char *hex)
{
	uint8_t sha[SHA_LEN];

	return strlen(hex) == SHA_HEX_LEN - 1 && sha_unhex(hex, sha) == 0;
}

static int
load_snapshot(struct store *st, struct snap_rows *r, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int step, rc = -1;

	if (store_db_prepare(st, "SELECT status, config, digest FROM snapshots "
	    "WHERE id = ?", &s, e) < 0)
		return -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)r->id);
	step = sqlite3_step(s);
	if (step == SQLITE_DONE) {
		cs_errf(e, "snapshot %llu does not exist",
		    (unsigned long long)r->id);
		goto out;
	}
	if (step != SQLITE_ROW) {
		store_db_fail(st, e, "reading the snapshot");
		goto out;
	}
	snprintf(r->status, sizeof(r->status), "%s", store_col_text(s, 0));
	if ((r->config = dup_col(s, 1)) == NULL ||
	    (r->digest = dup_col(s, 2)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

/* Grow *v (of elements of size sz) so that one more fits. */
static int
grow(void **v, size_t n, size_t *cap, size_t sz)
{
	void *nv;
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	if ((nv = realloc(*v, ncap * sz)) == NULL)
		return -1;
	memset((char *)nv + n * sz, 0, (ncap - n) * sz);
	*v = nv;
	*cap = ncap;
	return 0;
}

/* Where load_agents and load_msgs put each row, and the room there. */
struct load {
	struct store *st;
	struct snap_rows *r;
	size_t cap;
};

static int
agent_row(void *ctx, sqlite3_stmt *s, struct cs_err *e)
{
	struct load *l = ctx;
	struct snap_rows *r = l->r;
	struct row_agent *a;

	if (grow((void **)&r->agents, r->nagents, &l->cap,
	    sizeof(*r->agents)) < 0)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	a = &r->agents[r->nagents++];
	if ((a->name = dup_col(s, 0)) == NULL ||
	    (a->sha = dup_col(s, 2)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	a->ok = store_col_u64(s, 1, &a->size) == 0 &&
	    cfg_valid_name(a->name) && hex_ok(a->sha);
	return 0;
}

static int
load_agents(struct store *st, struct snap_rows *r, struct cs_err *e)
{
	struct load l = { st, r, 0 };
	int64_t id = (int64_t)r->id;

	return store_db_each(st, "SELECT name, size, sha256 FROM agents "
	    "WHERE snapshot_id = ? ORDER BY name", &id, agent_row, &l,
	    "reading agents", e);
}

/* The chunk rows, attached to their agents (both ordered by name). */
static int
load_chunks(struct store *st, struct snap_rows *r, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	struct row_agent *a = NULL;
	struct row_chunk *c;
	size_t k = 0, cap = 0;
	int step, rc = -1;

	if (store_db_prepare(st, "SELECT agent, idx, offset, size, sha256 FROM "
	    "agent_chunks WHERE snapshot_id = ? ORDER BY agent, idx", &s,
	    e) < 0)
		return -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)r->id);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		if (a == NULL || strcmp(a->name, store_col_text(s, 0)) != 0) {
			a = NULL;
			cap = 0;
			for (; k < r->nagents && a == NULL; k++)
				if (strcmp(r->agents[k].name,
				    store_col_text(s, 0)) == 0)
					a = &r->agents[k];
			if (a == NULL)
				break;	/* no agent row: foreign_key_check */
		}
		if (grow((void **)&a->chunks, a->nchunks, &cap,
		    sizeof(*a->chunks)) < 0)
			goto oom;
		c = &a->chunks[a->nchunks++];
		if ((c->sha = dup_col(s, 4)) == NULL)
			goto oom;
		c->ok = store_col_u64(s, 1, &c->idx) == 0 &&
		    store_col_u64(s, 2, &c->off) == 0 &&
		    store_col_u64(s, 3, &c->size) == 0 && hex_ok(c->sha);
	}
	if (step != SQLITE_DONE && step != SQLITE_ROW) {
		store_db_fail(st, e, "reading chunks");
		goto out;
	}
	rc = 0;
	goto out;
oom:
	cs_errc(e, CS_E_NOMEM, "out of memory");
out:
	sqlite3_finalize(s);
	return rc;
}

/* Replace the sealed payload of message m by its plain bytes; one that
 * does not open stays as it is, marked damaged. -1: out of memory. */
static int
open_msg(struct store *st, struct row_msg *m)
{
	uint8_t name[SHA_LEN], *plain;
	size_t len;
	struct cs_err e;

	e.code = 0;	/* sha_unhex fills no error */
	if (sha_unhex(m->sha, name) < 0 ||
	    store_crypt_msg(st, 0, name, m->src, m->dst, m->seq, m->data,
	    m->len, &plain, &len, &e) < 0) {
		m->damaged = 1;
		return cs_err_code(&e) == CS_E_NOMEM ? -1 : 0;
	}
	free(m->data);
	m->data = plain;
	m->len = len;
	return 0;
}

static int
msg_row(void *ctx, sqlite3_stmt *s, struct cs_err *e)
{
	struct load *l = ctx;
	struct snap_rows *r = l->r;
	struct row_msg *m;
	const void *p;

	if (grow((void **)&r->msgs, r->nmsgs, &l->cap, sizeof(*r->msgs)) < 0)
		goto oom;
	m = &r->msgs[r->nmsgs++];
	m->rowid = sqlite3_column_int64(s, 0);
	if ((m->src = dup_col(s, 1)) == NULL ||
	    (m->dst = dup_col(s, 2)) == NULL ||
	    (m->sha = dup_col(s, 5)) == NULL)
		goto oom;
	/* A text or NULL data column is taken as its bytes. */
	p = sqlite3_column_blob(s, 4);
	m->len = (size_t)sqlite3_column_bytes(s, 4);
	if (m->len > 0) {
		if (p == NULL || (m->data = malloc(m->len)) == NULL)
			goto oom;
		memcpy(m->data, p, m->len);
	}
	m->ok = store_col_u64(s, 3, &m->seq) == 0 &&
	    cfg_valid_name(m->src) && cfg_valid_name(m->dst);
	if (l->st->enc && m->ok && open_msg(l->st, m) < 0)
		goto oom;
	return 0;
oom:
	return cs_errc(e, CS_E_NOMEM, "out of memory");
}

static int
load_msgs(struct store *st, struct snap_rows *r, struct cs_err *e)
{
	struct load l = { st, r, 0 };
	int64_t id = (int64_t)r->id;

	return store_db_each(st, "SELECT id, src, dst, seq, data, sha256 "
	    "FROM messages WHERE snapshot_id = ? ORDER BY src, dst, seq, id",
	    &id, msg_row, &l, "reading messages", e);
}

static int
cmp_chan(const char *src, const char *dst, const struct row_msg *m)
{
	int c;

	if ((c = strcmp(src, m->src)) != 0)
		return c;
	return strcmp(dst, m->dst);
}

static int
cmp_msg(const void *a, const void *b)
{
	const struct row_msg *x = a, *y = b;
	int c;

	if ((c = cmp_chan(x->src, x->dst, y)) != 0)
		return c;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->rowid < y->rowid ? -1 : x->rowid > y->rowid;
}

size_t
store_rows_channel(const struct snap_rows *r, const char *src, const char *dst,
    size_t *n)
{
	size_t lo = 0, hi = r->nmsgs, end;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_chan(src, dst, &r->msgs[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < r->nmsgs &&
	    cmp_chan(src, dst, &r->msgs[end]) == 0; end++)
		;
	*n = end - lo;
	return lo;
}

int
store_rows_load(struct store *st, uint64_t id, struct snap_rows *r,
    struct cs_err *e)
{
	memset(r, 0, sizeof(*r));
	r->id = id;
	if (store_need_key(st, e) < 0)
		return -1;
	if (load_snapshot(st, r, e) < 0 || load_agents(st, r, e) < 0 ||
	    load_chunks(st, r, e) < 0 || load_msgs(st, r, e) < 0) {
		store_rows_free(r);
		return -1;
	}
	/* Sorted here rather than trusted from SQL: a tampered column of
	 * another type sorts differently in SQLite than with strcmp. */
	if (r->nmsgs > 1)
		qsort(r->msgs, r->nmsgs, sizeof(*r->msgs), cmp_msg);
	return 0;
}

void
store_rows_free(struct snap_rows *r)
{
	size_t i, j;

	if (r == NULL)
		return;
	for (i = 0; i < r->nagents; i++) {
		free(r->agents[i].name);
		free(r->agents[i].sha);
		for (j = 0; j < r->agents[i].nchunks; j++)
			free(r->agents[i].chunks[j].sha);
		free(r->agents[i].chunks);
	}
	for (i = 0; i < r->nmsgs; i++) {
		free(r->msgs[i].src);
		free(r->msgs[i].dst);
		free(r->msgs[i].data);
		free(r->msgs[i].sha);
	}
	free(r->agents);
	free(r->msgs);
	free(r->config);
	free(r->digest);
	memset(r, 0, sizeof(*r));
}
