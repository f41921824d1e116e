/* libtxn.c - the library's transaction row of the bench: CLIENTS
 * threads, each with its own connection to one agent's Unix socket, commit
 * transactions for SECONDS, each a put of the client's own key and an add
 * of 1 to a shared counter (two writes, one data-file record, durable
 * before the reply: the agent's group commit shares one fsync among the
 * transactions that arrive together). At the end the counter must equal
 * the number of commits counted here, or the run fails.
 * Usage: libtxn SOCKET SECONDS CLIENTS; prints transactions per second. */
#include <cutsnap.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CLIENTS 1024

struct client {
	pthread_t thread;
	const char *socket;
	double secs;
	int index;
	long long commits;
	int failed;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One transaction: 0 on CS_OK, -1 (with a message) otherwise. */
static int
commit_one(cs_conn *c, const char *key, long long n)
{
	char val[32];
	cs_txn *t;
	int rc;

	if ((t = cs_txn_new()) == NULL)
		return -1;
	snprintf(val, sizeof(val), "%lld", n);
	rc = cs_txn_put(t, key, strlen(key), val, strlen(val)) == 0 &&
	    cs_txn_add(t, "txn.count", 9, 1) == 0 ? cs_commit(c, t) : -1;
	cs_txn_free(t);
	if (rc != CS_OK)
		fprintf(stderr, "libtxn: commit: %d: %s\n", rc, cs_errmsg(c));
	return rc == CS_OK ? 0 : -1;
}

static void *
run_client(void *arg)
{
	struct client *cl = arg;
	char err[256], key[32];
	double t0;
	cs_conn *c;

	if ((c = cs_connect_path(cl->socket, err, sizeof(err))) == NULL) {
		fprintf(stderr, "libtxn: %s\n", err);
		cl->failed = 1;
		return NULL;
	}
	snprintf(key, sizeof(key), "txn.client%d", cl->index);
	t0 = now_s();
	while (now_s() - t0 < cl->secs) {
		if (commit_one(c, key, cl->commits) == -1) {
			cl->failed = 1;
			break;
		}
		cl->commits++;
	}
	cs_close(c);
	return NULL;
}

/* The counter's value, or -1. */
static long long
counter(const char *socket)
{
	char err[256];
	long long v = -1;
	cs_conn *c;
	void *val;
	size_t vl;
	int rc;

	if ((c = cs_connect_path(socket, err, sizeof(err))) == NULL) {
		fprintf(stderr, "libtxn: %s\n", err);
		return -1;
	}
	rc = cs_get(c, "txn.count", 9, &val, &vl);
	if (rc == CS_NOTFOUND)
		v = 0;
	else if (rc == CS_OK) {
		v = strtoll(val, NULL, 10);
		free(val);
	} else
		fprintf(stderr, "libtxn: get: %s\n", cs_errmsg(c));
	cs_close(c);
	return v;
}

int
main(int argc, char **argv)
{
	static struct client cl[MAX_CLIENTS];
	long long before, after, total = 0;
	double secs, t0, t;
	int n, i, failed = 0;

	if (argc != 4 || (secs = atof(argv[2])) <= 0 ||
	    (n = atoi(argv[3])) < 1 || n > MAX_CLIENTS) {
		fprintf(stderr, "usage: libtxn SOCKET SECONDS CLIENTS\n");
		return 2;
	}
	if ((before = counter(argv[1])) < 0)
		return 1;
	t0 = now_s();
	for (i = 0; i < n; i++) {
		cl[i] = (struct client){.socket = argv[1], .secs = secs,
		    .index = i};
		if (pthread_create(&cl[i].thread, NULL, run_client, &cl[i])) {
			fprintf(stderr, "libtxn: cannot start a thread\n");
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		pthread_join(cl[i].thread, NULL);
		total += cl[i].commits;
		failed |= cl[i].failed;
	}
	t = now_s();
	if (failed)
		return 1;
	if ((after = counter(argv[1])) != before + total) {
		fprintf(stderr, "libtxn: counter went from %lld to %lld, "
		    "%lld commits acknowledged\n", before, after, total);
		return 1;
	}
	printf("%.0f\n", (double)total / (t - t0));
	return 0;
}
