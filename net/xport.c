/* xport.c - TCP + mutual TLS 1.3 for agents with an addr (xport.h). */
#include <sys/socket.h>
#include <sys/stat.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "../lib/util.h"
#include "xport.h"

/* xconn_handshake's why when the other end closed without a word. */
#define WHY_HS_CLOSED	"closed during the TLS handshake"

struct xport_ctx {
	SSL_CTX *ssl;
};

struct xconn {
	SSL *ssl;
	/* The last read wanted more from the socket: what TLS read ahead
	 * (if anything) is part of a record, not a record. */
	int starved;
	char cn[NAME_MAX_LEN + 8];
	enum cs_role role;	/* the verified certificate's (role.h) */
};

static int
tls_path(const struct cfg *c, const char *file, char *out, size_t sz,
    struct cs_err *e)
{
	int n = snprintf(out, sz, "%s/%s", c->tls_dir, file);

	if (n < 0 || (size_t)n >= sz)
		return cs_errf(e, "tls_dir path %s is too long", c->tls_dir);
	return 0;
}

int
xport_check_private(const char *path, const char *what, struct cs_err *e)
{
	struct stat st;

	if (stat(path, &st) == -1)
		return 0;	/* missing: the caller's check names it */
	if ((st.st_mode & 077) == 0)
		return 0;
	return cs_errf(e, "%s %s is mode %04o, open to group or others; "
	    "run: chmod %s %s", what, path, (unsigned)(st.st_mode & 07777),
	    S_ISDIR(st.st_mode) ? "700" : "600", path);
}

/* Where identity me's certificate and key are: NAME.crt and NAME.key in
 * tls_dir, or, for a me with a '/', me.crt and me.key as they are. */
static int
own_paths(const struct cfg *c, const char *me, char *crt, char *key,
    struct cs_err *e)
{
	char f[PATH_MAX];
	int n;

	if (strchr(me, '/') != NULL) {
		n = snprintf(crt, PATH_MAX, "%s.crt", me);
		if (n < 0 || n >= PATH_MAX ||
		    snprintf(key, PATH_MAX, "%s.key", me) >= PATH_MAX)
			return cs_errf(e, "certificate path %s is too long",
			    me);
		return 0;
	}
	snprintf(f, sizeof(f), "%s.crt", me);
	if (tls_path(c, f, crt, PATH_MAX, e) == -1)
		return -1;
	snprintf(f, sizeof(f), "%s.key", me);
	return tls_path(c, f, key, PATH_MAX, e);
}

/* The first OpenSSL error queued, as one line (the queue is cleared). */
static void
ssl_why(char *why, size_t sz, const char *dflt)
{
	unsigned long ec = ERR_get_error();
	const char *r = ec ? ERR_reason_error_string(ec) : NULL;

	snprintf(why, sz, "%s", r ? r : dflt);
	ERR_clear_error();
}

int
xport_ctx_new(const struct cfg *c, const char *me, struct xport_ctx **out,
    struct cs_err *e)
{
	struct xport_ctx *x = NULL;
	char ca[PATH_MAX], crt[PATH_MAX], key[PATH_MAX], why[160];
	int rc = -1;

	*out = NULL;
	if (c->tls_dir[0] == '\0') {
		cs_errf(e, "%s: an agent has an addr but [cluster] has no "
		    "tls_dir", c->path);
		goto out;
	}
	if (tls_path(c, "ca.crt", ca, sizeof(ca), e) == -1 ||
	    own_paths(c, me, crt, key, e) == -1)
		goto out;
	/* Before anything is read: a key others could read is no secret. */
	if (xport_check_private(c->tls_dir, "tls_dir", e) == -1 ||
	    xport_check_private(key, "private key", e) == -1)
		goto out;
	if ((x = calloc(1, sizeof(*x))) == NULL ||
	    (x->ssl = SSL_CTX_new(TLS_method())) == NULL) {
		cs_errf(e, "out of memory for TLS");
		goto out;
	}
	SSL_CTX_set_min_proto_version(x->ssl, TLS1_3_VERSION);
	/* AES-128-GCM first, chosen by the agent whatever the client
	 * prefers: four rounds fewer per block than OpenSSL's default
	 * AES-256-GCM, on records of a few dozen bytes each. A client that
	 * offers only the other two suites is still served. */
	if (SSL_CTX_set_ciphersuites(x->ssl, "TLS_AES_128_GCM_SHA256:"
	    "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256") != 1) {
		cs_errf(e, "out of memory for TLS");
		goto out;
	}
	SSL_CTX_set_options(x->ssl, SSL_OP_CIPHER_SERVER_PREFERENCE);
	/* One stateless ticket per full handshake, written as its last
	 * step (SSL_do_handshake), so a read never has to write one. A
	 * client that connects again resumes with it, checked against the
	 * certificate the full handshake verified (its CN included); this
	 * agent keeps no session cache, and its ticket key dies with it. */
	SSL_CTX_set_num_tickets(x->ssl, 1);
	SSL_CTX_set_timeout(x->ssl, XPORT_SESSION_S);
	SSL_CTX_set_session_cache_mode(x->ssl, SSL_SESS_CACHE_OFF);
	if (SSL_CTX_set_session_id_context(x->ssl,
	    (const unsigned char *)"cutsnap", 7) != 1) {
		cs_errf(e, "out of memory for TLS");
		goto out;
	}
	SSL_CTX_set_mode(x->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* Read what the socket has in one recv, not a record header and
	 * then its body: half the reads of small frames. Bytes read ahead
	 * are held inside TLS, so xconn_pending counts them too. */
	SSL_CTX_set_read_ahead(x->ssl, 1);
	SSL_CTX_set_verify(x->ssl, SSL_VERIFY_PEER |
	    SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	if (access(ca, R_OK) == -1 || access(crt, R_OK) == -1 ||
	    access(key, R_OK) == -1) {
		if (strchr(me, '/') != NULL || (cfg_find(c, me) == -1 &&
		    strcmp(me, XPORT_CLIENT_CN) != 0))
			cs_errf(e, "TLS files for %s missing (need %s, %s and "
			    "%s); create them with: cutsnap cert -c %s "
			    "--client NAME --role ROLE", me, ca, crt, key,
			    c->path);
		else
			cs_errf(e, "TLS files for %s missing in %s (need "
			    "ca.crt, %s.crt, %s.key); create them with: "
			    "cutsnap cert -c %s", me, c->tls_dir, me, me,
			    c->path);
		goto out;
	}
	if (SSL_CTX_load_verify_locations(x->ssl, ca, NULL) != 1) {
		ssl_why(why, sizeof(why), "unreadable");
		cs_errf(e, "%s: %s", ca, why);
		goto out;
	}
	if (SSL_CTX_use_certificate_chain_file(x->ssl, crt) != 1) {
		ssl_why(why, sizeof(why), "unreadable");
		cs_errf(e, "%s: %s", crt, why);
		goto out;
	}
	if (SSL_CTX_use_PrivateKey_file(x->ssl, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(x->ssl) != 1) {
		ssl_why(why, sizeof(why), "does not match the certificate");
		cs_errf(e, "%s: %s", key, why);
		goto out;
	}
	*out = x;
	x = NULL;
	rc = 0;
out:
	xport_ctx_free(x);
	return rc;
}

void
xport_ctx_free(struct xport_ctx *x)
{
	if (x == NULL)
		return;
	SSL_CTX_free(x->ssl);
	free(x);
}

struct xconn *
xconn_new(struct xport_ctx *x, int fd, int server)
{
	struct xconn *t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	if ((t->ssl = SSL_new(x->ssl)) == NULL || SSL_set_fd(t->ssl, fd) != 1) {
		SSL_free(t->ssl);
		free(t);
		ERR_clear_error();
		return NULL;
	}
	if (server)
		SSL_set_accept_state(t->ssl);
	else
		SSL_set_connect_state(t->ssl);
	return t;
}

void
xconn_free(struct xconn *t)
{
	if (t == NULL)
		return;
	SSL_free(t->ssl);
	free(t);
}

/* The role in a certificate's Subject: its one OU, or none. */
static enum cs_role
cert_role(X509_NAME *nm)
{
	X509_NAME_ENTRY *ent;
	ASN1_STRING *v;
	char s[16];
	int k;

	if ((k = X509_NAME_get_index_by_NID(nm, NID_organizationalUnitName,
	    -1)) < 0)
		return CS_ROLE_NONE;
	if (X509_NAME_get_index_by_NID(nm, NID_organizationalUnitName, k) >= 0)
		return CS_ROLE_BAD;	/* two roles: which one? neither */
	ent = X509_NAME_get_entry(nm, k);
	v = X509_NAME_ENTRY_get_data(ent);
	if (v == NULL || ASN1_STRING_length(v) <= 0 ||
	    ASN1_STRING_length(v) >= (int)sizeof(s))
		return CS_ROLE_BAD;
	memcpy(s, ASN1_STRING_get0_data(v), (size_t)ASN1_STRING_length(v));
	s[ASN1_STRING_length(v)] = '\0';
	return cs_role_parse(s);
}

static void
peer_cn(struct xconn *t)
{
	X509 *cert = SSL_get1_peer_certificate(t->ssl);

	t->cn[0] = '\0';
	t->role = CS_ROLE_NONE;
	if (cert == NULL)
		return;
	if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert),
	    NID_commonName, t->cn, sizeof(t->cn)) < 0)
		t->cn[0] = '\0';
	t->role = cert_role(X509_get_subject_name(cert));
	X509_free(cert);
}

int
xconn_handshake(struct xconn *t, char *why, size_t whysz)
{
	long vr;
	int r, err;
	unsigned long ec;
	const char *reason;

	ERR_clear_error();
	if ((r = SSL_do_handshake(t->ssl)) == 1) {
		peer_cn(t);
		return XP_OK;
	}
	err = SSL_get_error(t->ssl, r);
	if (err == SSL_ERROR_WANT_READ)
		return XP_WANT_READ;
	if (err == SSL_ERROR_WANT_WRITE)
		return XP_WANT_WRITE;
	vr = SSL_get_verify_result(t->ssl);
	if (vr != X509_V_OK) {
		snprintf(why, whysz, "certificate refused: %s",
		    X509_verify_cert_error_string(vr));
		ERR_clear_error();
		return XP_ERR;
	}
	ec = ERR_peek_error();
	reason = ec ? ERR_reason_error_string(ec) : NULL;
	if (ec && (ERR_GET_REASON(ec) == SSL_R_WRONG_VERSION_NUMBER ||
	    ERR_GET_REASON(ec) == SSL_R_HTTP_REQUEST ||
	    ERR_GET_REASON(ec) == SSL_R_PACKET_LENGTH_TOO_LONG ||
	    ERR_GET_REASON(ec) == SSL_R_UNEXPECTED_RECORD))
		snprintf(why, whysz, "not a TLS client (plaintext?): %s",
		    reason ? reason : "bad record");
	else if (ec && ERR_GET_REASON(ec) ==
	    SSL_R_UNEXPECTED_EOF_WHILE_READING)
		snprintf(why, whysz, "%s", WHY_HS_CLOSED);
	else if (reason != NULL)
		snprintf(why, whysz, "TLS handshake failed: %s", reason);
	else
		snprintf(why, whysz, "%s", WHY_HS_CLOSED);
	ERR_clear_error();
	return XP_ERR;
}

static ssize_t
io_rc(struct xconn *t, int r)
{
	int err = SSL_get_error(t->ssl, r);

	ERR_clear_error();
	switch (err) {
	case SSL_ERROR_WANT_READ:
		return XP_WANT_READ;
	case SSL_ERROR_WANT_WRITE:
		return XP_WANT_WRITE;
	case SSL_ERROR_ZERO_RETURN:
		return XP_EOF;
	case SSL_ERROR_SYSCALL:
		/* An EOF without close_notify: the peer went away. */
		return errno == 0 ? XP_EOF : XP_ERR;
	default:
		return XP_ERR;
	}
}

/* One SSL_read or SSL_write of up to n bytes. */
static ssize_t
xio(struct xconn *t, void *rbuf, const void *wbuf, size_t n)
{
	ssize_t rc;
	int r;

	if (n > INT32_MAX)
		n = INT32_MAX;
	errno = 0;
	/* SSL_get_error needs an empty error queue; io_rc leaves it so.
	 * ERR_clear_error wipes every slot of it even when it is empty, a
	 * cost on each record read or written: look before clearing. */
	if (ERR_peek_error() != 0)
		ERR_clear_error();
	r = rbuf != NULL ? SSL_read(t->ssl, rbuf, (int)n) :
	    SSL_write(t->ssl, wbuf, (int)n);
	if (r > 0) {
		if (rbuf != NULL)
			t->starved = 0;
		return r;
	}
	rc = io_rc(t, r);
	if (rbuf != NULL)
		t->starved = rc == XP_WANT_READ;
	return rc;
}

ssize_t
xconn_read(struct xconn *t, void *buf, size_t n)
{
	return xio(t, buf, NULL, n);
}

ssize_t
xconn_write(struct xconn *t, const void *buf, size_t n)
{
	return xio(t, NULL, buf, n);
}

int
xconn_pending(struct xconn *t)
{
	/* SSL_has_pending is also true of a record's first bytes: counting
	 * those made the agent poll with a zero timeout, over every
	 * connection, until the rest arrived (a busy loop that grew with
	 * the number of clients). */
	if (t->starved)
		return 0;	/* SSL_read gave all it had decrypted */
	return SSL_pending(t->ssl) > 0 || SSL_has_pending(t->ssl);
}

const char *
xconn_peer_cn(struct xconn *t)
{
	return t->cn;
}

enum cs_role
xconn_peer_role(struct xconn *t)
{
	return t->role;
}

void
xconn_shutdown(struct xconn *t)
{
	if (SSL_is_init_finished(t->ssl))
		(void)SSL_shutdown(t->ssl);
	ERR_clear_error();
}

static int
resolve(const char *addr, int passive, struct addrinfo **res,
    struct cs_err *e)
{
	struct addrinfo hints;
	char host[256], port[8];
	int g;

	if (xport_split(addr, host, sizeof(host), port, sizeof(port)) == -1)
		return cs_errf(e, "bad address %s (want HOST:PORT)", addr);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	if ((g = getaddrinfo(host, port, &hints, res)) != 0)
		return cs_errf(e, "resolve %s: %s", addr, gai_strerror(g));
	return 0;
}

int
xport_tcp_connect(const char *addr, int nonblock, int *inprog,
    struct cs_err *e)
{
	struct addrinfo *res = NULL, *ai;
	int fd = -1, one = 1, rc, saved = ECONNREFUSED;

	*inprog = 0;
	if (resolve(addr, 0, &res, e) == -1)
		return -1;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
		    (nonblock ? SOCK_NONBLOCK : 0), ai->ai_protocol);
		if (fd == -1) {
			saved = errno;
			continue;
		}
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		while ((rc = connect(fd, ai->ai_addr, ai->ai_addrlen)) == -1 &&
		    errno == EINTR)
			;
		if (rc == 0)
			break;
		if (nonblock && errno == EINPROGRESS) {
			*inprog = 1;
			break;
		}
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd == -1) {
		errno = saved;
		cs_errno(e, "connect %s", addr);
	}
	return fd;
}

int
xport_tcp_listen(const char *addr, struct cs_err *e)
{
	struct addrinfo *res = NULL;
	int fd = -1, one = 1;

	if (resolve(addr, 1, &res, e) == -1)
		return -1;
	fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC |
	    SOCK_NONBLOCK, res->ai_protocol);
	if (fd == -1) {
		cs_errno(e, "socket");
		goto out;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) == -1) {
		if (errno == EADDRINUSE)
			cs_errf(e, "%s is in use (is the agent already "
			    "running?)", addr);
		else
			cs_errno(e, "bind %s", addr);
		goto fail;
	}
	if (listen(fd, SOMAXCONN) == -1) {
		cs_errno(e, "listen %s", addr);
		goto fail;
	}
	goto out;
fail:
	close(fd);
	fd = -1;
out:
	freeaddrinfo(res);
	return fd;
}

void
xport_peer_name(int fd, char *out, size_t sz)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[INET6_ADDRSTRLEN], p[8];

	snprintf(out, sz, "?");
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == -1 ||
	    getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p, sizeof(p),
	    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		return;
	snprintf(out, sz, "%s:%s", h, p);
}

/* The commands' context, made once per tls_dir and certificate. */
static pthread_mutex_t cli_mu = PTHREAD_MUTEX_INITIALIZER;
static struct xport_ctx *cli_ctx;
static char cli_dir[PATH_MAX];
static char cli_made[PATH_MAX];		/* the certificate of cli_ctx */
static char cli_cert[PATH_MAX];		/* xport_client_cert_set's */

void
xport_client_cert_set(const char *name)
{
	pthread_mutex_lock(&cli_mu);
	snprintf(cli_cert, sizeof(cli_cert), "%s", name ? name : "");
	pthread_mutex_unlock(&cli_mu);
}

/* The commands' certificate, under cli_mu: --cert, else the
 * environment's CUTSNAP_CLIENT_CERT, else "client". */
static const char *
cli_cert_name(void)
{
	const char *v = getenv("CUTSNAP_CLIENT_CERT");

	if (cli_cert[0] != '\0')
		return cli_cert;
	return v != NULL && v[0] != '\0' ? v : XPORT_CLIENT_CN;
}

/* xport_client_open's sessions, one per agent (name and addr), under
 * cli_mu; s NULL: the agent sent no ticket (an older agent), so its
 * later connections wait for none. */
#define CLI_SESS_MAX	64
struct cli_sess {
	char key[NAME_MAX_LEN + 300];
	SSL_SESSION *s;
};
static struct cli_sess cli_sess[CLI_SESS_MAX];
static int cli_nsess;

static void
cli_sess_clear(void)
{
	int k;

	for (k = 0; k < cli_nsess; k++)
		if (cli_sess[k].s != NULL)
			SSL_SESSION_free(cli_sess[k].s);
	cli_nsess = 0;
}

static void
sess_key(const struct cfg_agent *ag, char *key, size_t sz)
{
	snprintf(key, sz, "%s@%s", ag->name, ag->addr);
}

/* Offer the session kept for ag, if any, on t. 1 if one was offered,
 * 0 if none is known, -1 if ag is known to send no tickets. */
static int
sess_offer(const struct cfg_agent *ag, struct xconn *t)
{
	char key[sizeof(cli_sess[0].key)];
	int k, rc = 0;

	sess_key(ag, key, sizeof(key));
	pthread_mutex_lock(&cli_mu);
	for (k = 0; k < cli_nsess; k++)
		if (strcmp(cli_sess[k].key, key) == 0) {
			if (cli_sess[k].s == NULL)
				rc = -1;
			else if (SSL_set_session(t->ssl, cli_sess[k].s) == 1)
				rc = 1;
			break;
		}
	pthread_mutex_unlock(&cli_mu);
	ERR_clear_error();
	return rc;
}

/* Keep session s (resumable: it holds a ticket; or NULL: none came) for
 * ag; s is ours to keep or free. */
static void
sess_keep(const struct cfg_agent *ag, SSL_SESSION *s)
{
	char key[sizeof(cli_sess[0].key)];
	int k;

	sess_key(ag, key, sizeof(key));
	pthread_mutex_lock(&cli_mu);
	for (k = 0; k < cli_nsess; k++)
		if (strcmp(cli_sess[k].key, key) == 0)
			break;
	if (k < cli_nsess) {
		if (cli_sess[k].s != NULL)
			SSL_SESSION_free(cli_sess[k].s);
		cli_sess[k].s = s;
		s = NULL;
	} else if (cli_nsess < CLI_SESS_MAX) {
		snprintf(cli_sess[k].key, sizeof(cli_sess[k].key), "%s", key);
		cli_sess[k].s = s;
		cli_nsess++;
		s = NULL;
	}
	pthread_mutex_unlock(&cli_mu);
	if (s != NULL)
		SSL_SESSION_free(s);
}

/* After a full handshake: read until the agent's ticket has come (it is
 * written right after the handshake) or XPORT_TICKET_WAIT_MS passed;
 * then keep the session, or remember that ag sends none (an agent older
 * than tickets), so that no later connection to it waits again. Nothing
 * else is read: the agent sends no data before a request. */
static void
ticket_wait(const struct cfg_agent *ag, struct xconn *t, int fd)
{
	int64_t end = cs_now_ms() + XPORT_TICKET_WAIT_MS, left;
	struct pollfd pf;
	uint8_t b;
	int r;

	for (;;) {
		if (SSL_SESSION_is_resumable(SSL_get0_session(t->ssl))) {
			sess_keep(ag, SSL_get1_session(t->ssl));
			return;
		}
		ERR_clear_error();
		r = SSL_peek(t->ssl, &b, 1);
		if (r <= 0 && SSL_get_error(t->ssl, r) != SSL_ERROR_WANT_READ) {
			ERR_clear_error();
			return;	/* the first read sees what went wrong */
		}
		ERR_clear_error();
		if (SSL_SESSION_is_resumable(SSL_get0_session(t->ssl)))
			continue;
		if (r > 0 || (left = end - cs_now_ms()) <= 0) {
			sess_keep(ag, NULL);
			return;
		}
		pf.fd = fd;
		pf.events = POLLIN;
		if (poll(&pf, 1, (int)left) == -1 && errno != EINTR)
			return;
	}
}

static struct xport_ctx *
client_ctx(const struct cfg *c, struct cs_err *e)
{
	struct xport_ctx *x = NULL;
	const char *me;

	pthread_mutex_lock(&cli_mu);
	me = cli_cert_name();
	if (cli_ctx != NULL && strcmp(cli_dir, c->tls_dir) == 0 &&
	    strcmp(cli_made, me) == 0) {
		x = cli_ctx;
		goto out;
	}
	if (xport_ctx_new(c, me, &x, e) == -1)
		goto out;
	/* One cluster per process; a previous one's is kept, since open
	 * connections may still use it. Its sessions are not. */
	cli_sess_clear();
	cli_ctx = x;
	snprintf(cli_dir, sizeof(cli_dir), "%s", c->tls_dir);
	snprintf(cli_made, sizeof(cli_made), "%s", me);
out:
	pthread_mutex_unlock(&cli_mu);
	return x;
}

/* A command's blocking waits poll in slices this long, so that a stop
 * signal handled by another thread ends them too. */
#define WAIT_SLICE_MS	100

/* Wait for ev on fd until deadline (cs_now_ms clock) or a stop signal:
 * 1 ready, 0 timed out, -1 with errno set (EINTR: asked to stop). */
static int
wait_fd(int fd, short ev, int64_t deadline)
{
	struct pollfd pf;
	int64_t left;
	int r;

	for (;;) {
		if (cs_stop_sig) {
			errno = EINTR;
			return -1;
		}
		if ((left = deadline - cs_now_ms()) <= 0)
			return 0;
		pf.fd = fd;
		pf.events = ev;
		pf.revents = 0;
		r = poll(&pf, 1, (int)(left < WAIT_SLICE_MS ? left :
		    WAIT_SLICE_MS));
		if (r > 0)
			return 1;
		if (r == -1 && errno != EINTR)
			return -1;
	}
}

/* Block until the handshake with fd is done or fails, or deadline: one
 * bound for the whole handshake, which a peer that trickles its bytes
 * cannot stretch. */
static int
client_handshake(struct xconn *t, int fd, const char *addr, const char *want,
    int64_t deadline, struct cs_err *e)
{
	char why[200];
	int r;

	for (;;) {
		r = xconn_handshake(t, why, sizeof(why));
		if (r == XP_OK)
			break;
		if (r == XP_ERR && strcmp(why, WHY_HS_CLOSED) == 0)
			return cs_errf(e, "agent %s at %s: closed by the agent "
			    "during the TLS handshake (too many unauthenticated "
			    "connections, or this client refused: see its "
			    "log)", want, addr);
		if (r == XP_ERR)
			return cs_errf(e, "agent %s at %s: %s", want, addr, why);
		r = wait_fd(fd, r == XP_WANT_READ ? POLLIN : POLLOUT,
		    deadline);
		if (r == 0)
			return cs_errf(e, "agent %s at %s: TLS handshake "
			    "timed out", want, addr);
		if (r == -1 && errno == EINTR)
			return cs_errf(e, "agent %s at %s: interrupted during "
			    "the TLS handshake", want, addr);
		if (r == -1)
			return cs_errno(e, "poll");
	}
	if (strcmp(xconn_peer_cn(t), want) != 0)
		return cs_errf(e, "refused %s: its certificate is for '%s', "
		    "not agent %s", addr, xconn_peer_cn(t), want);
	/* A client's certificate named like the agent is no agent's. */
	if (xconn_peer_role(t) != CS_ROLE_NONE)
		return cs_errf(e, "refused %s: its certificate '%s' is a "
		    "client's (role %s), not agent %s's", addr,
		    xconn_peer_cn(t), cs_role_name(xconn_peer_role(t)), want);
	return 0;
}

/* Wait for a non-blocking connect until deadline (a host that is down
 * answers nothing). 0, or -1 with errno set (ETIMEDOUT; EINTR: asked to
 * stop). */
static int
connect_wait(int fd, int64_t deadline)
{
	socklen_t elen = sizeof(int);
	int r, err = 0;

	r = wait_fd(fd, POLLOUT, deadline);
	if (r == 0)
		err = ETIMEDOUT;
	else if (r == -1)
		err = errno;
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == -1)
		err = errno;
	errno = err;
	return err == 0 ? 0 : -1;
}

/* Why a connect to agent ag failed with err: "not running" only when
 * its host said so (refused); a host that did not answer may be down or
 * cut off, and the agent may be running. */
static void
connect_err(const struct cfg_agent *ag, int err, struct cs_err *e)
{
	if (err == EINTR)
		cs_errf(e, "agent %s at %s: interrupted while connecting",
		    ag->name, ag->addr);
	else if (err == ETIMEDOUT)
		cs_errf(e, "timed out connecting to agent %s at %s (no "
		    "answer by the deadline)", ag->name, ag->addr);
	else if (err == ECONNREFUSED || err == ENOENT)
		cs_errf(e, "agent %s is not running (connect %s: %s)",
		    ag->name, ag->addr, strerror(err));
	else
		cs_errf(e, "cannot connect to agent %s at %s: %s", ag->name,
		    ag->addr, strerror(err));
}

/* xport_client_open; resume: offer and keep sessions (see xport.h). */
static int
client_open(const struct cfg *c, int i, int resume, int64_t deadline,
    int *fdp, struct xconn **tp, struct cs_err *e)
{
	const struct cfg_agent *ag = &c->agents[i];
	struct xport_ctx *x;
	struct xconn *t = NULL;
	int fd = -1, inprog;

	*fdp = -1;
	*tp = NULL;
	if (deadline < 0)
		deadline = cs_now_ms() + XPORT_CMD_WAIT_MS;
	if ((x = client_ctx(c, e)) == NULL)
		return -1;
	if ((fd = xport_tcp_connect(ag->addr, 1, &inprog, e)) == -1 ||
	    (inprog && connect_wait(fd, deadline) == -1)) {
		connect_err(ag, errno, e);
		if (fd != -1)
			close(fd);
		return -1;
	}
	if ((t = xconn_new(x, fd, 0)) == NULL) {
		cs_errf(e, "out of memory for TLS");
		goto fail;
	}
	if (resume && sess_offer(ag, t) == -1)
		resume = 0;
	if (client_handshake(t, fd, ag->addr, ag->name, deadline, e) == -1)
		goto fail;
	if (resume && !SSL_session_reused(t->ssl))
		ticket_wait(ag, t, fd);
	*fdp = fd;
	*tp = t;
	return 0;
fail:
	xconn_free(t);
	close(fd);
	return -1;
}

int
xport_client_open(const struct cfg *c, int i, int64_t deadline, int *fdp,
    struct xconn **tp, struct cs_err *e)
{
	return client_open(c, i, 1, deadline, fdp, tp, e);
}

int
xport_client_connect(const struct cfg *c, int i, int64_t deadline, int *fdp,
    struct xconn **tp, struct cs_err *e)
{
	/* One connection per agent and command: nothing to resume. */
	return client_open(c, i, 0, deadline, fdp, tp, e);
}
