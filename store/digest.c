/* digest.c - a snapshot's digest: SHA-256 over a canonical form of all
 * its manifest rows, stored at commit and recomputed by verify.
 *
 * Canonical form: a version string, then for each table (in a fixed
 * order) its name and every row in a fixed order, each row introduced by
 * 'R' and each field written as u8 sqlite type | u64 length | bytes
 * (INTEGER as 8 little-endian bytes). Lengths make it unambiguous and the
 * type tag makes a changed type a changed digest. The row order sorts on
 * every column, so duplicated rows are ordered too. */
#include <stdio.h>
#include <string.h>

#include "store_int.h"

/* The table list of each schema version: agent_chunks since version 2. */
static const struct {
	const char *table;
	int since;
	const char *sql;
} tables[] = {
	{ "snapshots", 1, "SELECT id, started_at, initiator, config FROM "
	    "snapshots WHERE id = ?1" },
	{ "agents", 1, "SELECT name, data_path, size, sha256 FROM agents "
	    "WHERE snapshot_id = ?1 ORDER BY name, data_path, size, sha256" },
	{ "agent_chunks", 2, "SELECT agent, idx, offset, size, sha256 FROM "
	    "agent_chunks WHERE snapshot_id = ?1 "
	    "ORDER BY agent, idx, offset, size, sha256" },
	{ "watermarks", 1, "SELECT agent, kind, peer, seq FROM watermarks "
	    "WHERE snapshot_id = ?1 ORDER BY agent, kind, peer, seq" },
	{ "channels", 1, "SELECT src, dst, applied, sent FROM channels "
	    "WHERE snapshot_id = ?1 ORDER BY src, dst, applied, sent" },
	{ "messages", 1, "SELECT src, dst, seq, data, sha256 FROM messages "
	    "WHERE snapshot_id = ?1 ORDER BY src, dst, seq, data, sha256" },
};

static int
put_field(struct sha_ctx *c, int type, const void *p, size_t n)
{
	uint8_t hdr[9];
	size_t i;

	hdr[0] = (uint8_t)type;
	for (i = 0; i < 8; i++)
		hdr[1 + i] = (uint8_t)((uint64_t)n >> (8 * i));
	if (sha_update(c, hdr, sizeof(hdr)) < 0)
		return -1;
	return n ? sha_update(c, p, n) : 0;
}

static int
put_column(struct sha_ctx *c, sqlite3_stmt *s, int i)
{
	uint8_t le[8];
	uint64_t v;
	const void *p;
	int t = sqlite3_column_type(s, i), k;

	switch (t) {
	case SQLITE_INTEGER:
		v = (uint64_t)sqlite3_column_int64(s, i);
		for (k = 0; k < 8; k++)
			le[k] = (uint8_t)(v >> (8 * k));
		return put_field(c, t, le, sizeof(le));
	case SQLITE_NULL:
		return put_field(c, t, NULL, 0);
	case SQLITE_BLOB:
		p = sqlite3_column_blob(s, i);
		break;
	default:	/* TEXT, FLOAT (as SQLite prints it) */
		p = sqlite3_column_text(s, i);
		break;
	}
	if (p == NULL && sqlite3_errcode(sqlite3_db_handle(s)) == SQLITE_NOMEM)
		return -1;
	return put_field(c, t, p, (size_t)sqlite3_column_bytes(s, i));
}

/* One row into the digest: "R", then each column. */
static int
put_row(void *ctx, sqlite3_stmt *s, struct cs_err *e)
{
	int i, n = sqlite3_column_count(s);

	if (sha_update(ctx, "R", 1) < 0)
		return cs_errf(e, "computing the manifest digest failed");
	for (i = 0; i < n; i++)
		if (put_column(ctx, s, i) < 0)
			return cs_errf(e, "computing the manifest digest "
			    "failed");
	return 0;
}

static int
put_table(struct store *st, struct sha_ctx *c, size_t t, uint64_t id,
    struct cs_err *e)
{
	int64_t sid = (int64_t)id;

	if (put_field(c, 0, tables[t].table, strlen(tables[t].table)) < 0)
		return cs_errf(e, "computing the manifest digest failed");
	return store_db_each(st, tables[t].sql, &sid, put_row, c,
	    "reading the manifest", e);
}

int
store_digest(struct store *st, uint64_t id, char hex[SHA_HEX_LEN],
    struct cs_err *e)
{
	return store_digest_v(st, id, STORE_SCHEMA_VERSION, hex, e);
}

int
store_digest_v(struct store *st, uint64_t id, int version,
    char hex[SHA_HEX_LEN], struct cs_err *e)
{
	struct sha_ctx *c;
	uint8_t sha[SHA_LEN];
	char tag[40];
	size_t t;
	int rc = -1;

	snprintf(tag, sizeof(tag), "cutsnap-manifest-digest-%d", version);
	if ((c = sha_new()) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if (put_field(c, 0, tag, strlen(tag)) < 0) {
		cs_errf(e, "computing the manifest digest failed");
		goto out;
	}
	for (t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		if (tables[t].since <= version && put_table(st, c, t, id, e) < 0)
			goto out;
	if (sha_final(c, sha) < 0) {
		cs_errf(e, "computing the manifest digest failed");
		goto out;
	}
	sha_hex(sha, hex);
	rc = 0;
out:
	sha_free(c);
	return rc;
}
