/* inventory.c - the orders example's stock service, in C over libcutsnap.
 *
 * For each order message from orders ("ORDER SKU QTY"): reserve QTY of
 * SKU (reserved/ORDER, stock/SKU down, the totals up) and send the order
 * on to billing, in one transaction that also consumes the message, so
 * that a crash of this process or of its agent at any point reserves
 * each order once.  Build: cc $(pkg-config --cflags --libs cutsnap). */
#define _POSIX_C_SOURCE 200809L

#include <cutsnap.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AGENT "inventory"

/* A connection to the agent, retried while it is down (run.sh kills and
 * restarts it on purpose). */
static cs_conn *
connect_agent(const char *conf)
{
	char err[256];
	cs_conn *c;

	while ((c = cs_connect(conf, AGENT, err, sizeof(err))) == NULL) {
		fprintf(stderr, "inventory: waiting for agent %s: %s\n", AGENT,
		    err);
		nanosleep(&(struct timespec){.tv_nsec = 200000000}, NULL);
	}
	return c;
}

/* Stage the reservation of message m into t: 0, or -1 when the payload
 * is not an order (then the message is only consumed). */
static int
stage(cs_txn *t, const cs_msg *m)
{
	char buf[128], order[32], sku[32], key[64];
	size_t len;
	const void *payload = cs_msg_payload(m, &len);
	long qty;

	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, payload, len);
	buf[len] = '\0';
	if (sscanf(buf, "%31s %31s %ld", order, sku, &qty) != 3 || qty <= 0)
		return -1;
	snprintf(key, sizeof(key), "reserved/%s", order);
	if (cs_txn_put(t, key, strlen(key), buf, len) != 0)
		return -1;
	snprintf(key, sizeof(key), "stock/%s", sku);
	if (cs_txn_add(t, key, strlen(key), -qty) != 0 ||
	    cs_txn_add(t, "reserved.count", 14, 1) != 0 ||
	    cs_txn_add(t, "reserved.qty", 12, qty) != 0 ||
	    cs_txn_send(t, "billing", payload, len) != 0)
		return -1;
	return 0;
}

int
main(int argc, char **argv)
{
	cs_conn *c;
	cs_msg *m;
	cs_txn *t;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: inventory CONF\n");
		return 2;
	}
	c = connect_agent(argv[1]);
	for (;;) {
		rc = cs_recv(c, 1000, &m);
		if (rc == CS_TIMEOUT)
			continue;
		if (rc != 0) {
			fprintf(stderr, "inventory: %s; connecting again\n",
			    cs_errmsg(c));
			cs_close(c);
			c = connect_agent(argv[1]);
			continue;
		}
		if ((t = cs_txn_new()) == NULL) {
			fprintf(stderr, "inventory: out of memory\n");
			return 1;
		}
		if (stage(t, m) == -1) {
			/* Nothing of a half-staged order: only the consume. */
			fprintf(stderr, "inventory: %s:%llu is not an order; "
			    "consumed without effect\n", cs_msg_from(m),
			    (unsigned long long)cs_msg_seq(m));
			cs_txn_free(t);
			if ((t = cs_txn_new()) == NULL) {
				fprintf(stderr, "inventory: out of memory\n");
				return 1;
			}
		}
		if (cs_txn_consume(t, m) != 0 || (rc = cs_commit(c, t)) == -1) {
			/* The inbox still holds the message unless it was
			 * consumed: recv says which, after a reconnect. */
			fprintf(stderr, "inventory: %s; connecting again\n",
			    cs_errmsg(c));
			cs_close(c);
			c = connect_agent(argv[1]);
		}
		cs_txn_free(t);
		cs_msg_free(m);
	}
}
