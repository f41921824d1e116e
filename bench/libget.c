/* libget.c - the library rows of the bench: gets per second through
 * libcutsnap on one connection to an agent's Unix socket, one request at
 * a time (DEPTH 1) or DEPTH pipelined (cs_get_async, cs_flush,
 * cs_get_reply). Every reply is checked to be the value put first.
 * Usage: libget SOCKET SECONDS DEPTH; prints gets per second. */
#include <cutsnap.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One reply: 0 when it is the expected value. */
static int
check(cs_conn *c, int rc, void *v, size_t vl, const char *want)
{
	int ok = rc == CS_OK && vl == strlen(want) && memcmp(v, want, vl) == 0;

	if (!ok)
		fprintf(stderr, "libget: bad reply %d: %s\n", rc, cs_errmsg(c));
	free(v);
	return ok ? 0 : -1;
}

int
main(int argc, char **argv)
{
	static const char val[] = "0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcdef";
	char err[256];
	double secs, t0, t;
	long long n = 0;
	int depth, i;
	cs_conn *c;
	size_t vl;
	void *v;

	if (argc != 4 || (secs = atof(argv[2])) <= 0 ||
	    (depth = atoi(argv[3])) < 1 || depth > CS_PIPELINE_MAX) {
		fprintf(stderr, "usage: libget SOCKET SECONDS DEPTH\n");
		return 2;
	}
	if ((c = cs_connect_path(argv[1], err, sizeof(err))) == NULL) {
		fprintf(stderr, "libget: %s\n", err);
		return 1;
	}
	if (cs_put(c, "bench", 5, val, strlen(val)) != CS_OK) {
		fprintf(stderr, "libget: put: %s\n", cs_errmsg(c));
		return 1;
	}
	t0 = now_s();
	do {
		if (depth == 1) {
			int rc = cs_get(c, "bench", 5, &v, &vl);

			if (check(c, rc, v, vl, val) == -1)
				return 1;
			n++;
		} else {
			for (i = 0; i < depth; i++)
				if (cs_get_async(c, "bench", 5) != CS_OK) {
					fprintf(stderr, "libget: %s\n",
					    cs_errmsg(c));
					return 1;
				}
			for (i = 0; i < depth; i++) {
				int rc = cs_get_reply(c, &v, &vl);

				if (check(c, rc, v, vl, val) == -1)
					return 1;
			}
			n += depth;
		}
	} while ((t = now_s()) - t0 < secs);
	printf("%.0f\n", (double)n / (t - t0));
	cs_close(c);
	return 0;
}
