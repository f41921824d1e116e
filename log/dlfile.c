/* dlfile.c - the live data file of an agent (dlfile.h): open with
 * recovery (scan, cut a torn tail, rebuild), appends staged for a group
 * commit, flush and fdatasync, reads of values and sends back from the
 * file, and what a compaction needs to switch files. The records, the
 * state they build, their codec and replay are datalog.c's. */
/*
 * Invariants (see datalog.h for the format):
 * - The file is [header | record*]; dl->end is its length and always lies
 *   on a record boundary; bytes are only ever appended at dl->end.
 * - dl->sha and dl->chunks have been fed exactly the bytes [0, dl->end) of
 *   the file, so the hash and the chunk digests of any snapshot prefix are
 *   copies of them taken at that moment.
 * - dl->synced <= dl->end; [0, dl->synced) is durable.
 * - dl->need <= dl->end: ACK records (recovery hints) after dl->need need
 *   no fsync of their own; they become durable with the next real batch.
 * - dl->st is the replay of [0, dl->end): a record reaches the state only
 *   after it is in the file, and a record that fails dl_state_check never
 *   reaches either.
 * - After an error that leaves file and memory possibly out of step (a
 *   failed truncate-back, an fsync error), dl->failed is set and every later
 *   append or sync fails: the agent must restart and recover from the file.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <isa-l/crc.h>

#include "chain.h"
#include "../proto/chmsg.h"
#include "chunkhash.h"
#include "datalog.h"
#include "dl_int.h"
#include "dlfile.h"
#include "../lib/fsutil.h"
#include "../crypto/sha.h"

#define DL_MAGIC "CUTSNAPL"
#define DL_VERSION 2
#define DL_VERSION_MIN 1	/* oldest version read */

/* Appended records wait in memory until the next sync (or until this much
 * has gathered): one write system call per group commit instead of one
 * per record. */
#define DL_PEND_MAX (1u << 20)
/* After a flush, keep the staging buffer only if it is no larger than
 * this (a huge PUT grows it once). */
#define DL_PEND_KEEP (2u << 20)
/* A value appended from a file is copied in pieces of this size. */
#define DL_COPY_PIECE (256u << 10)

struct datalog {
	int fd;			/* O_RDWR, flock'ed exclusively */
	char *path;		/* as given to datalog_open */
	struct dl_state st;	/* replay of [0, end) */
	struct sha_ctx *sha;	/* running hash of [0, end) */
	struct chunkhash *chunks;	/* per-chunk hashes of [0, end) */
	struct wbuf pend;	/* records [written, end), encoded here by
				 * append, not yet written */
	uint64_t written;	/* file length: [0, written) is in the file */
	uint64_t end;		/* log length, a record boundary */
	uint64_t synced;	/* durable prefix length */
	uint64_t need;		/* end of the last record that must be made
				 * durable (not a recovery hint) */
	uint64_t syncs;		/* fdatasync calls by datalog_sync */
	uint64_t cut;		/* torn-tail bytes cut on open */
	int failed;		/* 1: refuse further appends and syncs */
};

/* --- the live data file --------------------------------------------------- */

/* Write the header into an empty file and make the file's existence
 * durable (the file and its directory entry). */
static int
write_header(struct datalog *dl, struct cs_err *e)
{
	uint8_t hdr[DL_HEADER_LEN];
	char dir[PATH_MAX];

	dl_header(hdr);
	if (pwrite_all(dl->fd, hdr, sizeof(hdr), 0) == -1)
		return cs_errno(e, "write %s", dl->path);
	if (fsync(dl->fd) == -1)
		return cs_errno(e, "fsync %s", dl->path);
	fs_path_dirname(dl->path, dir, sizeof(dir));
	if (fs_fsync_dir(dir, e) == -1)
		return -1;
	if (sha_update(dl->sha, hdr, sizeof(hdr)) == -1 ||
	    chunkhash_update(dl->chunks, hdr, sizeof(hdr)) == -1)
		return cs_errf(e, "sha256 failed");
	dl->end = DL_HEADER_LEN;
	return 0;
}

/* Replay the existing file (streamed, hashing as it goes), cut a torn
 * tail. */
static int
recover(struct datalog *dl, off_t size, struct cs_err *e)
{
	struct dl_src s;
	size_t valid = 0;
	int rc = -1;

	memset(&s, 0, sizeof(s));
	if ((uint64_t)size > SIZE_MAX) {
		cs_errf(e, "%s: file too large", dl->path);
		goto out;
	}
	s.fd = dl->fd;
	s.len = (size_t)size;
	s.sha = dl->sha;
	s.chunks = dl->chunks;
	(void)posix_fadvise(dl->fd, 0, size, POSIX_FADV_SEQUENTIAL);
	if (dl_replay_src(&s, dl->path, 1, &dl->st, &valid, e) == -1)
		goto out;
	dl->end = valid;
	if (valid < (size_t)size) {
		dl->cut = (uint64_t)size - valid;
		if (ftruncate(dl->fd, (off_t)valid) == -1) {
			cs_errno(e, "truncate %s", dl->path);
			goto out;
		}
		if (fsync(dl->fd) == -1) {
			cs_errno(e, "fsync %s", dl->path);
			goto out;
		}
	}
	/* Only the header was torn: start over as with a new file (the
	 * hash has been fed nothing). */
	if (valid == 0 && write_header(dl, e) == -1)
		goto out;
	/* What a killed agent wrote may still sit in the page cache; make
	 * it durable before anything is built on it. */
	if (fdatasync(dl->fd) == -1) {
		cs_errno(e, "fdatasync %s", dl->path);
		goto out;
	}
	rc = 0;
out:
	free(s.win);
	return rc;
}

static int send_chain_from_file(void *ctx, const char *dst, uint64_t seq,
    uint8_t out[DL_CHAIN_LEN]);

int
datalog_open(const char *path, struct datalog **out, struct cs_err *e)
{
	struct datalog *dl;
	struct stat sb;
	char tmp[PATH_MAX];
	int rc = -1;

	*out = NULL;
	if ((dl = calloc(1, sizeof(*dl))) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	dl->fd = -1;
	wbuf_init(&dl->pend);
	if (dl_state_init(&dl->st, 0) == -1 ||
	    (dl->path = strdup(path)) == NULL ||
	    (dl->sha = sha_new()) == NULL ||
	    (dl->chunks = chunkhash_new(chunk_size_default())) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	dl->st.by_ref = 1;
	dl->st.no_sends = 1;
	dl->st.track_reqs = 1;	/* client_req.c answers retries from it */
	dl->st.send_chain = send_chain_from_file;
	dl->st.send_chain_ctx = dl;
	dl->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (dl->fd == -1 && errno == ELOOP) {
		cs_errf(e, "data file %s is a symbolic link, which an agent "
		    "does not follow (the link could be changed under it): "
		    "give the file's real path in the config (realpath %s)",
		    path, path);
		goto out;
	}
	if (dl->fd == -1) {
		cs_errno(e, "open %s", path);
		goto out;
	}
	if (flock(dl->fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno == EWOULDBLOCK)
			cs_errf(e, "data file %s is locked by another process "
			    "(is its agent running?)", path);
		else
			cs_errno(e, "lock %s", path);
		goto out;
	}
	if (fstat(dl->fd, &sb) == -1) {
		cs_errno(e, "stat %s", path);
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		cs_errf(e, "%s: not a regular file", path);
		goto out;
	}
	/* A compaction killed before its switch leaves its new file
	 * behind; the old one (this) is whole. The lock makes it ours. */
	if (snprintf(tmp, sizeof(tmp), "%s%s", path, DL_REWRITE_SUFFIX) <
	    (int)sizeof(tmp) && unlink(tmp) == -1 && errno != ENOENT) {
		cs_errno(e, "remove %s", tmp);
		goto out;
	}
	if (sb.st_size == 0) {
		if (write_header(dl, e) == -1)
			goto out;
	} else if (recover(dl, sb.st_size, e) == -1)
		goto out;
	dl->written = dl->synced = dl->need = dl->end;
	*out = dl;
	dl = NULL;
	rc = 0;
out:
	datalog_close(dl);
	return rc;
}

void
datalog_close(struct datalog *dl)
{
	struct cs_err e;

	if (dl == NULL)
		return;
	/* Records never synced were never promised to anyone (the agent
	 * syncs before it closes); writing them is only the tidy end. */
	if (dl->fd != -1 && !dl->failed)
		(void)datalog_flush(dl, &e);
	if (dl->fd != -1)
		close(dl->fd);		/* releases the flock */
	dl_state_free(&dl->st);
	sha_free(dl->sha);
	chunkhash_free(dl->chunks);
	wbuf_free(&dl->pend);
	free(dl->path);
	free(dl);
}

const struct dl_state *
datalog_state(const struct datalog *dl)
{
	return &dl->st;
}

/* The error of every call after a failed write or fsync. */
static int
refuse_failed(const struct datalog *dl, struct cs_err *e)
{
	return cs_errf(e, "data file %s: an earlier write failed; restart the "
	    "agent to recover", dl->path);
}

/* The file failed at dl->written: no partial record may stay, or a
 * restart would see corruption instead of a torn tail; the staged records
 * are in the in-memory state already, so the agent cannot go on. */
static int
write_failed(struct datalog *dl, struct cs_err *e)
{
	cs_errno(e, "write %s", dl->path);
	dl->failed = 1;
	(void)ftruncate(dl->fd, (off_t)dl->written);
	return -1;
}

/* Feed p[0, n), just written at the file's end, to the running hashes;
 * a failure leaves them behind the file for good. */
static int
hash_appended(struct datalog *dl, const uint8_t *p, size_t n,
    struct cs_err *e)
{
	if (sha_update(dl->sha, p, n) == -1 ||
	    chunkhash_update(dl->chunks, p, n) == -1) {
		dl->failed = 1;
		return cs_errf(e, "sha256 failed");
	}
	return 0;
}

/* PUT record r of n bytes (its head and value) is in the file at
 * dl->written and hashed: make it part of the log and the state. */
static int
put_written(struct datalog *dl, const struct dl_record *r, uint64_t n,
    struct cs_err *e)
{
	struct cs_err why;

	dl->st.rec_off = dl->end;
	dl->end += n;
	dl->written = dl->need = dl->end;
	if (dl_state_apply(&dl->st, r, &why) == -1) {
		dl->failed = 1;
		return cs_errf(e, "data file %s: %s", dl->path, why.msg);
	}
	return 0;
}

/* Append PUT record r, whose value is at least DL_PEND_MAX bytes,
 * straight from the caller's value (a put's receive buffer) to the file:
 * the staged records first, then the record's head and its value, with
 * no copy of the value into the staging buffer. It becomes durable with
 * the next sync, as a staged one would. */
static int
append_large_put(struct datalog *dl, const struct dl_record *r,
    struct cs_err *e)
{
	struct wbuf head;
	int rc = -1;

	wbuf_init(&head);
	if (datalog_flush(dl, e) == -1)
		goto out;
	dl_encode_put_head(&head, r);
	if (head.oom) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	buf_le32_put(head.data + 4, dl_rec_crc_more(buf_le32_get(head.data +
	    4), r->val, r->vlen));
	if (pwrite_all(dl->fd, head.data, head.len, (off_t)dl->written) == -1 ||
	    pwrite_all(dl->fd, r->val, r->vlen, (off_t)(dl->written +
	    head.len)) == -1) {
		write_failed(dl, e);
		goto out;
	}
	if (hash_appended(dl, head.data, head.len, e) == -1 ||
	    hash_appended(dl, r->val, r->vlen, e) == -1)
		goto out;
	rc = put_written(dl, r, head.len + r->vlen, e);
out:
	wbuf_free(&head);
	return rc;
}

/* Append PUT record r whose value lies in the file r->vsrc->fd (a put
 * spooled as it arrived, its checksum computed then): as
 * append_large_put, with the value copied in DL_COPY_PIECE pieces, each
 * hashed as it goes to the file, so that the value is never whole in
 * memory. The bytes have to pass through memory for the running SHA-256
 * and chunk hashes anyway, so copy_file_range would only add a read. */
static int
append_put_file(struct datalog *dl, const struct dl_record *r,
    struct cs_err *e)
{
	struct wbuf head;
	uint8_t *buf = NULL;
	uint64_t pos = 0, at;
	size_t n;
	int rc = -1;

	wbuf_init(&head);
	if (!dl->st.by_ref || r->vlen <= DL_INLINE_MAX) {
		cs_errf(e, "a value from a file is for large values only");
		goto out;
	}
	if (datalog_flush(dl, e) == -1)
		goto out;
	dl_encode_put_head(&head, r);
	if (head.oom || (buf = malloc(DL_COPY_PIECE)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	buf_le32_put(head.data + 4, r->vsrc->crc);
	if (pwrite_all(dl->fd, head.data, head.len, (off_t)dl->written) == -1) {
		write_failed(dl, e);
		goto out;
	}
	if (hash_appended(dl, head.data, head.len, e) == -1)
		goto out;
	at = dl->written + head.len;
	while (pos < r->vlen) {
		n = r->vlen - pos < DL_COPY_PIECE ? (size_t)(r->vlen - pos) :
		    DL_COPY_PIECE;
		if (fs_pread_all(r->vsrc->fd, buf, n, (off_t)pos) == -1) {
			/* The hashes have seen the head: no way back. */
			cs_errno(e, "read a spooled value for %s", dl->path);
			dl->failed = 1;
			(void)ftruncate(dl->fd, (off_t)dl->written);
			goto out;
		}
		if (pwrite_all(dl->fd, buf, n, (off_t)(at + pos)) == -1) {
			write_failed(dl, e);
			goto out;
		}
		if (hash_appended(dl, buf, n, e) == -1)
			goto out;
		pos += n;
	}
	rc = put_written(dl, r, head.len + r->vlen, e);
out:
	free(buf);
	wbuf_free(&head);
	return rc;
}

int
datalog_append(struct datalog *dl, const struct dl_record *r,
    struct cs_err *e)
{
	struct cs_err why;
	const uint8_t *rec;
	size_t staged = dl->pend.len, n;

	if (dl->failed)
		return refuse_failed(dl, e);
	if (dl_state_check(&dl->st, r, e) == -1)
		return -1;
	if (r->type == DL_PUT && r->vsrc != NULL)
		return append_put_file(dl, r, e);
	if (r->type == DL_PUT && r->vlen >= DL_PEND_MAX)
		return append_large_put(dl, r, e);
	dl_encode(&dl->pend, r);
	if (dl->pend.oom) {
		/* Nothing of this record is staged for good: forget it. */
		dl->pend.oom = 0;
		dl->pend.len = staged;
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	}
	rec = dl->pend.data + staged;
	n = dl->pend.len - staged;
	if (sha_update(dl->sha, rec, n) == -1 ||
	    chunkhash_update(dl->chunks, rec, n) == -1) {
		dl->failed = 1;
		return cs_errf(e, "sha256 failed");
	}
	dl->st.rec_off = dl->end;
	dl->end += n;
	if (r->type != DL_ACK)
		dl->need = dl->end;
	if (dl_state_apply(&dl->st, r, &why) == -1) {
		dl->failed = 1;
		return cs_errf(e, "data file %s: %s", dl->path, why.msg);
	}
	return dl->pend.len >= DL_PEND_MAX ? datalog_flush(dl, e) : 0;
}

int
datalog_flush(struct datalog *dl, struct cs_err *e)
{
	if (dl->failed)
		return refuse_failed(dl, e);
	if (dl->pend.len == 0)
		return 0;
	if (pwrite_all(dl->fd, dl->pend.data, dl->pend.len,
	    (off_t)dl->written) == -1)
		return write_failed(dl, e);
	dl->written = dl->end;
	wbuf_reset(&dl->pend);
	if (dl->pend.cap > DL_PEND_KEEP)
		wbuf_free(&dl->pend);
	return 0;
}

int
datalog_sync(struct datalog *dl, struct cs_err *e)
{
	uint64_t end = dl->end;

	if (dl->failed)
		return refuse_failed(dl, e);
	if (dl->synced == end)
		return 0;
	if (datalog_flush(dl, e) == -1)
		return -1;
	/* After a failed fsync the kernel may have dropped the dirty pages
	 * and cleared the error: a retry could "succeed" without the data. */
	if (fdatasync(dl->fd) == -1) {
		dl->failed = 1;
		return cs_errno(e, "fdatasync %s", dl->path);
	}
	dl->synced = end;
	dl->syncs++;
	return 0;
}

uint64_t
datalog_end(const struct datalog *dl)
{
	return dl->end;
}

uint64_t
datalog_need(const struct datalog *dl)
{
	return dl->need;
}

void
datalog_require(struct datalog *dl, uint64_t off)
{
	assert(off <= dl->end);
	if (off > dl->need)
		dl->need = off;
}

uint64_t
datalog_syncs(const struct datalog *dl)
{
	return dl->syncs;
}

uint64_t
datalog_synced(const struct datalog *dl)
{
	return dl->synced;
}

uint64_t
datalog_cut_bytes(const struct datalog *dl)
{
	return dl->cut;
}

int
dl_read_at(int fd, const char *what, uint64_t off, size_t n, uint8_t **out,
    struct cs_err *e)
{
	uint8_t *p;

	*out = NULL;
	if ((p = malloc(n + 1)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if (n > 0 && fs_pread_all(fd, p, n, (off_t)off) == -1) {
		cs_errno(e, "read %s", what);
		free(p);
		return -1;
	}
	*out = p;
	return 0;
}

/* ent is a value kept by reference inside the log: 0, or -1 with e set. */
static int
value_ref_check(const struct datalog *dl, const struct kv_entry *ent,
    struct cs_err *e)
{
	if (ent->val != NULL || ent->voff > dl->end ||
	    ent->vlen > dl->end - ent->voff)
		return cs_errf(e, "%s: value reference out of range", dl->path);
	return 0;
}

int
datalog_read_value(const struct datalog *dl, const struct kv_entry *ent,
    uint8_t **out, struct cs_err *e)
{
	uint8_t *p;

	*out = NULL;
	if ((p = malloc(ent->vlen + 1)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if (datalog_read_value_to(dl, ent, p, e) == -1) {
		free(p);
		return -1;
	}
	*out = p;
	return 0;
}

int
datalog_read_value_to(const struct datalog *dl, const struct kv_entry *ent,
    uint8_t *dst, struct cs_err *e)
{
	if (value_ref_check(dl, ent, e) == -1)
		return -1;
	if (ent->voff >= dl->written) {	/* still staged (a record is never
					 * split between file and memory) */
		memcpy(dst, dl->pend.data + (ent->voff - dl->written),
		    ent->vlen);
		return 0;
	}
	if (ent->vlen > 0 && fs_pread_all(dl->fd, dst, ent->vlen,
	    (off_t)ent->voff) == -1)
		return cs_errno(e, "read %s", dl->path);
	return 0;
}

int
datalog_value_fd(const struct datalog *dl, const struct kv_entry *ent,
    int *fd, struct cs_err *e)
{
	*fd = -1;
	if (value_ref_check(dl, ent, e) == -1)
		return -1;
	if (ent->voff >= dl->written)
		return 0;	/* still staged */
	if ((*fd = fcntl(dl->fd, F_DUPFD_CLOEXEC, 0)) == -1)
		return cs_errno(e, "dup %s", dl->path);
	return 0;
}

struct chain_find {
	uint64_t seq;
	uint8_t *out;
	int rc;			/* 1 found with a chain, 0 without, -1 not */
};

static int
chain_found(void *ctx, uint64_t seq, const uint8_t *msg, size_t len,
    const uint8_t *chain)
{
	struct chain_find *f = ctx;

	(void)msg;
	(void)len;
	if (seq != f->seq)
		return 0;
	f->rc = chain != NULL;
	if (chain != NULL)
		memcpy(f->out, chain, DL_CHAIN_LEN);
	return 1;
}

/* dl_state.send_chain of a live file: scan from dst's first
 * unacknowledged SEND (only a WELCOME asks, once per connection). */
static int
send_chain_from_file(void *ctx, const char *dst, uint64_t seq,
    uint8_t out[DL_CHAIN_LEN])
{
	struct datalog *dl = ctx;
	struct chain_find f = { seq, out, -1 };
	uint64_t off = dl_wm_get(&dl->st.sendoff, dst);
	struct cs_err e;

	if (off < DL_HEADER_LEN)
		off = DL_HEADER_LEN;
	if (datalog_read_sends(dl, dst, &off, seq, chain_found, &f, &e) == -1)
		return -1;
	return f.rc;
}

uint64_t
datalog_last_off(const struct datalog *dl)
{
	return dl->st.rec_off;
}

/* Does r emit a message on self->r->peer: a SEND, a RESOLVE that
 * refunds a dead letter, or a KEPT send a compaction carried over? Its seq
 * on that channel in *seq. */
static int
emits_send(const struct dl_record *r, uint64_t *seq)
{
	if (r->type == DL_SEND || r->type == DL_KEPT) {
		*seq = r->seq;
		return 1;
	}
	if (r->type == DL_RESOLVE && r->code == DL_RESOLVE_REFUND) {
		*seq = r->sseq;
		return 1;
	}
	return 0;
}

/* The application messages a TXN record sends to dst (its SEND ops),
 * those from seq from on, given to fn until it returns non-zero; that
 * value (0 when it never did), the last seq given in *seq. */
static int
txn_sends(const struct dl_record *r, const char *dst, uint64_t from,
    dl_send_fn fn, void *ctx, uint64_t *seq)
{
	struct dl_txn_op op;
	struct rbuf rb;
	uint32_t i;
	int k;

	rbuf_init(&rb, r->ops, r->opslen);
	for (i = 0; i < r->nops; i++) {
		if (dl_txn_next(&rb, &op) == -1)
			return -1;	/* decoded and checked when written */
		if (op.kind != DL_TXN_SEND || op.seq < from ||
		    strcmp(op.peer, dst) != 0)
			continue;
		*seq = op.seq;
		if ((k = fn(ctx, op.seq, op.val, op.vlen, op.chain)) != 0)
			return k;
	}
	return 0;
}

int
datalog_read_sends(struct datalog *dl, const char *dst, uint64_t *off,
    uint64_t from, dl_send_fn fn, void *ctx, struct cs_err *e)
{
	char peer[NAME_MAX_LEN + 1];
	const uint8_t *p;
	struct dl_record r;
	struct cs_err why;
	struct dl_src s;
	size_t at = (size_t)*off, rlen;
	uint64_t seq;
	int rc = -1, k = 0;

	memset(&s, 0, sizeof(s));
	s.fd = dl->fd;
	s.len = (size_t)dl->synced;
	if (at < DL_HEADER_LEN || at > dl->end) {
		cs_errf(e, "%s: send cursor %zu out of range", dl->path, at);
		goto out;
	}
	/* A cursor at or past the durable end has nothing to read yet. */
	while (k == 0 && at < s.len && s.len - at >= DL_REC_HDR_LEN) {
		if ((p = dl_src_at(&s, at, DL_REC_HDR_LEN)) == NULL)
			goto rerr;
		rlen = buf_le32_get(p);
		if (rlen == 0 || rlen > DL_MAX_RECORD ||
		    rlen > s.len - at - DL_REC_HDR_LEN) {
			cs_errf(e, "%s: corrupt record at offset %zu (bad "
			    "length)", dl->path, at);
			goto out;
		}
		if ((p = dl_src_at(&s, at, DL_REC_HDR_LEN + rlen)) == NULL)
			goto rerr;
		if (dl_rec_crc(p + DL_REC_HDR_LEN,
		    rlen) != buf_le32_get(p + 4) ||
		    dl_decode(p + DL_REC_HDR_LEN, rlen, &r, peer, &why) == -1) {
			cs_errf(e, "%s: corrupt record at offset %zu (read "
			    "back)", dl->path, at);
			goto out;
		}
		at += DL_REC_HDR_LEN + rlen;
		if (r.type == DL_TXN) {
			k = txn_sends(&r, dst, from, fn, ctx, &seq);
			/* Stopped inside the record: the cursor stays on it,
			 * so the next read sees its later sends (from skips
			 * those already taken). */
			if (k == 1)
				at -= DL_REC_HDR_LEN + rlen;
		} else if (emits_send(&r, &seq) && seq >= from &&
		    strcmp(r.peer, dst) == 0)
			k = fn(ctx, seq, r.msg, r.msglen, r.chain);
		if (k == -1) {
			cs_errf(e, "%s: send to %s seq %llu read back at "
			    "offset %zu could not be queued", dl->path, dst,
			    (unsigned long long)seq,
			    at - DL_REC_HDR_LEN - rlen);
			goto out;
		}
		*off = at;
	}
	rc = 0;
	goto out;
rerr:
	cs_errno(e, "read %s", dl->path);
out:
	free(s.win);
	return rc;
}

int
datalog_prefix_sha(const struct datalog *dl, uint8_t out[32])
{
	return sha_peek(dl->sha, out);
}

const struct chunkhash *
datalog_chunks(const struct datalog *dl)
{
	return dl->chunks;
}

int
datalog_check_unlocked(const char *path, struct cs_err *e)
{
	int fd, rc = -1;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			rc = 0;
		else
			cs_errno(e, "open %s", path);
		goto out;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno == EWOULDBLOCK)
			cs_errf(e, "agent running: data file %s is locked",
			    path);
		else
			cs_errno(e, "lock %s", path);
		goto out;
	}
	(void)flock(fd, LOCK_UN);
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	return rc;
}

/* --- what a compaction (dlrewrite.c) needs ------------------------------- */

int
datalog_fd(const struct datalog *dl)
{
	return dl->fd;
}

const char *
datalog_path(const struct datalog *dl)
{
	return dl->path;
}

int
dl_replay_fd(int fd, uint64_t start, uint64_t len, const char *what,
    struct dl_state *st, struct sha_ctx *sha, struct chunkhash *chunks,
    struct cs_err *e)
{
	struct dl_src s;
	int rc;

	memset(&s, 0, sizeof(s));
	if (len > SIZE_MAX || start > len)
		return cs_errf(e, "%s: file too large", what);
	s.fd = fd;
	s.len = (size_t)len;
	s.start = (size_t)start;
	s.sha = sha;
	s.chunks = chunks;
	rc = dl_replay_src(&s, what, 0, st, NULL, e);
	free(s.win);
	return rc;
}

int
dl_replay_read(uint64_t len, const char *what, dl_read_fn fn,
    dl_view_fn view, dl_crc_fn crc, void *ctx, struct dl_state *st,
    struct sha_ctx *sha, struct cs_err *e)
{
	struct dl_src s;
	int rc;

	memset(&s, 0, sizeof(s));
	if (len > SIZE_MAX)
		return cs_errf(e, "%s: file too large", what);
	s.fd = -1;
	s.read = fn;
	s.view = view;
	s.crc = crc;
	s.rctx = ctx;
	s.len = (size_t)len;
	s.sha = sha;
	rc = dl_replay_src(&s, what, 0, st, NULL, e);
	free(s.win);
	return rc;
}

void
datalog_adopt(struct datalog *dl, int fd, struct dl_state *st,
    struct sha_ctx *sha, struct chunkhash *chunks, uint64_t end)
{
	assert(dl->pend.len == 0 && dl->written == dl->end);
	close(dl->fd);
	dl->fd = fd;
	dl_state_free(&dl->st);
	dl->st = *st;
	memset(st, 0, sizeof(*st));
	dl->st.no_sends = 1;
	dl->st.send_chain = send_chain_from_file;
	dl->st.send_chain_ctx = dl;
	sha_free(dl->sha);
	dl->sha = sha;
	chunkhash_free(dl->chunks);
	dl->chunks = chunks;
	dl->written = dl->end = dl->synced = dl->need = end;
}

void
datalog_fail(struct datalog *dl)
{
	dl->failed = 1;
}

int
datalog_failed(const struct datalog *dl)
{
	return dl->failed;
}
