/* faultfs.c - an LD_PRELOAD shim that makes one file operation fail, for
 * the I/O fault tests. It sits in front of libc for the program and for
 * the libraries it uses (SQLite's own I/O included), so nothing in
 * cutsnap needs a test hook.
 *
 * Operations (FAULTFS_OP):
 *   write   write, pwrite, pwrite64, writev on a regular file
 *   fsync   fsync, fdatasync
 *   rename  rename, renameat, renameat2
 *   mkdir   mkdir, mkdirat
 *   create  open, open64, openat, openat64 with O_CREAT
 * FAULTFS_N=K makes the K-th call of that operation fail (once) with
 * FAULTFS_ERRNO (EIO, the default, or ENOSPC) and nothing done; 0 or unset
 * fails nothing. FAULTFS_COUNT=FILE writes "op count" lines for every
 * operation at exit, so a test can count first and then fail each one.
 *
 * FAULTFS_NODIRECT plays a filesystem without O_DIRECT: "open" makes every
 * open with O_DIRECT fail with EINVAL; "write" lets it open but makes
 * every write to such a file fail with EINVAL.
 *
 * FAULTFS_CLOCK_SHIFT=SECONDS (may be negative) plays a wall clock that
 * was stepped: clock_gettime(CLOCK_REALTIME[_COARSE]), gettimeofday and
 * time return the real time plus SECONDS. Monotonic clocks are left
 * alone, as a step of the wall clock leaves them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum op { OP_WRITE, OP_FSYNC, OP_RENAME, OP_MKDIR, OP_CREATE, NOPS };

static const char *const op_names[NOPS] = {
	"write", "fsync", "rename", "mkdir", "create"
};

/* Counted by every thread of the process (the store's I/O pool seals
 * chunks on several): each call takes its own number. */
static _Atomic unsigned long counts[NOPS];
static int fault_op = -1;
static unsigned long fault_n;
static int fault_errno = EIO;
static int nodirect_open, nodirect_write;
static long clock_shift;

__attribute__((constructor)) static void
faultfs_init(void)
{
	const char *op = getenv("FAULTFS_OP"), *n = getenv("FAULTFS_N");
	const char *err = getenv("FAULTFS_ERRNO");
	int i;

	for (i = 0; op != NULL && i < NOPS; i++)
		if (strcmp(op, op_names[i]) == 0)
			fault_op = i;
	fault_n = n != NULL ? strtoul(n, NULL, 10) : 0;
	if (err != NULL && strcmp(err, "ENOSPC") == 0)
		fault_errno = ENOSPC;
	if ((op = getenv("FAULTFS_CLOCK_SHIFT")) != NULL)
		clock_shift = strtol(op, NULL, 10);
	if ((op = getenv("FAULTFS_NODIRECT")) != NULL) {
		nodirect_open = strcmp(op, "open") == 0;
		nodirect_write = strcmp(op, "write") == 0;
	}
}

/* FAULTFS_NODIRECT: 1 (errno EINVAL) if this open or write must fail. */
static int
no_direct_open(int flags)
{
	if (nodirect_open && (flags & O_DIRECT)) {
		errno = EINVAL;
		return 1;
	}
	return 0;
}

static int
no_direct_write(int fd)
{
	int fl;

	if (nodirect_write && (fl = fcntl(fd, F_GETFL)) != -1 &&
	    (fl & O_DIRECT)) {
		errno = EINVAL;
		return 1;
	}
	return 0;
}

__attribute__((destructor)) static void
faultfs_report(void)
{
	const char *path = getenv("FAULTFS_COUNT");
	FILE *f;
	int i;

	if (path == NULL || (f = fopen(path, "w")) == NULL)
		return;
	for (i = 0; i < NOPS; i++)
		fprintf(f, "%s %lu\n", op_names[i], atomic_load(&counts[i]));
	fclose(f);
}

/* Count one call of op; 1 if this is the one to fail (errno set). */
static int
faulty(enum op op)
{
	unsigned long k = atomic_fetch_add(&counts[op], 1) + 1;

	if ((int)op == fault_op && k == fault_n) {
		errno = fault_errno;
		return 1;
	}
	return 0;
}

/* Writes count only on regular files: sockets and pipes are not disk. */
static int
faulty_write(int fd)
{
	struct stat sb;

	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode))
		return 0;
	return faulty(OP_WRITE);
}

#define REAL(name) \
	static __typeof__(name) *real; \
	if (real == NULL) \
		real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

ssize_t
write(int fd, const void *p, size_t n)
{
	REAL(write);
	if (no_direct_write(fd) || faulty_write(fd))
		return -1;
	return real(fd, p, n);
}

ssize_t
pwrite(int fd, const void *p, size_t n, off_t off)
{
	REAL(pwrite);
	if (no_direct_write(fd) || faulty_write(fd))
		return -1;
	return real(fd, p, n, off);
}

ssize_t
pwrite64(int fd, const void *p, size_t n, off64_t off)
{
	REAL(pwrite64);
	if (no_direct_write(fd) || faulty_write(fd))
		return -1;
	return real(fd, p, n, off);
}

ssize_t
writev(int fd, const struct iovec *iov, int cnt)
{
	REAL(writev);
	if (no_direct_write(fd) || faulty_write(fd))
		return -1;
	return real(fd, iov, cnt);
}

int
fsync(int fd)
{
	REAL(fsync);
	if (faulty(OP_FSYNC))
		return -1;
	return real(fd);
}

int
fdatasync(int fd)
{
	REAL(fdatasync);
	if (faulty(OP_FSYNC))
		return -1;
	return real(fd);
}

int
rename(const char *from, const char *to)
{
	REAL(rename);
	if (faulty(OP_RENAME))
		return -1;
	return real(from, to);
}

int
renameat(int fd1, const char *from, int fd2, const char *to)
{
	REAL(renameat);
	if (faulty(OP_RENAME))
		return -1;
	return real(fd1, from, fd2, to);
}

int
renameat2(int fd1, const char *from, int fd2, const char *to,
    unsigned int flags)
{
	REAL(renameat2);
	if (faulty(OP_RENAME))
		return -1;
	return real(fd1, from, fd2, to, flags);
}

int
mkdir(const char *path, mode_t mode)
{
	REAL(mkdir);
	if (faulty(OP_MKDIR))
		return -1;
	return real(path, mode);
}

int
mkdirat(int dfd, const char *path, mode_t mode)
{
	REAL(mkdirat);
	if (faulty(OP_MKDIR))
		return -1;
	return real(dfd, path, mode);
}

/* The open family: the mode argument exists only with O_CREAT/O_TMPFILE. */
#define OPEN_MODE(flags, mode) do { \
	va_list ap; \
	mode = 0; \
	if ((flags) & (O_CREAT | __O_TMPFILE)) { \
		va_start(ap, flags); \
		mode = va_arg(ap, mode_t); \
		va_end(ap); \
	} \
} while (0)

int
open(const char *path, int flags, ...)
{
	mode_t mode;

	REAL(open);
	OPEN_MODE(flags, mode);
	if (no_direct_open(flags))
		return -1;
	if ((flags & O_CREAT) && faulty(OP_CREATE))
		return -1;
	return real(path, flags, mode);
}

int
open64(const char *path, int flags, ...)
{
	mode_t mode;

	REAL(open64);
	OPEN_MODE(flags, mode);
	if (no_direct_open(flags))
		return -1;
	if ((flags & O_CREAT) && faulty(OP_CREATE))
		return -1;
	return real(path, flags, mode);
}

int
openat(int dfd, const char *path, int flags, ...)
{
	mode_t mode;

	REAL(openat);
	OPEN_MODE(flags, mode);
	if (no_direct_open(flags))
		return -1;
	if ((flags & O_CREAT) && faulty(OP_CREATE))
		return -1;
	return real(dfd, path, flags, mode);
}

int
openat64(int dfd, const char *path, int flags, ...)
{
	mode_t mode;

	REAL(openat64);
	OPEN_MODE(flags, mode);
	if (no_direct_open(flags))
		return -1;
	if ((flags & O_CREAT) && faulty(OP_CREATE))
		return -1;
	return real(dfd, path, flags, mode);
}

/* FAULTFS_CLOCK_SHIFT: the wall clock, stepped. */
int
clock_gettime(clockid_t id, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);
	int rc;

	if (real == NULL)
		real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT,
		    "clock_gettime");
	rc = real(id, ts);
	if (rc == 0 &&
	    (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
		ts->tv_sec += clock_shift;
	return rc;
}

int
gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	struct timespec ts;

	(void)tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t
time(time_t *t)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	if (t != NULL)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
