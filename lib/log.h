/* log.h - the agent's daemon log: levelled lines to stderr, or to a log
 * file that SIGHUP reopens; in the journal's form under systemd. */
#ifndef CUTSNAP_LOG_H
#define CUTSNAP_LOG_H

#include "err.h"

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/* who: the prefix of each line (e.g. the agent's name). Lines are
 * "TIMESTAMP WHO LEVEL: message", or "<N>WHO LEVEL: message" (N the
 * syslog priority, no timestamp: sd-daemon(3)) when stderr is the
 * journal stream systemd named in JOURNAL_STREAM. */
void log_init(const char *who, enum log_level level);
/* Append the log to path from now on (stderr is made that file, so what
 * else writes to stderr lands there too); 0, or -1 with e set. */
int log_open_file(const char *path, struct cs_err *e);
/* Open the log file again by its name (after logrotate moved it): 1 if
 * reopened, 0 if there is no log file, -1 with e set (the old file is
 * kept). */
int log_reopen(struct cs_err *e);
/* 1 when lines go to the journal in its form. */
int log_to_journal(void);
void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
