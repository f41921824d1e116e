/* backend.h - where a repository's objects live: its own directory or
 * an object store's bucket, behind one small table of operations (the
 * models: SQLite's VFS, restic's backend interface). Keys are relative
 * to the repository: "blobs/ab/<hex>", "commits/000..01", "lease".
 *
 * The store reads chunk objects through a backend when it was opened
 * with one (store_opts.blob_backend): verify, restore, show and the
 * recorded files' contents then read a repository on an object store
 * straight from the bucket, a chunk per worker at a time, with no local
 * copy of its blobs. Without one the store reads REPO/blobs itself
 * (mapping the files; a directory backend would add nothing there).
 * A repository on an object store (store/objrepo.c) keeps its commits,
 * manifests and lease there too, and writes them with put (create-only,
 * or conditional on the version it read), list and delete; its writers
 * upload chunk objects through an upload pipe (store/upload_pipe.c). */
#ifndef CUTSNAP_STORE_BACKEND_H
#define CUTSNAP_STORE_BACKEND_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "../lib/err.h"

struct store_backend;

#define STORE_TAG_MAX 128	/* an object version's tag (an ETag) */

/* One object of a listing. */
struct store_obj {
	char *key;		/* heap, relative to the repository */
	uint64_t size;
	int64_t mtime;		/* seconds since the epoch */
};

/* When put may write. */
enum store_put_cond {
	STORE_PUT_ANY,		/* always (creates or replaces) */
	STORE_PUT_CREATE,	/* only where there is no object yet */
	STORE_PUT_IFMATCH,	/* only over the version whose tag is given */
};

/* Each op's error message names the object it was about (as where()
 * spells it), so that callers pass it on as it is. */
struct store_backend_ops {
	/* Bytes [off, off + len) of key (len 0: to its end) into buf,
	 * which takes at most cap bytes: *got bytes came, *size is the
	 * object's whole size (larger than cap when the object was cut
	 * there). An offset past the end gives *got 0. 0, or -1 with e
	 * set: CS_E_NOTFOUND when there is no such object. Any thread may
	 * call it at any time. */
	int (*get)(struct store_backend *b, const char *key, uint64_t off,
	    size_t len, void *buf, size_t cap, size_t *got, uint64_t *size,
	    struct cs_err *e);
	/* The whole of key, at most cap bytes, into *data (malloc'd and
	 * NUL-terminated; *len bytes), and its version's tag into tag
	 * (may be NULL). More than cap bytes: -1 (CS_E_CORRUPT). */
	int (*read)(struct store_backend *b, const char *key, size_t cap,
	    char **data, size_t *len, char tag[STORE_TAG_MAX],
	    struct cs_err *e);
	/* key into the local file path (a temporary file renamed, so path
	 * is whole or absent); CS_E_NOTFOUND when there is no object. */
	int (*get_file)(struct store_backend *b, const char *key,
	    const char *path, struct cs_err *e);
	/* len bytes of data as key, as cond says (tag_in: the version an
	 * IFMATCH replaces). tag_out (may be NULL) gets the new version's
	 * tag. -1 with CS_E_EXISTS when cond refused: the key exists
	 * (CREATE) or holds another version or none (IFMATCH). A put whose
	 * outcome a retry made unclear is settled by the backend (s3.c
	 * reads the object back): EXISTS means another writer's. Any
	 * thread may call it. */
	int (*put)(struct store_backend *b, const char *key, const void *data,
	    size_t len, enum store_put_cond cond, const char *tag_in,
	    char tag_out[STORE_TAG_MAX], struct cs_err *e);
	/* Every key under prefix (a key prefix ending in '/'), in byte
	 * order, into *objs (free with store_objs_free). */
	int (*list)(struct store_backend *b, const char *prefix,
	    struct store_obj **objs, size_t *n, struct cs_err *e);
	/* Removes key; one that is already absent is no error. */
	int (*del)(struct store_backend *b, const char *key,
	    struct cs_err *e);
	/* key as its user names it ("s3://bucket/prefix/blobs/..", or a
	 * path), for messages. */
	void (*where)(struct store_backend *b, const char *key, char *out,
	    size_t n);
	void (*close)(struct store_backend *b);
};

struct store_backend {
	const struct store_backend_ops *ops;
	/* Requests answered and bytes received (for tests and -v). */
	_Atomic uint64_t gets, bytes;
	/* How many puts it serves at once to good effect (the pipe's
	 * workers): an object store wants many, a disk a few. */
	int parallel;
};

/* A repository directory's objects (dir/KEY). */
int store_backend_dir(const char *dir, struct store_backend **out,
    struct cs_err *e);
/* An object store's: url "s3://BUCKET/PREFIX"; endpoint and region as
 * s3_open_at takes them (NULL: the environment's). Each calling thread
 * gets a connection of its own, kept for the next call. */
int store_backend_s3(const char *url, const char *endpoint,
    const char *region, struct store_backend **out, struct cs_err *e);
void store_backend_close(struct store_backend *b);	/* accepts NULL */
void store_objs_free(struct store_obj *objs, size_t n);
/* The S3 backend's URL, endpoint and region (NULL for another backend):
 * what an agent that uploads its own chunks is told. */
const char *store_backend_s3_url(const struct store_backend *b);
const char *store_backend_s3_endpoint(const struct store_backend *b);
const char *store_backend_s3_region(const struct store_backend *b);
#endif
