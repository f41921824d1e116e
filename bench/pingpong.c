/* pingpong.c - the CPU floor of the transfers/s rows: round trips per
 * second of a trivial request/reply over Unix sockets, shaped like
 * "cutsnap load" against a cluster but with no work and no fsync.
 * SERVERS processes each answer on one socket with a single-threaded
 * epoll loop (as an agent does); the clients are K closed loops (one
 * 64-byte request outstanding each), spread over the servers and
 * multiplexed by THREADS threads with one epoll each (as load does).
 * Prints round trips per second.
 * Usage: pingpong DIR SECONDS CLIENTS [SERVERS [THREADS]] */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MSG 64
#define MAX_EVENTS 64

static double secs;
static int nclients, nservers, nthreads;
static char sock_dir[80];

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
sock_path(int i, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/pp.%d.sock",
	    sock_dir, i);
}

/* Read exactly MSG bytes (the sockets are blocking on the server side:
 * a request arrives whole or the peer is gone). */
static int
read_msg(int fd, char *buf)
{
	size_t got = 0;
	ssize_t n;

	while (got < MSG) {
		n = read(fd, buf + got, MSG - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static void
serve(int lfd)
{
	struct epoll_event ev, evs[MAX_EVENTS];
	char buf[MSG];
	int ep, i, k, fd;

	if ((ep = epoll_create1(0)) == -1)
		_exit(1);
	ev.events = EPOLLIN;
	ev.data.fd = lfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) == -1)
		_exit(1);
	for (;;) {
		k = epoll_wait(ep, evs, MAX_EVENTS, -1);
		if (k == -1 && errno == EINTR)
			continue;
		if (k == -1)
			_exit(1);
		for (i = 0; i < k; i++) {
			fd = evs[i].data.fd;
			if (fd == lfd) {
				if ((fd = accept(lfd, NULL, NULL)) == -1)
					continue;
				ev.events = EPOLLIN;
				ev.data.fd = fd;
				if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1)
					_exit(1);
				continue;
			}
			if (read_msg(fd, buf) == -1 ||
			    write(fd, buf, MSG) != MSG) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
			}
		}
	}
}

struct worker {
	int first, count;	/* its clients */
	long trips;
	int failed;
};

static void *
client_thread(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev, evs[MAX_EVENTS];
	struct sockaddr_un sa;
	char buf[MSG];
	double t0;
	int ep, i, k, fd, c;

	memset(buf, 'p', sizeof(buf));
	if ((ep = epoll_create1(0)) == -1)
		goto fail;
	for (c = w->first; c < w->first + w->count; c++) {
		sock_path(c % nservers, &sa);
		if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
		    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
			goto fail;
		ev.events = EPOLLIN;
		ev.data.fd = fd;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1 ||
		    write(fd, buf, MSG) != MSG)
			goto fail;
	}
	t0 = now_s();
	while (now_s() - t0 < secs) {
		k = epoll_wait(ep, evs, MAX_EVENTS, 1000);
		if (k <= 0)
			goto fail;
		for (i = 0; i < k; i++) {
			fd = evs[i].data.fd;
			if (read_msg(fd, buf) == -1 || write(fd, buf, MSG) != MSG)
				goto fail;
			w->trips++;
		}
	}
	return NULL;
fail:
	w->failed = 1;
	return NULL;
}

int
main(int argc, char **argv)
{
	struct sockaddr_un sa;
	struct worker *ws = NULL;
	pthread_t *tids = NULL;
	pid_t *pids = NULL;
	double t0, t1;
	long trips = 0;
	int i, lfd, rc = 1, started = 0;

	if (argc < 4 || argc > 6 || (secs = atof(argv[2])) <= 0 ||
	    (nclients = atoi(argv[3])) <= 0 ||
	    (nservers = argc > 4 ? atoi(argv[4]) : 3) <= 0 ||
	    (nthreads = argc > 5 ? atoi(argv[5]) :
	    (int)sysconf(_SC_NPROCESSORS_ONLN)) <= 0 ||
	    strlen(argv[1]) >= sizeof(sock_dir) - 32) {
		fprintf(stderr, "usage: pingpong DIR SECONDS CLIENTS "
		    "[SERVERS [THREADS]]\n");
		return 2;
	}
	if (nthreads > nclients)
		nthreads = nclients;
	snprintf(sock_dir, sizeof(sock_dir), "%s", argv[1]);
	signal(SIGPIPE, SIG_IGN);
	if ((pids = calloc((size_t)nservers, sizeof(*pids))) == NULL ||
	    (ws = calloc((size_t)nthreads, sizeof(*ws))) == NULL ||
	    (tids = calloc((size_t)nthreads, sizeof(*tids))) == NULL)
		goto out;
	for (i = 0; i < nservers; i++) {
		sock_path(i, &sa);
		unlink(sa.sun_path);
		if ((lfd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
		    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
		    listen(lfd, 1024) == -1) {
			perror(sa.sun_path);
			goto out;
		}
		if ((pids[i] = fork()) == -1) {
			perror("fork");
			goto out;
		}
		if (pids[i] == 0)
			serve(lfd);
		close(lfd);
	}
	for (i = 0; i < nthreads; i++) {
		ws[i].first = nclients * i / nthreads;
		ws[i].count = nclients * (i + 1) / nthreads - ws[i].first;
	}
	t0 = now_s();
	for (i = 0; i < nthreads; i++) {
		if (pthread_create(&tids[i], NULL, client_thread, &ws[i]) != 0)
			break;
		started++;
	}
	for (i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	t1 = now_s();
	for (i = 0; i < started; i++) {
		if (ws[i].failed) {
			fprintf(stderr, "pingpong: a client failed\n");
			goto out;
		}
		trips += ws[i].trips;
	}
	if (started < nthreads || trips == 0) {
		fprintf(stderr, "pingpong: no round trip measured\n");
		goto out;
	}
	printf("%.0f\n", (double)trips / (t1 - t0));
	rc = 0;
out:
	for (i = 0; pids != NULL && i < nservers; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGTERM);
			waitpid(pids[i], NULL, 0);
		}
		sock_path(i, &sa);
		unlink(sa.sun_path);
	}
	free(pids);
	free(ws);
	free(tids);
	return rc;
}
