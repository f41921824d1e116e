/* auth.c - authenticated manifests: an HMAC-SHA256 tag per snapshot.
 *
 * With a key (store_set_key), a commit stores in table snapshot_macs the
 * tag HMAC-SHA256(key, "cutsnap-manifest-mac-1" | u64 id | digest), where
 * digest is the snapshot's digest (digest.c), the SHA-256 over a canonical
 * form of every row of the snapshot, the SHA-256 of each blob or chunk
 * among them. Verify with the key recomputes the digest from the rows as
 * they are now, so whoever edits a row, recomputes the stored digest and
 * replaces a blob with its new SHA-256 still cannot make a matching tag.
 * The key itself is never written into the repository.
 *
 * snapshot_macs is created by the first keyed commit, so repositories that
 * never used a key keep their schema untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "../crypto/mac.h"

#define MAC_DOMAIN "cutsnap-manifest-mac-1"

static const char macs_sql[] =
    "CREATE TABLE IF NOT EXISTS snapshot_macs("
    " snapshot_id INTEGER PRIMARY KEY"
    "  REFERENCES snapshots(id) ON DELETE CASCADE,"
    " mac TEXT NOT NULL)";

int
store_set_key(struct store *st, const uint8_t *key, size_t klen,
    struct cs_err *e)
{
	uint8_t *k;

	if (klen < MAC_KEY_MIN || klen > MAC_KEY_MAX)
		return cs_errf(e, "a key must be %d to %d bytes", MAC_KEY_MIN,
		    MAC_KEY_MAX);
	if ((k = malloc(klen)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	memcpy(k, key, klen);
	mac_key_free(st->key, st->keylen);
	st->key = k;
	st->keylen = klen;
	return 0;
}

/* The tag of snapshot id as its rows are now, as hex. */
static int
compute(struct store *st, uint64_t id, char hex[SHA_HEX_LEN],
    struct cs_err *e)
{
	uint8_t msg[sizeof(MAC_DOMAIN) + 8 + SHA_HEX_LEN], tag[MAC_LEN];
	char digest[SHA_HEX_LEN];
	size_t n = sizeof(MAC_DOMAIN);
	int i;

	if (store_digest(st, id, digest, e) < 0)
		return -1;
	memcpy(msg, MAC_DOMAIN, sizeof(MAC_DOMAIN));	/* with its NUL */
	for (i = 0; i < 8; i++)
		msg[n++] = (uint8_t)(id >> (8 * i));
	memcpy(msg + n, digest, SHA_HEX_LEN - 1);
	n += SHA_HEX_LEN - 1;
	if (mac_hmac_sha256(st->key, st->keylen, msg, n, tag, e) < 0)
		return -1;
	sha_hex(tag, hex);
	return 0;
}

int
store_auth_put(struct store *st, uint64_t id, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	char hex[SHA_HEX_LEN];
	int rc = -1;

	if (st->key == NULL)
		return 0;
	if (compute(st, id, hex, e) < 0 || store_db_exec(st, macs_sql, e) < 0 ||
	    store_db_prepare(st,
	    "INSERT OR REPLACE INTO snapshot_macs(snapshot_id, "
	    "mac) VALUES (?, ?)", &s, e) < 0)
		goto out;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	sqlite3_bind_text(s, 2, hex, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(s) != SQLITE_DONE) {
		store_db_fail(st, e, "storing the snapshot's hmac");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

/* The stored tag of snapshot id into hex ("" when none); 0 / -1. */
static int
stored_tag(struct store *st, uint64_t id, char *hex, size_t hexsz,
    struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int step, rc = -1;

	hex[0] = '\0';
	if ((step = store_db_has_table(st, "snapshot_macs", e)) <= 0)
		return step;
	if (store_db_prepare(st,
	    "SELECT mac FROM snapshot_macs WHERE snapshot_id "
	    "= ?", &s, e) < 0)
		return -1;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
	step = sqlite3_step(s);
	if (step == SQLITE_ROW)
		snprintf(hex, hexsz, "%s", store_col_text(s, 0));
	else if (step != SQLITE_DONE) {
		store_db_fail(st, e, "reading the snapshot's hmac");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

int
store_snapshot_keyed(struct store *st, uint64_t id, int *keyed,
    struct cs_err *e)
{
	char hex[80];

	*keyed = 0;
	if (stored_tag(st, id, hex, sizeof(hex), e) < 0)
		return -1;
	*keyed = hex[0] != '\0';
	return 0;
}

void
store_auth_check(struct vrun *v)
{
	char want[80], got[SHA_HEX_LEN];
	uint8_t a[MAC_LEN], b[MAC_LEN];
	struct cs_err e;

	if (v->st->key == NULL)
		return;
	if (stored_tag(v->st, v->id, want, sizeof(want), &e) < 0) {
		store_vproblem(v, "hmac could not be read: %s", e.msg);
		return;
	}
	if (want[0] == '\0') {
		store_vproblem(v,
		    "not authenticated: no hmac-sha256 tag (it was "
		    "not taken with --key), so it cannot be checked");
		return;
	}
	if (compute(v->st, v->id, got, &e) < 0) {
		store_vproblem(v, "hmac could not be computed: %s", e.msg);
		return;
	}
	if (sha_unhex(want, a) < 0 || sha_unhex(got, b) < 0 ||
	    !mac_equal(a, b, MAC_LEN))
		store_vproblem(v,
		    "hmac-sha256 mismatch: the manifest was changed "
		    "after the snapshot was taken, or the key is not the one "
		    "it was taken with");
}
