/* rotate.c - a new master key for an encrypted repository (key rotate).
 *
 * Everything is sealed and named again under the new key, so that the old
 * one, should it have leaked, opens nothing written from now on and no
 * object the repository still keeps: each chunk object is decoded with
 * the old keys and written under its new name (its new seal), each
 * recorded message re-sealed under its new name, the recorded files'
 * names recomputed from their plain bytes, then in the same transaction
 * the chunk rows renamed, every digest and row MAC recomputed and every
 * key row replaced by one for the new password (the others sealed the old
 * master key: they would open nothing). The old objects are deleted once
 * that transaction is durable; a crash before leaves the new ones as
 * garbage that prune removes, after it the old ones. Refused while a
 * snapshot carries a --key tag, which only its key can recompute. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_int.h"
#include "../lib/fsutil.h"
#include "../crypto/mac.h"

struct keys {
	uint8_t master[32], objkey[32], namekey[32];
};

struct rot {
	struct store *st;
	struct keys old, new;
	uint8_t *plain, *obj, *scratch;	/* a chunk's buffers */
	size_t cap;
};

static void
use(struct store *st, const struct keys *k)
{
	memcpy(st->master, k->master, sizeof(k->master));
	memcpy(st->objkey, k->objkey, sizeof(k->objkey));
	memcpy(st->namekey, k->namekey, sizeof(k->namekey));
}

static void
save(const struct store *st, struct keys *k)
{
	memcpy(k->master, st->master, sizeof(k->master));
	memcpy(k->objkey, st->objkey, sizeof(k->objkey));
	memcpy(k->namekey, st->namekey, sizeof(k->namekey));
}

static int
grow(struct rot *r, size_t len, struct cs_err *e)
{
	size_t ob = store_obj_frame_off(r->st) + store_obj_bound(r->st, len);

	if (len <= r->cap)
		return 0;
	free(r->plain);
	free(r->obj);
	free(r->scratch);
	r->plain = malloc(len);
	r->obj = malloc(ob);
	r->scratch = malloc(len);
	r->cap = len;
	if (r->plain == NULL || r->obj == NULL || r->scratch == NULL) {
		r->cap = 0;
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	}
	return 0;
}

/* The new name of old chunk name `hex` (from the map), "" when not yet. */
static int
mapped(struct rot *r, const char *hex, char out[SHA_HEX_LEN],
    struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int step;

	out[0] = '\0';
	if (store_db_prepare(r->st, "SELECT new FROM temp.rekey WHERE old = ?1",
	    &s, e) < 0)
		return -1;
	sqlite3_bind_text(s, 1, hex, -1, SQLITE_STATIC);
	step = sqlite3_step(s);
	if (step == SQLITE_ROW)
		snprintf(out, SHA_HEX_LEN, "%s", store_col_text(s, 0));
	sqlite3_finalize(s);
	return step == SQLITE_ROW || step == SQLITE_DONE ? 0 :
	    store_db_fail(r->st, e, "reading the new names");
}

/* r->plain[0, len) is chunk oldhex: write its object under the new key and
 * remember the new name. */
static int
put_chunk(struct rot *r, const char *oldhex, size_t len, struct cs_err *e)
{
	uint8_t sha[SHA_LEN], name[SHA_LEN];
	char hex[SHA_HEX_LEN], path[PATH_MAX], dir[PATH_MAX];
	sqlite3_stmt *s = NULL;
	size_t off = store_obj_frame_off(r->st) + OBJ_HDR_LEN, n;
	int rc = -1;

	use(r->st, &r->new);
	if (sha256_buf(r->plain, len, sha) < 0)
		return cs_errf(e, "hashing a chunk failed");
	store_name(r->st, sha, name);
	sha_hex(name, hex);
	memcpy(r->obj + off, r->plain, len);
	if (store_obj_encode_in_place(r->st, name, len, r->obj,
	    store_obj_frame_off(r->st) + store_obj_bound(r->st, len),
	    r->scratch, len, &n, e) < 0 ||
	    store_blob_path(r->st, hex, path, sizeof(path), e) < 0)
		return -1;
	fs_path_dirname(path, dir, sizeof(dir));
	if (fs_mkdir_p(dir, 0700, e) < 0 ||
	    fs_atomic_write_file(path, r->obj, n, 0600, e) < 0 ||
	    store_db_prepare(r->st, "INSERT INTO temp.rekey(old, new) "
	    "VALUES (?1, ?2)", &s, e) < 0)
		return -1;
	sqlite3_bind_text(s, 1, oldhex, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, hex, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE)
		store_db_fail(r->st, e, "remembering a new name");
	else
		rc = 0;
	sqlite3_finalize(s);
	return rc;
}

/* One recorded file: every chunk decoded with the old keys (and written
 * anew when not yet), the file's new name from its plain bytes. */
static int
do_file(struct rot *r, sqlite3_int64 id, const char *agent, struct cs_err *e)
{
	sqlite3_stmt *s = NULL, *u = NULL;
	struct sha_ctx *c = NULL;
	uint8_t sha[SHA_LEN], raw[SHA_LEN];
	char hex[SHA_HEX_LEN], path[PATH_MAX], newhex[SHA_HEX_LEN];
	size_t len;
	int step, rc = -1;

	if ((c = sha_new()) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if (store_db_prepare(r->st, "SELECT size, sha256 FROM agent_chunks "
	    "WHERE snapshot_id = ?1 AND agent = ?2 ORDER BY idx", &s, e) < 0)
		goto out;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_text(s, 2, agent, -1, SQLITE_STATIC);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		len = (size_t)sqlite3_column_int64(s, 0);
		snprintf(hex, sizeof(hex), "%s", store_col_text(s, 1));
		use(r->st, &r->old);
		if (grow(r, len, e) < 0 || sha_unhex(hex, raw) < 0 ||
		    store_blob_path(r->st, hex, path, sizeof(path), e) < 0 ||
		    store_obj_load(r->st, raw, path, r->plain, len, e) < 0 ||
		    sha_update(c, r->plain, len) < 0 ||
		    mapped(r, hex, newhex, e) < 0 ||
		    (newhex[0] == '\0' && put_chunk(r, hex, len, e) < 0)) {
			cs_errctx(e, "snapshot %lld, agent %s", (long long)id,
			    agent);
			goto out;
		}
	}
	if (step != SQLITE_DONE || sha_final(c, sha) < 0) {
		store_db_fail(r->st, e, "reading the chunk rows");
		goto out;
	}
	use(r->st, &r->new);
	store_name_hex(r->st, sha, hex);
	if (store_db_prepare(r->st, "UPDATE agents SET sha256 = ?1 WHERE "
	    "snapshot_id = ?2 AND name = ?3", &u, e) < 0)
		goto out;
	sqlite3_bind_text(u, 1, hex, -1, SQLITE_STATIC);
	sqlite3_bind_int64(u, 2, id);
	sqlite3_bind_text(u, 3, agent, -1, SQLITE_STATIC);
	if (sqlite3_step(u) != SQLITE_DONE)
		store_db_fail(r->st, e, "renaming a recorded file");
	else
		rc = 0;
out:
	sqlite3_finalize(s);
	sqlite3_finalize(u);
	sha_free(c);
	return rc;
}

/* The recorded files do_files reads before it rewrites them, growing. */
struct files {
	struct { sqlite3_int64 id; char *name; } *v;
	size_t n, cap;
};

static int
add_file(void *ctx, sqlite3_stmt *s, struct cs_err *e)
{
	struct files *f = ctx;
	void *nv;

	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 16;
		if ((nv = realloc(f->v, f->cap * sizeof(*f->v))) == NULL)
			return cs_errc(e, CS_E_NOMEM, "out of memory");
		f->v = nv;
	}
	f->v[f->n].id = sqlite3_column_int64(s, 0);
	if ((f->v[f->n].name = strdup(store_col_text(s, 1))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	f->n++;
	return 0;
}

/* Every recorded file of every snapshot. */
static int
do_files(struct rot *r, struct cs_err *e)
{
	struct files f = { NULL, 0, 0 };
	size_t i;
	int rc = -1;

	if (store_db_each(r->st, "SELECT snapshot_id, name FROM agents "
	    "ORDER BY snapshot_id, name", NULL, add_file, &f,
	    "reading the recorded files", e) < 0)
		goto out;
	for (i = 0; i < f.n; i++)
		if (do_file(r, f.v[i].id, f.v[i].name, e) < 0)
			goto out;
	rc = 0;
out:
	for (i = 0; i < f.n; i++)
		free(f.v[i].name);
	free(f.v);
	return rc;
}

/* One recorded message: opened with the old keys, sealed under its new
 * name. */
static int
do_msg(struct rot *r, sqlite3_stmt *s, sqlite3_stmt *u, struct cs_err *e)
{
	uint8_t raw[SHA_LEN], sha[SHA_LEN], name[SHA_LEN];
	uint8_t *plain = NULL, *sealed = NULL;
	const char *src = store_col_text(s, 1), *dst = store_col_text(s, 2);
	uint64_t seq = (uint64_t)sqlite3_column_int64(s, 3);
	char hex[SHA_HEX_LEN];
	size_t pn, sn;
	int rc = -1;

	use(r->st, &r->old);
	if (sha_unhex(store_col_text(s, 5), raw) < 0 ||
	    store_crypt_msg(r->st, 0, raw, src, dst, seq,
	    sqlite3_column_blob(s, 4), (size_t)sqlite3_column_bytes(s, 4),
	    &plain, &pn, e) < 0 || sha256_buf(plain, pn, sha) < 0) {
		cs_errctx(e, "message %s->%s seq %llu", src, dst,
		    (unsigned long long)seq);
		goto out;
	}
	use(r->st, &r->new);
	store_name(r->st, sha, name);
	sha_hex(name, hex);
	if (store_crypt_msg(r->st, 1, name, src, dst, seq, plain, pn, &sealed,
	    &sn, e) < 0)
		goto out;
	sqlite3_reset(u);
	sqlite3_bind_blob(u, 1, sealed, (int)sn, SQLITE_STATIC);
	sqlite3_bind_text(u, 2, hex, -1, SQLITE_STATIC);
	sqlite3_bind_int64(u, 3, sqlite3_column_int64(s, 0));
	if (sqlite3_step(u) != SQLITE_DONE)
		store_db_fail(r->st, e, "re-sealing a message");
	else
		rc = 0;
out:
	free(plain);
	free(sealed);
	return rc;
}

/* do_msg with its update statement, for store_db_each. */
struct msgs {
	struct rot *r;
	sqlite3_stmt *u;
};

static int
do_msg_row(void *ctx, sqlite3_stmt *s, struct cs_err *e)
{
	struct msgs *m = ctx;

	return do_msg(m->r, s, m->u, e);
}

static int
do_msgs(struct rot *r, struct cs_err *e)
{
	struct msgs m = { r, NULL };
	int rc;

	if (store_db_prepare(r->st, "UPDATE messages SET data = ?1, sha256 = ?2 "
	    "WHERE id = ?3", &m.u, e) < 0)
		return -1;
	rc = store_db_each(r->st, "SELECT id, src, dst, seq, data, sha256 "
	    "FROM messages ORDER BY id", NULL, do_msg_row, &m,
	    "reading the messages", e);
	sqlite3_finalize(m.u);
	return rc;
}

/* The chunk rows renamed, every complete snapshot's digest and row MAC
 * recomputed (under the new keys, now in st). */
static int
finish_rows(struct rot *r, struct cs_err *e)
{
	sqlite3_stmt *s = NULL, *u = NULL;
	char hex[SHA_HEX_LEN];
	sqlite3_int64 id;
	int step, rc = -1;

	if (store_db_exec(r->st, "UPDATE agent_chunks SET sha256 = (SELECT "
	    "new FROM temp.rekey WHERE old = agent_chunks.sha256)", e) < 0 ||
	    store_db_prepare(r->st, "SELECT id FROM snapshots WHERE status = "
	    "'complete' ORDER BY id", &s, e) < 0 ||
	    store_db_prepare(r->st, "UPDATE snapshots SET digest = ?1 WHERE "
	    "id = ?2", &u, e) < 0)
		goto out;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		id = sqlite3_column_int64(s, 0);
		if (store_digest(r->st, (uint64_t)id, hex, e) < 0)
			goto out;
		sqlite3_reset(u);
		sqlite3_bind_text(u, 1, hex, -1, SQLITE_STATIC);
		sqlite3_bind_int64(u, 2, id);
		if (sqlite3_step(u) != SQLITE_DONE) {
			store_db_fail(r->st, e, "storing a digest");
			goto out;
		}
		if (store_rows_mac_put(r->st, (uint64_t)id, e) < 0)
			goto out;
	}
	if (step != SQLITE_DONE)
		store_db_fail(r->st, e, "reading the snapshots");
	else
		rc = 0;
out:
	sqlite3_finalize(s);
	sqlite3_finalize(u);
	return rc;
}

/* Refuse while a snapshot carries a --key tag (its digest changes). */
static int
no_tags(struct store *st, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int have, n = 0;

	if ((have = store_db_has_table(st, "snapshot_macs", e)) <= 0)
		return have;
	if (store_db_prepare(st, "SELECT count(*) FROM snapshot_macs", &s,
	    e) < 0)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (n > 0)
		return cs_errf(e, "repository %s: %d snapshot%s carr%s a --key "
		    "tag, which only that key can compute again: forget %s "
		    "first", st->repo, n, n == 1 ? "" : "s",
		    n == 1 ? "ies" : "y", n == 1 ? "it" : "them");
	return 0;
}

/* After the commit: the old objects go. */
static void
drop_old(struct rot *r)
{
	sqlite3_stmt *s = NULL;
	char path[PATH_MAX];
	struct cs_err e;

	if (store_db_prepare(r->st, "SELECT old FROM temp.rekey", &s, &e) < 0)
		return;
	while (sqlite3_step(s) == SQLITE_ROW)
		if (store_blob_path(r->st, store_col_text(s, 0), path,
		    sizeof(path), &e) == 0)
			(void)unlink(path);
	sqlite3_finalize(s);
	(void)store_db_exec(r->st, "DROP TABLE temp.rekey", &e);
}

int
store_key_rotate(struct store *st, const void *pass, size_t passlen,
    int64_t *id, struct cs_err *e)
{
	struct rot r;
	int rc = -1;

	memset(&r, 0, sizeof(r));
	r.st = st;
	if (store_need_key(st, e) < 0)
		return -1;
	if (!st->enc)
		return cs_errf(e, "repository %s is not encrypted", st->repo);
	if (store_lock(st, 1, e) < 0 || no_tags(st, e) < 0 ||
	    store_db_exec(st, "CREATE TEMP TABLE IF NOT EXISTS rekey(old TEXT "
	    "PRIMARY KEY, new TEXT NOT NULL); DELETE FROM temp.rekey", e) < 0)
		return -1;
	save(st, &r.old);
	if (store_db_begin(st, e) < 0)
		goto out;
	if (store_crypt_new_master(st, e) < 0)
		goto out;
	save(st, &r.new);
	if (do_files(&r, e) < 0 || do_msgs(&r, e) < 0)
		goto out;
	use(st, &r.new);
	st->rows_authed = 1;
	if (finish_rows(&r, e) < 0 ||
	    store_db_exec(st, "DELETE FROM repo_keys", e) < 0 ||
	    store_crypt_add_key(st, pass, passlen, id, e) < 0 ||
	    store_gen_step(st, e) < 0 || store_db_commit(st, e) < 0)
		goto out;
	st->key_id = *id;
	drop_old(&r);
	rc = store_gen_publish(st, e);
out:
	if (rc < 0 && !sqlite3_get_autocommit(st->db)) {
		store_db_rollback(st);
		use(st, &r.old);	/* nothing changed */
	}
	free(r.plain);
	free(r.obj);
	free(r.scratch);
	mac_cleanse(&r.old, sizeof(r.old));
	mac_cleanse(&r.new, sizeof(r.new));
	return rc;
}
