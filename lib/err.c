/* err.c - one-line error messages for library code (see err.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "err.h"

int
cs_errf(struct cs_err *e, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
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
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
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
