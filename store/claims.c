/* claims.c - the claims of the chunks a snapshot copies: an OFD write
 * lock on one byte of REPO/locks/chunks.claims per digest, so that
 * snapshots taken at the same time share the copy work (see
 * chunkstore.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"
#include "claims.h"
#include "crun.h"

#define CLAIM_WAIT_MS 120000	/* for a chunk another run claimed */
#define CLAIM_POLL_MS 10

/* Take (type F_WRLCK) or drop (F_UNLCK) the claim of a digest: one byte
 * of chunks.claims, at its first 6 bytes. Never blocks. */
static int
claim(int fd, const uint8_t *sha, short type)
{
	struct flock fl;
	off_t off = 0;
	int i;

	for (i = 0; i < 6; i++)
		off = off << 8 | sha[i];
	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = off;
	fl.l_len = 1;
	return fcntl(fd, F_OFD_SETLK, &fl);
}

static int
claims_open(struct crun *r, struct cs_err *e)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/locks/chunks.claims",
	    r->st->repo) >= (int)sizeof(path))
		return cs_errf(e, "repository path too long: %s", r->st->repo);
	r->claim_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	return 0;
}

/* Claim every job. A job another run claimed moves to r->waiting; a job
 * stored since plan() is dropped. Without chunks.claims (it could not be
 * opened) nothing is shared. */
int
store_claims_take(struct crun *r, struct cs_err *e)
{
	size_t i, kept = 0;
	int s;

	if (claims_open(r, e) < 0)
		return -1;
	if (r->claim_fd < 0)
		return 0;
	if ((r->waiting = malloc((r->njobs + 1) * sizeof(*r->waiting))) ==
	    NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	for (i = 0; i < r->njobs; i++) {
		if (claim(r->claim_fd, r->jobs[i].name, F_WRLCK) < 0) {
			r->waiting[r->nwaiting++] = r->jobs[i];
			continue;
		}
		if ((s = store_blob_stored(r->st, r->jobs[i].name,
		    r->jobs[i].len, 0, e)) < 0)
			return -1;
		if (!s)
			r->jobs[kept++] = r->jobs[i];
	}
	r->njobs = kept;
	return 0;
}

/* Wait for the claims of the waiting chunks; those stored meanwhile are
 * shared, the others become this run's jobs (r->jobs is empty then).
 * Called with this run's own claims dropped; each claim it gets here is
 * dropped at once, so it never holds one while it waits. */
int
store_claims_wait(struct crun *r, struct cs_err *e)
{
	struct timespec ts = { 0, CLAIM_POLL_MS * 1000000L };
	struct cjob *j;
	size_t i;
	long waited = 0;
	int s;

	close(r->claim_fd);	/* drops this run's claims */
	if (claims_open(r, e) < 0)
		return -1;
	r->njobs = 0;
	for (i = 0; i < r->nwaiting; i++) {
		j = &r->waiting[i];
		/* A stop (store_set_stop) ends the wait; the copy that
		 * follows then fails as interrupted. */
		while (r->claim_fd >= 0 &&
		    (r->st->stop == NULL || *r->st->stop == 0) &&
		    claim(r->claim_fd, j->name, F_WRLCK) < 0 &&
		    (errno == EAGAIN || errno == EACCES || errno == EINTR) &&
		    waited < CLAIM_WAIT_MS) {
			nanosleep(&ts, NULL);
			waited += CLAIM_POLL_MS;
		}
		if (r->claim_fd >= 0)
			(void)claim(r->claim_fd, j->name, F_UNLCK);
		if ((s = store_blob_stored(r->st, j->name, j->len, 0, e)) < 0)
			return -1;
		if (s)
			r->shared++;
		else
			r->jobs[r->njobs++] = *j;
	}
	return 0;
}
