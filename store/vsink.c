/* vsink.c - restore's sinks in verify's one pass: a verified chunk
 * written to its file's temp file (direct where it can be), the first
 * failed write kept, and whether a temp file holds its whole file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_int.h"
#include "verify_int.h"
#include "../lib/fsutil.h"
#include "../lib/util.h"

/* A write to the restore's temp file failed: keep the first error. */
static void
sink_failed(struct fcheck *f, const char *what)
{
	if (atomic_exchange(&f->wfailed, 1) == 0)
		snprintf(f->werr, sizeof(f->werr), "write %s: %s",
		    f->sinkname, what);
}

/* Write a verified chunk to the restore's temp file. A whole number of
 * pages at a page offset from a page-aligned buffer (every chunk but a
 * file's last: chunks are a power of two of at least a page, and the
 * chunk buffers page-aligned) goes through the O_DIRECT descriptor,
 * straight from the buffer it was checked in: no copy into the page
 * cache, no dirty pages left to writeback, and the replay reads the
 * chunks from memory, not from the temp file. The rest, and a direct
 * write the filesystem refuses (EINVAL), is written buffered with its
 * write-back started at once (sync_file_range, which does not wait for
 * it), so the final fsync has little left to do. 0, or -1 with errno
 * set. */
static int
sink_write(struct fcheck *f, const uint8_t *p, size_t len, uint64_t off)
{
	const size_t pg = 4096;

	if (f->dsink >= 0 && len % pg == 0 && off % pg == 0 &&
	    (uintptr_t)p % pg == 0) {
		if (pwrite_all(f->dsink, p, len, (off_t)off) == 0)
			return 0;
		if (errno != EINVAL)
			return -1;
	}
	if (pwrite_all(f->sink, p, len, (off_t)off) < 0)
		return -1;
	(void)sync_file_range(f->sink, (off_t)off, (off_t)len,
	    SYNC_FILE_RANGE_WRITE);
	return 0;
}

/* Test hook: CUTSNAP_FAULT=restore-kill-after-chunks:N makes restore
 * exit with status 99 once N chunks were written to its temp files, so
 * the tests can prove that a restore killed in the middle of its one
 * pass leaves every data file as it was. */
static void
fault_after_chunks(struct vrun *v)
{
	char n[32];

	if (cs_fault_value("restore-kill-after-chunks", n, sizeof(n)) != NULL &&
	    (long)atomic_fetch_add(&v->nwritten, 1) + 1 >= atol(n))
		_exit(99);
}

/* Under restore: chunk c of the file f, its bytes at p just hashed to
 * its name, written to the temp file at its offset from the buffer it
 * was read (and decoded) into, by the thread that checked it. */
void
store_vsink_write_chunk(struct vrun *v, struct fcheck *f,
    const struct row_chunk *c, const uint8_t *p)
{
	if (sink_write(f, p, (size_t)c->size, c->off) < 0)
		sink_failed(f, strerror(errno));
	fault_after_chunks(v);
}

/* Whether restore wrote every chunk of agent row i to its temp file
 * (after the chunk pass only): then the file's bytes are there,
 * verified, to be read back. */
int
store_vsink_complete(const struct vrun *v, size_t i)
{
	const struct fcheck *f = &v->fc[i];
	size_t k;

	if (f->sink < 0 || atomic_load(&f->wfailed) || f->hash_failed)
		return 0;
	for (k = 0; k < v->rows.agents[i].nchunks; k++)
		if (f->bad[k] != 0)
			return 0;
	return 1;
}

/* A failed write to a temp file fails the restore, not the snapshot. */
int
store_vsink_error(const struct vrun *v, struct cs_err *e)
{
	size_t i;

	for (i = 0; i < v->rows.nagents; i++)
		if (atomic_load(&v->fc[i].wfailed))
			return cs_errf(e, "%s", v->fc[i].werr);
	return 0;
}
