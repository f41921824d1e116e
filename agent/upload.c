/* upload.c - an agent on another host uploads its own new chunks to the
 * object store that holds the repository (W_SNAP_UPLOAD), so that they
 * do not travel through the coordinator.
 *
 * The coordinator names the bucket and prefix (and its region, which the
 * agent's own AWS_REGION overrides) and the chunks of the reported prefix
 * it needs: offset, length and SHA-256. The endpoint and the credentials
 * are the agent's own (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, read from its environment at
 * each request): the agent signs requests only for the endpoint its own
 * environment names, http only when that names http, so a coordinator
 * (or whoever speaks as one) cannot send its signatures and session
 * token elsewhere. An endpoint in the request (older coordinators sent
 * theirs) is read and ignored; an agent with no endpoint of its own
 * refuses, and its coordinator fetches the chunks itself.
 *
 * Each chunk is read from the data file, hashed, and refused if its hash
 * is not the one asked for (the file changed under the snapshot); then it
 * is PUT as blobs/XX/HASH, create-only (If-None-Match: *, a 412 means it
 * is there already) with x-amz-content-sha256 set to that hash, so the
 * server refuses bytes damaged on the way, with the retries of s3.c. In
 * a repository with compression (form UPLOAD_ZSTD) the blob is the
 * chunk's framed object (chunkobj.h), made here as the store makes it,
 * and the PUT's hash is the object's; readers check the decoded chunk
 * against its name, as for every blob. Encrypted repositories are never
 * asked: agents do not hold the repository's key.
 *
 * The uploads run on a thread of their own with UP_THREADS workers, each
 * with its own connection, while the loop goes on serving requests; the
 * thread reads a dup of the data file's descriptor (a compaction may
 * switch files once the snapshot is over). When every chunk has its
 * answer the thread wakes the loop (an eventfd), which sends
 * W_SNAP_UPLOADED with one status per chunk, if the snapshot is still
 * reported on that connection. The first upload the store refuses or
 * does not answer (after s3.c's retries) ends the rest: they would fail
 * the same way, each after its timeouts, and the coordinator fetches
 * them instead. One upload at a time: a second request meanwhile is
 * refused, and its coordinator fetches the chunks itself. */
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../proto/chunkobj.h"
#include "../lib/fsutil.h"
#include "../lib/log.h"
#include "../s3/s3.h"
#include "../crypto/sha.h"
#include "agent_int.h"

#define UP_THREADS 4
#define UP_MAX_CHUNK (64u << 20)	/* a chunk longer than this is refused */
#define UP_URL_MAX 512
#define UP_REGION_MAX 64

struct up_item {
	uint64_t off;
	uint32_t len;
	uint8_t sha[SHA_LEN];
	uint8_t status;		/* enum upload_status */
};

struct upload {
	struct snapuid id;
	struct conn *c;		/* the snapshot's connection: used only
				 * once agent_snap_reported finds it */
	char url[UP_URL_MAX], region[UP_REGION_MAX];
	struct up_item *it;
	size_t n;
	uint32_t maxlen;
	uint8_t form;		/* enum upload_form */
	int fd;			/* dup of the data file's */
	int efd;		/* eventfd: the thread is done */
	pthread_t th;
	int started;
	atomic_int stop;
	atomic_int give_up;	/* a request failed: the store refused us
				 * or did not answer, so the rest would too */
	long delay_ms;		/* test hook agent-upload-delay:MS */
	pthread_mutex_t mu;	/* guards next and the counts below */
	size_t next;		/* the next chunk a worker takes */
	char why[CS_ERR_MAX];	/* the first failure */
	uint64_t created, had, failed, bytes;
};

struct worker {
	struct upload *u;
	struct s3 *s;
	pthread_t th;
};

static void
up_note(struct upload *u, uint8_t status, uint64_t bytes, const char *why)
{
	pthread_mutex_lock(&u->mu);
	if (status == UPLOAD_CREATED) {
		u->created++;
		u->bytes += bytes;
	} else if (status == UPLOAD_HAD) {
		u->had++;
	} else {
		u->failed++;
		if (u->why[0] == '\0' && why != NULL)
			snprintf(u->why, sizeof(u->why), "%s", why);
	}
	pthread_mutex_unlock(&u->mu);
}

/* Upload chunk it, read into buf (maxlen bytes; for UPLOAD_ZSTD its
 * object goes into obj, chunkobj_bound(maxlen) bytes); its status. */
static uint8_t
up_one(struct upload *u, struct s3 *s, struct up_item *it, uint8_t *buf,
    uint8_t *obj)
{
	char hex[SHA_HEX_LEN], key[96];
	uint8_t got[SHA_LEN];
	const uint8_t *body = buf;
	size_t blen = it->len;
	struct cs_err e;
	int st;

	if (fs_pread_all(u->fd, buf, it->len, (off_t)it->off) < 0) {
		cs_errf(&e, "read of the data file at %" PRIu64 ": %s",
		    it->off, strerror(errno));
		goto fail;
	}
	if (sha256_buf(buf, it->len, got) < 0 ||
	    memcmp(got, it->sha, SHA_LEN) != 0) {
		cs_errf(&e, "bytes %" PRIu64 "+%" PRIu32 " of the data file do "
		    "not have the sha256 asked for", it->off, it->len);
		goto fail;
	}
	if (u->form == UPLOAD_ZSTD) {
		blen = chunkobj_frame(1, buf, it->len, obj,
		    chunkobj_bound(u->maxlen));
		body = obj;
	}
	sha_hex(it->sha, hex);
	chunkobj_key(hex, key, sizeof(key));
	if ((st = s3_put(s, key, body, blen, "*", NULL, &e)) < 0) {
		atomic_store(&u->give_up, 1);
		goto fail;
	}
	if (st == 200 || st == 412) {
		up_note(u, st == 200 ? UPLOAD_CREATED : UPLOAD_HAD, blen,
		    NULL);
		return st == 200 ? UPLOAD_CREATED : UPLOAD_HAD;
	}
	s3_status_err(s, "put", key, st, &e);
	atomic_store(&u->give_up, 1);
fail:
	up_note(u, UPLOAD_FAILED, 0, e.msg);
	return UPLOAD_FAILED;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct upload *u = w->u;
	uint8_t *buf = malloc(u->maxlen ? u->maxlen : 1);
	uint8_t *obj = u->form == UPLOAD_ZSTD ?
	    malloc(chunkobj_bound(u->maxlen)) : buf;
	size_t i;

	for (;;) {
		pthread_mutex_lock(&u->mu);
		i = u->next < u->n ? u->next++ : u->n;
		pthread_mutex_unlock(&u->mu);
		if (i == u->n)
			break;
		cs_sleep_ms(u->delay_ms);
		if (atomic_load(&u->stop) || atomic_load(&u->give_up) ||
		    buf == NULL || obj == NULL) {
			up_note(u, UPLOAD_FAILED, 0, buf == NULL ||
			    obj == NULL ?
			    "out of memory" : atomic_load(&u->stop) ?
			    "the agent is stopping" : "not tried after the "
			    "failure");
			u->it[i].status = UPLOAD_FAILED;
			continue;
		}
		u->it[i].status = up_one(u, w->s, &u->it[i], buf, obj);
	}
	if (obj != buf)
		free(obj);
	free(buf);
	return NULL;
}

/* The upload thread: one connection per worker, the workers, then the
 * wake-up. A failure to open (no credentials, a bad endpoint) fails every
 * chunk with its message. */
static void *
up_main(void *arg)
{
	struct upload *u = arg;
	struct worker w[UP_THREADS];
	struct cs_err e;
	uint64_t one = 1;
	size_t i, k, nw = u->n < UP_THREADS ? u->n : UP_THREADS;
	ssize_t wr;

	memset(w, 0, sizeof(w));
	for (k = 0; k < nw; k++) {
		w[k].u = u;
		if (s3_open_at(u->url, NULL, u->region, &w[k].s,
		    &e) < 0)
			break;
	}
	if (k < nw) {
		for (i = 0; i < u->n; i++) {
			u->it[i].status = UPLOAD_FAILED;
			up_note(u, UPLOAD_FAILED, 0, e.msg);
		}
		nw = k;
		k = 0;
	} else {
		for (k = 1; k < nw; k++)
			if (pthread_create(&w[k].th, NULL, worker_main,
			    &w[k]) != 0)
				break;
		if (nw > 0)
			worker_main(&w[0]);
		while (k > 1)
			pthread_join(w[--k].th, NULL);
	}
	for (k = 0; k < nw; k++)
		s3_close(w[k].s);
	do
		wr = write(u->efd, &one, sizeof(one));
	while (wr < 0 && errno == EINTR);
	return NULL;
}

static void
up_free(struct agent *a, struct upload *u)
{
	if (u == NULL)
		return;
	if (u->started) {
		atomic_store(&u->stop, 1);
		pthread_join(u->th, NULL);
	}
	if (u->efd >= 0) {
		(void)epoll_ctl(a->ep, EPOLL_CTL_DEL, u->efd, NULL);
		close(u->efd);
	}
	if (u->fd >= 0)
		close(u->fd);
	pthread_mutex_destroy(&u->mu);
	free(u->it);
	free(u);
}

/* Parse the request after its id into u; 0, or -1 with why filled. */
static int
up_parse(struct upload *u, struct rbuf *r, uint64_t L, char *why,
    size_t whysz)
{
	char ignored[UP_URL_MAX];	/* an older coordinator's endpoint */
	uint32_t n, i;

	rbuf_str(r, u->url, sizeof(u->url));
	rbuf_str(r, ignored, sizeof(ignored));
	rbuf_str(r, u->region, sizeof(u->region));
	u->form = rbuf_u8(r);
	n = rbuf_u32(r);
	if (r->err || (u->form != UPLOAD_RAW && u->form != UPLOAD_ZSTD) ||
	    n == 0 || n > UPLOAD_MAX_BATCH ||
	    (uint64_t)n * (8 + 4 + SHA_LEN) > r->len - r->off) {
		snprintf(why, whysz, "malformed upload request");
		return -1;
	}
	if ((u->it = calloc(n, sizeof(*u->it))) == NULL) {
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	u->n = n;
	for (i = 0; i < n; i++) {
		u->it[i].off = rbuf_u64(r);
		u->it[i].len = rbuf_u32(r);
		if (r->len - r->off >= SHA_LEN && !r->err) {
			memcpy(u->it[i].sha, r->p + r->off, SHA_LEN);
			r->off += SHA_LEN;
		} else {
			r->err = 1;
		}
		if (u->it[i].len == 0 || u->it[i].len > UP_MAX_CHUNK ||
		    u->it[i].off > L || u->it[i].len > L - u->it[i].off) {
			snprintf(why, whysz, "bytes %" PRIu64 "+%" PRIu32
			    " are not within the recorded %" PRIu64,
			    u->it[i].off, u->it[i].len, L);
			return -1;
		}
		if (u->it[i].len > u->maxlen)
			u->maxlen = u->it[i].len;
	}
	if (!rbuf_done(r)) {
		snprintf(why, whysz, "malformed upload request");
		return -1;
	}
	return 0;
}

/* Whether this agent's environment names its S3 endpoint; why filled
 * when not. The only endpoint it signs for: the default of the AWS tools
 * (https://BUCKET.s3.REGION.amazonaws.com) would let the coordinator pick
 * the host through the bucket and region it names. */
static int
up_own_endpoint(char *why, size_t whysz)
{
	const char *ep = getenv("AWS_ENDPOINT_URL");

	if (ep != NULL && (strncmp(ep, "https://", 8) == 0 ||
	    strncmp(ep, "http://", 7) == 0))
		return 1;
	snprintf(why, whysz, "%s", ep == NULL || *ep == '\0' ?
	    "no S3 endpoint of its own (AWS_ENDPOINT_URL in the agent's "
	    "environment); it uploads only there" :
	    "its AWS_ENDPOINT_URL is neither http:// nor https://");
	return 0;
}

void
agent_snap_upload(struct agent *a, struct conn *c, struct rbuf *r)
{
	struct epoll_event ev;
	struct upload *u;
	char why[256];
	uint64_t L = 0;
	int code = REPLY_FAIL;

	if ((u = calloc(1, sizeof(*u))) == NULL) {
		agent_conn_replyf(a, c, REPLY_FAIL, "out of memory");
		return;
	}
	u->fd = u->efd = -1;
	u->c = c;
	pthread_mutex_init(&u->mu, NULL);
	snapuid_get(r, &u->id);
	if (agent_snap_reported(a, c, &u->id, &L) == NULL) {
		snprintf(why, sizeof(why), "the snapshot is not reported here "
		    "on this connection");
		goto refuse;
	}
	if (up_parse(u, r, L, why, sizeof(why)) < 0) {
		code = REPLY_BADREQ;
		goto refuse;
	}
	if (!up_own_endpoint(why, sizeof(why)))
		goto refuse;
	if (a->up != NULL) {
		snprintf(why, sizeof(why), "agent %s is uploading another "
		    "snapshot's chunks", a->name);
		goto refuse;
	}
	/* Test hook: agent-upload-delay:MS waits MS ms before each chunk's
	 * upload, so that a test can kill the agent mid-upload. */
	u->delay_ms = cs_fault_ms("agent-upload-delay", 60000);
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = &a->up;
	if ((u->fd = fcntl(datalog_fd(a->dl), F_DUPFD_CLOEXEC, 0)) < 0 ||
	    (u->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    epoll_ctl(a->ep, EPOLL_CTL_ADD, u->efd, &ev) < 0) {
		snprintf(why, sizeof(why), "cannot start the upload: %s",
		    strerror(errno));
		goto refuse;
	}
	if (pthread_create(&u->th, NULL, up_main, u) != 0) {
		snprintf(why, sizeof(why), "cannot start the upload thread");
		goto refuse;
	}
	u->started = 1;
	a->up = u;
	log_info("uploading %zu chunks to %s", u->n, u->url);
	return;
refuse:
	agent_conn_replyf(a, c, (uint8_t)code, "agent %s: %s", a->name, why);
	up_free(a, u);
}

void
agent_upload_event(struct agent *a)
{
	struct upload *u = a->up;
	struct wbuf w;
	uint64_t L;
	size_t i;

	if (u == NULL)
		return;
	a->up = NULL;
	pthread_join(u->th, NULL);
	u->started = 0;
	log_info("uploaded %" PRIu64 " chunks (%" PRIu64 " bytes) to %s, "
	    "%" PRIu64 " there already, %" PRIu64 " failed%s%s", u->created,
	    u->bytes, u->url, u->had, u->failed, u->failed ? ": " : "",
	    u->failed ? u->why : "");
	/* The snapshot may be over (its coordinator went away): no answer. */
	if (agent_snap_reported(a, u->c, &u->id,
	    &L) != NULL) {
		wbuf_init(&w);
		wbuf_put_u32(&w, (uint32_t)u->n);
		for (i = 0; i < u->n; i++)
			wbuf_put_u8(&w, u->it[i].status);
		wbuf_put_str(&w, u->why);
		if (w.oom)
			agent_conn_replyf(a, u->c,
			    REPLY_FAIL, "out of memory");
		else
			agent_conn_send(a, u->c,
			    W_SNAP_UPLOADED, w.data, w.len, 0);
		wbuf_free(&w);
	}
	up_free(a, u);
}

void
agent_upload_free(struct agent *a)
{
	up_free(a, a->up);
	a->up = NULL;
}
