/* vproblem.c - a verify run's problems: each one line, prefixed with its
 * snapshot, counted and given to the caller's function. Its own file so
 * that the checks in other files (auth.c, rowauth.c, verify_cut.c,
 * verify_sealed.c) report through it without depending on verify.c,
 * which runs them. */
#include <stdarg.h>
#include <stdio.h>

#include "store_int.h"

void
store_vproblem(struct vrun *v, const char *fmt, ...)
{
	char msg[700], line[800];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "snapshot %llu: %s",
	    (unsigned long long)v->id, msg);
	v->nproblems++;
	if (v->fn != NULL)
		v->fn(v->ctx, line);
}
