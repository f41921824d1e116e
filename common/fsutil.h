/* fsutil.h - durable file helpers: write_all, fsync of a directory, atomic
 * replacement of a file (temp, fsync, rename, fsync dir). */
#ifndef CUTSNAP_FSUTIL_H
#define CUTSNAP_FSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "err.h"

/* Write/read all n bytes, retrying on EINTR and short counts. 0 / -1. */
int write_all(int fd, const void *p, size_t n);
int pread_all(int fd, void *p, size_t n, off_t off);	/* -1 also on EOF */

int fsync_dir(const char *dir, struct cs_err *e);
/* The directory part of path into out ("." if none). */
void path_dirname(const char *path, char *out, size_t outsz);
/* mkdir -p with mode for the created components. */
int mkdir_p(const char *path, mode_t mode, struct cs_err *e);

/* Replace path atomically with the given bytes: write PATH.tmp.PID with
 * O_NOFOLLOW, fsync, rename over path, fsync the directory. */
int atomic_write_file(const char *path, const void *data, size_t len,
    mode_t mode, struct cs_err *e);
/* The same with the file's bytes given in two parts, one after the other. */
int atomic_write_file2(const char *path, const void *data, size_t len,
    const void *data2, size_t len2, mode_t mode, struct cs_err *e);

/* Read a whole file of at most max bytes into a malloc'ed buffer. */
int read_file(const char *path, size_t max, uint8_t **out, size_t *len,
    struct cs_err *e);

#endif
