/* view.c - an agent's recorded file as one contiguous read-only region:
 * an anonymous reservation of the file's size with each chunk blob mapped
 * over its part (MAP_FIXED). Chunks start on page boundaries (their size
 * is a power of two of at least a page, chunkhash.h), so nothing is
 * copied: replay, hashing and restore read straight from the page cache,
 * and a file larger than memory costs no heap. In a repository whose
 * blobs are objects (object.c: compressed) each chunk is decoded into
 * anonymous memory over its part instead. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "store_int.h"
#include "../lib/fsutil.h"

struct vopen {
	chunk_problem_fn fn;
	void *ctx;
	struct cs_err *e;
	int nproblems;
	unsigned char *damaged;	/* the view's, or NULL: damage is a
				 * problem */
};

static void
problem(struct vopen *o, const struct row_chunk *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
problem(struct vopen *o, const struct row_chunk *c, const char *fmt, ...)
{
	char what[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (o->nproblems++ == 0)
		cs_errf(o->e, "chunk %llu (%.12s): %s",
		    (unsigned long long)c->idx, c->sha, what);
	if (o->fn != NULL)
		o->fn(o->ctx, c, what);
}

/* Chunk c of a framed repository (object.c): decoded into anonymous
 * memory at base + c->off, read-only once filled. An object that is
 * there but does not decode (CS_E_CORRUPT) is marked in damaged (its
 * part zeroed) and is no failure; without damaged it is -1 like any
 * other. The
 * mapping is populated at once: one call faults in the chunk's pages
 * instead of one fault per page while it is decoded. */
static int
load_into(struct store *st, const struct row_chunk *c, uint8_t *base,
    unsigned char *damaged, struct objbuf *b, struct cs_err *e)
{
	uint8_t name[SHA_LEN];
	int rc;

	if (mmap(base + c->off, (size_t)c->size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_POPULATE, -1,
	    0) == MAP_FAILED)
		return cs_errno(e, "mmap");
	if (sha_unhex(c->sha, name) < 0)
		return cs_errf(e, "bad blob name");
	rc = store_obj_fetch_buf(st, name, c->sha, base + c->off,
	    (size_t)c->size, b, e);
	if (rc < 0 && damaged != NULL && cs_err_code(e) == CS_E_CORRUPT) {
		damaged[c->idx] = 1;
		memset(base + c->off, 0, (size_t)c->size);
	} else if (rc < 0) {
		return -1;
	}
	if (mprotect(base + c->off, (size_t)c->size, PROT_READ) < 0)
		return cs_errno(e, "mprotect");
	return 0;
}

static void
load_chunk(struct store *st, struct vopen *o, const struct row_chunk *c,
    uint8_t *base)
{
	struct objbuf b = { NULL, 0, 0 };
	struct cs_err e;

	if (load_into(st, c, base, o->damaged, &b, &e) == -1)
		problem(o, c, "%s", e.msg);
	store_objbuf_free(&b);
}

/* Map chunk c at base + c->off (a framed one, or one read from an
 * object store: decode or read it there). */
static void
map_chunk(struct store *st, struct vopen *o, const struct row_chunk *c,
    uint8_t *base)
{
	char path[PATH_MAX], expect[32];
	struct cs_err e;
	uint64_t size;
	int fd;

	if (store_obj_framed(st) || store_blob_remote(st)) {
		load_chunk(st, o, c, base);
		return;
	}
	if (store_blob_path(st, c->sha, path, sizeof(path), &e) < 0) {
		problem(o, c, "%s", e.msg);
		return;
	}
	snprintf(expect, sizeof(expect), "%llu bytes",
	    (unsigned long long)c->size);
	if ((fd = store_obj_open(path, expect, &size, &e)) < 0) {
		problem(o, c, "%s", e.msg);
		return;
	}
	if (size != c->size)
		problem(o, c, "size mismatch: expected %llu bytes, found %llu",
		    (unsigned long long)c->size, (unsigned long long)size);
	else if (mmap(base + c->off, (size_t)c->size, PROT_READ,
	    MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED)
		problem(o, c, "mmap: %s", strerror(errno));
	close(fd);
}

int
store_fview_read_chunk(struct store *st, const struct row_chunk *c,
    uint8_t *buf, struct objbuf *b, struct cs_err *e)
{
	char path[PATH_MAX], expect[32];
	uint8_t name[SHA_LEN];
	uint64_t size;
	int fd, rc = -1;

	atomic_fetch_add(&st->nchunk_reads, 1);
	if (store_obj_framed(st) || store_blob_remote(st)) {
		if (sha_unhex(c->sha, name) < 0)
			return cs_errf(e, "bad blob name");
		return store_obj_fetch_buf(st, name, c->sha, buf,
		    (size_t)c->size, b, e);
	}
	if (store_blob_path(st, c->sha, path, sizeof(path), e) < 0)
		return -1;
	snprintf(expect, sizeof(expect), "%llu bytes",
	    (unsigned long long)c->size);
	if ((fd = store_obj_open(path, expect, &size, e)) < 0)
		return -1;
	if (size != c->size)
		cs_errf(e, "size mismatch: expected %llu bytes, found %llu",
		    (unsigned long long)c->size, (unsigned long long)size);
	else if (fs_pread_all(fd, buf, (size_t)c->size, 0) < 0)
		cs_errno(e, "read %s", path);
	else
		rc = 0;
	close(fd);
	return rc;
}

int
store_fview_row_ok(const struct row_agent *a, size_t i, uint64_t off)
{
	const struct row_chunk *c = &a->chunks[i];
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	return c->ok && c->idx == i && c->off == off && c->size != 0 &&
	    c->off % page == 0 && c->size <= a->size - c->off;
}

int
store_fview_open(struct store *st, const struct row_agent *a, struct fview *v,
    chunk_problem_fn fn, void *ctx, struct cs_err *e)
{
	struct vopen o = { fn, ctx, e, 0, NULL };
	const struct row_chunk *c;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), off = 0;
	void *p;
	size_t i;

	memset(v, 0, sizeof(*v));
	if (store_need_key(st, e) < 0)
		return -1;
	if (a->size > SIZE_MAX / 2)
		return cs_errf(e, "recorded file of %llu bytes is too large to "
		    "map", (unsigned long long)a->size);
	v->len = a->size;
	if (a->size == 0 && a->nchunks == 0)
		return 0;
	v->maplen = (size_t)a->size;
	if (v->maplen == 0)
		v->maplen = (size_t)page;
	p = mmap(NULL, v->maplen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
	    MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		v->maplen = 0;
		return cs_errno(e, "mmap %llu bytes",
		    (unsigned long long)a->size);
	}
	v->p = p;
	if (fn != NULL && store_obj_framed(st) &&
	    (v->damaged = calloc(a->nchunks + 1, 1)) == NULL) {
		store_fview_close(v);
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	}
	o.damaged = v->damaged;
	/* The rows must tile [0, size): consecutive, page-aligned. */
	for (i = 0; i < a->nchunks; i++) {
		c = &a->chunks[i];
		if (!store_fview_row_ok(a, i, off)) {
			problem(&o, c, "malformed chunk row (idx, offset, size "
			    "or sha256)");
			break;
		}
		map_chunk(st, &o, c, v->p);
		off += c->size;
	}
	if (o.nproblems == 0 && off != a->size) {
		if (o.nproblems++ == 0)
			cs_errf(e, "chunks cover %llu bytes, expected %llu",
			    (unsigned long long)off,
			    (unsigned long long)a->size);
	}
	if (o.nproblems > 0) {
		store_fview_close(v);
		return -1;
	}
	return 0;
}

void
store_fview_close(struct fview *v)
{
	if (v->p != NULL)
		munmap(v->p, v->maplen);
	free(v->damaged);
	memset(v, 0, sizeof(*v));
}
