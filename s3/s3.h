/* s3.h - a small S3 client over libcurl: SigV4 signing by curl
 * (CURLOPT_AWS_SIGV4), every request carrying x-amz-content-sha256 of its
 * body, parallel transfers through one curl multi handle, retries with
 * backoff on 5xx and timeouts. s3.c and curl_dl.c, which loads libcurl
 * on first use, are the only modules including curl.h.
 *
 * Endpoint and credentials come from the environment the AWS tools use:
 * AWS_ENDPOINT_URL (path-style addressing when set, else
 * https://BUCKET.s3.REGION.amazonaws.com), AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION (default
 * us-east-1). Object keys given to these functions are relative to the
 * URL's prefix. */
#ifndef CUTSNAP_S3_H
#define CUTSNAP_S3_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/err.h"

#define S3_ETAG_MAX 128
#define S3_KEY_MAX 256	/* of an object key given to the pipe */

struct s3;	/* opaque */

/* One object of a listing. */
struct s3_obj {
	char *key;		/* heap, relative to the prefix */
	uint64_t size;
	int64_t mtime;		/* LastModified, seconds since the epoch */
};

/* One file download of s3_get_files. */
struct s3_xfer {
	const char *key;	/* borrowed, relative to the prefix */
	const char *path;	/* borrowed: the local file */
	int status;		/* out: HTTP status of the last attempt */
	uint64_t bytes;		/* out: body bytes sent or received */
};

/* Parses "s3://BUCKET[/PREFIX]" and reads the environment. -1 with e set
 * (a usage error: bad URL, no credentials). Free with s3_close. */
int s3_open(const char *url, struct s3 **out, struct cs_err *e);
/* The same, where endpoint and region (either may be NULL) stand in for
 * AWS_ENDPOINT_URL and AWS_REGION when the environment has none. */
int s3_open_at(const char *url, const char *endpoint, const char *region,
    struct s3 **out, struct cs_err *e);
void s3_close(struct s3 *s);	/* accepts NULL */
/* The endpoint requests go to and the region they are signed for. */
const char *s3_endpoint(const struct s3 *s);
const char *s3_region(const struct s3 *s);
const char *s3_url(const struct s3 *s);	/* "s3://bucket/prefix" */
/* How many requests it runs at once (CUTSNAP_S3_PARALLEL, default 16). */
int s3_parallel_of(const struct s3 *s);

/* Single requests. Each returns the HTTP status (2xx, 404, 412, ...) or
 * -1 with e set when no answer came (unreachable, timed out after the
 * retries). A status that is neither 2xx nor the ones the caller expects
 * is turned into a message by s3_status_err. */
/* GET into *data (malloc'd, NUL-terminated, at most cap bytes); etag
 * (may be NULL) receives the ETag without quotes. */
int s3_get(struct s3 *s, const char *key, size_t cap, char **data,
    size_t *len, char etag[S3_ETAG_MAX], struct cs_err *e);
/* GET of bytes [off, off + len) of key (len 0: to its end) into buf,
 * which takes at most cap bytes; *got is how many came, *size the
 * object's whole size (from the answer's Content-Range or
 * Content-Length). An answer longer than cap is cut there and *size
 * says it is larger than cap. Safe to call from one thread per handle.
 * The HTTP status, or -1 with e set. */
int s3_get_range(struct s3 *s, const char *key, uint64_t off, size_t len,
    void *buf, size_t cap, size_t *got, uint64_t *size, struct cs_err *e);
/* PUT; cond NULL, "*" (If-None-Match: *, 412 when the key exists) or an
 * ETag (If-Match, 412 when the object changed). */
int s3_put(struct s3 *s, const char *key, const void *data, size_t len,
    const char *cond, char etag[S3_ETAG_MAX], struct cs_err *e);
int s3_delete(struct s3 *s, const char *key, struct cs_err *e);
/* ListObjectsV2 of every key under sub (relative to the prefix), all pages;
 * *objs is malloc'd, free with s3_objs_free. 0 / -1 with e set. */
int s3_list(struct s3 *s, const char *sub, struct s3_obj **objs, size_t *n,
    struct cs_err *e);
void s3_objs_free(struct s3_obj *objs, size_t n);

/* Downloads (into path, via a temp file and rename; 404 leaves no file)
 * up to s3_parallel_of(s) at a time. 0 when every transfer got an answer
 * (each x[i].status says which), -1 with e set otherwise. */
int s3_get_files(struct s3 *s, struct s3_xfer *x, size_t n, struct cs_err *e);

/* Fills e with the message for an unexpected status of key ("bucket B
 * does not exist", "access denied: check AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY", ...) from the last answer's error code; -1. */
int s3_status_err(struct s3 *s, const char *what, const char *key, int status,
    struct cs_err *e);

#endif
