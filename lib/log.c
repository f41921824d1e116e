/* log.c - the agent's daemon log: UTC-timestamped, levelled lines to stderr
 * (or a log file, reopened on SIGHUP), or the journal's form under systemd. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static char log_who[64] = "cutsnap";
static enum log_level log_max = LOG_INFO;
static char log_path[PATH_MAX];	/* the log file, or "" (stderr as found) */
static int log_journal;		/* stderr is systemd's journal stream */

static const char *const log_names[] = { "error", "warn", "info", "debug" };
/* syslog priorities of the levels (LOG_ERR, LOG_WARNING, LOG_INFO,
 * LOG_DEBUG), the "<N>" prefix journald reads (sd-daemon(3)). */
static const int log_prio[] = { 3, 4, 6, 7 };

/* systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connected
 * to stdout and stderr; only if stderr is still that stream do lines go
 * to the journal (a child that redirected stderr to a file must keep the
 * usual form, with timestamps). */
static int
journal_stream(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat sb;
	char tail;

	if (v == NULL || sscanf(v, "%llu:%llu%c", &dev, &ino, &tail) != 2)
		return 0;
	if (fstat(STDERR_FILENO, &sb) == -1)
		return 0;
	return (unsigned long long)sb.st_dev == dev &&
	    (unsigned long long)sb.st_ino == ino;
}

void
log_init(const char *who, enum log_level level)
{
	snprintf(log_who, sizeof(log_who), "%s", who ? who : "cutsnap");
	log_max = level;
	log_journal = journal_stream();
}

int
log_to_journal(void)
{
	return log_journal;
}

/* Open path for appending and make it stderr. */
static int
attach(const char *path, struct cs_err *e)
{
	int fd;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
	    0640);
	if (fd == -1)
		return cs_errno(e, "log file %s", path);
	fflush(stderr);
	if (fd != STDERR_FILENO && dup2(fd, STDERR_FILENO) == -1) {
		cs_errno(e, "log file %s: dup2", path);
		close(fd);
		return -1;
	}
	if (fd != STDERR_FILENO)
		close(fd);
	return 0;
}

int
log_open_file(const char *path, struct cs_err *e)
{
	if (strlen(path) >= sizeof(log_path))
		return cs_errf(e, "log file path too long: %s", path);
	if (attach(path, e) == -1)
		return -1;
	snprintf(log_path, sizeof(log_path), "%s", path);
	log_journal = 0;	/* a file, not the journal's stream */
	return 0;
}

int
log_reopen(struct cs_err *e)
{
	if (log_path[0] == '\0')
		return 0;
	if (attach(log_path, e) == -1)
		return -1;
	return 1;
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
	if (log_journal) {
		/* journald stamps each line itself. */
		n = snprintf(line, sizeof(line), "<%d>%s %s: ", log_prio[level],
		    log_who, log_names[level]);
	} else {
		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
		n = snprintf(line, sizeof(line), "%s.%03ldZ %s %s: ", ts,
		    now.tv_nsec / 1000000, log_who, log_names[level]);
	}
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
