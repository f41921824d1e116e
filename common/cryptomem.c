/* cryptomem.c - OpenSSL's allocations: from CRYPTOMEM_BIG bytes up, a
 * bigbuf mapping remembered in a small table (its length is needed to
 * unmap it); everything else straight to the C library, untouched. */
#include "cryptomem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "bigbuf.h"

/* One huge page: below it a mapping of its own buys nothing. */
#define CRYPTOMEM_BIG ((size_t)2 << 20)
/* Live big allocations at a time; OpenSSL makes one (scrypt's), so more
 * than enough. Beyond it allocations go to malloc. */
#define NBIG 8

static struct {
	void *p;
	size_t len;
} big[NBIG];
static pthread_mutex_t big_mu = PTHREAD_MUTEX_INITIALIZER;
/* Entries in use: while 0 (nearly always) a free skips the lock. */
static atomic_int nbig;
static atomic_long nallocs;

static void *
cm_malloc(size_t n, const char *file, int line)
{
	void *p;
	int i;

	(void)file;
	(void)line;
	if (n < CRYPTOMEM_BIG || (p = bigbuf_alloc(n)) == NULL)
		return malloc(n);
	pthread_mutex_lock(&big_mu);
	for (i = 0; i < NBIG && big[i].p != NULL; i++)
		;
	if (i < NBIG) {
		big[i].p = p;
		big[i].len = n;
		atomic_fetch_add(&nbig, 1);
	}
	pthread_mutex_unlock(&big_mu);
	if (i == NBIG) {
		bigbuf_free(p, n);
		return malloc(n);
	}
	atomic_fetch_add(&nallocs, 1);
	return p;
}

/* p's length if it is a big allocation (removed from the table when
 * take), else 0. */
static size_t
big_len(void *p, int take)
{
	size_t len = 0;
	int i;

	if (atomic_load(&nbig) == 0)
		return 0;
	pthread_mutex_lock(&big_mu);
	for (i = 0; i < NBIG; i++)
		if (big[i].p == p) {
			len = big[i].len;
			if (take) {
				big[i].p = NULL;
				atomic_fetch_sub(&nbig, 1);
			}
			break;
		}
	pthread_mutex_unlock(&big_mu);
	return len;
}

static void
cm_free(void *p, const char *file, int line)
{
	size_t len;

	(void)file;
	(void)line;
	if (p == NULL)
		return;
	if ((len = big_len(p, 1)) > 0)
		bigbuf_free(p, len);
	else
		free(p);
}

/* A small block stays the C library's whatever it grows to (its old
 * length is not known here); a big one is copied out. */
static void *
cm_realloc(void *p, size_t n, const char *file, int line)
{
	size_t len;
	void *q;

	if (p == NULL)
		return cm_malloc(n, file, line);
	if ((len = big_len(p, 0)) == 0)
		return realloc(p, n);
	if (n == 0) {
		cm_free(p, file, line);
		return NULL;
	}
	if ((q = cm_malloc(n, file, line)) == NULL)
		return NULL;
	memcpy(q, p, len < n ? len : n);
	cm_free(p, file, line);
	return q;
}

int
cryptomem_init(void)
{
	return CRYPTO_set_mem_functions(cm_malloc, cm_realloc, cm_free) == 1 ?
	    0 : -1;
}

long
cryptomem_big_allocs(void)
{
	return atomic_load(&nallocs);
}
