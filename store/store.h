/* store.h - the repository: REPO/manifest.db (SQLite) and REPO/blobs/.
 * The only module that includes sqlite3.h. */
#ifndef CUTSNAP_STORE_H
#define CUTSNAP_STORE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "../lib/config.h"
#include "../lib/err.h"
#include "../proto/report.h"
#include "../crypto/sha.h"
#include "../proto/snapuid.h"

/* Version 3: snapshot ids never come back (AUTOINCREMENT) and the
 * repository has an identity. */
#define STORE_SCHEMA_VERSION 3

struct store;	/* opaque */

/* How store_open uses REPO. */
enum store_mode {
	STORE_READ = 0,		/* ls, show, verify, restore: only reads */
	STORE_CREATE = 1,	/* snapshot: made when missing */
	STORE_WRITE = 2,	/* forget, prune: must exist */
};

/* Is REPO usable for mode at all: a directory (or, for STORE_CREATE,
 * nothing yet), readable, and writable unless mode is STORE_READ; not
 * a URL (s3://...: the commands reach an object store through store/objrepo.c
 * and give the store a local directory). 0, or -1
 * with e saying what is wrong: callers treat it as a bad argument. */
int store_check_path(const char *repo, int mode, struct cs_err *e);

/* Open REPO (store_check_path first). STORE_CREATE makes the directory,
 * blobs/, the schema and the repository identity when missing; the
 * writing modes upgrade an older schema in place and mark aborted the
 * running snapshots whose coordinator is gone. STORE_READ changes
 * nothing: the manifest is opened read-only (immutable when the
 * repository is read-only and has no unmerged WAL), store_lock writes no
 * lock file, a stale running snapshot is only reported as such; a schema
 * that needs an upgrade is refused with "... needs an upgrade" instead.
 * Every mode checks that the manifest and blobs/ belong to the same
 * repository (their identities match). Every failure here is about the
 * repository given: callers exit with status 2. */
int store_open(const char *repo, int mode, struct store **out,
    struct cs_err *e);
/* store_open with options for this store only (sqlite3_open_v2's flags,
 * libgit2's *_options structs): o may be NULL, and a zeroed struct
 * store_opts is the plain store_open. What o points to is borrowed and
 * must outlive the store. */
struct store_opts;
struct store_backend;
int store_open_with(const char *repo, int mode, const struct store_opts *o,
    struct store **out, struct cs_err *e);
/* store_open(repo, STORE_READ) for what needs no key (the listing:
 * store_list, store_has_snapshot): an encrypted repository stays locked,
 * so no password is asked and no key derived. */
int store_open_listing(const char *repo, struct store **out,
    struct cs_err *e);
void store_close(struct store *st);	/* accepts NULL */

/* Seconds since the epoch of a time the manifest records,
 * "2024-05-01T12:00:00Z" (UTC), or -1 when it is not one. */
int64_t store_parse_utc(const char *iso);

/* The repository's identity (32 hex digits), or "" for a version 2
 * repository read without an upgrade. Owned by st. */
const char *store_repo_id(const struct store *st);

/* 1 if snapshot id is in the manifest, 0 if not, -1 with e set. */
int store_has_snapshot(struct store *st, uint64_t id, struct cs_err *e);

/* A repository's settings, fixed when it is created (table
 * repo_settings). A repository made before them has none: its chunks
 * are stored as they are (STORE_COMPRESS_NONE). */
#define STORE_COMPRESS_NONE 0
#define STORE_COMPRESS_ZSTD 1
struct store_settings {
	int compress;		/* STORE_COMPRESS_* */
	int encrypt;		/* AES-256-GCM, keys in repo_keys (crypt.c) */
	const char *password;	/* init with encrypt: the first key's */
	size_t passlen;
};
/* The settings a repository gets when snapshot creates it. */
void store_settings_default(struct store_settings *s);
/* "cutsnap init": create REPO with settings s; fails with "repository R
 * exists already" when it has a manifest. */
int store_init(const char *repo, const struct store_settings *s,
    struct cs_err *e);
/* store_init with options o (NULL: none), as store_open_with: the
 * generation records of the first write follow o. */
int store_init_with(const char *repo, const struct store_settings *s,
    const struct store_opts *o, struct cs_err *e);
/* The settings st was opened with; *have is 0 for a repository without
 * recorded settings. */
void store_get_settings(const struct store *st, struct store_settings *s,
    int *have);
const char *store_compress_name(int compress);

/* Encrypted repositories. Opening one calls the password callback of its
 * options (store_opts.password, when set) to unlock it; without it, only
 * what needs no key works (ls, forget, prune, key list); the rest fails
 * with "repository R is encrypted: a password is needed". fn fills
 * buf[0, *len) for repository repo. */
#define STORE_PASSWORD_MAX 1024
typedef int (*store_password_fn)(void *ctx, const char *repo, char *buf,
    size_t bufsz, size_t *len, struct cs_err *e);

/* Where store_put_chunks hands each blob it wrote (a repository on an
 * object store uploads them while the copy goes on): fn gets the blob's
 * name and the path of its complete, checked bytes, which stays valid
 * only during the call (a sink that needs the bytes later opens it).
 * Called from several threads at once. -1 with e set fails the copy. */
/* A chunk object (name: its blob name) handed over instead of written:
 * 0 once the callee has it (queued, copied), or -1 with e set. */
typedef int (*blob_stream_fn)(void *ctx, const uint8_t name[SHA_LEN],
    const void *blob, size_t len, struct cs_err *e);
/* Where the blobs go, for a coordinator whose agents may upload their own
 * chunks (store_set_put): the object store's s3://BUCKET/PREFIX URL, the
 * endpoint and region this process uses ("" when it has none of its
 * own), has() (the store had the blob when the command began) and
 * stored() (an agent says it stored the blob, which the object store's
 * publishing then checks). */
struct blob_target {
	const char *url, *endpoint, *region;
	int (*has)(void *ctx, const uint8_t name[SHA_LEN]);
	void (*stored)(void *ctx, const uint8_t name[SHA_LEN]);
	void *ctx;
};

/* store_open_with's options: each field optional (NULL: none). They hold
 * for the one store opened with them, never for the process, so one
 * command can open a repository without its password while another open
 * in the same process asks for it. */
/* With the generation records off (store_opts.no_gen_records), what the
 * object store knows instead: the highest generation and snapshot id
 * committed (0: nothing known), where that was found and what would
 * repair it (both for the rollback message). */
struct store_gen_floor {
	uint64_t gen, max_id;
	char where[192];
	char fix[128];
};
struct store_opts {
	store_password_fn password;	/* unlocks an encrypted repository
					 * (not called by store_open_listing);
					 * NULL: it stays locked */
	void *password_ctx;
	blob_stream_fn blob_stream;	/* gets each chunk object
					 * store_put_chunks makes, instead
					 * of REPO/blobs (an object store's
					 * upload); called on several
					 * threads at once */
	void *blob_stream_ctx;
	const struct blob_target *blob_target;	/* borrowed: where agents
						 * may upload their chunks */
	int accept_rollback;		/* a writer opens a rolled-back
					 * manifest (snapshot
					 * --accept-rollback) */
	int no_gen_records;		/* no commit objects or state file
					 * read or written: a local stand-in
					 * of an object store (store/objrepo.c),
					 * whose bucket has its own commits */
	struct store_backend *blob_backend;	/* borrowed: where chunk
						 * objects are read from (an
						 * object store, backend.h);
						 * NULL: REPO/blobs */
	const struct store_gen_floor *gen_floor;	/* borrowed, with
							 * no_gen_records; NULL:
							 * nothing known */
};
int store_encrypted(const struct store *st);
/* 1 when an open's checks include each snapshot's row MAC under the master
 * key: encrypted, unlocked, and its key rows demand the MACs (a repository
 * an older version made and no keyed write has touched since has none). */
int store_rows_auth_checked(const struct store *st);

/* Rollback: a manifest older than the repository's newest commit object
 * (REPO/commits/) or this user's record of it. Writers refuse to open it
 * unless their store_opts.accept_rollback is set (then the next
 * generation and ids continue past the lost ones); readers open it and
 * store_rollback_warning gives the line to print (NULL when none). */
/* This user's record of repository identity id (32 hex digits): the
 * highest generation and snapshot id it saw committed (0 when none);
 * raised, never lowered, best effort. */
void store_gen_record_read(const char *id, uint64_t *gen, uint64_t *max_id);
void store_gen_record_raise(const char *id, uint64_t gen, uint64_t max_id);
const char *store_rollback_warning(const struct store *st);
struct store_key {
	int64_t id;
	char created[32];
	char kdf[16];
	uint64_t n;
	uint32_t r, p;
	int current;		/* the key the password opened */
};
int store_crypt_list_keys(struct store *st, struct store_key **out, size_t *n,
    struct cs_err *e);
/* Seal the master key under a new password as a new key (*id); with
 * remove_current, drop the key that opened the repository in the same
 * transaction (a password change). */
int store_key_add(struct store *st, const void *pass, size_t passlen,
    int remove_current, int64_t *id, struct cs_err *e);
/* Remove key id (not the one that opened the repository). */
int store_key_remove(struct store *st, int64_t id, struct cs_err *e);
/* A new master key (rotate.c): every chunk object and recorded message
 * sealed and named again under it, every digest and row MAC recomputed,
 * every key replaced by one for pass (its id in *id); the old objects
 * deleted once that is committed. Refused while a snapshot has a --key
 * tag. 0, or -1 with e set and nothing changed but new objects that
 * prune removes. */
int store_key_rotate(struct store *st, const void *pass, size_t passlen,
    int64_t *id, struct cs_err *e);

/* Progress of the long work: the chunk bytes store_put_chunks copies,
 * the bytes store_verify hashes, and for store_restore those it verifies
 * and then writes. fn gets the agent whose file is being worked on, the
 * bytes done and the total of the whole operation. It is called often
 * (every MiB or chunk), from worker threads but never two at once:
 * rate-limit the drawing in fn. */
typedef void (*progress_fn)(void *ctx, const char *agent, uint64_t done,
    uint64_t total);
void store_set_progress(struct store *st, progress_fn fn, void *ctx);

/* Retention (retain.c). forget deletes from the manifest, in one
 * transaction, every snapshot no rule keeps; prune then deletes the blobs
 * no remaining snapshot refers to. Both take the exclusive repository
 * lock, so they never run beside a snapshot, verify or restore. */
/* The count rules of a policy, restic's: keep the newest snapshot of each
 * of the last N distinct hours, days, ISO weeks, months, years (UTC) that
 * have a complete snapshot; STORE_KEEP_LAST: of the last N snapshots. */
enum store_keep {
	STORE_KEEP_LAST,
	STORE_KEEP_HOURLY,
	STORE_KEEP_DAILY,
	STORE_KEEP_WEEKLY,
	STORE_KEEP_MONTHLY,
	STORE_KEEP_YEARLY,
	STORE_KEEP_NRULES
};
#define STORE_KEEP_ALL INT64_MAX	/* a count without limit */
struct store_forget_policy {
	int64_t keep[STORE_KEEP_NRULES];	/* N; -1: no such rule */
	int64_t keep_within_s;	/* keep any started within S seconds before
				 * now; -1: no rule */
	int dry_run;		/* decide and report, delete nothing */
	int force;		/* may forget every complete snapshot; with
				 * prune, may delete most blobs */
	int prune;		/* then prune, under the same lock */
};
/* Why a snapshot is kept: a set of these bits (0: it is forgotten). */
#define STORE_WHY_RUNNING	(1u << 0)	/* a running snapshot */
#define STORE_WHY_WITHIN	(1u << 1)	/* keep_within_s */
#define STORE_WHY_RULE(r)	(1u << (2 + (r)))	/* count rule r */
/* Count rule r with counts left at the oldest complete snapshot. */
#define STORE_WHY_OLDEST(r)	(1u << (2 + STORE_KEEP_NRULES + (r)))
/* A running snapshot is always kept; an aborted one only by keep_within;
 * the count rules see only complete snapshots. */
struct store_forget_item {
	uint64_t id;
	char status[16];	/* complete, aborted, running */
	char started[32];	/* as in the manifest, UTC */
	unsigned why;		/* STORE_WHY_* bits; 0 when forgotten */
};
struct store_prune_result {
	uint64_t referenced;	/* blob names the manifest refers to */
	uint64_t kept;		/* blob files kept */
	uint64_t deleted;	/* blob files deleted (or, dry run, to be) */
	uint64_t bytes;		/* their bytes */
	uint64_t temps;		/* leftover temp files deleted */
};
struct store_forget_result {
	struct store_forget_item *forgotten;	/* oldest first, malloc'ed */
	size_t nforgotten;
	struct store_forget_item *kept;		/* oldest first, malloc'ed */
	size_t nkept;
	struct store_prune_result prune;	/* when the policy prunes */
};
/* Unless force is set, a forget that would leave no complete snapshot
 * while there is one is refused (-1, nothing changed). With p->prune the
 * prune follows the committed forget (a dry run counts what the prune
 * would delete once the forgotten snapshots are gone); a prune that
 * fails leaves the forget done and reported in res, and -1 with e
 * set. */
int store_forget(struct store *st, const struct store_forget_policy *p,
    struct store_forget_result *res, struct cs_err *e);
void store_forget_result_free(struct store_forget_result *r);

/* Delete every blob file under blobs/ that no snapshot refers to, and
 * temp files left by killed snapshots. Files are only ever unlinked after
 * the manifest change that stopped referring to them was committed (by
 * forget), so a prune killed at any point leaves a repository in which
 * every snapshot verifies. Unless force is set it deletes nothing and
 * fails when it would delete more than half of the blobs, or any blob
 * while the manifest refers to none (a manifest from elsewhere, or one
 * emptied by mistake). */
int store_prune(struct store *st, int dry_run, int force,
    struct store_prune_result *r, struct cs_err *e);

/* Take the repository lock, like restic's: a file REPO/locks/<n>.lock
 * naming host, pid and mode, flocked while held. Shared locks (snapshot)
 * coexist; an exclusive one (forget, prune) excludes every other, and
 * also takes an exclusive flock on the REPO directory, which the readers
 * (ls, show, verify, restore: they write no lock file) hold shared from
 * store_open to store_close; a lock whose holder died is removed as
 * stale. A store opened STORE_READ takes only that shared flock (and
 * fails on a live exclusive lock file, naming its holder). Taking
 * exclusive while holding shared upgrades. Fails, holding what it held
 * before, with "repository R is locked exclusively by host=H pid=P ..."
 * or "repository R is in use by host=H pid=P ...". Held until
 * store_unlock or store_close. */
int store_lock(struct store *st, int exclusive, struct cs_err *e);
void store_unlock(struct store *st);	/* accepts NULL; idempotent */

/* Authenticated manifests (auth.c): with a key set, a commit also stores
 * an HMAC-SHA256 tag over the snapshot's rows, and verify (and so
 * restore) checks it: a snapshot without a tag, or whose tag does not
 * match, is a problem. The key is copied; it is never written to REPO. */
int store_set_key(struct store *st, const uint8_t *key, size_t klen,
    struct cs_err *e);
/* *keyed = 1 if snapshot id has a tag (whether or not a key is set). */
int store_snapshot_keyed(struct store *st, uint64_t id, int *keyed,
    struct cs_err *e);

/* Insert a snapshot with status 'running' and identity uid (stored in
 * table snapshot_uids, created by the first snapshot that has one);
 * committed at once. Several may run at once in one repository, each
 * begun, committed or aborted by its own coordinator. */
int store_begin_snapshot(struct store *st, const char *initiator,
    const char *config_text, const struct snapuid *uid, uint64_t *id,
    struct cs_err *e);
/* What store_put_chunks did. */
struct chunk_stats {
	uint64_t chunks;	/* chunks listed by the reports */
	uint64_t copied;	/* chunks that were new and copied */
	uint64_t shared;	/* chunks that were new, but another snapshot
				 * copied them at the same time */
	uint64_t bytes;		/* bytes copied */
	uint64_t fetched;	/* of those, bytes that came through the
				 * fetch function (store_set_fetch) */
	uint64_t rechecked;	/* stored chunks hashed again before reuse */
	uint64_t healed;	/* of those, found bad: quarantined, copied */
	uint64_t extended;	/* of the copied, chunks stored as the previous
				 * snapshot's object of the same chunk plus
				 * a frame of the bytes added since */
	uint64_t put;		/* of the copied, chunks their agents put
				 * into the object store (store_set_put) */
	uint64_t put_bytes;	/* and their bytes (also in bytes) */
};
/* A stored chunk is reused by its name; one whose blob was last checked
 * more than age_s seconds ago is hashed again first (0: every reused
 * chunk, every time; default 7 days; negative: keep the default). A bad
 * one is quarantined and copied again from the live file. */
void store_set_recheck_age(struct store *st, int64_t age_s);
/* Where store_put_chunks gets the chunks of a recorded file it cannot
 * read (paths[i] NULL): fn fills buf with bytes [off, off + len) of
 * report i's recorded prefix, len at most its chunk size, and checks
 * nothing (the store hashes what it gets). fn is called from several
 * threads at once and serializes what must be. 0, or -1 with e set. */
typedef int (*chunk_fetch_fn)(void *ctx, size_t i, uint64_t off,
    uint8_t *buf, size_t len, struct cs_err *e);
void store_set_fetch(struct store *st, chunk_fetch_fn fn, void *ctx);
/* For a repository whose blobs live in an object store and are the
 * chunks themselves (not framed: no compression, no encryption): fn gets
 * the chunks of recorded files the coordinator cannot read (paths[i]
 * NULL) that the repository lacks, before they are fetched, and marks
 * each one the object store has now (done: it was there, or its agent
 * put it there; put: the agent uploaded its bytes now). Those are not
 * fetched, nor kept in the repository's directory; the rest are fetched
 * as usual. -1 with e set fails the copy. Called once per
 * store_put_chunks, on the calling thread. */
struct chunk_put {
	size_t src;		/* report index */
	uint64_t off, len;
	const uint8_t *sha;	/* its SHA-256 (borrowed), the blob's name */
	int done, put;		/* out */
};
typedef int (*chunk_put_fn)(void *ctx, struct chunk_put *v, size_t n,
    int compressed, struct cs_err *e);
void store_set_put(struct store *st, chunk_put_fn fn, void *ctx);
/* Pace store_put_chunks' reads and hashing (the copies and the
 * rechecks, all workers together) to rate bytes per second
 * (ratelimit.h); 0, the default: no limit. */
void store_set_max_rate(struct store *st, uint64_t rate);
/* When stop is non-NULL and set non-zero (a signal handler's flag),
 * store_put_chunks stops after the chunks being copied and fails with
 * "interrupted", removing its temp files. */
void store_set_stop(struct store *st, volatile sig_atomic_t *stop);
/* The blob target st was opened with (store_opts.blob_target), or NULL. */
const struct blob_target *store_blob_target(const struct store *st);
/* Store the recorded prefix of reps[i]'s data file paths[i] as chunks
 * (chunkstore.c): every chunk whose digest is not yet a blob (or whose
 * blob a recheck found bad) is read from the file (paths[i] NULL: from
 * the fetch function, store_set_fetch), hashed, checked
 * against the report, written (temp, fsync, rename) on all cores; the
 * directories are fsync'ed before it returns. A chunk that another
 * snapshot is copying at the same time is waited for, not copied twice.
 * stats may be NULL. */
int store_put_chunks(struct store *st, const char *const *paths,
    const struct report *reps, size_t n, struct chunk_stats *stats,
    struct cs_err *e);
/* One transaction: agents, watermarks, channels, messages, the digest and
 * status 'complete'. Fails (and changes nothing) unless the snapshot is
 * 'running', every agent of c has exactly one report and the reported cut
 * passes verify's consistency check (e then names the first problem). */
int store_commit_snapshot(struct store *st, uint64_t id, const struct cfg *c,
    const struct report *reps, size_t nreps, struct cs_err *e);
int store_abort_snapshot(struct store *st, uint64_t id, const char *reason,
    struct cs_err *e);

/* What store_drop_written did with the blobs st's snapshot wrote. */
struct store_dropped {
	uint64_t blobs, bytes;		/* removed: no committed snapshot
					 * refers to them */
	uint64_t kept;			/* kept: a committed snapshot refers
					 * to them (dedup) */
	uint64_t left_blobs, left_bytes;	/* left for prune: another
						 * process holds the
						 * repository */
};
/* After store_abort_snapshot: remove the blobs store_put_chunks renamed
 * into place through st that no committed snapshot refers to. Only under
 * the exclusive repository lock, taken here without waiting and dropped
 * before returning: a snapshot running beside this one may reuse such a
 * blob, or have waited for its claim and counted it as shared, and it
 * commits later, so while another process holds the repository nothing is
 * removed and d says what is left for prune. 0, or -1 with e set (d
 * counts what was removed before the failure). */
int store_drop_written(struct store *st, struct store_dropped *d,
    struct cs_err *e);

struct snap_info {
	uint64_t id;
	char started[32];	/* ISO 8601 UTC */
	char finished[32];	/* "" while running */
	char status[16];	/* running | complete | aborted */
	char initiator[NAME_MAX_LEN + 1];
	char uid[SNAPUID_HEX_LEN];	/* its identity; "" if it has none
					 * (taken before identities) */
	int nagents;
	uint64_t bytes;		/* sum of recorded file sizes */
	uint64_t stored;	/* bytes its distinct chunk blobs take in the
				 * repository (compressed, sealed); a chunk
				 * shared with other snapshots counts in each */
	uint64_t nmsgs;		/* recorded in-flight messages */
	char reason[256];	/* why aborted; for a stale running one, that
				 * its coordinator is gone */
	int stale;		/* running, but its coordinator is gone (seen
				 * by a reader, which does not rewrite it) */
	char repo_id[40];	/* the repository's identity, "" if none */
};
/* All snapshots, oldest first; *out malloc'ed. */
int store_list(struct store *st, struct snap_info **out, size_t *n,
    struct cs_err *e);

/* Called once per problem with a one-line description. */
typedef void (*problem_fn)(void *ctx, const char *line);

/* Notes: not problems, but what verify's replay of the recorded messages
 * will dead-letter (and restore's did), one line each, to fn. */
void store_set_notes(struct store *st, problem_fn fn, void *ctx);

/* Verify snapshot id (0: the newest complete one; *resolved gets the id).
 * Returns the number of problems found (0 = ok), or -1 with e set when it
 * could not verify at all (unknown id, no complete snapshot). */
int store_verify(struct store *st, uint64_t id, uint64_t *resolved,
    problem_fn fn, void *ctx, struct cs_err *e);
/* The last store_verify's work: *chunks the chunk rows of the snapshot's
 * recorded files it checked, *reads the chunks it read from their blobs
 * (each one decoded, in an encrypted or compressed repository). A chunk
 * is read once: for its hash and the replay of its file together. */
void store_verify_work(const struct store *st, uint64_t *chunks,
    uint64_t *reads);
/* Of those reads, the chunks a file's replay decoded itself ahead of
 * the one it needed while a chunk task still decoded that one (both
 * cores decode; see "handoff" in docs/INTERNALS.md). */
uint64_t store_verify_ahead(const struct store *st);

/* Verify snapshot id without the password (verify_sealed.c lists what
 * that checks and what it cannot): the number of problems, or -1 with e
 * set when it could not verify at all. w: what it went over. */
struct store_sealed_work {
	uint64_t objects;	/* distinct chunk objects checked */
	uint64_t bytes;		/* their stored bytes */
	uint64_t msgs;		/* recorded message rows */
};
int store_verify_sealed(struct store *st, uint64_t id, uint64_t *resolved,
    problem_fn fn, void *ctx, struct store_sealed_work *w,
    struct cs_err *e);

/* Verify, then restore snapshot id into the data paths of c (whose agent
 * names must be the snapshot's, and whose agents must not be running),
 * replaying recorded channel messages exactly once. -1 with e set on
 * refusal or failure; problems found by verify go to fn first. */
int store_restore(struct store *st, uint64_t id, const struct cfg *c,
    uint64_t *resolved, problem_fn fn, void *ctx, struct cs_err *e);
/* The same for only the nonly agents named in only (each a name of c;
 * nonly 0: every agent): one host restores its own agents. Each restored
 * file is the one a full restore writes, so agents restored one by one,
 * from copies of one repository, agree on every channel's history. */
int store_restore_agents(struct store *st, uint64_t id, const struct cfg *c,
    const char *const *only, size_t nonly, uint64_t *resolved,
    problem_fn fn, void *ctx, struct cs_err *e);

/* restore --target (target.c): the config text of snapshot id's cluster
 * (0: the newest complete one, *resolved gets the id) restored into a
 * directory of its own: its agents and channels, data files NAME.data and
 * run_dir run beside the config, no addr or tls_dir. 0 with *out
 * malloc'ed, or -1 with e set. */
int store_target_config(struct store *st, uint64_t id, uint64_t *resolved,
    char **out, struct cs_err *e);

/* Refuse data paths of c that restore must not write (restore_paths.c):
 * one inside the repository st reads (by path, or a directory with the
 * repository's device and inode on the way), or two agents whose paths
 * name the same file (compared as canonical places, and by device and
 * inode when the files exist). 0, or -1 with e naming the agent(s).
 * store_restore checks it too. */
int store_check_paths(struct store *st, const struct cfg *c,
    struct cs_err *e);

/* A snapshot's recorded contents, read back for inspection. */
struct store_file {
	char agent[NAME_MAX_LEN + 1];
	uint8_t *data;		/* owned: the recorded data file's bytes */
	size_t len;
};
struct store_msg {
	char src[NAME_MAX_LEN + 1];
	char dst[NAME_MAX_LEN + 1];
	uint64_t seq;
	uint8_t *data;		/* owned: chmsg.h encoding */
	size_t len;
};
struct store_contents {
	size_t nfiles;
	struct store_file *files;	/* ordered by agent name */
	size_t nmsgs;
	struct store_msg *msgs;		/* ordered by src, dst, seq */
};
/* Read snapshot id (0: the newest complete one; *resolved gets the id):
 * every agent's recorded file, checked against its size and SHA-256, and
 * every recorded message. It does not verify the cut: call store_verify
 * first. Free with store_contents_free. */
int store_read_contents(struct store *st, uint64_t id, uint64_t *resolved,
    struct store_contents *out, struct cs_err *e);
void store_contents_free(struct store_contents *c);	/* NULL ok */

/* For object-store repositories (remote.c), on a manifest file that need
 * not be inside a repository: a consistent one-file copy at dst (VACUUM
 * INTO; dst is replaced), and the distinct blob names the chunk rows of
 * snapshot id refer to (0: the newest complete one; STORE_BLOBS_ALL:
 * every snapshot), sorted (malloc'd strings in a malloc'd array). 0 / -1
 * with e set. */
#define STORE_BLOBS_ALL UINT64_MAX
int store_manifest_copy(const char *manifest, const char *dst,
    struct cs_err *e);
int store_manifest_blobs(const char *manifest, uint64_t id, char ***names,
    size_t *n, struct cs_err *e);
/* The generation and highest snapshot id a manifest file records (0 and
 * 0 for one written before generations were kept). */
int store_manifest_gen(const char *manifest, uint64_t *gen, uint64_t *max_id,
    struct cs_err *e);
/* Manifest deltas (mdelta.c): what turns manifest file oldm into newm,
 * into *out (malloc'd, *n bytes): 0; 1 when a delta cannot carry the
 * change (the schema, or a table without a primary key, changed): the
 * whole manifest must go instead; -1 with e set. Apply one to manifest
 * (all of it or nothing; CS_E_CORRUPT when it is not a delta or was
 * made from another manifest). */
int store_mdelta_make(const char *oldm, const char *newm, uint8_t **out,
    size_t *n, struct cs_err *e);
int store_mdelta_apply(const char *manifest, const uint8_t *d, size_t n,
    struct cs_err *e);

#endif
