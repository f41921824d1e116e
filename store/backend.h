/* backend.h - where a repository's objects are read from: its own
 * directory or an object store's bucket, behind one small table of
 * operations (the models: SQLite's VFS, restic's backend interface).
 * Keys are relative to the repository: "blobs/ab/<hex>".
 *
 * The store reads chunk objects through a backend when it was opened
 * with one (store_opts.blob_backend): verify, restore, show and the
 * recorded files' contents then read a repository on an object store
 * straight from the bucket, a chunk per worker at a time, with no local
 * copy of its blobs. Without one the store reads REPO/blobs itself
 * (mapping the files; a directory backend would add nothing there).
 * Writers still run over a local stand-in (cmd/s3repo.c). */
#ifndef CUTSNAP_STORE_BACKEND_H
#define CUTSNAP_STORE_BACKEND_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "../lib/err.h"

struct store_backend;

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
#endif
