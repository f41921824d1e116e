/* err.h - one-line error messages with a kind, filled in by library code,
 * printed by cmd/. */
#ifndef CUTSNAP_ERR_H
#define CUTSNAP_ERR_H

#define CS_ERR_MAX 512

/* What kind of failure an error is, so that a caller decides on the code
 * and never on the words (SQLite's result codes beside sqlite3_errmsg,
 * libgit2's git_error_code). Only cmd/ turns a code into an exit status
 * (cmd_exit_status). New kinds go at the end: cs_err_name's table follows
 * this order. */
enum cs_errcode {
	CS_E_FAILED = 1,	/* generic: the operation failed */
	CS_E_NOTFOUND,		/* a named thing (key, snapshot) is absent */
	CS_E_EXISTS,		/* what was to be created exists already */
	CS_E_USAGE,		/* bad arguments, config or input */
	CS_E_NOREPO,		/* no repository there, or not a usable one */
	CS_E_CORRUPT,		/* stored data is damaged or malformed */
	CS_E_LOCKED,		/* another process holds the repository */
	CS_E_AUTH,		/* wrong password, key or certificate */
	CS_E_IO,		/* a system call failed (errno set) */
	CS_E_NOMEM,		/* out of memory */
	CS_E_PARTIAL,		/* done in part: some of it failed */
	CS_E_UNKNOWN,		/* the outcome is unknown (a lost reply) */
};
#define CS_E_LAST CS_E_UNKNOWN

/* An optional error out-parameter: library functions return 0 or -1 and,
 * when the caller passed a non-NULL struct, write one lowercase line into
 * msg ("open a.data: No such file or directory"), no trailing newline,
 * the kind into code and the errno (0 when none) into sys_errno. The
 * struct needs no initialisation: every setter below writes all three,
 * except cs_errctx, which keeps the code and errno it wraps. */
struct cs_err {
	int code;		/* enum cs_errcode; read with cs_err_code */
	int sys_errno;		/* errno of the failed system call, or 0 */
	char msg[CS_ERR_MAX];
};

/* printf-style, with code CS_E_FAILED; a NULL e is allowed and ignored.
 * Always returns -1 so that "return cs_errf(e, ...);" reads naturally. */
int cs_errf(struct cs_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Like cs_errf with a kind: "return cs_errc(e, CS_E_LOCKED, ...);". */
int cs_errc(struct cs_err *e, enum cs_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like cs_errf but appends ": strerror(errno)" (errno read on entry and
 * kept in sys_errno); the code is CS_E_IO, or CS_E_NOMEM for ENOMEM. */
int cs_errno(struct cs_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefix an existing message: "ctx: old message"; code and errno stay. */
int cs_errctx(struct cs_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Give the message a lower layer wrote its kind as this layer judges it
 * (a decode error of a stored object is CS_E_CORRUPT); the words and
 * errno stay. A NULL e is ignored. Always returns -1. */
int cs_errkind(struct cs_err *e, enum cs_errcode code);

/* The kind of e: CS_E_FAILED for NULL or a struct no setter filled. */
enum cs_errcode cs_err_code(const struct cs_err *e);

/* A code's stable name for machine output ("locked", "no-repository"). */
const char *cs_err_name(enum cs_errcode code);

#endif
