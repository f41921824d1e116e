/* crypt.c - encrypted repositories: the key table and what is sealed.
 *
 * A random 256-bit master key, never stored in the clear: each row of
 * table repo_keys holds it sealed (AES-256-GCM) under a key derived from
 * a password with scrypt (N, r, p and a random salt recorded in the row;
 * associated data "cutsnap-key-1" | repository id | salt). Opening the
 * repository tries the password against every row. From the master key,
 * HKDF-SHA256 derives the object key (AES-256-GCM for chunks and
 * recorded messages) and the name key (HMAC-SHA256): a chunk's blob, a
 * recorded file's and a message's sha256 column are named by
 * HMAC(name key, SHA-256 of the plain bytes), so equal chunks still
 * deduplicate and a name says nothing about the bytes to whoever lacks
 * the key. A sealed object is nonce | ciphertext | tag with associated
 * data "cutsnap-obj-1" | kind | repository id | context, the context
 * being the object's name (and a message's channel and seq), so an object
 * moved to another name, kind, row or repository does not open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "../crypto/aead.h"
#include "../crypto/mac.h"

#define KEY_AAD "cutsnap-key-1"
#define OBJ_AAD "cutsnap-obj-1"
/* Key rows of a repository whose snapshot rows all carry a MAC use the
 * second domain (rowauth.c): same length, so one buffer fits both. */
#define KEYROW_DOMAIN "cutsnap-keyrow-1"
#define KEYROW_DOMAIN_2 "cutsnap-keyrow-2"
#define SALT_LEN 32
/* The default cost: about half a second on a small server. */
#define SCRYPT_N_DEFAULT (1u << 16)
#define SCRYPT_R 8
#define SCRYPT_P 1

static const char keys_sql[] =
    "CREATE TABLE IF NOT EXISTS repo_keys("
    " id INTEGER PRIMARY KEY,"
    " created TEXT NOT NULL,"
    " kdf TEXT NOT NULL,"
    " n INTEGER NOT NULL,"
    " r INTEGER NOT NULL,"
    " p INTEGER NOT NULL,"
    " salt BLOB NOT NULL,"
    " sealed BLOB NOT NULL,"
    " mac BLOB NOT NULL)";

int
store_encrypted(const struct store *st)
{
	return st->enc;
}

/* The scrypt N for new keys: CUTSNAP_SCRYPT_N (a power of two; the tests
 * lower the cost with it) or the default. */
static uint64_t
scrypt_n(void)
{
	const char *s = getenv("CUTSNAP_SCRYPT_N");
	char *end;
	unsigned long long v;

	if (s == NULL || *s == '\0')
		return SCRYPT_N_DEFAULT;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || !aead_scrypt_valid(v, SCRYPT_R, SCRYPT_P))
		return SCRYPT_N_DEFAULT;
	return v;
}

static void
key_aad(const struct store *st, const uint8_t salt[SALT_LEN],
    uint8_t out[sizeof(KEY_AAD) + REPO_ID_LEN + SALT_LEN])
{
	memcpy(out, KEY_AAD, sizeof(KEY_AAD));
	memcpy(out + sizeof(KEY_AAD), st->repo_idb, REPO_ID_LEN);
	memcpy(out + sizeof(KEY_AAD) + REPO_ID_LEN, salt, SALT_LEN);
}

/* A key row's check: HMAC-SHA256 under a key derived from the master key
 * over "cutsnap-keyrow-V" | repository id | le64 N, r, p | salt | sealed,
 * so that verify, holding the master key, finds a damaged row of any
 * other password too. V is 2 (domain 2) in a repository that authenticates
 * its snapshots' rows, else 1. */
static int
row_mac_v(const struct store *st, int v2, uint64_t n, uint64_t r, uint64_t p,
    const uint8_t *salt, const uint8_t *sealed, uint8_t out[MAC_LEN],
    struct cs_err *e)
{
	uint8_t k[AEAD_KEY_LEN];
	uint8_t msg[sizeof(KEYROW_DOMAIN) + REPO_ID_LEN + 24 + SALT_LEN +
	    AEAD_KEY_LEN + AEAD_OVERHEAD];
	uint8_t *q = msg;
	uint64_t v[3] = { n, r, p };
	int i, j, rc;

	if (aead_hkdf(st->master, AEAD_KEY_LEN, "cutsnap keys 1", k, e) < 0)
		return -1;
	memcpy(q, v2 ? KEYROW_DOMAIN_2 : KEYROW_DOMAIN, sizeof(KEYROW_DOMAIN));
	q += sizeof(KEYROW_DOMAIN);
	memcpy(q, st->repo_idb, REPO_ID_LEN);
	q += REPO_ID_LEN;
	for (i = 0; i < 3; i++)
		for (j = 0; j < 8; j++)
			*q++ = (uint8_t)(v[i] >> (8 * j));
	memcpy(q, salt, SALT_LEN);
	q += SALT_LEN;
	memcpy(q, sealed, AEAD_KEY_LEN + AEAD_OVERHEAD);
	rc = mac_hmac_sha256(k, sizeof(k), msg, sizeof(msg), out, e);
	mac_cleanse(k, sizeof(k));
	return rc;
}

static int
row_mac(const struct store *st, uint64_t n, uint64_t r, uint64_t p,
    const uint8_t *salt, const uint8_t *sealed, uint8_t out[MAC_LEN],
    struct cs_err *e)
{
	return row_mac_v(st, st->rows_authed, n, r, p, salt, sealed, out, e);
}

int
store_crypt_add_key(struct store *st, const void *pass, size_t passlen,
    int64_t *id, struct cs_err *e)
{
	uint8_t mac[MAC_LEN];
	uint8_t salt[SALT_LEN], kek[AEAD_KEY_LEN];
	uint8_t aad[sizeof(KEY_AAD) + REPO_ID_LEN + SALT_LEN];
	uint8_t sealed[AEAD_KEY_LEN + AEAD_OVERHEAD];
	uint64_t n = scrypt_n();
	sqlite3_stmt *s = NULL;
	char now[32];
	int rc = -1;

	if (!st->unlocked)
		return cs_errf(e, "repository %s: not unlocked", st->repo);
	if (aead_random(salt, sizeof(salt), e) < 0 ||
	    aead_scrypt(pass, passlen, salt, sizeof(salt), n, SCRYPT_R,
	    SCRYPT_P, kek, e) < 0)
		goto out;
	key_aad(st, salt, aad);
	if (aead_seal(kek, aad, sizeof(aad), st->master, AEAD_KEY_LEN, sealed,
	    e) < 0 || row_mac(st, n, SCRYPT_R, SCRYPT_P, salt, sealed, mac,
	    e) < 0)
		goto out;
	store_now(now);
	if (store_db_exec(st, keys_sql, e) < 0 ||
	    store_db_prepare(st,
	    "INSERT INTO repo_keys(created, kdf, n, r, p, salt, "
	    "sealed, mac) VALUES (?1, 'scrypt', ?2, ?3, ?4, ?5, ?6, ?7)", &s,
	    e) < 0)
		goto out;
	sqlite3_bind_text(s, 1, now, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)n);
	sqlite3_bind_int64(s, 3, SCRYPT_R);
	sqlite3_bind_int64(s, 4, SCRYPT_P);
	sqlite3_bind_blob(s, 5, salt, sizeof(salt), SQLITE_TRANSIENT);
	sqlite3_bind_blob(s, 6, sealed, sizeof(sealed), SQLITE_TRANSIENT);
	sqlite3_bind_blob(s, 7, mac, sizeof(mac), SQLITE_TRANSIENT);
	if (sqlite3_step(s) != SQLITE_DONE) {
		store_db_fail(st, e, "storing a key");
		goto out;
	}
	if (id != NULL)
		*id = (int64_t)sqlite3_last_insert_rowid(st->db);
	rc = 0;
out:
	sqlite3_finalize(s);
	mac_cleanse(kek, sizeof(kek));
	return rc;
}

/* Derive the object and name keys from st->master. */
static int
derive(struct store *st, struct cs_err *e)
{
	if (aead_hkdf(st->master, AEAD_KEY_LEN, "cutsnap objects 1",
	    st->objkey, e) < 0 ||
	    aead_hkdf(st->master, AEAD_KEY_LEN, "cutsnap names 1",
	    st->namekey, e) < 0)
		return -1;
	st->unlocked = 1;
	return 0;
}

/* st->repo_id (32 hex digits) into st->repo_idb. */
static int
load_id(struct store *st, struct cs_err *e)
{
	size_t i;

	if (strlen(st->repo_id) != 2 * REPO_ID_LEN)
		return cs_errf(e, "repository %s is encrypted but has no "
		    "identity", st->repo);
	for (i = 0; i < REPO_ID_LEN; i++)
		if (sscanf(st->repo_id + 2 * i, "%2hhx", &st->repo_idb[i]) != 1)
			return cs_errf(e, "repository %s: malformed identity",
			    st->repo);
	return 0;
}

int
store_crypt_new_master(struct store *st, struct cs_err *e)
{
	return aead_random(st->master, AEAD_KEY_LEN, e) < 0 ? -1 :
	    derive(st, e);
}

int
store_crypt_create(struct store *st, const void *pass, size_t passlen,
    struct cs_err *e)
{
	if (load_id(st, e) < 0 ||
	    aead_random(st->master, AEAD_KEY_LEN, e) < 0 ||
	    derive(st, e) < 0)
		return -1;
	st->enc = 1;
	st->rows_authed = 1;	/* a new repository: every snapshot's rows */
	return store_crypt_add_key(st, pass, passlen, NULL, e);
}

/* A key row's n, r, p, salt and sealed, from column col on: whether they
 * could open anything (parameters scrypt takes, the lengths written). */
static int
row_form_ok(sqlite3_stmt *s, int col, uint64_t *n, uint64_t *r, uint64_t *p)
{
	return store_col_u64(s, col, n) == 0 &&
	    store_col_u64(s, col + 1, r) == 0 &&
	    store_col_u64(s, col + 2, p) == 0 && *r <= 32 && *p <= 32 &&
	    aead_scrypt_valid(*n, (uint32_t)*r, (uint32_t)*p) &&
	    sqlite3_column_bytes(s, col + 3) == SALT_LEN &&
	    sqlite3_column_bytes(s, col + 4) == AEAD_KEY_LEN + AEAD_OVERHEAD;
}

/* Why no key row opened: none, damaged rows (a malformed row says nothing
 * about the password: it could have been that key's), or a wrong
 * password (every row well formed, none opens with it). */
static void
unlock_fail(const struct store *st, int nkeys, int nbad, int64_t bad_id,
    struct cs_err *e)
{
	if (nkeys == 0)
		cs_errc(e, CS_E_CORRUPT, "repository %s is encrypted but has "
		    "no key",
		    st->repo);
	else if (nbad == 0)
		cs_errc(e, CS_E_AUTH, "repository %s: wrong password (none of "
		    "its %d "
		    "key%s opens with it)", st->repo, nkeys,
		    nkeys == 1 ? "" : "s");
	else if (nbad == nkeys)
		cs_errc(e, CS_E_CORRUPT, "repository %s: key row %lld is "
		    "damaged (its scrypt "
		    "parameters, salt or sealed key are malformed)%s, so no "
		    "password can open it", st->repo, (long long)bad_id,
		    nbad > 1 ? ", as are all the others" : "");
	else
		cs_errc(e, CS_E_CORRUPT, "repository %s: key row %lld is "
		    "damaged (its scrypt "
		    "parameters, salt or sealed key are malformed)%s, and "
		    "none of the other %d opens with this password",
		    st->repo, (long long)bad_id, nbad > 1 ?
		    " with others" : "", nkeys - nbad);
}

/* each_valid_row's function, for each_valid_one. */
struct valid_rows {
	struct store *st;
	int (*fn)(struct store *, int64_t, int, const uint8_t *,
	    struct cs_err *);
};

static int
each_valid_one(void *ctx, sqlite3_stmt *s, struct cs_err *e)
{
	struct valid_rows *w = ctx;
	uint8_t m1[MAC_LEN], m2[MAC_LEN];
	uint64_t n, r, p;
	int v2;

	if (!row_form_ok(s, 1, &n, &r, &p) ||
	    sqlite3_column_bytes(s, 6) != MAC_LEN)
		return 0;
	if (row_mac_v(w->st, 0, n, r, p, sqlite3_column_blob(s, 4),
	    sqlite3_column_blob(s, 5), m1, e) < 0 ||
	    row_mac_v(w->st, 1, n, r, p, sqlite3_column_blob(s, 4),
	    sqlite3_column_blob(s, 5), m2, e) < 0)
		return -1;
	v2 = mac_equal(m2, sqlite3_column_blob(s, 6), MAC_LEN);
	if ((v2 || mac_equal(m1, sqlite3_column_blob(s, 6), MAC_LEN)) &&
	    w->fn(w->st, sqlite3_column_int64(s, 0), v2, m2, e) < 0)
		return -1;
	return 0;
}

/* For each key row with a valid MAC of either domain: fn(ctx, id, v2).
 * Rows that are malformed or match neither are skipped (verify names
 * them). */
static int
each_valid_row(struct store *st, int (*fn)(struct store *, int64_t, int,
    const uint8_t *, struct cs_err *), struct cs_err *e)
{
	struct valid_rows w = { st, fn };

	return store_db_each(st, "SELECT id, n, r, p, salt, sealed, mac "
	    "FROM repo_keys ORDER BY id", NULL, each_valid_one, &w,
	    "reading the keys", e);
}

static int
note_v2(struct store *st, int64_t id, int v2, const uint8_t *m2,
    struct cs_err *e)
{
	(void)id;
	(void)m2;
	(void)e;
	if (v2)
		st->rows_authed = 1;
	return 0;
}

/* st->rows_authed: whether any valid key row uses the second domain. */
static int
rows_mode(struct store *st, struct cs_err *e)
{
	st->rows_authed = 0;
	return each_valid_row(st, note_v2, e);
}

static int
rewrite_v2(struct store *st, int64_t id, int v2, const uint8_t *m2,
    struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int rc = -1;

	if (v2)
		return 0;
	if (store_db_prepare(st, "UPDATE repo_keys SET mac = ?1 WHERE id = ?2",
	    &s, e) < 0)
		return -1;
	sqlite3_bind_blob(s, 1, m2, MAC_LEN, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 2, id);
	if (sqlite3_step(s) != SQLITE_DONE)
		store_db_fail(st, e, "updating a key");
	else
		rc = 0;
	sqlite3_finalize(s);
	return rc;
}

int
store_crypt_keyrows_v2(struct store *st, struct cs_err *e)
{
	return each_valid_row(st, rewrite_v2, e);
}

static int
store_crypt_unlock_with(struct store *st, const void *pass, size_t passlen,
    struct cs_err *e)
{
	uint8_t kek[AEAD_KEY_LEN], master[AEAD_KEY_LEN];
	uint8_t aad[sizeof(KEY_AAD) + REPO_ID_LEN + SALT_LEN];
	sqlite3_stmt *s = NULL;
	struct cs_err le;
	uint64_t n, r, p;
	int64_t bad_id = 0;
	int step, rc = -1, nkeys = 0, nbad = 0;

	if (store_db_prepare(st,
	    "SELECT id, n, r, p, salt, sealed FROM repo_keys "
	    "WHERE kdf = 'scrypt' ORDER BY id", &s, e) < 0)
		return -1;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		nkeys++;
		if (!row_form_ok(s, 1, &n, &r, &p)) {
			/* A malformed row opens nothing: no password is
			 * wrong for it, it is damaged. */
			if (nbad++ == 0)
				bad_id = sqlite3_column_int64(s, 0);
			continue;
		}
		if (aead_scrypt(pass, passlen, sqlite3_column_blob(s, 4),
		    SALT_LEN, n, (uint32_t)r, (uint32_t)p, kek, e) < 0)
			goto out;
		key_aad(st, sqlite3_column_blob(s, 4), aad);
		if (aead_open(kek, aad, sizeof(aad), sqlite3_column_blob(s, 5),
		    AEAD_KEY_LEN + AEAD_OVERHEAD, master, &le) == 0) {
			memcpy(st->master, master, AEAD_KEY_LEN);
			st->key_id = sqlite3_column_int64(s, 0);
			sqlite3_finalize(s);
			s = NULL;
			if (derive(st, e) == 0 && rows_mode(st, e) == 0)
				rc = 0;
			goto out;
		}
	}
	if (step != SQLITE_DONE) {
		store_db_fail(st, e, "reading the keys");
		goto out;
	}
	unlock_fail(st, nkeys, nbad, bad_id, e);
out:
	sqlite3_finalize(s);
	mac_cleanse(kek, sizeof(kek));
	mac_cleanse(master, sizeof(master));
	return rc;
}

int
store_crypt_unlock(struct store *st, struct cs_err *e)
{
	char pass[STORE_PASSWORD_MAX];
	size_t len = 0;
	int rc;

	if (!st->enc || st->unlocked)
		return 0;
	if (load_id(st, e) < 0)
		return -1;
	if (st->opts.password == NULL)
		return 0;
	if (st->opts.password(st->opts.password_ctx, st->repo, pass,
	    sizeof(pass), &len, e) < 0)
		return -1;
	rc = store_crypt_unlock_with(st, pass, len, e);
	mac_cleanse(pass, sizeof(pass));
	return rc;
}

int
store_need_key(struct store *st, struct cs_err *e)
{
	if (!st->enc || st->unlocked)
		return 0;
	return cs_errc(e, CS_E_AUTH, "repository %s is encrypted: a "
	    "password is needed "
	    "(--password-file, CUTSNAP_PASSWORD_FILE, CUTSNAP_PASSWORD or a "
	    "terminal)", st->repo);
}

void
store_name(const struct store *st, const uint8_t sha[SHA_LEN],
    uint8_t out[SHA_LEN])
{
	struct cs_err e;

	if (!st->enc) {
		memcpy(out, sha, SHA_LEN);
		return;
	}
	/* Without the key (never reached: callers check store_need_key)
	 * the name matches nothing. */
	if (!st->unlocked ||
	    mac_hmac_sha256(st->namekey, AEAD_KEY_LEN, sha, SHA_LEN, out,
	    &e) < 0)
		memset(out, 0, SHA_LEN);
}

void
store_name_hex(const struct store *st, const uint8_t sha[SHA_LEN],
    char hex[SHA_HEX_LEN])
{
	uint8_t name[SHA_LEN];

	store_name(st, sha, name);
	sha_hex(name, hex);
}

/* The associated data of an object: "cutsnap-obj-1" | kind | repository
 * id | ctx; malloc'ed. */
static uint8_t *
obj_aad(const struct store *st, char kind, const void *ctx, size_t ctxlen,
    size_t *len)
{
	uint8_t *a;

	*len = sizeof(OBJ_AAD) + 1 + REPO_ID_LEN + ctxlen;
	if ((a = malloc(*len)) == NULL)
		return NULL;
	memcpy(a, OBJ_AAD, sizeof(OBJ_AAD));
	a[sizeof(OBJ_AAD)] = (uint8_t)kind;
	memcpy(a + sizeof(OBJ_AAD) + 1, st->repo_idb, REPO_ID_LEN);
	memcpy(a + sizeof(OBJ_AAD) + 1 + REPO_ID_LEN, ctx, ctxlen);
	return a;
}

/* Seal (seal=1) or open in[0, n) into out under the object key; an
 * opening puts the bytes after the first n1 where where says
 * (aead_open_split). */
static int
crypt_obj(const struct store *st, int seal, char kind, const void *ctx,
    size_t ctxlen, const uint8_t *in, size_t n, uint8_t *out, size_t n1,
    aead_where_fn where, void *wctx, struct cs_err *e)
{
	uint8_t *aad;
	size_t alen;
	int rc;

	if (!st->unlocked)
		return cs_errf(e, "repository %s: not unlocked", st->repo);
	if ((aad = obj_aad(st, kind, ctx, ctxlen, &alen)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	rc = seal ? aead_seal(st->objkey, aad, alen, in, n, out, e) :
	    aead_open_split(st->objkey, aad, alen, in, n, out, n1, where,
	    wctx, e);
	free(aad);
	return rc;
}

int
store_crypt_seal(const struct store *st, char kind, const void *ctx,
    size_t ctxlen, const uint8_t *in, size_t n, uint8_t *out,
    struct cs_err *e)
{
	return crypt_obj(st, 1, kind, ctx, ctxlen, in, n, out, 0, NULL, NULL,
	    e);
}

int
store_crypt_open(const struct store *st, char kind, const void *ctx,
    size_t ctxlen, const uint8_t *in, size_t n, uint8_t *out,
    struct cs_err *e)
{
	return crypt_obj(st, 0, kind, ctx, ctxlen, in, n, out, n, NULL, NULL,
	    e);
}

int
store_crypt_open_split(const struct store *st, char kind, const void *ctx,
    size_t ctxlen, const uint8_t *in, size_t n, uint8_t *out, size_t n1,
    aead_where_fn where, void *wctx, struct cs_err *e)
{
	return crypt_obj(st, 0, kind, ctx, ctxlen, in, n, out, n1, where, wctx,
	    e);
}

/* A message's context: its name, then "src\0dst\0" and le64 seq. */
static uint8_t *
msg_ctx(const uint8_t name[SHA_LEN], const char *src, const char *dst,
    uint64_t seq, size_t *len)
{
	size_t ls = strlen(src) + 1, ld = strlen(dst) + 1;
	uint8_t *c;
	int i;

	*len = SHA_LEN + ls + ld + 8;
	if ((c = malloc(*len)) == NULL)
		return NULL;
	memcpy(c, name, SHA_LEN);
	memcpy(c + SHA_LEN, src, ls);
	memcpy(c + SHA_LEN + ls, dst, ld);
	for (i = 0; i < 8; i++)
		c[SHA_LEN + ls + ld + i] = (uint8_t)(seq >> (8 * i));
	return c;
}

int
store_crypt_msg(const struct store *st, int seal, const uint8_t name[SHA_LEN],
    const char *src, const char *dst, uint64_t seq, const uint8_t *in,
    size_t n, uint8_t **out, size_t *outlen, struct cs_err *e)
{
	uint8_t *ctx;
	size_t clen;
	int rc = -1;

	*out = NULL;
	*outlen = 0;
	if (!seal && n < AEAD_OVERHEAD)
		return cs_errf(e, "authentication failed (too short)");
	*outlen = seal ? n + AEAD_OVERHEAD : n - AEAD_OVERHEAD;
	if ((ctx = msg_ctx(name, src, dst, seq, &clen)) == NULL ||
	    (*out = malloc(*outlen + 1)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	rc = crypt_obj(st, seal, 'M', ctx, clen, in, n, *out, *outlen, NULL,
	    NULL, e);
out:
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*outlen = 0;
	}
	free(ctx);
	return rc;
}

/* The keys store_crypt_list_keys lists, growing. */
struct key_list {
	struct store *st;
	struct store_key *v;
	size_t n, cap;
};

static int
list_key_row(void *ctx, sqlite3_stmt *s, struct cs_err *e)
{
	struct key_list *l = ctx;
	struct store_key *k, *nv;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		if ((nv = realloc(l->v, l->cap * sizeof(*nv))) == NULL)
			return cs_errc(e, CS_E_NOMEM, "out of memory");
		l->v = nv;
	}
	k = &l->v[l->n++];
	memset(k, 0, sizeof(*k));
	k->id = sqlite3_column_int64(s, 0);
	snprintf(k->created, sizeof(k->created), "%s", store_col_text(s, 1));
	snprintf(k->kdf, sizeof(k->kdf), "%s", store_col_text(s, 2));
	k->n = (uint64_t)sqlite3_column_int64(s, 3);
	k->r = (uint32_t)sqlite3_column_int64(s, 4);
	k->p = (uint32_t)sqlite3_column_int64(s, 5);
	k->current = l->st->unlocked && k->id == l->st->key_id;
	return 0;
}

int
store_crypt_list_keys(struct store *st, struct store_key **out, size_t *n,
    struct cs_err *e)
{
	struct key_list l = { st, NULL, 0, 0 };

	*out = NULL;
	*n = 0;
	if (!st->enc)
		return cs_errf(e, "repository %s is not encrypted", st->repo);
	if (store_db_each(st, "SELECT id, created, kdf, n, r, p FROM repo_keys "
	    "ORDER BY id", NULL, list_key_row, &l, "reading the keys", e) < 0) {
		free(l.v);
		return -1;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

int
store_key_add(struct store *st, const void *pass, size_t passlen,
    int remove_current, int64_t *id, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int rc = -1;

	if (store_need_key(st, e) < 0)
		return -1;
	if (!st->enc)
		return cs_errf(e, "repository %s is not encrypted", st->repo);
	if (store_db_begin(st, e) < 0)
		return -1;
	if (store_rows_auth_upgrade(st, e) < 0 ||
	    store_crypt_add_key(st, pass, passlen, id, e) < 0)
		goto out;
	if (remove_current) {
		if (store_db_prepare(st, "DELETE FROM repo_keys WHERE id = ?1",
		    &s, e) < 0)
			goto out;
		sqlite3_bind_int64(s, 1, st->key_id);
		if (sqlite3_step(s) != SQLITE_DONE) {
			store_db_fail(st, e, "removing a key");
			goto out;
		}
		st->key_id = *id;
	}
	if (store_gen_step(st, e) < 0 || store_db_commit(st, e) < 0)
		goto out;
	rc = store_gen_publish(st, e);
out:
	sqlite3_finalize(s);
	if (rc < 0)
		store_db_rollback(st);
	return rc;
}

int
store_key_remove(struct store *st, int64_t id, struct cs_err *e)
{
	sqlite3_stmt *s = NULL;
	int rc = -1;

	if (store_need_key(st, e) < 0)
		return -1;
	if (!st->enc)
		return cs_errf(e, "repository %s is not encrypted", st->repo);
	if (id == st->key_id)
		return cs_errc(e, CS_E_USAGE, "key %lld is the one this "
		    "password opens: "
		    "remove it with another key's password, or use key passwd",
		    (long long)id);
	if (store_db_begin(st, e) < 0)
		return -1;
	if (store_db_prepare(st, "DELETE FROM repo_keys WHERE id = ?1", &s,
	    e) < 0)
		goto out;
	sqlite3_bind_int64(s, 1, id);
	if (sqlite3_step(s) != SQLITE_DONE) {
		store_db_fail(st, e, "removing a key");
		goto out;
	}
	if (sqlite3_changes(st->db) == 0) {
		cs_errc(e, CS_E_NOTFOUND, "repository %s has no key %lld",
		    st->repo,
		    (long long)id);
		goto out;
	}
	if (store_gen_step(st, e) < 0 || store_db_commit(st, e) < 0)
		goto out;
	rc = store_gen_publish(st, e);
out:
	sqlite3_finalize(s);
	if (rc < 0)
		store_db_rollback(st);
	return rc;
}

/* check_key_rows's question and where its answers go. */
struct key_rows {
	struct store *st;
	int with_mac;
	void (*fn)(void *ctx, int64_t id);
	void *ctx;
};

static int
check_key_row(void *ctx, sqlite3_stmt *s, struct cs_err *e)
{
	struct key_rows *k = ctx;
	uint8_t mac[MAC_LEN];
	uint64_t n, r, p;
	int bad;

	bad = strcmp(store_col_text(s, 7), "scrypt") != 0 ||
	    !row_form_ok(s, 1, &n, &r, &p) ||
	    sqlite3_column_bytes(s, 6) != MAC_LEN;
	if (!bad && k->with_mac) {
		if (row_mac(k->st, n, r, p, sqlite3_column_blob(s, 4),
		    sqlite3_column_blob(s, 5), mac, e) < 0)
			return -1;
		bad = !mac_equal(mac, sqlite3_column_blob(s, 6), MAC_LEN);
	}
	if (bad)
		k->fn(k->ctx, sqlite3_column_int64(s, 0));
	return 0;
}

/* Each key row that is malformed, or (with_mac: the master key is
 * there) fails its MAC, to fn. */
static int
check_key_rows(struct store *st, int with_mac,
    void (*fn)(void *ctx, int64_t id), void *ctx, struct cs_err *e)
{
	struct key_rows k = { st, with_mac, fn, ctx };

	return store_db_each(st, "SELECT id, n, r, p, salt, sealed, mac, kdf "
	    "FROM repo_keys ORDER BY id", NULL, check_key_row, &k,
	    "reading the keys", e);
}

int
store_crypt_check_keys(struct store *st, void (*fn)(void *ctx, int64_t id),
    void *ctx, struct cs_err *e)
{
	if (!st->enc)
		return 0;
	if (store_need_key(st, e) < 0)
		return -1;
	return check_key_rows(st, 1, fn, ctx, e);
}

int
store_crypt_check_key_forms(struct store *st,
    void (*fn)(void *ctx, int64_t id), void *ctx, struct cs_err *e)
{
	if (!st->enc)
		return 0;
	return check_key_rows(st, 0, fn, ctx, e);
}
