/* bigval.c - large values without their whole frame in memory
 * (INTERNALS.md, "Agent: memory"): a put of BIGVAL_MIN bytes or more is
 * spooled to an unlinked temporary file in the data file's directory as
 * its bytes arrive and appended from there once complete; a get's reply
 * of such a value is sent from the data file as the socket drains. The
 * wire format is unchanged: a frame is still one frame, only where its
 * bytes stay while it passes changes. */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/fsutil.h"
#include "../lib/log.h"
#include "agent_int.h"

/* Bytes of a TLS reply read from the data file at a time. */
#define STREAM_PIECE	(128u << 10)
/* Bytes handed to one sendfile call (the socket takes what it can). */
#define SENDFILE_MAX	(4u << 20)

/* A put whose value is being received. */
struct spool {
	int fd;			/* the unlinked temporary file, or -1 */
	uint8_t key[WIRE_MAX_KEY];
	size_t klen;
	size_t vlen;		/* the value's length */
	size_t got;		/* bytes of it received */
	uint32_t crc;		/* record checksum so far (dl_put_head_crc) */
	char err[CS_ERR_MAX];	/* why the put fails, once fd is -1 */
};

/* A get's value being sent after the reply's head. */
struct vstream {
	int fd;			/* the data file (datalog_value_fd) */
	uint64_t off;		/* next byte of the file to read */
	size_t left;		/* bytes of the value not sent yet */
	uint8_t *buf;		/* TLS: the piece being written */
	size_t boff, blen;
};

/* An unlinked file in dir for a value, or -1 with e set. O_TMPFILE never
 * has a name; where the file system lacks it, a named file is unlinked
 * at once. */
static int
spool_open(const char *dir, struct cs_err *e)
{
	char path[PATH_MAX];
	int fd;

	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR &&
	    errno != EINVAL)) {
		if (fd == -1)
			cs_errno(e, "spool a value in %s", dir);
		return fd;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/.put-XXXXXX", dir) >=
	    sizeof(path)) {
		cs_errf(e, "spool a value in %s: path too long", dir);
		return -1;
	}
	if ((fd = mkostemp(path, O_CLOEXEC)) == -1) {
		cs_errno(e, "spool a value in %s", dir);
		return -1;
	}
	(void)unlink(path);
	return fd;
}

static void
spool_free(struct spool *sp)
{
	if (sp == NULL)
		return;
	if (sp->fd >= 0)
		close(sp->fd);
	free(sp);
}

/* The directory of the data file. */
static void
data_dir(const struct agent *a, char *out, size_t sz)
{
	const char *p = datalog_path(a->dl), *s = strrchr(p, '/');

	if (s == NULL)
		snprintf(out, sz, ".");
	else if (s == p)
		snprintf(out, sz, "/");
	else
		snprintf(out, sz, "%.*s", (int)(s - p), p);
}

int
agent_spool_begin(struct agent *a, struct conn *c)
{
	const uint8_t *p = c->in + c->inoff;
	size_t avail = c->inlen - c->inoff, plen, klen, vlen;
	struct spool *sp;
	struct cs_err e;
	char dir[PATH_MAX];

	if (c->sp != NULL || avail < WIRE_HDR_LEN + 4 || p[5] != W_REQ_PUT)
		return 0;
	/* Only a client's that may put (any other is answered, refused,
	 * by agent_client_frame once the frame is in). */
	if ((c->role != ROLE_CLIENT && c->role != ROLE_NEW) ||
	    !cs_role_may(c->crole, W_REQ_PUT))
		return 0;
	plen = (size_t)buf_le32_get(p) - 2;	/* wire_parse checked it */
	if (plen < BIGVAL_MIN)
		return 0;	/* nor is its value that large */
	klen = buf_le32_get(p + WIRE_HDR_LEN);
	/* Anything but a well-formed put is left to the request's handler,
	 * whole, for its usual answer. */
	if (klen == 0 || klen > WIRE_MAX_KEY || 4 + klen + 4 > plen)
		return 0;
	if (avail < WIRE_HDR_LEN + 4 + klen + 4)
		return 0;	/* the key is on its way */
	vlen = buf_le32_get(p + WIRE_HDR_LEN + 4 + klen);
	if (vlen < BIGVAL_MIN || vlen > WIRE_MAX_VALUE ||
	    4 + klen + 4 + vlen != plen)
		return 0;
	if ((sp = calloc(1, sizeof(*sp))) == NULL) {
		log_error("out of memory for a put");
		agent_conn_close(a, c, "out of memory");
		return -1;
	}
	memcpy(sp->key, p + WIRE_HDR_LEN + 4, klen);
	sp->klen = klen;
	sp->vlen = vlen;
	sp->crc = dl_put_head_crc(sp->key, klen, vlen);
	data_dir(a, dir, sizeof(dir));
	if ((sp->fd = spool_open(dir, &e)) == -1) {
		/* The value is read and dropped, then the put refused. */
		log_error("put: %s", e.msg);
		snprintf(sp->err, sizeof(sp->err), "%s", e.msg);
	}
	c->role = ROLE_CLIENT;
	c->inoff += WIRE_HDR_LEN + 4 + klen + 4;
	c->sp = sp;
	return 1;
}

/* The value is in: append it (as req_put would) and answer. */
static void
spool_done(struct agent *a, struct conn *c)
{
	struct spool *sp = c->sp;
	struct dl_record rec;
	struct dl_vsrc src;

	c->sp = NULL;
	a->writes++;
	if (sp->fd == -1) {
		agent_conn_replyf(a, c, REPLY_FAIL, "%s", sp->err);
		goto out;
	}
	src.fd = sp->fd;
	src.crc = sp->crc;
	memset(&rec, 0, sizeof(rec));
	rec.type = DL_PUT;
	rec.key = sp->key;
	rec.klen = sp->klen;
	rec.vlen = sp->vlen;
	rec.vsrc = &src;
	if (agent_append(a, &rec) == -1)
		goto out;
	agent_conn_reply(a, c, REPLY_OK, NULL, 0, datalog_need(a->dl));
out:
	spool_free(sp);
}

void
agent_spool_feed(struct agent *a, struct conn *c)
{
	struct spool *sp = c->sp;
	size_t n = c->inlen - c->inoff;

	if (n > sp->vlen - sp->got)
		n = sp->vlen - sp->got;
	if (n > 0 && sp->fd >= 0) {
		sp->crc = dl_rec_crc_more(sp->crc, c->in + c->inoff, n);
		if (pwrite_all(sp->fd, c->in + c->inoff, n, (off_t)sp->got) ==
		    -1) {
			snprintf(sp->err, sizeof(sp->err), "put: spooling "
			    "the value failed: %s", strerror(errno));
			log_error("%s", sp->err);
			close(sp->fd);
			sp->fd = -1;
		}
	}
	c->inoff += n;
	sp->got += n;
	if (sp->got == sp->vlen)
		spool_done(a, c);
}

/* Start streaming len bytes of fd from off on c, after a head of hlen
 * bytes that the caller fills in at *head (at the end of c->out). 1, or
 * 0 (fd closed) when c already streams or memory is short. */
static int
stream_begin(struct conn *c, int fd, uint64_t off, size_t len, size_t hlen,
    uint8_t **head)
{
	struct vstream *vs;

	if (c->vs != NULL || (vs = calloc(1, sizeof(*vs))) == NULL) {
		close(fd);
		return 0;
	}
	if ((!netconn_can_sendfile(c->nc) &&
	    (vs->buf = malloc(STREAM_PIECE)) == NULL) ||
	    (*head = wbuf_extend(&c->out, hlen)) == NULL) {
		free(vs->buf);
		free(vs);
		close(fd);
		return 0;
	}
	vs->fd = fd;
	vs->off = off;
	vs->left = len;
	c->vs = vs;
	c->vs_at = c->out.len;
	return 1;
}

int
agent_stream_value(struct agent *a, struct conn *c, const struct kv_entry *ent)
{
	struct cs_err e;
	uint8_t *p;
	int fd;

	if (ent->vlen < BIGVAL_MIN || ent->vlen > UINT32_MAX || c->vs != NULL)
		return 0;
	if (datalog_value_fd(a->dl, ent, &fd, &e) == -1) {
		log_warn("get: %s", e.msg);
		return 0;	/* read into the reply buffer instead */
	}
	if (fd == -1 || !stream_begin(c, fd, ent->voff, ent->vlen,
	    WIRE_HDR_LEN + 5, &p))
		return 0;
	/* The frame agent_conn_reply(REPLY_OK, value) would build, but for
	 * the value's bytes: they follow from the file (agent_stream_send). */
	wire_header(p, W_REPLY, 1 + 4 + ent->vlen);
	p[WIRE_HDR_LEN] = REPLY_OK;
	buf_le32_put(p + WIRE_HDR_LEN + 1, (uint32_t)ent->vlen);
	return 1;
}

int
agent_stream_range(struct agent *a, struct conn *c, uint8_t type,
    const uint8_t *pre, size_t prelen, uint64_t off, size_t len)
{
	uint8_t *p;
	int fd;

	if (c->vs != NULL || len > WIRE_MAX_FRAME - prelen)
		return 0;
	if ((fd = fcntl(datalog_fd(a->dl), F_DUPFD_CLOEXEC, 0)) == -1) {
		log_warn("dup %s: %s", datalog_path(a->dl), strerror(errno));
		return 0;
	}
	if (!stream_begin(c, fd, off, len, WIRE_HDR_LEN + prelen, &p))
		return 0;
	wire_header(p, type, prelen + len);
	memcpy(p + WIRE_HDR_LEN, pre, prelen);
	return 1;
}

size_t
agent_stream_left(const struct conn *c)
{
	return c->vs != NULL ? c->vs->left : 0;
}

static void
stream_free(struct conn *c)
{
	if (c->vs == NULL)
		return;
	close(c->vs->fd);
	free(c->vs->buf);
	free(c->vs);
	c->vs = NULL;
}

/* A transport without sendfile (TLS): write the piece in the buffer,
 * reading the next one from the file when it is all out. SSL_write is
 * called again with the same bytes after a WANT, as it requires. */
static int
stream_copy(struct agent *a, struct conn *c)
{
	struct vstream *vs = c->vs;
	size_t n;
	ssize_t k;

	while (vs->left > 0) {
		if (vs->boff == vs->blen) {
			n = vs->left < STREAM_PIECE ? vs->left : STREAM_PIECE;
			if (fs_pread_all(vs->fd, vs->buf, n, (off_t)vs->off) ==
			    -1) {
				log_error("get: read %s: %s",
				    datalog_path(a->dl), strerror(errno));
				agent_conn_close(a, c, "read failed");
				return -1;
			}
			vs->off += n;
			vs->boff = 0;
			vs->blen = n;
		}
		k = netconn_write(c->nc, vs->buf + vs->boff,
		    vs->blen - vs->boff);
		if (k > 0) {
			vs->boff += (size_t)k;
			vs->left -= (size_t)k;
			continue;
		}
		if (k == NETCONN_WANT_WRITE)
			return 0;
		if (k == NETCONN_WANT_READ) {
			c->wr_want_r = 1;
			return 0;
		}
		agent_conn_close(a, c, "TLS write failed");
		return -1;
	}
	return 1;
}

/* On a Unix socket: from the page cache to the socket, no copy here. */
static int
stream_sendfile(struct agent *a, struct conn *c)
{
	struct vstream *vs = c->vs;
	off_t o;
	ssize_t k;

	while (vs->left > 0) {
		o = (off_t)vs->off;
		k = netconn_sendfile(c->nc, vs->fd, &o,
		    vs->left < SENDFILE_MAX ? vs->left : SENDFILE_MAX);
		if (k > 0) {
			vs->off += (uint64_t)k;
			vs->left -= (size_t)k;
			continue;
		}
		if (k == NETCONN_WANT_WRITE)
			return 0;
		if (k == 0)
			log_error("get: %s ended inside a value",
			    datalog_path(a->dl));
		agent_conn_close(a, c, k == NETCONN_ERR ? strerror(errno) :
		    "short file");
		return -1;
	}
	return 1;
}

int
agent_stream_send(struct agent *a, struct conn *c)
{
	int r;

	r = netconn_can_sendfile(c->nc) ? stream_sendfile(a, c) :
	    stream_copy(a, c);
	if (r == 1)
		stream_free(c);
	return r;
}

void
agent_bigval_drop(struct conn *c)
{
	spool_free(c->sp);
	c->sp = NULL;
	stream_free(c);
}
