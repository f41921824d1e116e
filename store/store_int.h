/* store_int.h - what the store's own files share; not a public API. */
#ifndef CUTSNAP_STORE_INT_H
#define CUTSNAP_STORE_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>
#include "store.h"
#include "../crypto/aead.h"
#include "../proto/chunkobj.h"
#include "../log/datalog.h"
#include "../crypto/sha.h"

#define REPO_ID_LEN 16

struct store {
	sqlite3 *db;		/* REPO/manifest.db, owned */
	sqlite3 *checks;	/* REPO/blobchecks.db (blobcheck.c), opened on
				 * first use, owned; or NULL */
	int mode;		/* enum store_mode */
	int readonly;		/* a reader of a read-only repository (see
				 * open_reader): nothing may be moved there */
	int version;		/* the manifest's schema version */
	int dir_fd;		/* REPO, flocked: shared by a reader,
				 * exclusive by forget/prune; or -1 */
	char repo_id[40];	/* the identity, "" for version 2 */
	char repo[PATH_MAX];	/* as given by the caller, for messages */
	char blobs[PATH_MAX];	/* REPO/blobs */
	int lock_fd;		/* our flocked lock file (lock.c), or -1 */
	int lock_excl;		/* it is an exclusive lock */
	int lock_user;		/* taken with store_lock: kept until
				 * store_unlock, not released at commit */
	char lock_name[160];	/* "locks/<pid>-<time>.lock" when held */
	uint64_t lock_snap;	/* the snapshot the lock stands for */
	uint8_t *key;		/* HMAC key (auth.c), owned, or NULL */
	size_t keylen;
	progress_fn pfn;	/* store_set_progress, or NULL */
	void *pctx;
	uint64_t pdone, ptotal;	/* bytes of the current operation */
	int pnested;		/* restore runs verify: one count for both,
				 * verify adds the bytes restore will write */
	int recheck_set;	/* store_set_recheck_age was called */
	int64_t recheck_s;	/* its age; else RECHECK_DEFAULT_S */
	chunk_put_fn putfn;	/* store_set_put, or NULL */
	void *putctx;
	chunk_fetch_fn ffn;	/* store_set_fetch, or NULL */
	void *fctx;
	uint64_t max_rate;	/* store_set_max_rate: bytes/s, 0: none */
	problem_fn nfn;		/* store_set_notes, or NULL */
	void *nctx;
	int compress;		/* STORE_COMPRESS_*, from repo_settings */
	int have_settings;	/* the repository has repo_settings */
	const struct store_settings *init;	/* while store_init opens it:
						 * the settings to create */
	struct store_opts opts;	/* store_open_with's, or zeroed */
	int enc;		/* encrypted (crypt.c) */
	int unlocked;		/* and its master key is known */
	uint8_t repo_idb[REPO_ID_LEN];	/* repo_id as bytes, bound to
					 * every sealed object */
	uint8_t master[32], objkey[32], namekey[32];	/* cleansed at close */
	int64_t key_id;		/* the repo_keys row that opened it */
	uint64_t gen_known;	/* generation.c: the highest generation the
				 * commit objects and state file know */
	uint64_t id_known;	/* and the highest snapshot id */
	uint64_t gen_pending;	/* store_gen_step's, until published */
	uint64_t gen_pending_max;
	char gen_digest[SHA_HEX_LEN];	/* its snapshot list's digest */
	char gen_warn[1024];	/* a reader's rollback warning, or "" */
	int rows_authed;	/* its key rows say every snapshot's rows
				 * carry a MAC (rowauth.c) */
	atomic_ullong nchunk_reads;	/* chunks read from their blobs (and
					 * decoded, if framed): view.c */
	uint64_t vahead;	/* and of them, decoded by a replay ahead */
	uint64_t vchunks, vreads;	/* the last verify's chunk rows and
					 * the chunk reads it made */
	volatile sig_atomic_t *stop;	/* store_set_stop, or NULL */
	uint8_t (*wrote)[SHA_LEN];	/* the blobs store_put_chunks renamed
					 * into place (orphans.c), malloc'ed */
	size_t nwrote, wrote_cap;
};

/* orphans.c: remember that st renamed blob name into place (the caller
 * serialises calls); 0, or -1 when out of memory. */
int store_wrote_add(struct store *st, const uint8_t name[SHA_LEN]);
/* retain.c: every blob name (lowercase hex) some snapshot's rows refer
 * to, sorted and distinct; *out malloc'ed, each name too. */
int store_blob_referenced(struct store *st, char ***out, size_t *n,
    struct cs_err *e);

/* How long a stored chunk's check is trusted before a snapshot that
 * reuses it hashes it again (chunkstore.c). */
#define RECHECK_DEFAULT_S (7 * 86400)

/* The chunk lists (schema version 2): an agent's recorded file is the
 * concatenation of its rows in idx order, each a blob named by sha256. */
#define CHUNKS_SCHEMA_SQL \
    "CREATE TABLE IF NOT EXISTS agent_chunks(" \
    " snapshot_id INTEGER NOT NULL," \
    " agent TEXT NOT NULL," \
    " idx INTEGER NOT NULL," \
    " offset INTEGER NOT NULL," \
    " size INTEGER NOT NULL," \
    " sha256 TEXT NOT NULL," \
    " PRIMARY KEY (snapshot_id, agent, idx)," \
    " FOREIGN KEY (snapshot_id, agent)" \
    "  REFERENCES agents(snapshot_id, name) ON DELETE CASCADE);" \
    "CREATE INDEX IF NOT EXISTS agent_chunks_by_sha ON agent_chunks(sha256);"

/* migrate.c: upgrade a version 1 manifest to 2, and 2 to 3, in place
 * (one transaction each). store_migrate_v2 needs foreign keys off; it gives
 * the repository its identity (store_repo_id_ensure's). */
int store_migrate_v1(struct store *st, struct cs_err *e);
int store_migrate_v2(struct store *st, struct cs_err *e);
/* repoid.c: the identity in blobs/.repository-id, created (atomically,
 * random) unless it is there already; called inside the transaction
 * that stores it in the manifest. */
int store_repo_id_ensure(struct store *st, char id[40], struct cs_err *e);
/* Store id as the manifest's identity (inside a write transaction). */
int store_repo_id_store(struct store *st, const char *id, struct cs_err *e);
/* The manifest and blobs/ are of one repository (schema 3 on): 0, or -1
 * with e saying which is missing or whose they are. Sets st->repo_id. */
int store_repo_id_check(struct store *st, struct cs_err *e);
#define REPO_ID_TABLE_SQL \
    "CREATE TABLE IF NOT EXISTS repository(id TEXT NOT NULL);"

/* progress.c (thread-safe): start counting from 0 towards total; add n
 * to the total; count n more bytes done on agent's file and tell the
 * callback. */
void store_progress_start(struct store *st, uint64_t total);
void store_progress_grow(struct store *st, uint64_t n);
void store_progress_add(struct store *st, const char *agent, uint64_t n);

/* db.c: SQLite helpers, the layer under every other file (it calls
 * none of them). Each returns 0 or -1 with e set to
 * "repository R: what: sqlite's message". */
int store_db_fail(struct store *st, struct cs_err *e, const char *what);
int store_db_prepare(struct store *st, const char *sql, sqlite3_stmt **out,
    struct cs_err *e);
int store_db_exec(struct store *st, const char *sql, struct cs_err *e);
/* The prepare/step/finalize loop: runs sql, its ?1 bound to *id (id NULL:
 * sql has no parameter), and calls fn(ctx, s, e) on each row; fn returns
 * 0 to go on or -1 (e set) to stop. A failed step is "repository R: what:
 * sqlite's message". The statement is always finalized. */
typedef int (*store_row_fn)(void *ctx, sqlite3_stmt *s, struct cs_err *e);
int store_db_each(struct store *st, const char *sql, const int64_t *id,
    store_row_fn fn, void *ctx, const char *what, struct cs_err *e);
/* 1 if the manifest has table name, 0 if not. */
int store_db_has_table(struct store *st, const char *name, struct cs_err *e);
int store_db_begin(struct store *st, struct cs_err *e);	/* BEGIN IMMEDIATE */
int store_db_commit(struct store *st, struct cs_err *e);
void store_db_rollback(struct store *st);
/* The current time as ISO 8601 UTC ("2024-05-01T12:00:00Z"). */
void store_now(char out[32]);
/* The wall clock store_now formats, in seconds since the epoch. */
int64_t store_clock(void);
/* A column as a string: "" for NULL, never NULL itself. */
const char *store_col_text(sqlite3_stmt *s, int i);
/* A column that must be a non-negative INTEGER: 0, or -1 if it is not. */
int store_col_u64(sqlite3_stmt *s, int i, uint64_t *out);
/* PRAGMA user_version; -1 with e set when the file is not a database. */
int store_schema_version(struct store *st, int *version, struct cs_err *e);

/* manifest.c: mark aborted every 'running' snapshot whose coordinator
 * is gone (its lock is free: store_lock_is_stale). */
int store_reap_stale(struct store *st, struct cs_err *e);

/* lock.c: the running snapshot's lock (see there): a shared repository
 * lock. store_lock_acquire takes one unless one is held; store_lock_release
 * unlinks and closes it unless it was taken with store_lock. */
int store_lock_acquire(struct store *st, struct cs_err *e);
/* Releases only if the lock stands for snapshot id. */
void store_lock_release(struct store *st, uint64_t id);
/* 1 if the lock named in a running row is no longer held by anyone;
 * a reader (STORE_READ) only looks, a writer removes the file. */
int store_lock_is_stale(struct store *st, const char *name);
/* lock.c: 1 if a live lock file other than st's own is in REPO/locks
 * (another snapshot, forget or prune holds the repository), else 0. Only
 * looks: publishes nothing, so it disturbs no one starting meanwhile. */
int store_lock_others(struct store *st);
/* Why a stale running snapshot is not finished, as ls shows it. */
#define STALE_REASON "no coordinator: it exited before the snapshot " \
    "completed; the next snapshot, forget or prune marks it aborted"

/* blob.c: "REPO/blobs/ab/<hex>" for a 64-digit hex name. */
int store_blob_path(const struct store *st, const char *hex, char *out,
    size_t outsz, struct cs_err *e);
/* blob.c: is the chunk name (len bytes) stored? now 0: 1 yes, 0 no.
 * Else 1: yes, unchanged since it was last hashed (blobcheck.c) and that
 * within the recheck age; 2: stored, but changed since, never recorded,
 * or checked longer ago (hash the blob before reusing it); 0: not
 * stored; -1 with e set. */
int store_blob_stored(struct store *st, const uint8_t name[SHA_LEN],
    uint64_t len, time_t now, struct cs_err *e);
/* blobcheck.c: what a blob looked like when it was last hashed, kept in
 * REPO/blobchecks.db so that a blob changed since then is hashed again
 * before it is reused. */
struct stat;
struct blob_look {
	uint64_t size, ino;
	int64_t ctime_ns;
};
struct blob_seen {
	uint8_t name[SHA_LEN];
	struct blob_look look;	/* taken right after its check */
};
/* The look of a blob from its stat. */
void store_bcheck_look(const struct stat *sb, struct blob_look *out);
/* 1: blob name has a record and it matches now (the time of its check in
 * *checked); 0: no record, or one that differs; -1 with e set. */
int store_bcheck_get(struct store *st, const uint8_t name[SHA_LEN],
    const struct blob_look *now, int64_t *checked, struct cs_err *e);
/* Record v[0, n) as checked at time checked, in one transaction. */
int store_bcheck_put(struct store *st, const struct blob_seen *v, size_t n,
    int64_t checked, struct cs_err *e);
/* Drop the records whose blob is gone (prune). 0 / -1. */
int store_bcheck_purge(struct store *st, struct cs_err *e);
/* Close blobchecks.db if open (store_close). */
void store_bcheck_close(struct store *st);
/* object.c: a chunk blob's bytes. Without framing (a repository without
 * settings, or compression none) the blob is the chunk; with it, a
 * header of OBJ_HDR_LEN bytes and the chunk, zstd-compressed or stored. */
#define OBJ_HDR_LEN CHUNKOBJ_HDR_LEN
int store_obj_framed(const struct store *st);
/* The largest blob a chunk of len bytes may become. */
size_t store_obj_bound(const struct store *st, size_t len);
/* The blob of the chunk of blob name, for a framed repository, made in
 * out (outsz >= store_obj_bound(len)) from the len plain bytes already
 * there at store_obj_frame_off(st) + OBJ_HDR_LEN (chunkobj.c frames it,
 * as an agent uploading its own chunks does), sealed in place when the
 * repository is encrypted. A chunk stored as it is (zstd does not help:
 * random data) is never copied; scratch takes zstd's output, which is
 * kept only when shorter than len, so scratchsz >= len will do. */
size_t store_obj_frame_off(const struct store *st);
int store_obj_encode_in_place(const struct store *st,
    const uint8_t name[SHA_LEN], size_t len, uint8_t *out, size_t outsz,
    uint8_t *scratch, size_t scratchsz, size_t *outlen, struct cs_err *e);
/* The blob of a framed object of n bytes at out +
 * store_obj_frame_off(st): sealed in place under name when the repository
 * is encrypted (out holds store_obj_bound's room); its length in *outlen. */
int store_obj_seal_in_place(const struct store *st,
    const uint8_t name[SHA_LEN], uint8_t *out, size_t n, size_t *outlen,
    struct cs_err *e);
/* The framed object inside blob[0, bloblen) of name: the blob itself, or,
 * when the repository is encrypted, opened (authenticated and decrypted)
 * in place. -1 when the blob does not open. */
int store_obj_open_in_place(const struct store *st,
    const uint8_t name[SHA_LEN], uint8_t *blob, size_t bloblen,
    uint8_t **framed, size_t *framedlen);
/* The blob at path opened for reading: never through a symbolic link,
 * and only when it is a regular file, its length in *size. Every reader
 * of blobs opens them here. The descriptor, or -1 (e: "missing (expected
 * EXPECT at PATH)" when there is none, "not a regular file", or why the
 * open failed). */
int store_obj_open(const char *path, const char *expect, uint64_t *size,
    struct cs_err *e);
/* What can be told of blob hex of a chunk of plain bytes without
 * the key: it is there, it is a regular file, its length is within what
 * a chunk of plain bytes can become, and a sealed one starts with the
 * sealed magic. 0, or -1 with e saying what is wrong. */
int store_obj_check_shape(const struct store *st, const char *hex,
    uint64_t plain, uint64_t *size, struct cs_err *e);
/* Read the blob at path and decode it into plain[0, len): 0, or -1 with
 * e saying why: it cannot be read ("missing (...)", "not a regular file",
 * ...), or, with kind CS_E_CORRUPT, it is there but damaged ("size
 * mismatch: ...", a decode error). */
int store_obj_load(const struct store *st, const uint8_t name[SHA_LEN],
    const char *path, uint8_t *plain, size_t len, struct cs_err *e);
/* The same, reading the blob into b (grown as needed, kept for the next
 * call; store_objbuf_free when done). drop_cache: drop the blob's pages
 * from the page cache once read (store_obj_load: a snapshot's recheck, a
 * scrub that must not flush the cache); zero for verify and restore, whose
 * streamed replay reads each chunk a second time right after its hash
 * task. */
struct objbuf {
	uint8_t *p;
	size_t cap;
	int drop_cache;
};
int store_obj_load_buf(const struct store *st, const uint8_t name[SHA_LEN],
    const char *path, uint8_t *plain, size_t len, struct objbuf *b,
    struct cs_err *e);
/* b holds at least n bytes (n <= the bound of a chunk of len bytes,
 * plus one): 0, or -1 (out of memory). */
int store_objbuf_reserve(const struct store *st, struct objbuf *b, size_t n,
    size_t len, struct cs_err *e);
/* Free b's buffer (a bigbuf) and zero its size; b may be reused. */
void store_objbuf_free(struct objbuf *b);
/* Blob name's objlen bytes obj back into its len plain bytes (obj is
 * overwritten when it is opened in place); e names what is wrong. */
int store_obj_decode(const struct store *st, const uint8_t name[SHA_LEN],
    uint8_t *obj, size_t objlen, uint8_t *plain, size_t len,
    struct cs_err *e);
/* blobread.c: whether st reads its blobs through a backend
 * (store_opts.blob_backend: an object store) rather than REPO/blobs. */
int store_blob_remote(const struct store *st);
/* store_obj_load_buf of blob hex (name: its bytes), wherever st reads
 * blobs from. */
int store_obj_fetch_buf(const struct store *st, const uint8_t name[SHA_LEN],
    const char *hex, uint8_t *plain, size_t len, struct objbuf *b,
    struct cs_err *e);
/* -1 with e naming where st's backend keeps blob hex, and what to do
 * about a damaged one there (verify cannot move it aside). */
int store_blob_where(const struct store *st, const char *hex,
    struct cs_err *e);
/* The first n bytes of blob hex through st's backend into head (*got of
 * them came; *size is the object's whole size). */
int store_obj_fetch_head(const struct store *st, const char *hex,
    uint8_t *head, size_t n, size_t *got, uint64_t *size, struct cs_err *e);
/* chunkdelta.c: a chunk that grew since the previous snapshot, stored as
 * the previous snapshot's object of it plus a frame of the new bytes.
 * store_delta_usable: the repository's objects allow it (zstd).
 * store_prev_tail: the agent's last chunk in its latest complete snapshot
 * (t->found 0: none; t->name its blob's name). store_delta_encode: obj
 * holds the len plain bytes of the chunk name at
 * store_obj_frame_off(st) + OBJ_HDR_LEN, whose first plen bytes have the
 * name pname (the caller checked); builds the chunk's blob in obj from
 * the blob pname when that decodes to exactly those bytes, using scratch
 * (scratchsz >= len will do) and check (plen bytes, for the blob
 * decoded): 1 and its length in *outlen; 0 when it cannot (obj is then
 * untouched); -1 (e set) when sealing the new blob failed. */
struct prev_tail {
	int found;
	uint64_t off, len;
	uint8_t name[SHA_LEN];
};
int store_delta_usable(const struct store *st);
int store_prev_tail(struct store *st, const char *agent, struct prev_tail *t,
    struct cs_err *e);
int store_delta_encode(const struct store *st, const uint8_t pname[SHA_LEN],
    size_t plen, const uint8_t name[SHA_LEN], uint8_t *obj, size_t len,
    uint8_t *scratch, size_t scratchsz, uint8_t *check, size_t *outlen,
    struct cs_err *e);
/* crypt.c: an encrypted repository's keys and seals. store_crypt_create
 * draws the master key and stores the first key (inside the creating
 * transaction, the identity made); store_crypt_unlock asks the password
 * callback and opens a key (a no-op unless encrypted and locked);
 * store_crypt_add_key seals the master key under a new password into a new
 * repo_keys row. */
int store_crypt_create(struct store *st, const void *pass, size_t passlen,
    struct cs_err *e);
int store_crypt_unlock(struct store *st, struct cs_err *e);
/* Call fn with the id of every key row whose check (a MAC under the
 * master key over the row) does not match: a damaged row. */
int store_crypt_check_keys(struct store *st, void (*fn)(void *ctx, int64_t id),
    void *ctx, struct cs_err *e);
/* 0, or -1 with e "repository R is encrypted: a password is needed". */
int store_need_key(struct store *st, struct cs_err *e);
/* Each key row whose form is wrong (a kdf, parameters or lengths that
 * cannot open anything) to fn; needs no key. */
int store_crypt_check_key_forms(struct store *st,
    void (*fn)(void *ctx, int64_t id), void *ctx, struct cs_err *e);
/* The name of plain bytes whose SHA-256 is sha: sha itself, or, when
 * encrypted, HMAC-SHA256 under the name key. Blob names and the sha256
 * columns of agents, agent_chunks and messages are names. */
void store_name(const struct store *st, const uint8_t sha[SHA_LEN],
    uint8_t out[SHA_LEN]);
void store_name_hex(const struct store *st, const uint8_t sha[SHA_LEN],
    char hex[SHA_HEX_LEN]);
/* AES-256-GCM under the object key, bound to kind, the repository and
 * ctx: out holds n + 28 bytes (seal) or n - 28 (open). */
int store_crypt_seal(const struct store *st, char kind, const void *ctx,
    size_t ctxlen, const uint8_t *in, size_t n, uint8_t *out,
    struct cs_err *e);
int store_crypt_open(const struct store *st, char kind, const void *ctx,
    size_t ctxlen, const uint8_t *in, size_t n, uint8_t *out,
    struct cs_err *e);
/* store_crypt_open with the opened bytes split (aead_open_split). */
int store_crypt_open_split(const struct store *st, char kind,
    const void *ctx, size_t ctxlen, const uint8_t *in, size_t n,
    uint8_t *out, size_t n1, aead_where_fn where, void *wctx,
    struct cs_err *e);
/* A recorded message sealed (seal=1) or opened, bound to its name,
 * channel and seq; *out malloc'ed. */
int store_crypt_msg(const struct store *st, int seal,
    const uint8_t name[SHA_LEN], const char *src, const char *dst, uint64_t seq,
    const uint8_t *in, size_t n, uint8_t **out, size_t *outlen,
    struct cs_err *e);
/* quarantine.c: move blob hex (its bytes do not hash to its name) to
 * REPO/quarantine/hex, directories fsync'ed; 0 also when it is gone
 * already. -1 with e set (a read-only repository: nothing moved). */
int store_blob_quarantine(struct store *st, const char *hex, struct cs_err *e);
struct row_chunk;
struct row_agent;
/* view.c: an agent's recorded file, its chunks mapped one after the
 * other into one read-only region (no copy; the page cache backs it). */
struct fview {
	uint8_t *p;	/* NULL when len is 0 */
	uint64_t len;
	size_t maplen;	/* the reserved region */
	unsigned char *damaged;	/* per chunk, with a problem callback in a
				 * framed repository: its object is there but
				 * does not decode (its part reads as zeros);
				 * else NULL */
};
/* Called once per unusable chunk with its index and what is wrong. */
typedef void (*chunk_problem_fn)(void *ctx, const struct row_chunk *c,
    const char *what);
/* Map agent row a's chunks. Returns 0 when all of them are there with
 * their sizes and cover exactly a->size bytes; otherwise -1 with e set to
 * the first problem, after passing every problem to fn (NULL ok). */
int store_fview_open(struct store *st, const struct row_agent *a,
    struct fview *v, chunk_problem_fn fn, void *ctx, struct cs_err *e);
void store_fview_close(struct fview *v);	/* accepts a zeroed view */
/* Whether row i of a's chunks is well formed and starts at off (the rows
 * must tile [0, size): consecutive, page-aligned). */
int store_fview_row_ok(const struct row_agent *a, size_t i, uint64_t off);
/* Read chunk c's bytes (decoded, in a framed repository, with b as the
 * read buffer) into buf, which holds c->size bytes: 0, or -1 with e
 * saying why: of kind CS_E_CORRUPT when its object is there but does not
 * decode, else unusable ("missing (...)", "size mismatch: ..."). Safe on
 * distinct buffers at once. */
int store_fview_read_chunk(struct store *st, const struct row_chunk *c,
    uint8_t *buf, struct objbuf *b, struct cs_err *e);


/* pool.c: run fn(ctx, task, worker) for every task in [0, ntasks) on up
 * to store_pool_threads() threads (one per core, the caller being worker 0);
 * returns when all are done. worker < POOL_MAX_THREADS. */
#define POOL_MAX_THREADS 8
void store_pool_run(size_t ntasks, void (*fn)(void *ctx, size_t task,
    int worker), void *ctx);
/* The same on two threads per core (at most POOL_MAX_THREADS): for
 * foreground tasks that also write with direct I/O (restore), which
 * blocks a thread until the disk has the bytes. */
void store_pool_run_writing(size_t ntasks,
    void (*fn)(void *ctx, size_t task, int worker), void *ctx);
/* The same, as background work: every worker is a new thread whose I/O
 * is in the idle class (served when the disk has nothing else queued)
 * and whose CPU share yields to the agents (nice 10). The caller only
 * waits, so its own priority is never lowered. */
void store_pool_run_background(size_t ntasks,
    void (*fn)(void *ctx, size_t task, int worker), void *ctx);
/* The same background work on POOL_MAX_THREADS threads whatever the
 * cores: for tasks that mostly wait on the disk (fsyncs). */
void store_pool_run_io(size_t ntasks,
    void (*fn)(void *ctx, size_t task, int worker), void *ctx);
/* The same on POOL_MAX_THREADS threads in the foreground: for tasks
 * that mostly wait on an object store's answers. */
void store_pool_run_remote(size_t ntasks,
    void (*fn)(void *ctx, size_t task, int worker), void *ctx);

/* digest.c: the snapshot's digest, hex, recomputed from its rows in the
 * canonical form of the current schema; store_digest_v in that of an
 * older schema version (1: no chunk rows), for migrating. */
int store_digest(struct store *st, uint64_t id, char hex[SHA_HEX_LEN],
    struct cs_err *e);
int store_digest_v(struct store *st, uint64_t id, int version,
    char hex[SHA_HEX_LEN], struct cs_err *e);

/* rows.c: one snapshot's rows, loaded defensively (a tampered manifest
 * may hold NULLs, wrong types or nonsense; ok says a row is usable). */
struct row_chunk {
	uint64_t idx, off, size;
	char *sha;		/* owned, never NULL */
	int ok;			/* integer columns and a 64-digit hex sha */
};
struct row_agent {
	char *name;		/* owned, never NULL */
	uint64_t size;
	char *sha;		/* owned, never NULL */
	int ok;			/* valid name, size and 64-digit hex sha */
	struct row_chunk *chunks;	/* owned, ordered by idx */
	size_t nchunks;
};
struct row_msg {
	int64_t rowid;
	char *src, *dst;	/* owned, never NULL */
	uint64_t seq;
	uint8_t *data;		/* owned, may be NULL when len is 0 */
	size_t len;
	char *sha;		/* owned, never NULL */
	int ok;			/* valid names and seq */
	int damaged;		/* encrypted, and its payload does not open
				 * (data holds the sealed bytes) */
};
struct snap_rows {
	uint64_t id;
	char status[16];
	char *config;		/* owned, never NULL */
	char *digest;		/* owned, never NULL */
	struct row_agent *agents;	/* ordered by name */
	size_t nagents;
	struct row_msg *msgs;	/* ordered by src, dst, seq, rowid */
	size_t nmsgs;
};
/* Resolve id (0: newest complete) into *resolved. -1 with e set:
 * "no complete snapshot in R", "snapshot N does not exist". */
int store_snap_resolve(struct store *st, uint64_t id, uint64_t *resolved,
    struct cs_err *e);
int store_rows_load(struct store *st, uint64_t id, struct snap_rows *r,
    struct cs_err *e);
void store_rows_free(struct snap_rows *r);	/* accepts a zeroed struct */
/* The messages of channel src->dst: index of the first, count in *n. */
size_t store_rows_channel(const struct snap_rows *r, const char *src,
    const char *dst, size_t *n);

/* replay.c: the recorded messages replayed onto their receivers. */
struct chmsg;
/* The keys the recorded messages to one agent add to: the only values
 * its replay needs to keep. */
struct keyset {
	struct chmsg *v;	/* keys borrowed from the rows' messages */
	size_t n;
};
int store_keyset_build(struct keyset *ks, const struct snap_rows *r,
    const char *dst);				/* 0 / -1 out of memory */
int store_keyset_has(void *ctx, const uint8_t *key,
    size_t klen);	/* a keep */
void store_keyset_free(struct keyset *ks);
/* Replay onto ds (the replayed recorded file of agent dst, tracking its
 * keyset's keys) every recorded message to dst whose seq is applied+1 of
 * its channel, by the agents' dead-letter rule (dl_credit); append each
 * record to out when out is not NULL, and pass a line for each dead
 * letter to note when not NULL. 0, or -1 with e set: a message that is
 * not a valid channel message, or out of memory. */
int store_replay_msgs(struct dl_state *ds, const struct snap_rows *r,
    const char *dst, struct wbuf *out, problem_fn note, void *ctx,
    struct cs_err *e);

/* verify.c and store_verify_cut.c: one verify run. */
/* verify.c: replay agent row i's recorded file again, keeping its sends
 * from the seqs from names on (dl_state's send_from): those a channel's
 * recorded messages are compared with, when the first replay dropped
 * them as acknowledged. 0, or -1 (the first replay's state kept). */
struct vrun;
int store_verify_resend(struct vrun *v, size_t i, const struct wm_set *from);
struct fcheck {			/* one agent row's recorded file */
	int mapped;		/* its chunk rows tile the file */
	int ok;			/* and every chunk hashes to its sha256 */
	int hash_failed;
	unsigned char *bad;	/* per chunk: 1 its hash differs, 2 its
				 * object does not decode, 3 unusable */
	int have;		/* st holds the file's replay */
	struct dl_state st;
	struct keyset ks;	/* the keys st tracks */
	char err[CS_ERR_MAX];	/* why the replay failed */
	char **lerr;		/* per chunk: why it could not be read
				 * (NULL: it was) */
	int sink;		/* under restore: the temp file the verified
				 * chunks are written to, or -1 */
	int dsink;		/* sink's file opened O_DIRECT, or -1 */
	const char *sinkname;
	atomic_int wfailed;	/* a write to sink failed: werr says how */
	char werr[CS_ERR_MAX];
	struct wbuf *tail;	/* under restore: receives the APPLY/DEAD
				 * records of restore's replay */
	/* The chunks its tasks decode handed to the replay of the file
	 * (verify.c, "handoff"), under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int hinit;		/* mu and cv were initialised */
	unsigned char *cstate;	/* per chunk: HO_* */
	uint8_t **held;		/* per chunk: its decoded bytes, HO_READY
				 * (the replay's until HO_TAKEN ends) */
	int rdone;		/* the replay no longer reads the chunks */
	int nready;		/* chunks HO_READY */
	uint64_t rneed;		/* the end of the bytes it reads now */
};
#define VERIFY_SPARE_MAX 8	/* spare chunk buffers kept */
struct vrun {
	struct store *st;
	uint64_t id;
	problem_fn fn;
	void *ctx;
	int nproblems;
	struct snap_rows rows;
	struct fcheck *fc;	/* per agent row */
	struct vtask *tasks;	/* the pool's work, see verify.c */
	size_t ntasks;
	size_t nfiletasks;	/* the first ones: one replay per file */
	atomic_size_t nwritten;	/* chunks written to restore's temp files */
	atomic_size_t nahead;	/* chunks a replay checked while the one it
				 * needed was busy (reader_help) */
	/* Per worker: the chunk it works on (page-aligned; bufsz bytes:
	 * csz for the largest chunk, then its block checksums, see
	 * verify.c) and the blob it decodes that chunk from. */
	uint8_t *wbuf[POOL_MAX_THREADS];
	size_t bufsz, csz;
	struct objbuf bufs[POOL_MAX_THREADS];
	pthread_mutex_t smu;	/* the spare chunk buffers (verify.c) */
	uint8_t *spare[VERIFY_SPARE_MAX];	/* the oldest first */
	size_t nspare;
};
/* One unit of verify's pool: chunk >= 0 reads and hashes that chunk of
 * the agent row's file; TASK_REPLAY replays the whole file. */
#define TASK_REPLAY (-1)
struct vtask {
	size_t agent;
	int64_t chunk;
	uint64_t len;		/* bytes it covers, to schedule long ones first */
};
/* Under restore, per agent row: where its verified chunks go (fd of a
 * temp file, or -1 for a row not restored) and the buffer that receives
 * the replay's APPLY/DEAD records for it. */
struct vsink {
	int fd;
	int dfd;		/* the same file, O_DIRECT, or -1 */
	const char *name;
	struct wbuf *tail;
};
/* verify.c: store_verify for restore, in one pass: each chunk is read,
 * decoded, hashed and written to its row's sink together. The number of
 * problems (0: every sink holds its file's verified bytes), or -1 with e
 * set. */
int store_verify_restore(struct store *st, uint64_t id,
    const struct vsink *sinks, problem_fn fn, void *ctx, struct cs_err *e);
/* Report one problem, prefixed with "snapshot N: ". */
void store_vproblem(struct vrun *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The cut's consistency, derived from the recorded files. */
void store_verify_cut(struct vrun *v);
/* verify.c: PRAGMA integrity_check and foreign_key_check, as problems. */
void store_verify_db(struct vrun *v);
/* verify.c: a problem unless status is "complete"; 1 when it is. */
int store_verify_status(struct vrun *v, const char *status);
/* verify.c: the snapshot's digest recomputed against want (the one its
 * commit stored), a problem when they differ. */
void store_verify_digest(struct vrun *v, const char *want);

/* reportset.c: the report of agent name among reps[0, n), or NULL. */
const struct report *store_find_report(const struct report *reps, size_t n,
    const char *name);
/* commit_cut.c: verify's cut check (cutcheck.c) on the agents' reports,
 * before a commit: 0, or -1 with e set to the first problem and how many
 * more. Every agent of c has one report (check_reports). */
int store_commit_check_cut(const struct cfg *c, const struct report *reps,
    size_t nreps, struct cs_err *e);

/* auth.c: with a key set, store snapshot id's hmac tag (inside the commit
 * transaction, after its digest), and check it in verify. */
int store_auth_put(struct store *st, uint64_t id, struct cs_err *e);
void store_auth_check(struct vrun *v);

/* rowauth.c: an encrypted repository's MAC over each snapshot's rows under
 * its master key. store_rows_mac_put stores snapshot id's (inside the
 * commit's transaction; a no-op unless encrypted); store_rows_auth_upgrade
 * gives every complete snapshot its MAC and the key rows the domain that
 * demands them, once (inside a write transaction); store_rows_auth_verify
 * fails with "snapshot N: rows not authenticated ..." when the rows do not
 * match (0 when not encrypted or not unlocked); store_rows_auth_check is
 * the same as a verify problem. store_crypt_keyrows_v2 (crypt.c) rewrites
 * each valid key row's MAC in the second domain. */
int store_rows_mac_put(struct store *st, uint64_t id, struct cs_err *e);
int store_rows_auth_upgrade(struct store *st, struct cs_err *e);
int store_rows_auth_verify(struct store *st, uint64_t id, struct cs_err *e);
void store_rows_auth_check(struct vrun *v);
int store_crypt_keyrows_v2(struct store *st, struct cs_err *e);
/* crypt.c: store_crypt_add_key seals st->master under a new password into
 * a new key row (its id in *id when id is not NULL; inside the caller's
 * transaction); store_crypt_new_master draws a new master key into st
 * and derives its keys (rotate.c keeps the old ones). */
int store_crypt_add_key(struct store *st, const void *pass, size_t passlen,
    int64_t *id, struct cs_err *e);
int store_crypt_new_master(struct store *st, struct cs_err *e);

/* generation.c: rollback detection. store_gen_check at open (refuses a
 * writer on a rolled-back manifest, else sets the warning);
 * store_gen_reserve_ids before a snapshot row is inserted (ids past every
 * known one); store_gen_step inside a write transaction, just before its
 * commit (the next generation); store_gen_publish after the commit (the
 * commit object and the state file). */
int store_gen_check(struct store *st, struct cs_err *e);
int store_gen_reserve_ids(struct store *st, struct cs_err *e);
int store_gen_step(struct store *st, struct cs_err *e);
int store_gen_publish(struct store *st, struct cs_err *e);

/* A shortened sha for messages: the first 12 hex digits. */
#define SHORT_SHA(hex) 12, (hex)

#endif
