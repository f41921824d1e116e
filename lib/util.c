/* util.c - small helpers every part shares (util.h). */
#include <sys/resource.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

volatile sig_atomic_t cs_stop_sig;

int64_t
cs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
cs_now_ms(void)
{
	return cs_now_ns() / 1000000;
}

/* The hook called name in CUTSNAP_FAULT: its text (name or name:VALUE)
 * at *hook, its length in *len; 0 when it is not set. */
static int
fault_find(const char *name, const char **hook, size_t *len)
{
	const char *p = getenv("CUTSNAP_FAULT"), *end;
	size_t n = strlen(name);

	for (; p != NULL && *p != '\0'; p = *end != '\0' ? end + 1 : end) {
		if ((end = strchr(p, ',')) == NULL)
			end = p + strlen(p);
		if ((size_t)(end - p) >= n && strncmp(p, name, n) == 0 &&
		    (p[n] == ':' || p + n == end)) {
			*hook = p;
			*len = (size_t)(end - p);
			return 1;
		}
	}
	return 0;
}

const char *
cs_fault_value(const char *name, char *buf, size_t bufsz)
{
	size_t n = strlen(name), len;
	const char *hook;

	if (!fault_find(name, &hook, &len) || len == n || len - n - 1 >= bufsz)
		return NULL;
	memcpy(buf, hook + n + 1, len - n - 1);
	buf[len - n - 1] = '\0';
	return buf;
}

int
cs_fault_on(const char *name)
{
	const char *hook;
	size_t len;

	return fault_find(name, &hook, &len);
}

long
cs_fault_ms(const char *name, long max_ms)
{
	char v[32];
	long ms;

	if (cs_fault_value(name, v, sizeof(v)) == NULL)
		return 0;
	ms = atol(v);
	return ms <= 0 || ms > max_ms ? 0 : ms;
}

void
cs_sleep_ms(long ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void
cs_catch_stop_signals(void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int
cs_all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != 0)
			return 0;
	return 1;
}

int
cs_raise_nofile(uint64_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return -1;
	if (rl.rlim_cur >= rl.rlim_max ||
	    (need != 0 && (uint64_t)rl.rlim_cur >= need))
		return 0;
	rl.rlim_cur = rl.rlim_max;
	return setrlimit(RLIMIT_NOFILE, &rl);
}

void
cs_printable(const void *p, size_t n, char *out, size_t outsz, int flags)
{
	const uint8_t *b = p;
	size_t i, j = 0;

	if (outsz == 0)
		return;
	for (i = 0; i < n && j + 1 < outsz; i++)
		out[j++] = b[i] < 0x20 || b[i] == 0x7f ||
		    ((flags & CS_PRINT_ASCII) && b[i] >= 0x80) ? '?' :
		    (char)b[i];
	if ((flags & CS_PRINT_ELLIPSIS) && i < n && outsz >= 4) {
		if (j > outsz - 4)
			j = outsz - 4;
		out[j++] = '.';
		out[j++] = '.';
		out[j++] = '.';
	}
	out[j] = '\0';
}
