/* err.h - one-line error messages filled in by library code, printed by cmd/. */
#ifndef CUTSNAP_ERR_H
#define CUTSNAP_ERR_H

#define CS_ERR_MAX 512

/* An optional error out-parameter: library functions return 0 or -1 and,
 * when the caller passed a non-NULL struct, write one lowercase line into
 * msg ("open a.data: No such file or directory"). No trailing newline. */
struct cs_err {
	char msg[CS_ERR_MAX];
};

/* printf-style; a NULL e is allowed and ignored. Always returns -1 so that
 * "return cs_errf(e, ...);" reads naturally. */
int cs_errf(struct cs_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Like cs_errf but appends ": strerror(errno)" (errno read on entry). */
int cs_errno(struct cs_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefix an existing message: "ctx: old message". */
int cs_errctx(struct cs_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
