/* crun.h - one run of the chunk copy (chunkstore.c) and its jobs, shared
 * with the claims of its chunks (claims.c). Internal to store/. */
#ifndef CUTSNAP_STORE_CRUN_H
#define CUTSNAP_STORE_CRUN_H

#include "store_int.h"
#include "../lib/ratelimit.h"

/* One chunk to copy. */
struct cjob {
	int src;		/* index into the run's fds */
	size_t idx;		/* chunk index in its file */
	uint64_t off, len;
	const uint8_t *sha;	/* borrowed from the report */
	uint8_t name[SHA_LEN];	/* its blob's (store_name of sha) */
	int written;		/* its temp file exists (not yet renamed) */
	int recheck;		/* stored, but changed since its check, or
				 * the check is too old: hash the blob
				 * before reusing it */
	int reuse;		/* recheck found the blob good: no copy */
	uint64_t plen;		/* > 0: the agent's previous snapshot had this
				 * chunk shorter, plen bytes in blob pname,
				 * which may be built on (chunkdelta.c) */
	uint8_t pname[SHA_LEN];
	int looked;		/* hashed now (copied or rechecked good): look
				 * is its blob's, for blobchecks.db */
	struct blob_look look;
	int streamed;		/* handed to store_opts.blob_stream: no
				 * file of it here */
};

struct crun {
	struct store *st;
	const char *const *paths;
	const struct report *reps;
	int *fds;		/* per report, O_RDONLY */
	struct cjob *jobs;
	size_t njobs;
	uint32_t maxchunk;	/* largest chunk; buffers hold it rounded
				 * up to DIRECT_ALIGN */
	uint8_t *bufs[POOL_MAX_THREADS];	/* per worker, lazily */
	uint8_t *obufs[POOL_MAX_THREADS];	/* the same, for the blob of a
						 * framed chunk (object.c) */
	uint8_t *dbufs[POOL_MAX_THREADS];	/* the same size as bufs: a
						 * previous object decoded
						 * (chunkdelta.c), lazily */
	size_t bufsz, obufsz;	/* their sizes (set by bufs_take) */
	int has_spare;		/* holds the process's spare set (bufs_take) */
	pthread_mutex_t mu;
	int failed;		/* set once; later jobs are skipped */
	struct cs_err err;	/* the first failure */
	uint64_t bytes;		/* copied */
	uint64_t fetched;	/* of those, through st->ffn */
	uint64_t rechecked, healed, extended;	/* chunk_stats */
	int claim_fd;		/* locks/chunks.claims, or -1: no sharing */
	struct cjob *waiting;	/* chunks another run claimed first */
	size_t nwaiting;
	uint64_t shared;	/* of those, stored by the other run */
	struct ratelimit pace;	/* store_set_max_rate: every read and hash
				 * of a copy or a recheck pays first */
	uint8_t (*elsewhere)[SHA_LEN];	/* sorted: the names store_set_put's
					 * function found in the object store */
	size_t nelsewhere, elsewhere_cap;
	uint64_t put, put_bytes;	/* chunk_stats */
	int sync_dirs[257];	/* sync_dirs: the directories to fsync */
};

#endif
