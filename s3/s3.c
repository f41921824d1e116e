/* s3.c - the S3 client of s3.h.
 *
 * Every request goes through run(): a batch of requests, at most
 * s->parallel of them on the multi handle at a time; a request that got a
 * 5xx or a timeout / broken / stalled connection is tried again after a
 * backoff with jitter (0.25 s doubling up to 20 s, each wait drawn from
 * its upper half) for as long as the retry budget allows
 * (CUTSNAP_S3_RETRY_SECONDS, default 300: an 8 s burst of 503 SlowDown,
 * or a gateway restarting, is ridden out, and a server that never comes
 * back is named with the key and the attempts within minutes); one that
 * could not connect or resolve fails at once, so a wrong endpoint is
 * reported in seconds. A conditional PUT that gets 412 after a retry may
 * have been answered for its own first try, whose answer was lost: the
 * object is read back and compared with what was sent (own_put_landed).
 * Bodies are hashed before the request so that x-amz-content-sha256 is
 * the body's SHA-256 (curl signs that header's value; the server rejects a
 * body that does not match it). */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "curl_dl.h"
#include "s3.h"
#include "../crypto/sha.h"

#define S3_BACKOFF_MS 250L
#define S3_BACKOFF_CAP_MS 20000L
#define S3_RETRY_DEFAULT_S 300L
#define S3_STALL_DEFAULT_S 30L
#define S3_PARALLEL 16
#define S3_ERRBODY_CAP (64 * 1024)
#define S3_LIST_CAP (16 * 1024 * 1024)
#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct s3 {
	char *endpoint;		/* "http://host:port" or "https://b.s3.r.amazonaws.com" */
	char *bucket;
	char *prefix;		/* "" or "dir/" */
	char *url;		/* "s3://bucket/prefix" */
	char *userpwd;		/* "key:secret" */
	char *token;		/* AWS_SESSION_TOKEN or NULL */
	char sigv4[96];		/* "aws:amz:REGION:s3" */
	char region[48];
	int path_style;
	int parallel;
	long retry_ms;		/* retry budget of one request */
	long stall_s;		/* no byte for this long: a stalled transfer */
	uint64_t jitter;	/* xorshift state of the backoff's jitter */
	int last_tries;		/* of the last request that ended */
	long last_ms;		/* from its first try to its end */
	char code[64];		/* <Code> of the last failed answer */
	CURLM *multi;
};

/* One request of a batch. */
struct req {
	const char *method;	/* "GET", "PUT", "DELETE" */
	char *url;
	const char *cond_hdr;	/* "If-None-Match: *" style, or NULL */
	char cond[S3_ETAG_MAX + 32];
	const uint8_t *body;	/* PUT body (borrowed) */
	size_t body_len, body_off;
	char sha[SHA_HEX_LEN];
	FILE *out;		/* GET into a file, or NULL for memory */
	char *mem;		/* response in memory (capped) */
	size_t mem_len, mem_cap;
	size_t limit;		/* cap of a 2xx body in memory; 0: error bodies */
	int overflow;
	uint8_t *xbuf;		/* a 2xx body goes here (s3_get_range):
				 * the caller's buffer, never grown */
	size_t xcap, xlen;
	char range[64];		/* "Range: bytes=A-B" header, or "" */
	uint64_t total;		/* the object's size its answer gave
				 * (Content-Range, else Content-Length) */
	char etag[S3_ETAG_MAX];
	int status;		/* HTTP status, or -1 */
	CURLcode cerr;
	int tries;
	struct timespec first;	/* when its first try started */
	int used;		/* the slot holds a request (run) */
	struct timespec not_before;
	CURL *h;
	struct curl_slist *hdrs;
};

static char *
xstrdup(const char *s)
{
	return s == NULL ? NULL : strdup(s);
}

static int
valid_bucket(const char *b, size_t n)
{
	size_t i;

	if (n < 3 || n > 63)
		return 0;
	for (i = 0; i < n; i++)
		if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9')
		    || b[i] == '-' || b[i] == '.'))
			return 0;
	return 1;
}

/* A prefix of segments of A-Z a-z 0-9 - _ . separated by single '/', none
 * of them empty, "." or "..": "a/./b" would be stored under "a/b" by some
 * servers and not found again, "a//b" makes keys with an empty segment,
 * and a leading '/' keys that start with one. One trailing '/' is
 * allowed (it is dropped). */
static int
valid_prefix(const char *p)
{
	const char *seg = p;
	size_t n;

	for (;; p++) {
		if (*p != '/' && *p != '\0') {
			if (!((*p >= 'a' && *p <= 'z') ||
			    (*p >= 'A' && *p <= 'Z') ||
			    (*p >= '0' && *p <= '9') || *p == '-' ||
			    *p == '_' || *p == '.'))
				return 0;
			continue;
		}
		n = (size_t)(p - seg);
		if (n == 0 || (n == 1 && seg[0] == '.') ||
		    (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return 0;
		if (*p == '\0' || p[1] == '\0')
			return 1;	/* the end, or one trailing '/' */
		seg = p + 1;
	}
}

/* A whole number of seconds from the environment, 0 to 3600, or def. */
static long
env_seconds(const char *name, long def)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (v == NULL || *v == '\0')
		return def;
	n = strtol(v, &end, 10);
	if (*end != '\0' || n < 0 || n > 3600)
		return def;
	return n;
}

int
s3_open(const char *url, struct s3 **out, struct cs_err *e)
{
	return s3_open_at(url, NULL, NULL, out, e);
}

int
s3_open_at(const char *url, const char *def_endpoint, const char *def_region,
    struct s3 **out, struct cs_err *e)
{
	struct s3 *s = NULL;
	const char *b, *slash, *ep, *region, *key, *secret, *par;
	size_t blen, plen;
	int rc = -1;

	*out = NULL;
	if (strncmp(url, "s3://", 5) != 0)
		return cs_errf(e, "%s: not an s3:// URL", url);
	b = url + 5;
	slash = strchr(b, '/');
	blen = slash ? (size_t)(slash - b) : strlen(b);
	if (!valid_bucket(b, blen))
		return cs_errf(e, "%s: bucket name must be 3 to 63 of a-z, 0-9, "
		    "'-' and '.'", url);
	if (slash && slash[1] != '\0' && (!valid_prefix(slash + 1) ||
	    strstr(slash + 1, "..")))
		return cs_errf(e, "%s: the prefix must be segments of A-Z a-z "
		    "0-9 '-' '_' '.' separated by single '/' (none empty, '.' "
		    "or with '..')", url);
	key = getenv("AWS_ACCESS_KEY_ID");
	secret = getenv("AWS_SECRET_ACCESS_KEY");
	if (key == NULL || *key == '\0' || secret == NULL || *secret == '\0')
		return cs_errf(e, "%s: set AWS_ACCESS_KEY_ID and "
		    "AWS_SECRET_ACCESS_KEY", url);
	if (strchr(key, ':') != NULL)
		return cs_errf(e, "AWS_ACCESS_KEY_ID must not contain ':'");
	region = getenv("AWS_REGION");
	if (region == NULL || *region == '\0')
		region = def_region;
	if (region == NULL || *region == '\0')
		region = "us-east-1";
	if (strlen(region) > 40 || strchr(region, ':') != NULL)
		return cs_errf(e, "AWS_REGION '%s' is not a region", region);
	if (curl_dl_load(e) < 0)
		return -1;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		goto oom;
	s->bucket = strndup(b, blen);
	plen = slash ? strlen(slash + 1) : 0;
	while (plen > 0 && slash[plen] == '/')
		plen--;
	s->prefix = malloc(plen + 2);
	s->url = malloc(blen + plen + 8);
	s->userpwd = malloc(strlen(key) + strlen(secret) + 2);
	if (s->bucket == NULL || s->prefix == NULL || s->url == NULL ||
	    s->userpwd == NULL)
		goto oom;
	if (plen > 0)
		snprintf(s->prefix, plen + 2, "%.*s/", (int)plen, slash + 1);
	else
		s->prefix[0] = '\0';
	snprintf(s->url, blen + plen + 8, "s3://%s%s%.*s", s->bucket,
	    plen ? "/" : "", (int)plen, plen ? slash + 1 : "");
	sprintf(s->userpwd, "%s:%s", key, secret);
	snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:%s:s3", region);
	snprintf(s->region, sizeof(s->region), "%s", region);
	s->token = xstrdup(getenv("AWS_SESSION_TOKEN"));
	if (s->token != NULL && *s->token == '\0') {
		free(s->token);
		s->token = NULL;
	}
	ep = getenv("AWS_ENDPOINT_URL");
	if (ep == NULL || *ep == '\0')
		ep = def_endpoint;
	if (ep != NULL && *ep != '\0') {
		if (strncmp(ep, "http://", 7) != 0 &&
		    strncmp(ep, "https://", 8) != 0) {
			cs_errf(e, "AWS_ENDPOINT_URL '%s' must start with "
			    "http:// or https://", ep);
			goto out;
		}
		s->endpoint = strdup(ep);
		if (s->endpoint != NULL)
			while (*s->endpoint &&
			    s->endpoint[strlen(s->endpoint) - 1] == '/')
				s->endpoint[strlen(s->endpoint) - 1] = '\0';
		s->path_style = 1;
	} else if (memchr(b, '.', blen) != NULL) {
		/* AWS's certificate covers *.s3.REGION.amazonaws.com, one
		 * label: a dotted bucket name as a host name would fail TLS
		 * verification, so it goes in the path. */
		s->endpoint = malloc(strlen(region) + 40);
		if (s->endpoint != NULL)
			sprintf(s->endpoint, "https://s3.%s.amazonaws.com",
			    region);
		s->path_style = 1;
	} else {
		s->endpoint = malloc(blen + strlen(region) + 40);
		if (s->endpoint != NULL)
			sprintf(s->endpoint, "https://%s.s3.%s.amazonaws.com",
			    s->bucket, region);
	}
	if (s->endpoint == NULL || (s->multi = curl_multi_init()) == NULL)
		goto oom;
	s->parallel = S3_PARALLEL;
	s->retry_ms = env_seconds("CUTSNAP_S3_RETRY_SECONDS",
	    S3_RETRY_DEFAULT_S) * 1000L;
	s->stall_s = env_seconds("CUTSNAP_S3_STALL_SECONDS", S3_STALL_DEFAULT_S);
	if (s->stall_s < 1)
		s->stall_s = 1;
	s->jitter = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^
	    (uint64_t)time(NULL);
	if (s->jitter == 0)
		s->jitter = 1;
	if ((par = getenv("CUTSNAP_S3_PARALLEL")) != NULL && atoi(par) > 0 &&
	    atoi(par) <= 256)
		s->parallel = atoi(par);
	*out = s;
	s = NULL;
	rc = 0;
	goto out;
oom:
	cs_errc(e, CS_E_NOMEM, "out of memory");
out:
	s3_close(s);
	return rc;
}

void
s3_close(struct s3 *s)
{
	if (s == NULL)
		return;
	if (s->multi != NULL)
		curl_multi_cleanup(s->multi);
	free(s->endpoint);
	free(s->bucket);
	free(s->prefix);
	free(s->url);
	if (s->userpwd != NULL)
		memset(s->userpwd, 0, strlen(s->userpwd));
	free(s->userpwd);
	free(s->token);
	free(s);
}

const char *
s3_url(const struct s3 *s)
{
	return s->url;
}

const char *
s3_endpoint(const struct s3 *s)
{
	return s->path_style ? s->endpoint : "";
}

const char *
s3_region(const struct s3 *s)
{
	return s->region;
}

int
s3_parallel_of(const struct s3 *s)
{
	return s->parallel;
}

/* The request URL of key (relative to the prefix) with query (may be
 * NULL, already in canonical order and encoded). Keys hold only the
 * characters valid_prefix allows and hex names, so need no escaping. */
static char *
obj_url(const struct s3 *s, const char *key, const char *query)
{
	size_t n = strlen(s->endpoint) + strlen(s->bucket) + strlen(s->prefix)
	    + strlen(key) + (query ? strlen(query) : 0) + 8;
	char *u = malloc(n);

	if (u == NULL)
		return NULL;
	if (s->path_style)
		snprintf(u, n, "%s/%s/%s%s%s%s", s->endpoint, s->bucket,
		    s->prefix, key, query ? "?" : "", query ? query : "");
	else
		snprintf(u, n, "%s/%s%s%s%s", s->endpoint, s->prefix, key,
		    query ? "?" : "", query ? query : "");
	return u;
}

static size_t
on_write(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct req *r = ctx;
	size_t n = size * nmemb, lim, cap;
	long code = 0;
	char *m;

	if (r->out != NULL) {
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
		if (code >= 200 && code < 300)
			return fwrite(p, 1, n, r->out) == n ? n : 0;
	}
	/* Into the caller's buffer: a body longer than it is no answer
	 * to keep (the transfer stops; s3_get_range reports the size). */
	if (r->xbuf != NULL) {
		if (code == 0)
			curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
		if (code >= 200 && code < 300) {
			if (n > r->xcap - r->xlen) {
				r->overflow = 1;
				return 0;
			}
			memcpy(r->xbuf + r->xlen, p, n);
			r->xlen += n;
			return n;
		}
	}
	/* In memory: a preallocated buffer (s3_get, lists) is the cap;
	 * otherwise (error bodies) grow up to S3_ERRBODY_CAP. */
	lim = r->limit ? r->limit : S3_ERRBODY_CAP;
	if (r->mem_len + n + 1 > lim) {
		r->overflow = 1;
		return 0;
	}
	if (r->mem_len + n + 1 > r->mem_cap) {
		cap = r->mem_cap ? r->mem_cap : 4096;
		while (cap < r->mem_len + n + 1)
			cap *= 2;
		if (cap > lim)
			cap = lim;
		if ((m = realloc(r->mem, cap)) == NULL)
			return 0;
		r->mem = m;
		r->mem_cap = cap;
	}
	memcpy(r->mem + r->mem_len, p, n);
	r->mem_len += n;
	r->mem[r->mem_len] = '\0';
	return n;
}

static size_t
on_read(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct req *r = ctx;
	size_t n = size * nmemb;

	if (n > r->body_len - r->body_off)
		n = r->body_len - r->body_off;
	memcpy(p, r->body + r->body_off, n);
	r->body_off += n;
	return n;
}

static size_t
on_header(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct req *r = ctx;
	size_t n = size * nmemb, i = 5, j = 0;

	if (n > 5 && strncasecmp(p, "etag:", 5) == 0) {
		while (i < n && (p[i] == ' ' || p[i] == '"'))
			i++;
		while (i < n && p[i] != '"' && p[i] != '\r' && p[i] != '\n' &&
		    j + 1 < sizeof(r->etag))
			r->etag[j++] = p[i++];
		r->etag[j] = '\0';
	}
	/* The object's size: "Content-Range: bytes A-B/TOTAL" of a ranged
	 * answer, else (a whole object) its Content-Length. */
	if (n > 14 && strncasecmp(p, "content-range:", 14) == 0) {
		const char *sl = memchr(p, '/', n);

		if (sl != NULL && sl + 1 < p + n && sl[1] >= '0' && sl[1] <= '9')
			r->total = strtoull(sl + 1, NULL, 10);
	} else if (n > 15 && strncasecmp(p, "content-length:", 15) == 0 &&
	    r->range[0] == '\0') {
		r->total = strtoull(p + 15, NULL, 10);
	}
	return n;
}

/* Sets up r's easy handle for one attempt. */
static int
prepare(struct s3 *s, struct req *r)
{
	char h[160];
	struct curl_slist *l = NULL, *t;

	if (r->h == NULL && (r->h = curl_easy_init()) == NULL)
		return -1;
	curl_easy_reset(r->h);
	curl_slist_free_all(r->hdrs);
	r->hdrs = NULL;
	r->body_off = 0;
	r->mem_len = 0;
	r->etag[0] = '\0';
	r->overflow = 0;
	r->xlen = 0;
	r->total = 0;
	if (r->out != NULL && (fflush(r->out) != 0 ||
	    ftruncate(fileno(r->out), 0) < 0 || fseek(r->out, 0, SEEK_SET)))
		return -1;
	snprintf(h, sizeof(h), "x-amz-content-sha256: %s", r->sha);
	if ((t = curl_slist_append(l, h)) == NULL)
		goto fail;
	l = t;
	if (r->cond_hdr != NULL) {
		if ((t = curl_slist_append(l, r->cond)) == NULL)
			goto fail;
		l = t;
	}
	if (r->range[0] != '\0') {
		if ((t = curl_slist_append(l, r->range)) == NULL)
			goto fail;
		l = t;
	}
	if (s->token != NULL) {
		char *th = malloc(strlen(s->token) + 32);

		if (th == NULL)
			goto fail;
		sprintf(th, "x-amz-security-token: %s", s->token);
		t = curl_slist_append(l, th);
		free(th);
		if (t == NULL)
			goto fail;
		l = t;
	}
	r->hdrs = l;
	curl_easy_setopt(r->h, CURLOPT_URL, r->url);
	curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hdrs);
	curl_easy_setopt(r->h, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(r->h, CURLOPT_USERPWD, s->userpwd);
	curl_easy_setopt(r->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->h, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(r->h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(r->h, CURLOPT_LOW_SPEED_TIME, s->stall_s);
	curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(r->h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(r->h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(r->h, CURLOPT_PRIVATE, r);
	if (strcmp(r->method, "PUT") == 0) {
		curl_easy_setopt(r->h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(r->h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(r->h, CURLOPT_READDATA, r);
		curl_easy_setopt(r->h, CURLOPT_INFILESIZE_LARGE,
		    (curl_off_t)r->body_len);
	} else if (strcmp(r->method, "DELETE") == 0) {
		curl_easy_setopt(r->h, CURLOPT_CUSTOMREQUEST, "DELETE");
	}
	return 0;
fail:
	curl_slist_free_all(l);
	return -1;
}

static int
retryable(const struct req *r)
{
	if (r->cerr == CURLE_OK)
		return r->status >= 500;
	return r->cerr == CURLE_OPERATION_TIMEDOUT ||
	    r->cerr == CURLE_SEND_ERROR || r->cerr == CURLE_RECV_ERROR ||
	    r->cerr == CURLE_GOT_NOTHING || r->cerr == CURLE_PARTIAL_FILE;
}

static int
due(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > t->tv_sec ||
	    (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

static long
ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long)(now.tv_sec - t->tv_sec) * 1000L +
	    (now.tv_nsec - t->tv_nsec) / 1000000L;
}

/* The wait before try r->tries + 1: the doubling step's upper half,
 * drawn at random, so that many clients that failed together (a
 * gateway's restart) do not come back together. */
static long
backoff_ms(struct s3 *s, const struct req *r)
{
	long cap = S3_BACKOFF_MS << (r->tries < 7 ? r->tries - 1 : 6);

	if (cap > S3_BACKOFF_CAP_MS)
		cap = S3_BACKOFF_CAP_MS;
	s->jitter ^= s->jitter << 13;
	s->jitter ^= s->jitter >> 7;
	s->jitter ^= s->jitter << 17;
	return cap / 2 + (long)(s->jitter % (uint64_t)(cap / 2 + 1));
}

static void backoff(struct req *r, long ms);

/* Whether r may be tried again: retryable, and the wait would still end
 * within the retry budget (counted from its first try). Sets the wait. */
static int
retry_later(struct s3 *s, struct req *r)
{
	long ms;

	if (!retryable(r))
		return 0;
	ms = backoff_ms(s, r);
	if (ms_since(&r->first) + ms > s->retry_ms)
		return 0;
	backoff(r, ms);
	return 1;
}

static void
backoff(struct req *r, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, &r->not_before);
	r->not_before.tv_sec += ms / 1000;
	r->not_before.tv_nsec += (ms % 1000) * 1000000L;
	if (r->not_before.tv_nsec >= 1000000000L) {
		r->not_before.tv_sec++;
		r->not_before.tv_nsec -= 1000000000L;
	}
}

/* The <Code> of an error body, into s->code. */
static void
keep_code(struct s3 *s, const struct req *r)
{
	const char *a, *b;

	s->code[0] = '\0';
	if (r->mem == NULL || (a = strstr(r->mem, "<Code>")) == NULL)
		return;
	a += 6;
	if ((b = strstr(a, "</Code>")) == NULL || b - a >= (long)sizeof(s->code))
		return;
	memcpy(s->code, a, (size_t)(b - a));
	s->code[b - a] = '\0';
}

/* The key r is about, for messages: its URL's path after the bucket. */
static const char *
req_key(const struct s3 *s, const struct req *r)
{
	const char *p;

	if (r->url == NULL)
		return "?";
	p = strstr(r->url, "://");
	p = p ? strchr(p + 3, '/') : NULL;
	if (p == NULL)
		return r->url;
	if (s->path_style && strncmp(p + 1, s->bucket, strlen(s->bucket)) == 0)
		p += 1 + strlen(s->bucket);
	return *p == '/' ? p + 1 : p;
}

/* Runs the n requests of rs to an answer or to a failure not worth
 * retrying, at most s->parallel at a time. 0 when each got an HTTP
 * status; -1 with e set at the first that got none. */
static int
run(struct s3 *s, struct req *rs, size_t n, struct cs_err *e)
{
	size_t active = 0, live = 0, i;
	int still, msgs, rc = 0;
	CURLMsg *m;

	for (i = 0; i < n; i++) {
		rs[i].used = 1;
		rs[i].tries = 0;
		rs[i].status = 0;
		rs[i].not_before.tv_sec = 0;
		rs[i].not_before.tv_nsec = 0;
		live++;
	}
	while (live > 0) {
		/* Start what is due, up to the parallel limit. */
		for (i = 0; i < n && active < (size_t)s->parallel; i++) {
			struct req *r = &rs[i];

			if (!r->used || r->status != 0 || !due(&r->not_before))
				continue;
			if (prepare(s, r) < 0) {
				rc = cs_errc(e, CS_E_NOMEM, "out of memory");
				goto out;
			}
			if (r->tries == 0)
				clock_gettime(CLOCK_MONOTONIC, &r->first);
			r->tries = r->tries + 1;
			r->status = -2;	/* in flight */
			curl_multi_add_handle(s->multi, r->h);
			active++;
		}
		curl_multi_perform(s->multi, &still);
		while ((m = curl_multi_info_read(s->multi, &msgs)) != NULL) {
			struct req *r;
			long code = 0;

			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
			    (char **)&r);
			r->cerr = m->data.result;
			curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
			curl_multi_remove_handle(s->multi, r->h);
			active--;
			r->status = r->cerr == CURLE_OK ? (int)code : -1;
			/* An answer too long for the caller's buffer is an
			 * answer (the object is not what was expected), not a
			 * transfer to retry. */
			if (r->overflow && r->xbuf != NULL) {
				r->status = (int)code;
			} else if (r->overflow) {
				r->status = -1;
				r->cerr = CURLE_WRITE_ERROR;
			}
			if (r->status >= 300)
				keep_code(s, r);
			if (retry_later(s, r)) {
				r->status = 0;
				continue;
			}
			live--;
			s->last_tries = r->tries;
			s->last_ms = ms_since(&r->first);
			if (r->status == -1 && rc == 0)
				rc = cs_errf(e, "%s: endpoint %s: %s %s: %s "
				    "(after %d %s in %.1f s)", s->url,
				    s->endpoint, r->method, req_key(s, r),
				    r->overflow ? "answer too large" :
				    curl_easy_strerror(r->cerr), r->tries,
				    r->tries == 1 ? "try" : "tries",
				    (double)s->last_ms / 1000.0);
			if (rc < 0)
				goto out;
		}
		if (live > 0)
			curl_multi_poll(s->multi, NULL, 0, 50, NULL);
	}
out:
	for (i = 0; i < n; i++)
		if (rs[i].used && rs[i].status == -2) {
			curl_multi_remove_handle(s->multi, rs[i].h);
			rs[i].status = -1;
		}
	return rc;
}

static void
req_free(struct req *r)
{
	if (r->h != NULL)
		curl_easy_cleanup(r->h);
	curl_slist_free_all(r->hdrs);
	free(r->url);
	free(r->mem);
}

static void
set_cond(struct req *r, const char *cond)
{
	if (cond == NULL)
		return;
	if (strcmp(cond, "*") == 0)
		snprintf(r->cond, sizeof(r->cond), "If-None-Match: *");
	else
		snprintf(r->cond, sizeof(r->cond), "If-Match: %s", cond);
	r->cond_hdr = r->cond;
}

/* One request r for key: its HTTP status, or -1 with e set. */
static int
run_one(struct s3 *s, struct req *r, const char *key, struct cs_err *e)
{
	if ((r->url = obj_url(s, key, NULL)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if (run(s, r, 1, e) < 0)
		return -1;
	return r->status;
}

int
s3_get(struct s3 *s, const char *key, size_t cap, char **data, size_t *len,
    char etag[S3_ETAG_MAX], struct cs_err *e)
{
	struct req r;
	int rc = -1;

	memset(&r, 0, sizeof(r));
	*data = NULL;
	*len = 0;
	r.method = "GET";
	strcpy(r.sha, EMPTY_SHA);
	r.mem_cap = 0;
	if ((r.url = obj_url(s, key, NULL)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	r.limit = cap + 1;	/* of a 2xx body; error bodies have their own */
	if (run(s, &r, 1, e) < 0)
		goto out;
	rc = r.status;
	if (etag != NULL)
		snprintf(etag, S3_ETAG_MAX, "%s", r.etag);
	if (rc >= 200 && rc < 300) {
		*data = r.mem != NULL ? r.mem : strdup("");
		*len = r.mem_len;
		r.mem = NULL;
	}
out:
	req_free(&r);
	return rc;
}

int
s3_get_range(struct s3 *s, const char *key, uint64_t off, size_t len,
    void *buf, size_t cap, size_t *got, uint64_t *size, struct cs_err *e)
{
	struct req r;
	int rc = -1;

	memset(&r, 0, sizeof(r));
	*got = 0;
	*size = 0;
	r.method = "GET";
	strcpy(r.sha, EMPTY_SHA);
	r.xbuf = buf;
	r.xcap = cap;
	if (len > 0)
		snprintf(r.range, sizeof(r.range), "Range: bytes=%llu-%llu",
		    (unsigned long long)off,
		    (unsigned long long)(off + len - 1));
	else if (off > 0)
		snprintf(r.range, sizeof(r.range), "Range: bytes=%llu-",
		    (unsigned long long)off);
	if ((rc = run_one(s, &r, key, e)) < 0)
		goto out;
	if (rc >= 200 && rc < 300) {
		*got = r.xlen;
		/* A server that ignores Range answers 200 with the whole
		 * object: its length is the size. */
		*size = r.total > 0 ? r.total : r.xlen;
		if (r.overflow && *size <= cap)
			*size = (uint64_t)cap + 1;
	}
out:
	req_free(&r);
	return rc;
}

/* A conditional PUT was refused (412) on a retry: its earlier try may have
 * been stored with its answer lost (a reset, a timeout), and the object
 * then holds exactly these bytes. 1 when it does (etag set to the stored
 * object's), 0 when it holds something else or is absent (another
 * writer's: the 412 stands), -1 when it could not be read (e set). */
static int
own_put_landed(struct s3 *s, const char *key, const void *data, size_t len,
    char etag[S3_ETAG_MAX], struct cs_err *e)
{
	struct req r;
	int rc = -1, tries = s->last_tries;
	long ms = s->last_ms;

	memset(&r, 0, sizeof(r));
	r.method = "GET";
	strcpy(r.sha, EMPTY_SHA);
	if ((r.url = obj_url(s, key, NULL)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	r.limit = len + 1;	/* a longer object is not ours */
	if (run(s, &r, 1, e) < 0) {
		if (!r.overflow)
			goto out;
		rc = 0;
	} else {
		rc = r.status == 200 && r.mem_len == len &&
		    (len == 0 || memcmp(r.mem, data, len) == 0);
		if (rc == 1 && etag != NULL)
			snprintf(etag, S3_ETAG_MAX, "%s", r.etag);
	}
out:
	/* The PUT's own figures, for s3_status_err's message. */
	s->last_tries = tries;
	s->last_ms = ms;
	req_free(&r);
	return rc;
}

int
s3_put(struct s3 *s, const char *key, const void *data, size_t len,
    const char *cond, char etag[S3_ETAG_MAX], struct cs_err *e)
{
	struct req r;
	uint8_t d[SHA_LEN];
	int rc = -1;

	memset(&r, 0, sizeof(r));
	r.method = "PUT";
	r.body = data;
	r.body_len = len;
	set_cond(&r, cond);
	if (sha256_buf(data, len, d) < 0) {
		cs_errf(e, "sha256 failed");
		goto out;
	}
	sha_hex(d, r.sha);
	if ((rc = run_one(s, &r, key, e)) < 0)
		goto out;
	if (etag != NULL)
		snprintf(etag, S3_ETAG_MAX, "%s", r.etag);
	if (rc == 412 && r.tries > 1 && cond != NULL) {
		int own = own_put_landed(s, key, data, len, etag, e);

		if (own < 0)
			rc = -1;
		else if (own == 1)
			rc = 200;
	}
out:
	req_free(&r);
	return rc;
}

int
s3_delete(struct s3 *s, const char *key, struct cs_err *e)
{
	struct req r;
	int rc = -1;

	memset(&r, 0, sizeof(r));
	r.method = "DELETE";
	strcpy(r.sha, EMPTY_SHA);
	if ((rc = run_one(s, &r, key, e)) < 0)
		goto out;
out:
	req_free(&r);
	return rc;
}

/* The text between <tag> and </tag> in [p, end), or NULL. */
static const char *
xml_field(const char *p, const char *end, const char *tag, size_t *n)
{
	char open[48], close[48];
	const char *a, *b;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	if ((a = strstr(p, open)) == NULL || a >= end)
		return NULL;
	a += strlen(open);
	if ((b = strstr(a, close)) == NULL || b > end)
		return NULL;
	*n = (size_t)(b - a);
	return a;
}

static int64_t
iso_time(const char *p, size_t n)
{
	struct tm tm;
	char buf[32];

	if (n >= sizeof(buf))
		return 0;
	memcpy(buf, p, n);
	buf[n] = '\0';
	memset(&tm, 0, sizeof(tm));
	if (strptime(buf, "%Y-%m-%dT%H:%M:%S", &tm) == NULL)
		return 0;
	return (int64_t)timegm(&tm);
}

int
s3_list(struct s3 *s, const char *sub, struct s3_obj **objs, size_t *n,
    struct cs_err *e)
{
	struct s3_obj *v = NULL, *nv;
	size_t cnt = 0, cap = 0, plen = strlen(s->prefix), fl;
	char *token = NULL, *full = NULL, *esc = NULL, *etok = NULL;
	char *query = NULL, *body = NULL;
	const char *p, *end, *f;
	size_t blen;
	int st, rc = -1, more;

	*objs = NULL;
	*n = 0;
	if ((full = malloc(plen + strlen(sub) + 1)) == NULL)
		goto oom;
	sprintf(full, "%s%s", s->prefix, sub);
	do {
		CURL *h = curl_easy_init();

		if (h == NULL)
			goto oom;
		esc = curl_easy_escape(h, full, 0);
		etok = token ? curl_easy_escape(h, token, 0) : NULL;
		curl_easy_cleanup(h);
		if (esc == NULL || (token && etok == NULL))
			goto oom;
		free(query);
		/* The query in canonical (sorted) order, as SigV4 signs it. */
		if ((query = malloc(strlen(esc) + (etok ? strlen(etok) : 0) +
		    64)) == NULL)
			goto oom;
		sprintf(query, "%s%s%slist-type=2&prefix=%s",
		    etok ? "continuation-token=" : "", etok ? etok : "",
		    etok ? "&" : "", esc);
		curl_free(esc);
		curl_free(etok);
		esc = etok = NULL;
		{
			/* a GET of the bucket with the query */
			struct req r;
			size_t ul = strlen(s->endpoint) + strlen(s->bucket) +
			    strlen(query) + 8;

			memset(&r, 0, sizeof(r));
			r.method = "GET";
			strcpy(r.sha, EMPTY_SHA);
			if ((r.url = malloc(ul)) == NULL) {
				req_free(&r);
				goto oom;
			}
			r.limit = S3_LIST_CAP;
			if (s->path_style)
				snprintf(r.url, ul, "%s/%s?%s", s->endpoint,
				    s->bucket, query);
			else
				snprintf(r.url, ul, "%s/?%s", s->endpoint, query);
			if (run(s, &r, 1, e) < 0) {
				req_free(&r);
				goto out;
			}
			st = r.status;
			free(body);
			body = r.mem;
			blen = r.mem_len;
			r.mem = NULL;
			req_free(&r);
		}
		if (st != 200) {
			s3_status_err(s, "list", sub, st, e);
			goto out;
		}
		if (body == NULL)
			goto bad;
		end = body + blen;
		for (p = body; (p = strstr(p, "<Contents>")) != NULL; ) {
			const char *ce = strstr(p, "</Contents>");

			if (ce == NULL)
				goto bad;
			if (cnt == cap) {
				cap = cap ? cap * 2 : 256;
				if ((nv = realloc(v, cap * sizeof(*v))) == NULL)
					goto oom;
				v = nv;
			}
			if ((f = xml_field(p, ce, "Key", &fl)) == NULL ||
			    fl < plen || strncmp(f, s->prefix, plen) != 0)
				goto bad;
			memset(&v[cnt], 0, sizeof(v[cnt]));
			if ((v[cnt].key = strndup(f + plen, fl - plen)) == NULL)
				goto oom;
			cnt++;
			if ((f = xml_field(p, ce, "Size", &fl)) != NULL)
				v[cnt - 1].size = strtoull(f, NULL, 10);
			if ((f = xml_field(p, ce, "LastModified", &fl)) != NULL)
				v[cnt - 1].mtime = iso_time(f, fl);
			p = ce;
		}
		more = (f = xml_field(body, end, "IsTruncated", &fl)) != NULL &&
		    fl == 4 && strncmp(f, "true", 4) == 0;
		free(token);
		token = NULL;
		if (more) {
			if ((f = xml_field(body, end, "NextContinuationToken",
			    &fl)) == NULL || fl == 0 || fl > 1024)
				goto bad;
			if ((token = strndup(f, fl)) == NULL)
				goto oom;
		}
	} while (more);
	*objs = v;
	*n = cnt;
	v = NULL;
	cnt = 0;
	rc = 0;
	goto out;
bad:
	cs_errf(e, "%s: list %s: malformed answer", s->url, sub);
	goto out;
oom:
	cs_errc(e, CS_E_NOMEM, "out of memory");
out:
	s3_objs_free(v, cnt);
	free(token);
	free(full);
	free(query);
	free(body);
	return rc;
}

void
s3_objs_free(struct s3_obj *objs, size_t n)
{
	size_t i;

	if (objs == NULL)
		return;
	for (i = 0; i < n; i++)
		free(objs[i].key);
	free(objs);
}

int
s3_get_files(struct s3 *s, struct s3_xfer *x, size_t n, struct cs_err *e)
{
	struct req *rs;
	char **tmps;
	size_t i, j, batch = (size_t)s->parallel * 4;
	int rc = -1;

	rs = calloc(batch, sizeof(*rs));
	tmps = calloc(batch, sizeof(*tmps));
	if (rs == NULL || tmps == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i += batch) {
		size_t k = n - i < batch ? n - i : batch;
		int bad = 0;

		for (j = 0; j < k && !bad; j++) {
			struct req *r = &rs[j];
			const char *path = x[i + j].path;

			memset(r, 0, sizeof(*r));
			r->method = "GET";
			strcpy(r->sha, EMPTY_SHA);
			if ((tmps[j] = malloc(strlen(path) + 16)) == NULL ||
			    (r->url = obj_url(s, x[i + j].key, NULL)) == NULL) {
				bad = cs_errc(e, CS_E_NOMEM, "out of memory");
				break;
			}
			sprintf(tmps[j], "%s.tmp", path);
			if ((r->out = fopen(tmps[j], "w+e")) == NULL)
				bad = cs_errno(e, "create %s", tmps[j]);
		}
		if (!bad && run(s, rs, k, e) < 0)
			bad = -1;
		for (j = 0; j < k; j++) {
			struct req *r = &rs[j];

			x[i + j].status = r->status;
			if (r->out != NULL) {
				long pos = ftell(r->out);

				x[i + j].bytes = pos > 0 ? (uint64_t)pos : 0;
				if (fclose(r->out) != 0 && !bad)
					bad = cs_errno(e, "write %s", tmps[j]);
				r->out = NULL;
			}
			if (!bad && r->status >= 200 && r->status < 300) {
				if (rename(tmps[j], x[i + j].path) < 0)
					bad = cs_errno(e, "rename %s", tmps[j]);
			} else if (tmps[j] != NULL) {
				unlink(tmps[j]);
			}
			req_free(r);
			free(tmps[j]);
			tmps[j] = NULL;
		}
		if (bad)
			goto out;
	}
	rc = 0;
out:
	free(rs);
	free(tmps);
	return rc;
}

int
s3_status_err(struct s3 *s, const char *what, const char *key, int status,
    struct cs_err *e)
{
	if (strcmp(s->code, "NoSuchBucket") == 0)
		return cs_errc(e, CS_E_NOREPO, "%s: bucket %s does not exist",
		    s->url,
		    s->bucket);
	if (status == 403)
		return cs_errc(e, CS_E_AUTH, "%s: %s %s: access denied (%s): "
		    "check "
		    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", s->url, what,
		    key, s->code[0] ? s->code : "403");
	if (s->last_tries > 1)
		return cs_errf(e, "%s: %s %s: HTTP %d%s%s (after %d tries in "
		    "%.1f s)", s->url, what, key, status, s->code[0] ? " " : "",
		    s->code, s->last_tries, (double)s->last_ms / 1000.0);
	return cs_errf(e, "%s: %s %s: HTTP %d%s%s", s->url, what, key, status,
	    s->code[0] ? " " : "", s->code);
}
