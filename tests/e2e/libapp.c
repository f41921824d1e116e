/* libapp.c - an application of libcutsnap built by t0631 from the
 * installed cutsnap.h and cutsnap.pc only: it runs every single-request
 * call against a live agent and prints what each returned as one JSON
 * object, for the script to check.
 *
 * usage: libapp CONF AGENT SOCKET REPO */
#include <cutsnap.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Print "name": value, ... as a JSON member; strings are plain ASCII. */
static void
field(const char *name, const char *fmt, long long v, const char *s)
{
	static int first = 1;

	printf("%s\"%s\": ", first ? "{" : ", ", name);
	first = 0;
	if (fmt[0] == 's')
		printf("\"%s\"", s);
	else
		printf("%lld", v);
}

/* Transactions: one that applies, one whose condition fails (nothing
 * changes), and a version condition. */
static void
txn(cs_conn *c)
{
	cs_txn *t = cs_txn_new();
	uint64_t ver = 0;
	int64_t r = 0;
	size_t vl;
	void *v;
	int rc;

	cs_txn_expect(t, "t1", 2, NULL, 0);
	cs_txn_put(t, "t1", 2, "one", 3);
	cs_txn_add(t, "tn", 2, 5);
	field("txn", "d", cs_commit(c, t), NULL);
	field("txn_added", "d", cs_txn_result(t, 0, &r) == 0 ? r : -99, NULL);
	cs_txn_free(t);
	t = cs_txn_new();
	cs_txn_put(t, "t2", 2, "two", 3);
	cs_txn_expect(t, "t1", 2, "other", 5);
	field("txn_conflict", "d", cs_commit(c, t), NULL);
	field("txn_conflict_msg", "s", 0, strstr(cs_errmsg(c),
	    "operation 1") ? "operation 1" : cs_errmsg(c));
	cs_txn_free(t);
	rc = cs_get(c, "t2", 2, &v, &vl);
	field("txn_conflict_t2", "d", rc, NULL);
	free(v);
	rc = cs_get_version(c, "t1", 2, &v, &vl, &ver);
	field("getv", "d", rc, NULL);
	free(v);
	t = cs_txn_new();
	cs_txn_expect_version(t, "t1", 2, ver);
	cs_txn_put(t, "t1", 2, "uno", 3);
	field("txn_version", "d", cs_commit(c, t), NULL);
	field("txn_version_again", "d", cs_commit(c, t), NULL);
	cs_txn_free(t);
}

int
main(int argc, char **argv)
{
	char err[256], key[32], want[32];
	cs_conn *c, *p;
	void *v;
	size_t vl;
	int64_t n;
	uint64_t id;
	char *text;
	int pid, i, piped = 0, rc;

	if (argc != 5) {
		fprintf(stderr, "usage: libapp CONF AGENT SOCKET REPO\n");
		return 2;
	}
	if ((c = cs_connect(argv[1], argv[2], err, sizeof(err))) == NULL) {
		fprintf(stderr, "libapp: %s\n", err);
		return 1;
	}
	field("protocol", "d", cs_protocol(), NULL);
	field("put", "d", cs_put(c, "k", 1, "hello", 5), NULL);
	rc = cs_get(c, "k", 1, &v, &vl);
	field("get", "d", rc, NULL);
	field("value", "s", 0, rc == CS_OK ? (char *)v : "");
	free(v);
	rc = cs_get(c, "absent", 6, &v, &vl);
	field("get_absent", "d", rc, NULL);
	field("get_absent_null", "d", v == NULL, NULL);
	field("add", "d", cs_add(c, "n", 1, 40, &n), NULL);
	field("add2", "d", cs_add(c, "n", 1, 2, &n), NULL);
	field("sum", "d", n, NULL);
	rc = cs_add(c, "k", 1, 1, &n);	/* "hello" is not an integer */
	field("add_text", "d", rc, NULL);
	field("add_text_kind", "d", cs_errcode(c), NULL);
	field("add_text_msg", "s", 0, strstr(cs_errmsg(c), "integer") ?
	    "integer" : cs_errmsg(c));
	field("del", "d", cs_del(c, "k", 1), NULL);
	field("del_again", "d", cs_del(c, "k", 1), NULL);
	field("bad_key", "d", cs_put(c, "", 0, "x", 1), NULL);
	field("bad_key_kind", "d", cs_errcode(c), NULL);
	rc = cs_status(c, &text, &pid);
	field("status", "d", rc, NULL);
	field("status_pid", "d", pid, NULL);
	field("status_has_agent", "d", rc == CS_OK &&
	    strstr(text, argv[2]) != NULL, NULL);
	free(text);
	/* 100 keys, read back with 100 gets in flight at once. */
	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "p%d", i);
		snprintf(want, sizeof(want), "v%d", i * 7);
		if (cs_put(c, key, strlen(key), want, strlen(want)) != CS_OK)
			break;
	}
	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "p%d", i);
		if (cs_get_async(c, key, strlen(key)) != CS_OK)
			break;
	}
	/* A single request waits until the pipelined replies are read. */
	field("put_while_piped", "d", cs_put(c, "x", 1, "y", 1), NULL);
	cs_flush(c);
	for (i = 0; i < 100; i++) {
		snprintf(want, sizeof(want), "v%d", i * 7);
		if (cs_get_reply(c, &v, &vl) != CS_OK)
			break;
		piped += vl == strlen(want) && memcmp(v, want, vl) == 0;
		free(v);
	}
	field("pipelined_ok", "d", piped, NULL);
	txn(c);
	cs_close(c);
	p = cs_connect_path(argv[3], err, sizeof(err));
	rc = p != NULL ? cs_get(p, "n", 1, &v, &vl) : -1;
	field("path_get", "s", 0, rc == CS_OK ? (char *)v : err);
	if (rc == CS_OK)
		free(v);
	cs_close(p);
	c = cs_connect(argv[1], "NOPE", err, sizeof(err));
	field("unknown_agent", "s", 0, c == NULL && strstr(err, "NOPE") ?
	    "refused" : "connected");
	cs_close(c);
	rc = cs_snapshot(argv[1], argv[4], 60, &id, err, sizeof(err));
	field("snapshot", "d", rc, NULL);
	field("snapshot_id", "d", (long long)id, NULL);
	if (rc != CS_OK)
		field("snapshot_err", "s", 0, err);
	printf("}\n");
	return 0;
}
