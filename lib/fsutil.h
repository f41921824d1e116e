/* fsutil.h - durable file helpers: fs_write_all, fsync of a directory, atomic
 * replacement of a file (temp, fsync, rename, fsync dir). */
#ifndef CUTSNAP_FSUTIL_H
#define CUTSNAP_FSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "err.h"

/* Write/read all n bytes, retrying on EINTR and short counts. 0 / -1. */
int fs_write_all(int fd, const void *p, size_t n);
/* fs_write_all with send(2)'s MSG_NOSIGNAL on a socket, so a peer that
 * went away gives EPIPE rather than killing the process; write(2) on
 * anything else (a pipe, a file). */
int fs_send_all(int fd, const void *p, size_t n);
int fs_pread_all(int fd, void *p, size_t n, off_t off);	/* -1 also on EOF */
int pwrite_all(int fd, const void *p, size_t n, off_t off);

int fs_fsync_dir(const char *dir, struct cs_err *e);
/* The directory part of path into out ("." if none). */
void fs_path_dirname(const char *path, char *out, size_t outsz);
/* mkdir -p with mode for the created components. */
int fs_mkdir_p(const char *path, mode_t mode, struct cs_err *e);

/* What stands between a path and the random suffix of its temp files. */
#define ATOMIC_TMP_INFIX ".tmp."

/* Replace path atomically with the given bytes: write a new temp file
 * PATH.tmp.XXXXXX (random suffix, created exclusively, so never through a
 * planted link), fsync, rename over path, fsync the directory. */
int fs_atomic_write_file(const char *path, const void *data, size_t len,
    mode_t mode, struct cs_err *e);
/* The same with the file's bytes given in two parts, one after the other. */
int fs_atomic_write_file2(const char *path, const void *data, size_t len,
    const void *data2, size_t len2, mode_t mode, struct cs_err *e);

/* The two halves of the above for a caller that writes the temp itself:
 * atomic_tmp_open creates PATH.tmp.XXXXXX (name in tmp) and returns its
 * fd, or -1 with e set; the caller writes, fsyncs and closes it, then
 * atomic_tmp_commit renames it over path and fsyncs the directory (on a
 * failed rename it removes the temp). */
int atomic_tmp_open(const char *path, mode_t mode, char *tmp, size_t tmpsz,
    struct cs_err *e);
int atomic_tmp_commit(const char *tmp, const char *path, struct cs_err *e);

/* Remove the temp files that fs_atomic_write_file left beside path when its
 * writer was killed (PATH.tmp.*). Only for a caller that holds path's lock,
 * so that no live writer's temp is removed. 0, or -1 with e set. */
int fs_remove_stale_temps(const char *path, struct cs_err *e);

/* Read a whole file of at most max bytes into a malloc'ed buffer. */
int fs_read_file(const char *path, size_t max, uint8_t **out, size_t *len,
    struct cs_err *e);

#endif
