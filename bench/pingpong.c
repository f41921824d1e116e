/* pingpong.c - the CPU floor of the transfers/s rows: round trips per
 * second of a trivial request/reply over Unix sockets, shaped like
 * "cutsnap load" against a cluster but with no work and no fsync.
 * SERVERS processes each answer on one socket with a single-threaded
 * epoll loop (as an agent does); the clients are K closed loops (one
 * 64-byte request outstanding each), spread over the servers and
 * multiplexed by THREADS threads with one epoll each (as load does).
 * Prints round trips per second.
 * Usage: pingpong DIR SECONDS CLIENTS [SERVERS [THREADS]]
 *
 * With PINGPONG_TLS=DIR the same ping-pong runs over TCP and mutual TLS
 * 1.3, as agents with an addr talk (the transport floor of the TCP+TLS
 * rows): DIR is a cluster's tls_dir (ca.crt; the servers use a1.crt and
 * a1.key, the clients client.crt and client.key). Server I (from 1)
 * listens on PINGPONG_ADDR ("HOST:PORT" where a "%d" stands for I;
 * default 127.0.0.1, port 17400 + I), inside the network namespace
 * PINGPONG_NETNS (a file such as /run/netns/NAME, "%d" standing for I)
 * when that is set.
 *
 * PINGPONG_SPREAD=1 gives each client a connection to every server, as
 * "cutsnap load" does, and sends each request on one of them at random
 * (a client still has one request outstanding). PINGPONG_CPU=FILE writes
 * to FILE the CPU microseconds per round trip of the timed part (set-up
 * and handshakes left out): "ALL CLIENTS SERVERS", the clients' threads
 * from their CPU clocks, the servers from /proc. */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <fcntl.h>
#include <sched.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define MSG 64
#define MAX_FD 65536
#define MAX_EVENTS 64

static double secs;
static int nclients, nservers, nthreads, spread;
/* The clients wait here once connected; main reads the servers' CPU. */
static pthread_barrier_t connected;
static char sock_dir[80];
/* TLS mode: the contexts (NULL over Unix sockets) and each fd's TLS. */
static SSL_CTX *srv_ctx, *cli_ctx;
static SSL *tls_of[MAX_FD];

static SSL_CTX *
tls_ctx(const char *dir, const char *me, int server)
{
	char ca[512], crt[512], key[512];
	SSL_CTX *x;

	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	snprintf(crt, sizeof(crt), "%s/%s.crt", dir, me);
	snprintf(key, sizeof(key), "%s/%s.key", dir, me);
	if ((x = SSL_CTX_new(server ? TLS_server_method() :
	    TLS_client_method())) == NULL)
		return NULL;
	/* As cutsnap's transport sets it up (net/xport.c). */
	SSL_CTX_set_min_proto_version(x, TLS1_3_VERSION);
	SSL_CTX_set_num_tickets(x, 0);
	SSL_CTX_set_read_ahead(x, 1);
	SSL_CTX_set_verify(x, SSL_VERIFY_PEER |
	    SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	if (SSL_CTX_load_verify_locations(x, ca, NULL) != 1 ||
	    SSL_CTX_use_certificate_chain_file(x, crt) != 1 ||
	    SSL_CTX_use_PrivateKey_file(x, key, SSL_FILETYPE_PEM) != 1) {
		ERR_print_errors_fp(stderr);
		SSL_CTX_free(x);
		return NULL;
	}
	return x;
}

/* fmt with its first "%d" replaced by n (the environment's formats are
 * not handed to printf). */
static void
fmt_n(const char *fmt, int n, char *out, size_t sz)
{
	const char *p = strstr(fmt, "%d");

	if (p == NULL)
		snprintf(out, sz, "%s", fmt);
	else
		snprintf(out, sz, "%.*s%d%s", (int)(p - fmt), fmt, n, p + 2);
}

/* Server i's TCP address (TLS mode). */
static int
tcp_addr(int i, struct sockaddr_in *sin)
{
	const char *fmt = getenv("PINGPONG_ADDR");
	char a[128], *colon;

	if (fmt != NULL)
		fmt_n(fmt, i + 1, a, sizeof(a));
	else
		snprintf(a, sizeof(a), "127.0.0.1:%d", 17400 + i + 1);
	if ((colon = strrchr(a, ':')) == NULL)
		return -1;
	*colon = '\0';
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, a, &sin->sin_addr) == 1 ? 0 : -1;
}

/* Move into server i's network namespace, if one is named. */
static int
enter_netns(int i)
{
	const char *fmt = getenv("PINGPONG_NETNS");
	char path[256];
	int fd, rc;

	if (fmt == NULL || *fmt == '\0')
		return 0;
	fmt_n(fmt, i + 1, path, sizeof(path));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		perror(path);
		return -1;
	}
	rc = setns(fd, CLONE_NEWNET);
	if (rc == -1)
		perror("setns");
	close(fd);
	return rc;
}

/* A connected socket of either kind: TLS on it (blocking), or nothing to
 * do. 0 / -1. */
static int
tls_start(int fd, int server)
{
	int one = 1;
	SSL *t;

	if (srv_ctx == NULL && cli_ctx == NULL)
		return 0;
	if (fd >= MAX_FD)
		return -1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if ((t = SSL_new(server ? srv_ctx : cli_ctx)) == NULL ||
	    SSL_set_fd(t, fd) != 1 ||
	    (server ? SSL_accept(t) : SSL_connect(t)) != 1) {
		SSL_free(t);
		return -1;
	}
	tls_of[fd] = t;
	return 0;
}

static ssize_t
xread(int fd, char *buf, size_t n)
{
	int r;

	if (tls_of[fd] == NULL)
		return read(fd, buf, n);
	r = SSL_read(tls_of[fd], buf, (int)n);
	return r > 0 ? r : -1;
}

static ssize_t
xwrite(int fd, const char *buf, size_t n)
{
	int r;

	if (tls_of[fd] == NULL)
		return write(fd, buf, n);
	r = SSL_write(tls_of[fd], buf, (int)n);
	return r > 0 ? r : -1;
}

static void
xclose(int fd)
{
	if (fd < MAX_FD && tls_of[fd] != NULL) {
		SSL_free(tls_of[fd]);
		tls_of[fd] = NULL;
	}
	close(fd);
}

/* Clock id's time in seconds: CLOCK_MONOTONIC for the wall clock,
 * CLOCK_THREAD_CPUTIME_ID for the calling thread's CPU. */
static double
clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
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
		n = xread(fd, buf + got, MSG - got);
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
				if (tls_start(fd, 1) == -1) {
					xclose(fd);
					continue;
				}
				ev.events = EPOLLIN;
				ev.data.fd = fd;
				if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1)
					_exit(1);
				continue;
			}
			if (read_msg(fd, buf) == -1 ||
			    xwrite(fd, buf, MSG) != MSG) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				xclose(fd);
			}
		}
	}
}

struct worker {
	int first, count;	/* its clients */
	long trips;
	double cpu_s;		/* its thread's CPU in the timed part */
	int failed;
};

/* Utime + stime of process pid, in seconds (0 if unreadable). */
static double
proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* Fields 14 and 15, counted after the command name's ')'. */
	if ((p = strrchr(buf, ')')) == NULL || sscanf(p + 2,
	    "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
	    &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* One connection of a client to server s: TCP + TLS, or a Unix socket.
 * The fd, or -1. */
static int
client_conn(int s)
{
	struct sockaddr_un sa;
	struct sockaddr_in sin;
	int fd;

	if (cli_ctx != NULL) {
		if (tcp_addr(s, &sin) == -1 ||
		    (fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
			return -1;
		if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
		    tls_start(fd, 0) == -1) {
			xclose(fd);
			return -1;
		}
		return fd;
	}
	sock_path(s, &sa);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static void *
client_thread(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev, evs[MAX_EVENTS];
	char buf[MSG];
	/* Client j (of this thread) holds fds[j * per + s] to server s (or
	 * per = 1: its one server) and waits on cur[j]. */
	int per = spread ? nservers : 1;
	int *fds = calloc((size_t)w->count * (size_t)per, sizeof(int));
	int *cur = calloc((size_t)w->count, sizeof(int));
	unsigned rng = 2463534242u + (unsigned)w->first;
	double t0, c0;
	int ep = -1, i, k, j, s, fd, ok = 0;

	memset(buf, 'p', sizeof(buf));
	if (fds == NULL || cur == NULL ||
	    (ep = epoll_create1(0)) == -1)
		goto connected;
	for (j = 0; j < w->count * per; j++)
		fds[j] = -1;
	for (j = 0; j < w->count; j++) {
		for (s = 0; s < per; s++) {
			fd = client_conn(spread ? s : (w->first + j) %
			    nservers);
			if (fd == -1)
				goto connected;
			fds[j * per + s] = fd;
			ev.events = EPOLLIN;
			ev.data.u64 = (uint64_t)(j * per + s);
			if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1)
				goto connected;
		}
	}
	ok = 1;
connected:
	pthread_barrier_wait(&connected);
	if (!ok)
		goto fail;
	c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	t0 = clock_s(CLOCK_MONOTONIC);
	for (j = 0; j < w->count; j++) {
		rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5;
		cur[j] = spread ? (int)(rng % (unsigned)nservers) : 0;
		if (xwrite(fds[j * per + cur[j]], buf, MSG) != MSG)
			goto fail;
	}
	while (clock_s(CLOCK_MONOTONIC) - t0 < secs) {
		k = epoll_wait(ep, evs, MAX_EVENTS, 1000);
		if (k <= 0)
			goto fail;
		for (i = 0; i < k; i++) {
			j = (int)(evs[i].data.u64 / (uint64_t)per);
			s = (int)(evs[i].data.u64 % (uint64_t)per);
			/* Input where no request waits: the server failed. */
			if (s != cur[j] || read_msg(fds[j * per + s], buf) == -1)
				goto fail;
			w->trips++;
			if (spread) {
				rng ^= rng << 13; rng ^= rng >> 17;
				rng ^= rng << 5;
				cur[j] = (int)(rng % (unsigned)nservers);
			}
			if (xwrite(fds[j * per + cur[j]], buf, MSG) != MSG)
				goto fail;
		}
	}
	w->cpu_s = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
	goto out;
fail:
	w->failed = 1;
out:
	for (j = 0; fds != NULL && j < w->count * per; j++)
		if (fds[j] != -1)
			xclose(fds[j]);
	if (ep != -1)
		close(ep);
	free(fds);
	free(cur);
	return NULL;
}

/* Server i's listening socket: a Unix socket in DIR, or (TLS mode) TCP at
 * its address, in its namespace. -1 after saying why. */
static int
listen_on(int i)
{
	struct sockaddr_un sa;
	struct sockaddr_in sin;
	int fd, one = 1;

	if (srv_ctx != NULL) {
		if (enter_netns(i) == -1 || tcp_addr(i, &sin) == -1 ||
		    (fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
		    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
		    sizeof(one)) == -1 ||
		    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
		    listen(fd, 1024) == -1) {
			perror("pingpong: TCP listen");
			return -1;
		}
		return fd;
	}
	sock_path(i, &sa);
	unlink(sa.sun_path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(fd, 1024) == -1) {
		perror(sa.sun_path);
		return -1;
	}
	return fd;
}

int
main(int argc, char **argv)
{
	struct sockaddr_un sa;
	struct worker *ws = NULL;
	pthread_t *tids = NULL;
	pid_t *pids = NULL;
	const char *tls_dir = getenv("PINGPONG_TLS");
	const char *cpu_file = getenv("PINGPONG_CPU");
	double cli_cpu = 0, srv_cpu = 0;
	FILE *f;
	double t0, t1;
	long trips = 0;
	int i, lfd, rc = 1, started = 0, ready[2];
	char c;

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
	spread = getenv("PINGPONG_SPREAD") != NULL &&
	    strcmp(getenv("PINGPONG_SPREAD"), "1") == 0;
	snprintf(sock_dir, sizeof(sock_dir), "%s", argv[1]);
	signal(SIGPIPE, SIG_IGN);
	if ((pids = calloc((size_t)nservers, sizeof(*pids))) == NULL ||
	    (ws = calloc((size_t)nthreads, sizeof(*ws))) == NULL ||
	    (tids = calloc((size_t)nthreads, sizeof(*tids))) == NULL)
		goto out;
	if (tls_dir != NULL && ((srv_ctx = tls_ctx(tls_dir, "a1", 1)) == NULL ||
	    (cli_ctx = tls_ctx(tls_dir, "client", 0)) == NULL)) {
		fprintf(stderr, "pingpong: TLS files in %s unusable\n", tls_dir);
		goto out;
	}
	for (i = 0; i < nservers; i++) {
		/* Each server makes its listening socket itself, in its own
		 * network namespace when there is one; it says it is ready
		 * by closing its end of a pipe. */
		if (pipe(ready) == -1 || (pids[i] = fork()) == -1) {
			perror("fork");
			goto out;
		}
		if (pids[i] == 0) {
			close(ready[0]);
			if ((lfd = listen_on(i)) == -1)
				_exit(1);
			close(ready[1]);
			serve(lfd);
		}
		close(ready[1]);
		if (read(ready[0], &c, 1) != 0 || waitpid(pids[i], NULL,
		    WNOHANG) != 0) {
			fprintf(stderr, "pingpong: server %d did not start\n",
			    i + 1);
			close(ready[0]);
			goto out;
		}
		close(ready[0]);
	}
	for (i = 0; i < nthreads; i++) {
		ws[i].first = nclients * i / nthreads;
		ws[i].count = nclients * (i + 1) / nthreads - ws[i].first;
	}
	/* The clock (and the CPU count) starts once every client is
	 * connected: handshakes are not round trips. */
	if (pthread_barrier_init(&connected, NULL,
	    (unsigned)nthreads + 1) != 0)
		goto out;
	for (i = 0; i < nthreads; i++) {
		if (pthread_create(&tids[i], NULL, client_thread,
		    &ws[i]) != 0) {
			/* The others wait at the barrier: exit with them. */
			fprintf(stderr, "pingpong: pthread_create failed\n");
			goto out;
		}
		started++;
	}
	pthread_barrier_wait(&connected);
	for (i = 0; i < nservers; i++)
		srv_cpu -= proc_cpu_s(pids[i]);
	t0 = clock_s(CLOCK_MONOTONIC);
	for (i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	t1 = clock_s(CLOCK_MONOTONIC);
	for (i = 0; i < nservers; i++)
		srv_cpu += proc_cpu_s(pids[i]);
	for (i = 0; i < started; i++) {
		if (ws[i].failed) {
			fprintf(stderr, "pingpong: a client failed\n");
			goto out;
		}
		trips += ws[i].trips;
		cli_cpu += ws[i].cpu_s;
	}
	if (started < nthreads || trips == 0) {
		fprintf(stderr, "pingpong: no round trip measured\n");
		goto out;
	}
	printf("%.0f\n", (double)trips / (t1 - t0));
	if (cpu_file != NULL) {
		if ((f = fopen(cpu_file, "w")) == NULL ||
		    fprintf(f, "%.2f %.2f %.2f\n",
		    (cli_cpu + srv_cpu) * 1e6 / (double)trips,
		    cli_cpu * 1e6 / (double)trips,
		    srv_cpu * 1e6 / (double)trips) < 0 ||
		    fclose(f) != 0) {
			perror(cpu_file);
			goto out;
		}
	}
	rc = 0;
out:
	for (i = 0; pids != NULL && i < nservers; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGTERM);
			waitpid(pids[i], NULL, 0);
		}
		if (tls_dir == NULL) {
			sock_path(i, &sa);
			unlink(sa.sun_path);
		}
	}
	free(pids);
	free(ws);
	free(tids);
	return rc;
}
