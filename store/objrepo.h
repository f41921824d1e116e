/* objrepo.h - a repository on an object store, as a session a command
 * runs in (objrepo.c): it reads the newest commit, prepares a local
 * stand-in directory (a writer's cache, or a reader's temporary copy of
 * the manifest) that the command opens as its repository with the
 * options store_objrepo_opts sets, and afterwards publishes what a
 * writer did (its blobs went up while it ran) or deletes what a prune
 * removed. Everything it reads and writes in the bucket goes through a
 * storage backend (backend.h). */
#ifndef CUTSNAP_STORE_OBJREPO_H
#define CUTSNAP_STORE_OBJREPO_H

#include <stdint.h>
#include <stdio.h>

#include "../lib/err.h"

struct store_opts;
struct objrepo;	/* opaque */

enum objrepo_kind {
	OBJREPO_WRITE,	/* snapshot, forget, init, key, load: under the lease */
	OBJREPO_META,	/* ls, check: the manifest alone */
	OBJREPO_BLOBS,	/* show, verify, restore: chunk objects read too */
	OBJREPO_PRUNE,	/* prune: under the lease, then deletes */
};

struct objrepo_args {
	enum objrepo_kind kind;
	uint64_t want;		/* a reader's commit; 0: the newest */
	int64_t grace;		/* a prune's grace period, in seconds */
	/* Prints a warning line (printf-style). */
	void (*warn)(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2)));
};

/* Whether url names a repository on an object store ("s3://..."). */
int store_objrepo_is(const char *url);
/* Takes the lease (writers and prune), reads the newest usable commit
 * (or args->want), and prepares the stand-in directory. -1 with e set;
 * its kind says why (usage, locked, auth, no repository). */
int store_objrepo_open(const char *url, const struct objrepo_args *args,
    struct objrepo **out, struct cs_err *e);
/* The stand-in directory the command uses as its repository, and the
 * repository's name for messages ("s3://bucket/prefix"). */
const char *store_objrepo_dir(const struct objrepo *r);
const char *store_objrepo_name(const struct objrepo *r);
/* The store options the command opens the stand-in with: chunk objects
 * streamed to the bucket or read from it, agents' uploads, the
 * generation floor. They borrow r; store_objrepo_opts_clear undoes. */
void store_objrepo_opts(struct objrepo *r, struct store_opts *o);
void store_objrepo_opts_clear(struct store_opts *o);
/* A writer's step done (load's periodic snapshot, more = 1, or the
 * command's end): its blobs, its manifest's change and the next commit
 * published. At the end the cache keeps its marker, so that the next
 * writer finds it current, or only some deltas behind. */
int store_objrepo_publish(struct objrepo *r, int more, struct cs_err *e);
/* After a writer published: the cache brought down to what the next
 * snapshot reuses (a failure is a warning: the commit stands). */
void store_objrepo_collect(struct objrepo *r);
/* A prune's deletions in the bucket, after the local prune chose them. */
int store_objrepo_prune(struct objrepo *r, struct cs_err *e);
/* The -v lines: what was read from, or written to, the bucket. */
void store_objrepo_report(const struct objrepo *r, FILE *f);
/* Ends the session: the lease dropped, a temporary directory removed. */
void store_objrepo_close(struct objrepo *r);	/* accepts NULL */

#endif
