/* log.c - the agent's daemon log: UTC-timestamped, levelled lines to stderr. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

static char log_who[64] = "cutsnap";
static enum log_level log_max = LOG_INFO;

static const char *const log_names[] = { "error", "warn", "info", "debug" };

void
log_init(const char *who, enum log_level level)
{
	snprintf(log_who, sizeof(log_who), "%s", who ? who : "cutsnap");
	log_max = level;
}

void
log_msg(enum log_level level, const char *fmt, ...)
{
	char line[1024], ts[32];
	int saved = errno;	/* logging must not disturb the caller */
	struct timespec now;
	struct tm tm;
	va_list ap;
	int n, m, i;

	if (level > log_max)
		return;
	if (level < LOG_ERROR || level > LOG_DEBUG)
		level = LOG_ERROR;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "%s.%03ldZ %s %s: ", ts,
	    now.tv_nsec / 1000000, log_who, log_names[level]);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	if ((size_t)n + (size_t)m >= sizeof(line) - 1)
		m = (int)(sizeof(line) - 2) - n;	/* room for '\n' */
	/* Messages may quote keys or peer input: one event, one line. */
	for (i = n; i < n + m; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			line[i] = '?';
	n += m;
	line[n++] = '\n';
	/* One fwrite per line so concurrent writers do not interleave. */
	fwrite(line, 1, (size_t)n, stderr);
	fflush(stderr);
	errno = saved;
}
