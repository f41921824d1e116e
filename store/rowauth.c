/* rowauth.c - an encrypted repository authenticates each snapshot's rows
 * with its master key.
 *
 * The unkeyed digest (digest.c) catches damage but not an edit: whoever
 * can write the manifest can rewire a snapshot's rows to an older
 * snapshot's chunks and recompute it. So at commit an encrypted repository
 * also stores in table snapshot_row_macs HMAC-SHA256(rows key,
 * "cutsnap-rows-1" | repository id | le64 id | digest), rows key =
 * HKDF(master, "cutsnap rows 1"); verify and restore recompute the digest
 * from the rows as they are and compare.
 *
 * No downgrade: a repository whose snapshots all carry the MAC says so in
 * its key rows, whose own MAC (crypt.c) then uses the domain
 * "cutsnap-keyrow-2" instead of "-1". Without the master key nobody can
 * turn a -2 row back into a -1 row, so deleting the MACs (as if the
 * snapshots came from an older version) leaves key rows that demand them.
 * A repository made by an older version gets its MACs, and its key rows
 * the new domain, in one transaction at its first keyed write (a snapshot
 * or a key change): what its rows are then is what is trusted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "../crypto/mac.h"

#define ROWS_DOMAIN "cutsnap-rows-1"

static const char macs_sql[] =
    "CREATE TABLE IF NOT EXISTS snapshot_row_macs("
    " snapshot_id INTEGER PRIMARY KEY"
    "  REFERENCES snapshots(id) ON DELETE CASCADE,"
    " mac BLOB NOT NULL)";

/* The MAC of snapshot id's rows as they are now. */
static int
compute(struct store *st, uint64_t id, uint8_t out[MAC_LEN],
    struct cs_err *e)
{
	uint8_t k[AEAD_KEY_LEN];
	uint8_t msg[sizeof(ROWS_DOMAIN) + REPO_ID_LEN + 8 + SHA_HEX_LEN];
	char digest[SHA_HEX_LEN];
	size_t n = 0;
	int i, rc;

	if (store_digest(st, id, digest, e) < 0 ||
	    aead_hkdf(st->master, AEAD_KEY_LEN, "cutsnap rows 1", k, e) < 0)
		return -1;
	memcpy(msg, ROWS_DOMAIN, sizeof(ROWS_DOMAIN));	/* with its NUL */
	n += sizeof(ROWS_DOMAIN);
	memcpy(msg + n, st->repo_idb, REPO_ID_LEN);
	n += REPO_ID_LEN;
	for (i = 0; i < 8; i++)
		msg[n++] = (uint8_t)(id >> (8 * i));
	memcpy(msg + n, digest, SHA_HEX_LEN - 1);
	n += SHA_HEX_LEN - 1;
	rc = mac_hmac_sha256(k, sizeof(k), msg, n, out, e);
	mac_cleanse(k, sizeof(k));
	return rc;
}

int
store_rows_mac_put(struct store *st, uint64_t id, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	uint8_t mac[MAC_LEN];
	int rc = -1;

	if (!st->enc)
		return 0;
	if (store_need_key(st, e) < 0 || compute(st, id, mac, e) < 0 ||
	    store_db_exec(st, macs_sql, e) < 0 ||
	    store_db_prepare(st, "INSERT OR REPLACE INTO snapshot_row_macs("
	    "snapshot_id, mac) VALUES (?1, ?2)", &s, e) < 0)
		goto out;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	sqlite3_bind_blob(s, 2, mac, sizeof(mac), SQLITE_TRANSIENT);
	if (sqlite3_step(s) != SQLITE_DONE)
		store_db_fail(st, e, "storing the snapshot's row mac");
	else
		rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

/* The ids backfill collects before it writes, growing. */
struct ids {
	uint64_t *v;
	size_t n, cap;
};

static int
add_id(void *ctx, sqlite3_stmt *s, struct cs_err *e)
{
	struct ids *l = ctx;
	uint64_t *nv;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		if ((nv = realloc(l->v, l->cap * sizeof(*nv))) == NULL)
			return cs_errc(e, CS_E_NOMEM, "out of memory");
		l->v = nv;
	}
	l->v[l->n++] = (uint64_t)sqlite3_column_int64(s, 0);
	return 0;
}

/* Every complete snapshot without a row MAC gets one. The ids are read
 * first: the MACs are written outside the reading statement. */
static int
backfill(struct store *st, struct cs_err *e)
{
	struct ids l = { NULL, 0, 0 };
	size_t i;
	int rc = -1;

	if (store_db_exec(st, macs_sql, e) < 0 || store_db_each(st,
	    "SELECT id FROM snapshots WHERE status = 'complete' AND id NOT IN "
	    "(SELECT snapshot_id FROM snapshot_row_macs) ORDER BY id", NULL,
	    add_id, &l, "reading the snapshots", e) < 0)
		goto out;
	for (i = 0; i < l.n; i++)
		if (store_rows_mac_put(st, l.v[i], e) < 0)
			goto out;
	rc = 0;
out:
	free(l.v);
	return rc;
}

int
store_rows_auth_upgrade(struct store *st, struct cs_err *e)
{
	if (!st->enc || st->rows_authed)
		return 0;
	if (store_need_key(st, e) < 0 || backfill(st, e) < 0 ||
	    store_crypt_keyrows_v2(st, e) < 0)
		return -1;
	st->rows_authed = 1;
	return 0;
}

/* The stored MAC of snapshot id into mac; 1 found, 0 none, -1. */
static int
stored(struct store *st, uint64_t id, uint8_t mac[MAC_LEN], struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int step, rc;

	if ((rc = store_db_has_table(st, "snapshot_row_macs", e)) <= 0)
		return rc;
	rc = -1;
	if (store_db_prepare(st, "SELECT mac FROM snapshot_row_macs WHERE "
	    "snapshot_id = ?1", &s, e) < 0)
		return -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	step = sqlite3_step(s);
	if (step == SQLITE_DONE)
		rc = 0;
	else if (step != SQLITE_ROW)
		store_db_fail(st, e, "reading the snapshot's row mac");
	else if (sqlite3_column_bytes(s, 0) != MAC_LEN)
		rc = 2;		/* malformed: compares as a mismatch */
	else {
		memcpy(mac, sqlite3_column_blob(s, 0), MAC_LEN);
		rc = 1;
	}
	sqlite3_finalize(s);
	return rc;
}

#define NOT_AUTH "rows not authenticated by the repository key: edited " \
    "without the key"

/* 0 the rows match their MAC (or predate MACs), 1 they do not, 2 the MAC
 * is missing where the key rows demand one, -1 error. */
static int
check(struct store *st, uint64_t id, struct cs_err *e)
{
	uint8_t want[MAC_LEN], got[MAC_LEN];
	int have;

	if (!st->enc || !st->unlocked)
		return 0;
	if ((have = stored(st, id, want, e)) < 0)
		return -1;
	if (have == 0)
		return st->rows_authed ? 2 : 0;	/* 0: an older version's,
						 * not written since */
	if (have == 2)
		return 1;
	if (compute(st, id, got, e) < 0)
		return -1;
	return mac_equal(want, got, MAC_LEN) ? 0 : 1;
}

int
store_rows_auth_verify(struct store *st, uint64_t id, struct cs_err *e)
{
	int r = check(st, id, e);

	if (r <= 0)
		return r;
	return cs_errf(e, "snapshot %llu: " NOT_AUTH "%s",
	    (unsigned long long)id, r == 2 ? " (its row mac was removed)" : "");
}

void
store_rows_auth_check(struct vrun *v)
{
	struct cs_err e;
	int r = check(v->st, v->id, &e);

	if (r < 0)
		store_vproblem(v, "row mac could not be checked: %s", e.msg);
	else if (r > 0)
		store_vproblem(v, NOT_AUTH "%s", r == 2 ?
		    " (its row mac was removed)" : "");
}

int
store_rows_auth_checked(const struct store *st)
{
	return st->enc && st->unlocked && st->rows_authed;
}
