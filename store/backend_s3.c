/* backend_s3.c - the backend of a repository on an object store: a key
 * is the object PREFIX/KEY of the bucket, read with (ranged) GETs.
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
	free(sb);
}

static const struct store_backend_ops s3b_ops = { .get = s3b_get,
    .where = s3b_where,
    .close = s3b_close };

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
	    (sb->url = strdup(url)) == NULL ||
	    dup_or_null(endpoint, &sb->endpoint) < 0 ||
	    dup_or_null(region, &sb->region) < 0) {
		if (sb != NULL) {
			free(sb->url);
			free(sb->endpoint);
			free(sb);
		}
		s3_close(first);
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	}
	pthread_mutex_init(&sb->mu, NULL);
	sb->idle[sb->nidle++] = first;
	sb->b.ops = &s3b_ops;
	*out = &sb->b;
	return 0;
}
