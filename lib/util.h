/* util.h - small helpers every part shares: a monotonic clock in
 * milliseconds, the open-file limit, printable copies of outside bytes
 * for messages and logs. */
#ifndef CUTSNAP_UTIL_H
#define CUTSNAP_UTIL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds and in milliseconds (for deadlines and
 * durations). */
int64_t cs_now_ns(void);
int64_t cs_now_ms(void);

/* The signal (SIGTERM, SIGINT) a command was asked to stop by, set by
 * its handler; 0 if none. Its blocking waits (connect, TLS handshake, a
 * reply) give up when it is set, instead of retrying after EINTR. */
extern volatile sig_atomic_t cs_stop_sig;

/* Test hooks: CUTSNAP_FAULT holds comma-separated hooks, each "name" or
 * "name:VALUE" (the tests set it; nothing else should).
 * cs_fault_value: hook name's VALUE copied into buf (bufsz bytes), or
 * NULL when the hook is not set, has no value or its value does not fit.
 * cs_fault_on: whether hook name is set, with or without a value.
 * cs_fault_ms: the MS of name:MS, or 0 when it is not set or MS is not
 * in 1..max_ms. */
const char *cs_fault_value(const char *name, char *buf, size_t bufsz);
int cs_fault_on(const char *name);
long cs_fault_ms(const char *name, long max_ms);
/* Sleep ms milliseconds (nothing when ms <= 0), through signals. */
void cs_sleep_ms(long ms);

/* fn handles SIGINT, SIGTERM and SIGHUP, without SA_RESTART, so that a
 * blocking wait returns EINTR and the caller sees the stop. */
void cs_catch_stop_signals(void (*fn)(int));

/* 1 when the n bytes at p are all zero (n 0: 1), else 0. */
int cs_all_zero(const void *p, size_t n);

/* Raise the soft RLIMIT_NOFILE to the hard one when it is below need
 * (0: whatever it is). 0, or -1 with errno when setrlimit refused. */
int cs_raise_nofile(uint64_t need);

/* Copy n bytes of p into out (outsz bytes, NUL-terminated), a control
 * byte (below 0x20, 0x7f) as '?'. With CS_PRINT_ASCII a byte >= 0x80 is
 * '?' too (logs: pure ASCII); without it such bytes are copied (a UTF-8
 * key stays readable on a terminal). With CS_PRINT_ELLIPSIS a copy that
 * does not fit ends in "..."; without it, it is cut silently. */
#define CS_PRINT_ASCII		1
#define CS_PRINT_ELLIPSIS	2
void cs_printable(const void *p, size_t n, char *out, size_t outsz,
    int flags);

#endif
