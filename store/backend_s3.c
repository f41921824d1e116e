/* backend_s3.c - the backend of a repository on an object store: a key
 * is the object PREFIX/KEY of the bucket, read with (ranged) GETs,
 * written with PUTs (If-None-Match: * to create, If-Match: ETAG to
 * replace a version read), listed with ListObjectsV2.
 *
 * An s3 handle (s3.c) is one curl multi handle, for one thread at a
 * time; verify's and restore's workers read in parallel, so each call
 * takes an idle handle (or opens one) and gives it back: as many
 * connections as workers, kept alive from one chunk to the next. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "../s3/s3.h"

#define S3B_IDLE_MAX 16

struct s3_backend {
	struct store_backend b;
	char *url, *endpoint, *region;	/* for the handles it opens */
	/* What the first handle resolved them to (for agents). */
	char *endpoint_used, *region_used;
	pthread_mutex_t mu;
	struct s3 *idle[S3B_IDLE_MAX];
	size_t nidle;
};

static void
s3b_where(struct store_backend *b, const char *key, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", ((struct s3_backend *)b)->url, key);
}

static struct s3 *
take(struct s3_backend *sb, struct cs_err *e)
{
	struct s3 *s = NULL;

	pthread_mutex_lock(&sb->mu);
	if (sb->nidle > 0)
		s = sb->idle[--sb->nidle];
	pthread_mutex_unlock(&sb->mu);
	if (s == NULL && s3_open_at(sb->url, sb->endpoint, sb->region, &s,
	    e) < 0)
		return NULL;
	return s;
}

static void
give_back(struct s3_backend *sb, struct s3 *s)
{
	pthread_mutex_lock(&sb->mu);
	if (sb->nidle < S3B_IDLE_MAX) {
		sb->idle[sb->nidle++] = s;
		s = NULL;
	}
	pthread_mutex_unlock(&sb->mu);
	s3_close(s);
}

static int
s3b_get(struct store_backend *b, const char *key, uint64_t off, size_t len,
    void *buf, size_t cap, size_t *got, uint64_t *size, struct cs_err *e)
{
	struct s3_backend *sb = (struct s3_backend *)b;
	char where[512];
	struct s3 *s;
	int st, rc = -1;

	*got = 0;
	*size = 0;
	if ((s = take(sb, e)) == NULL)
		return -1;
	st = s3_get_range(s, key, off, len, buf, cap, got, size, e);
	if (st == 200 || st == 206) {
		atomic_fetch_add(&b->gets, 1);
		atomic_fetch_add(&b->bytes, *got);
		rc = 0;
	} else if (st == 416) {
		/* No byte at off: an empty object, or off past its end. */
		rc = 0;
	} else if (st == 404) {
		s3b_where(b, key, where, sizeof(where));
		cs_errc(e, CS_E_NOTFOUND, "%s: no such object", where);
	} else if (st >= 0) {
		s3_status_err(s, "get", key, st, e);
	}
	give_back(sb, s);
	return rc;
}

/* A status the caller did not expect: the message, and its kind. A
 * missing bucket (no repository) and 403 (auth) have theirs from the
 * client; any other 400 or 401 is the user's configuration (a bad
 * region, a malformed key id), a usage error. */
static int
status_fail(struct s3 *s, const char *what, const char *key, int st,
    struct cs_err *e)
{
	s3_status_err(s, what, key, st, e);
	if ((st == 400 || st == 401) && cs_err_code(e) == CS_E_FAILED)
		cs_errkind(e, CS_E_USAGE);
	return -1;
}

static int
s3b_read(struct store_backend *b, const char *key, size_t cap, char **data,
    size_t *len, char tag[STORE_TAG_MAX], struct cs_err *e)
{
	struct s3_backend *sb = (struct s3_backend *)b;
	char etag[S3_ETAG_MAX], where[512];
	struct s3 *s;
	int st, rc = -1;

	*data = NULL;
	*len = 0;
	if ((s = take(sb, e)) == NULL)
		return -1;
	st = s3_get(s, key, cap, data, len, etag, e);
	if (st >= 200 && st < 300) {
		atomic_fetch_add(&b->gets, 1);
		atomic_fetch_add(&b->bytes, *len);
		if (tag != NULL)
			snprintf(tag, STORE_TAG_MAX, "%s", etag);
		rc = 0;
	} else if (st == 404) {
		s3b_where(b, key, where, sizeof(where));
		cs_errc(e, CS_E_NOTFOUND, "%s: no such object", where);
	} else if (st >= 0) {
		status_fail(s, "get", key, st, e);
	}
	give_back(sb, s);
	return rc;
}

static int
s3b_get_file(struct store_backend *b, const char *key, const char *path,
    struct cs_err *e)
{
	struct s3_backend *sb = (struct s3_backend *)b;
	struct s3_xfer x = { key, path, 0, 0 };
	char where[512];
	struct s3 *s;
	int rc = -1;

	if ((s = take(sb, e)) == NULL)
		return -1;
	if (s3_get_files(s, &x, 1, e) < 0)
		goto out;
	if (x.status == 404) {
		s3b_where(b, key, where, sizeof(where));
		cs_errc(e, CS_E_NOTFOUND, "%s is missing from the bucket",
		    where);
	} else if (x.status != 200) {
		status_fail(s, "get", key, x.status, e);
	} else {
		atomic_fetch_add(&b->gets, 1);
		atomic_fetch_add(&b->bytes, x.bytes);
		rc = 0;
	}
out:
	give_back(sb, s);
	return rc;
}

static int
s3b_put(struct store_backend *b, const char *key, const void *data,
    size_t len, enum store_put_cond cond, const char *tag_in,
    char tag_out[STORE_TAG_MAX], struct cs_err *e)
{
	struct s3_backend *sb = (struct s3_backend *)b;
	char etag[S3_ETAG_MAX] = "", where[512];
	const char *c = cond == STORE_PUT_CREATE ? "*" :
	    cond == STORE_PUT_IFMATCH ? tag_in : NULL;
	struct s3 *s;
	int st, rc = -1;

	if ((s = take(sb, e)) == NULL)
		return -1;
	st = s3_put(s, key, data, len, c, etag, e);
	if (st >= 200 && st < 300) {
		if (tag_out != NULL)
			snprintf(tag_out, STORE_TAG_MAX, "%s", etag);
		rc = 0;
	} else if (st == 412 || (st == 404 && cond == STORE_PUT_IFMATCH)) {
		/* s3_put read back a 412 after a retry: another writer's. */
		s3b_where(b, key, where, sizeof(where));
		cs_errc(e, CS_E_EXISTS, "%s: %s", where, cond ==
		    STORE_PUT_CREATE ? "exists already" : "was changed or "
		    "removed by another writer");
	} else if (st >= 0) {
		status_fail(s, "put", key, st, e);
	}
	give_back(sb, s);
	return rc;
}

static int
s3b_list(struct store_backend *b, const char *prefix,
    struct store_obj **objs, size_t *n, struct cs_err *e)
{
	struct s3_backend *sb = (struct s3_backend *)b;
	struct s3_obj *o = NULL;
	struct store_obj *v = NULL;
	size_t no = 0, i;
	struct s3 *s;
	int rc = -1;

	*objs = NULL;
	*n = 0;
	if ((s = take(sb, e)) == NULL)
		return -1;
	if (s3_list(s, prefix, &o, &no, e) < 0)
		goto out;
	if ((v = calloc(no + 1, sizeof(*v))) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < no; i++) {
		v[i].key = o[i].key;
		v[i].size = o[i].size;
		v[i].mtime = o[i].mtime;
		o[i].key = NULL;
	}
	*objs = v;
	*n = no;
	rc = 0;
out:
	s3_objs_free(o, no);
	give_back(sb, s);
	return rc;
}

static int
s3b_del(struct store_backend *b, const char *key, struct cs_err *e)
{
	struct s3_backend *sb = (struct s3_backend *)b;
	struct s3 *s;
	int st, rc = -1;

	if ((s = take(sb, e)) == NULL)
		return -1;
	st = s3_delete(s, key, e);
	if (st == 200 || st == 204 || st == 404)
		rc = 0;
	else if (st >= 0)
		status_fail(s, "delete", key, st, e);
	give_back(sb, s);
	return rc;
}

static void
s3b_close(struct store_backend *b)
{
	struct s3_backend *sb = (struct s3_backend *)b;

	while (sb->nidle > 0)
		s3_close(sb->idle[--sb->nidle]);
	pthread_mutex_destroy(&sb->mu);
	free(sb->url);
	free(sb->endpoint);
	free(sb->region);
	free(sb->endpoint_used);
	free(sb->region_used);
	free(sb);
}

static const struct store_backend_ops s3b_ops = {
	.get = s3b_get,
	.read = s3b_read,
	.get_file = s3b_get_file,
	.put = s3b_put,
	.list = s3b_list,
	.del = s3b_del,
	.where = s3b_where,
	.close = s3b_close,
};

static int
dup_or_null(const char *s, char **out)
{
	*out = NULL;
	return s == NULL || *s == '\0' || (*out = strdup(s)) != NULL ? 0 : -1;
}

int
store_backend_s3(const char *url, const char *endpoint, const char *region,
    struct store_backend **out, struct cs_err *e)
{
	struct s3_backend *sb;
	struct s3 *first;

	*out = NULL;
	/* The first handle checks the URL and the credentials now, not at
	 * the first chunk. */
	if (s3_open_at(url, endpoint, region, &first, e) < 0)
		return -1;
	if ((sb = calloc(1, sizeof(*sb))) == NULL ||
	    (sb->url = strdup(s3_url(first))) == NULL ||
	    dup_or_null(endpoint, &sb->endpoint) < 0 ||
	    dup_or_null(region, &sb->region) < 0 ||
	    (sb->endpoint_used = strdup(s3_endpoint(first))) == NULL ||
	    (sb->region_used = strdup(s3_region(first))) == NULL) {
		if (sb != NULL) {
			free(sb->url);
			free(sb->endpoint);
			free(sb->region);
			free(sb->endpoint_used);
			free(sb);
		}
		s3_close(first);
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	}
	pthread_mutex_init(&sb->mu, NULL);
	sb->idle[sb->nidle++] = first;
	sb->b.ops = &s3b_ops;
	sb->b.parallel = s3_parallel_of(first);
	*out = &sb->b;
	return 0;
}

static const struct s3_backend *
as_s3(const struct store_backend *b)
{
	return b != NULL && b->ops == &s3b_ops ?
	    (const struct s3_backend *)b : NULL;
}

const char *
store_backend_s3_url(const struct store_backend *b)
{
	return as_s3(b) ? as_s3(b)->url : NULL;
}

const char *
store_backend_s3_endpoint(const struct store_backend *b)
{
	const struct s3_backend *sb = as_s3(b);

	return sb == NULL ? NULL : sb->endpoint_used;
}

const char *
store_backend_s3_region(const struct store_backend *b)
{
	const struct s3_backend *sb = as_s3(b);

	return sb == NULL ? NULL : sb->region_used;
}
