/* retrylock.c - --retry-lock DURATION: wait for a locked repository
 * instead of failing at once (restic's option of that name). */
#include <string.h>

#include "../store/store.h"
#include "cmd.h"

/* How long to keep trying, in ms; 0: fail at the first conflict. */
static int64_t retry_ms;

/* Between tries: the lock is only a file and an flock, so polling is
 * the only way to see it go; short at first (a lock held briefly), then
 * at most a second apart. */
#define RETRY_FIRST_MS 50
#define RETRY_MAX_MS 1000

int
cmd_take_retry_lock(int *argc, char **argv)
{
	const char *val;
	int64_t s;
	int i, j;

	for (i = 1; i < *argc && strcmp(argv[i], "--") != 0; i++) {
		if (strncmp(argv[i], "--retry-lock=", 13) == 0) {
			val = argv[i] + 13;
			j = 1;
		} else if (strcmp(argv[i], "--retry-lock") == 0) {
			if (i + 1 >= *argc)
				return cmd_usage_error("--retry-lock needs "
				    "DURATION");
			val = argv[i + 1];
			j = 2;
		} else {
			continue;
		}
		if (cmd_parse_duration(val, &s) < 0)
			return EXIT_USAGE;
		retry_ms = s > INT64_MAX / 1000 ? INT64_MAX : s * 1000;
		memmove(&argv[i], &argv[i + j],
		    (size_t)(*argc - i - j + 1) * sizeof(*argv));
		*argc -= j;
		i--;
	}
	return -1;
}

int64_t
cmd_retry_lock_deadline(void)
{
	int64_t now = cs_now_ms();

	return retry_ms > INT64_MAX - now ? INT64_MAX : now + retry_ms;
}

int
cmd_retry_lock_again(const struct cs_err *e, int64_t deadline, int *wait_ms)
{
	int64_t left = deadline - cs_now_ms();
	int nap;

	if (cs_err_code(e) != CS_E_LOCKED || left <= 0)
		return 0;
	nap = *wait_ms <= 0 ? RETRY_FIRST_MS : *wait_ms;
	if (nap > left)
		nap = (int)left;
	cs_sleep_ms(nap);
	*wait_ms = nap * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : nap * 2;
	return 1;
}

int
cmd_lock(struct store *st, int exclusive, struct cs_err *e)
{
	int64_t deadline = cmd_retry_lock_deadline();
	int wait_ms = 0;

	while (store_lock(st, exclusive, e) == -1)
		if (!cmd_retry_lock_again(e, deadline, &wait_ms))
			return -1;
	return 0;
}
