/* cutsnap.h - libcutsnap, the C client of a cutsnap agent.
 *
 * An application keeps its state in its agent and talks to it through
 * this API: keys and values, integer counters, transactions that apply a
 * list of operations atomically (with application messages to other
 * agents and conditions), the agent's inbox, and snapshots of the
 * cluster. Link with `pkg-config --cflags --libs cutsnap` (libcutsnap.so.0).
 * The protocol underneath is described in docs/PROTOCOL.md; the manual is
 * cutsnap(3).
 *
 * Conventions:
 * - Every call that talks to the agent returns CS_OK (0), one of the
 *   positive outcomes below, or -1 on error; cs_errmsg() then says what
 *   failed in one line and cs_errcode() gives its kind (CS_E*).
 * - Keys are 1 to 4096 bytes, values at most 16 MiB, any bytes.
 * - Memory the library returns (a value, a status line) is malloc'ed:
 *   the caller frees it with free(). Every _free and cs_close accepts NULL.
 * - A connection is used by one thread at a time; replies come back in
 *   the order of the requests.
 */
#ifndef CUTSNAP_H
#define CUTSNAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Outcomes. */
#define CS_OK		0
#define CS_NOTFOUND	1	/* the key (or the consumed message) is absent */
#define CS_CONFLICT	2	/* a transaction's condition failed: nothing
				 * changed (cs_errmsg says which) */
#define CS_TIMEOUT	3	/* cs_recv: no message within the timeout */
#define CS_BUSY		4	/* a peer's inbox is full: retry later */

/* Kinds of error (cs_errcode() after a call returned -1). */
#define CS_ERROR	(-1)	/* the agent refused the request, or a bad
				 * argument (nothing was sent) */
#define CS_EIO		(-2)	/* the connection failed or timed out: the
				 * request may or may not have been applied;
				 * the connection is unusable, cs_close it */
#define CS_EVERSION	(-3)	/* the agent speaks another protocol */
#define CS_EDENIED	(-4)	/* the certificate's role may not do this */

#define CS_ID_LEN	16	/* request and message ids, raw bytes */

typedef struct cs_conn cs_conn;	/* a connection to one agent */
typedef struct cs_txn cs_txn;	/* a transaction being built */
typedef struct cs_msg cs_msg;	/* an application message from the inbox */

/* Connect to agent `agent` of the cluster config file `config`: its Unix
 * socket, or over TCP with mutual TLS and the client certificate of the
 * config's tls_dir, as the cutsnap command does. Exchanges protocol
 * versions (W_HELLO). NULL on failure, with the reason in err (errlen
 * bytes, may be NULL/0). */
cs_conn *cs_connect(const char *config, const char *agent, char *err,
    size_t errlen);
/* The same for an agent's Unix socket path. */
cs_conn *cs_connect_path(const char *socket_path, char *err, size_t errlen);
void cs_close(cs_conn *c);

/* The last call's message ("" after success), valid until the next call
 * on c, and its outcome or error kind (CS_OK, CS_NOTFOUND, ..., CS_E*). */
const char *cs_errmsg(const cs_conn *c);
int cs_errcode(const cs_conn *c);

/* How long a call waits for its reply, in ms (default 30000; negative:
 * no limit; cs_recv adds its own timeout to it). */
void cs_set_timeout(cs_conn *c, int timeout_ms);

/* Set key k to value v, durably. */
int cs_put(cs_conn *c, const void *k, size_t kl, const void *v, size_t vl);
/* Read k's value into *v (malloc'ed, NUL-terminated beyond *vl; free()
 * it) and *vl. CS_NOTFOUND when absent (*v NULL). */
int cs_get(cs_conn *c, const void *k, size_t kl, void **v, size_t *vl);
/* Delete k, durably. CS_NOTFOUND when it was absent. */
int cs_del(cs_conn *c, const void *k, size_t kl);
/* Add delta to k's decimal int64 value (absent: 0); the new value in
 * *result (may be NULL). -1 when the value is not an integer or the sum
 * overflows (nothing changed). */
int cs_add(cs_conn *c, const void *k, size_t kl, int64_t delta,
    int64_t *result);
/* cs_del and cs_add carrying a request id (CS_ID_LEN bytes): after a
 * CS_EIO, send it again with the same id on a new connection and the
 * agent applies it once (it remembers the last 65536 ids). */
int cs_del_id(cs_conn *c, const void *k, size_t kl,
    const uint8_t id[CS_ID_LEN]);
int cs_add_id(cs_conn *c, const void *k, size_t kl, int64_t delta,
    const uint8_t id[CS_ID_LEN], int64_t *result);

/* The agent's status line (malloc'ed, NUL-terminated; free() it) and its
 * process id (pid may be NULL). */
int cs_status(cs_conn *c, char **text, int *pid);

/* Pipelining: queue a get without waiting (nothing is sent until
 * cs_flush or a cs_get_reply needs it), then collect the replies in
 * order. Up to CS_PIPELINE_MAX requests may be outstanding. */
#define CS_PIPELINE_MAX 4096
int cs_get_async(cs_conn *c, const void *k, size_t kl);
int cs_flush(cs_conn *c);
int cs_get_reply(cs_conn *c, void **v, size_t *vl);

/* Transactions: stage operations, then cs_commit applies all or none,
 * as one record in the agent's data file. Conditions are checked first.
 * A staging call returns -1 only for a bad argument or no memory (the
 * transaction then refuses to commit). */
cs_txn *cs_txn_new(void);
void cs_txn_free(cs_txn *t);
int cs_txn_put(cs_txn *t, const void *k, size_t kl, const void *v,
    size_t vl);
int cs_txn_del(cs_txn *t, const void *k, size_t kl);
int cs_txn_add(cs_txn *t, const void *k, size_t kl, int64_t delta);
/* Send an opaque message of n <= 16 MiB bytes to agent peer. */
int cs_txn_send(cs_txn *t, const char *peer, const void *p, size_t n);
/* Take m out of the inbox (the commit fails, CS_NOTFOUND, if it is not
 * there any more). */
int cs_txn_consume(cs_txn *t, const cs_msg *m);
/* Condition: k holds exactly v (v NULL: k is absent). */
int cs_txn_expect(cs_txn *t, const void *k, size_t kl, const void *v,
    size_t vl);
/* Condition: k's version is version (0: absent). */
int cs_txn_expect_version(cs_txn *t, const void *k, size_t kl,
    uint64_t version);
/* CS_OK, CS_CONFLICT, CS_NOTFOUND, CS_BUSY or -1. t may be committed
 * again (a retry after CS_BUSY). */
int cs_commit(cs_conn *c, cs_txn *t);
/* After CS_OK: the new value of the i-th cs_txn_add (0-based). 0, or -1
 * when there is no such result. */
int cs_txn_result(const cs_txn *t, size_t i, int64_t *value);

/* k's value and its version (see docs/PROTOCOL.md). CS_NOTFOUND when
 * absent. */
int cs_get_version(cs_conn *c, const void *k, size_t kl, void **v,
    size_t *vl, uint64_t *version);

/* The oldest unconsumed message of the inbox, waiting up to timeout_ms
 * (0: do not wait) for one: CS_OK with *m (cs_msg_free it), CS_TIMEOUT,
 * or -1. The same message comes back until a transaction consumes it. */
int cs_recv(cs_conn *c, int timeout_ms, cs_msg **m);
void cs_msg_free(cs_msg *m);
const char *cs_msg_from(const cs_msg *m);	/* the sending agent */
uint64_t cs_msg_seq(const cs_msg *m);		/* its channel's sequence */
const uint8_t *cs_msg_id(const cs_msg *m);	/* CS_ID_LEN bytes */
const void *cs_msg_payload(const cs_msg *m, size_t *len);

/* Take a snapshot of the cluster of config into the repository repo (a
 * directory or an s3:// URL, as `cutsnap snapshot -r`), initiated by
 * the config's first agent, waiting up to timeout_s seconds (0: 60).
 * CS_OK with its id in *id (may be NULL), or -1 with the reason in err. */
int cs_snapshot(const char *config, const char *repo, int timeout_s,
    uint64_t *id, char *err, size_t errlen);

/* The library's version, "MAJOR.MINOR.PATCH", and the protocol it
 * speaks. */
const char *cs_version(void);
int cs_protocol(void);

#ifdef __cplusplus
}
#endif

#endif
