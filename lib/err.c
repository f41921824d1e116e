/* err.c - one-line error messages with a kind for library code (see
 * err.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "err.h"

static void verr(struct cs_err *e, enum cs_errcode code, const char *fmt,
    va_list ap) __attribute__((format(printf, 3, 0)));

static void
verr(struct cs_err *e, enum cs_errcode code, const char *fmt, va_list ap)
{
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	e->code = (int)code;
	e->sys_errno = 0;
}

int
cs_errf(struct cs_err *e, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	verr(e, CS_E_FAILED, fmt, ap);
	va_end(ap);
	return -1;
}

int
cs_errc(struct cs_err *e, enum cs_errcode code, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	verr(e, code, fmt, ap);
	va_end(ap);
	return -1;
}

int
cs_errno(struct cs_err *e, const char *fmt, ...)
{
	int saved = errno;	/* vsnprintf may clobber errno */
	va_list ap;
	size_t n;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	verr(e, saved == ENOMEM ? CS_E_NOMEM : CS_E_IO, fmt, ap);
	va_end(ap);
	e->sys_errno = saved;
	n = strlen(e->msg);
	snprintf(e->msg + n, sizeof(e->msg) - n, ": %s", strerror(saved));
	errno = saved;
	return -1;
}

int
cs_errctx(struct cs_err *e, const char *fmt, ...)
{
	char old[CS_ERR_MAX];
	va_list ap;
	size_t n;

	if (e == NULL)
		return -1;
	/* Copy first: the new prefix is written over the same buffer. */
	memcpy(old, e->msg, sizeof(old));
	old[sizeof(old) - 1] = '\0';
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	n = strlen(e->msg);
	snprintf(e->msg + n, sizeof(e->msg) - n, ": %s", old);
	return -1;
}

int
cs_errkind(struct cs_err *e, enum cs_errcode code)
{
	if (e != NULL)
		e->code = code;
	return -1;
}

enum cs_errcode
cs_err_code(const struct cs_err *e)
{
	if (e == NULL || e->code < CS_E_FAILED || e->code > CS_E_LAST)
		return CS_E_FAILED;
	return (enum cs_errcode)e->code;
}

const char *
cs_err_name(enum cs_errcode code)
{
	/* In enum order; these names are part of the JSON output. */
	static const char *const names[] = { "failed", "not-found",
	    "exists", "usage", "no-repository", "corrupt", "locked",
	    "auth", "io", "no-memory", "partial", "unknown" };

	_Static_assert(sizeof(names) / sizeof(names[0]) == CS_E_LAST,
	    "one name per code");
	if (code < CS_E_FAILED || code > CS_E_LAST)
		return "failed";
	return names[code - 1];
}
