/* direct.c - the chunk copy's writer of temp files: O_DIRECT where the
 * filesystem has it, so that a snapshot's copy leaves no writeback for
 * the agents' fdatasyncs to wait behind (see chunkstore.c). */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "direct.h"
#include "../lib/fsutil.h"

#define DIRECT_ALIGN 4096u
#define DIRECT_PIECE (1u << 20)

size_t
store_direct_align(size_t n)
{
	return (n + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN;
}

/* Create the temp file tmp, with O_DIRECT where the filesystem has it;
 * *direct says which. */
int
store_direct_create(const char *tmp, int *direct)
{
	const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd;

	*direct = 1;
	fd = open(tmp, flags | O_DIRECT, 0600);
	if (fd >= 0 || errno != EINVAL)
		return fd;
	*direct = 0;
	return open(tmp, flags, 0600);
}

/* Write buf[0, len) to the new file tfd. Direct writes need aligned
 * lengths: the aligned part goes direct, in pieces, and the tail (a
 * blob is its header plus the chunk, so almost never aligned) through
 * the page cache, where pass 2's fdatasync finds it. Padding the tail
 * to a direct write and cutting the file back cost a small write and a
 * truncate per chunk, and ext4 reads the last block back from the disk
 * to zero it past the new end. A filesystem that took O_DIRECT at open
 * but refuses the write gets the rest buffered. */
int
store_direct_write(int tfd, int direct, const uint8_t *buf, size_t len)
{
	const size_t aligned = len / DIRECT_ALIGN * DIRECT_ALIGN;
	size_t off = 0, n;
	ssize_t k;

	if (!direct)
		return fs_write_all(tfd, buf, len);
	while (off < aligned) {
		n = aligned - off < DIRECT_PIECE ? aligned - off : DIRECT_PIECE;
		k = pwrite(tfd, buf + off, n, (off_t)off);
		if (k == -1 && errno == EINTR)
			continue;
		if (k == -1 && errno == EINVAL && off == 0)
			break;	/* written buffered below, from the start */
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			return -1;
		}
		off += (size_t)k;
	}
	if (off == len)
		return 0;
	if (fcntl(tfd, F_SETFL, fcntl(tfd, F_GETFL) & ~O_DIRECT) == -1 ||
	    lseek(tfd, (off_t)off, SEEK_SET) == -1)
		return -1;
	return fs_write_all(tfd, buf + off, len - off);
}
