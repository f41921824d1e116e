/* syncw.c - the disk's synced single writes per second: a loop of 512-byte
 * write + fdatasync on one file for a fixed time (the baseline a group
 * committing agent is compared with). Usage: syncw FILE SECONDS */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	char buf[512];
	double t0, t, secs;
	long n = 0;
	int fd, rc = 1;

	if (argc != 3 || (secs = atof(argv[2])) <= 0) {
		fprintf(stderr, "usage: syncw FILE SECONDS\n");
		return 2;
	}
	memset(buf, 'x', sizeof(buf));
	if ((fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND,
	    0600)) == -1) {
		perror(argv[1]);
		return 1;
	}
	t0 = now_s();
	do {
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
		    fdatasync(fd) == -1) {
			perror("write/fdatasync");
			goto out;
		}
		n++;
		t = now_s();
	} while (t - t0 < secs);
	printf("%.0f\n", (double)n / (t - t0));
	rc = 0;
out:
	close(fd);
	unlink(argv[1]);
	return rc;
}
