/* util.c - small helpers every part shares (util.h). */
#include <sys/resource.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

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

long
cs_fault_ms(const char *name, long max_ms)
{
	const char *f = getenv("CUTSNAP_FAULT");
	size_t n = strlen(name);
	long ms;

	if (f == NULL || strncmp(f, name, n) != 0 || f[n] != ':')
		return 0;
	ms = atol(f + n + 1);
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
