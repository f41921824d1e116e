/* cryptomem.c - OpenSSL's allocations: from CRYPTOMEM_BIG bytes up, a
 * bigbuf mapping remembered in a small table (its length is needed to
 * unmap it), its pages faulted in by a thread of its own, ahead of the
 * caller filling it from the bottom (cryptomem.h says why);
 * everything else straight to the C library, untouched. */
#include "cryptomem.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "../lib/bigbuf.h"

/* One huge page: below it a mapping of its own buys nothing. */
#define CRYPTOMEM_BIG ((size_t)2 << 20)
/* Live big allocations at a time; OpenSSL makes one (scrypt's), so more
 * than enough. Beyond it allocations go to malloc. */
#define NBIG 8

/* The populating thread's share: the whole mapping, one huge page at a
 * time (fill_ahead says in which order), until it is done or stop is
 * set. */
struct filler {
	uint8_t *p;
	size_t len;
	atomic_int stop;
	pthread_t tid;
};

static struct {
	void *p;
	size_t len;
	struct filler *f;	/* or NULL: prefaulted in bigbuf_alloc */
} big[NBIG];
static pthread_mutex_t big_mu = PTHREAD_MUTEX_INITIALIZER;
/* Entries in use: while 0 (nearly always) a free skips the lock. */
static atomic_int nbig;
static atomic_long nallocs;
static atomic_long nfillers;

/* Fault in [lo, hi) of f's mapping one huge page at a time, upwards
 * (up) or downwards: 0, or -1 when stopped or the call failed (a kernel
 * without it: the rest faults in on first touch). Pages the caller has
 * touched already cost a page-table walk each. */
static int
fill_range(struct filler *f, size_t lo, size_t hi, int up)
{
	size_t a, b;

	while (lo < hi && !atomic_load(&f->stop)) {
		if (up) {
			a = lo;
			b = hi - lo < CRYPTOMEM_BIG ? hi : lo + CRYPTOMEM_BIG;
			lo = b;
		} else {
			a = (hi - 1) / CRYPTOMEM_BIG * CRYPTOMEM_BIG;
			if (a < lo)
				a = lo;
			b = hi;
			hi = a;
		}
		if (bigbuf_populate(f->p, a, b - a) != 0)
			return -1;
	}
	return atomic_load(&f->stop) ? -1 : 0;
}

/* The filler: from a quarter of the way up to the top, then from that
 * quarter down. The caller writes from the bottom, faulting in what it
 * reaches first; faulting is the slower of the two here (cold pages:
 * about 2.4 ms per MiB against scrypt's 1.1 ms per MiB of writing V), so
 * the filler cannot stay ahead from the bottom. Started higher up, it
 * works ahead of the caller until the top, the caller faulting in the
 * first quarter itself, and both end their part of the filling about
 * when V is written (a model of the two rates puts that at 28%). From the
 * top down instead, they met a third of the way up and the filler then
 * idled while the caller wrote the rest: a cold derivation's median 275
 * ms against 248 from a quarter up (docs/perf/profiles.md, performance XII). */
static void *
fill_ahead(void *arg)
{
	struct filler *f = arg;
	size_t start = f->len / CRYPTOMEM_BIG / 4 * CRYPTOMEM_BIG;

	if (fill_range(f, start, f->len, 1) == 0)
		(void)fill_range(f, 0, start, 0);
	return NULL;
}

/* A mapping of n bytes, and in *fp its filler (NULL when it was
 * prefaulted here: one core, or no thread to be had), or NULL. */
static void *
big_alloc(size_t n, struct filler **fp)
{
	struct filler *f;
	sigset_t all, old;
	void *p;
	int rc;

	*fp = NULL;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 ||
	    (f = calloc(1, sizeof(*f))) == NULL)
		return bigbuf_alloc(n);
	if ((p = bigbuf_alloc_lazy(n)) == NULL) {
		free(f);
		return NULL;
	}
	f->p = p;
	f->len = n;
	/* Signals stay the caller's threads' business. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&f->tid, NULL, fill_ahead, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		free(f);
		(void)bigbuf_populate(p, 0, n);
		return p;
	}
	atomic_fetch_add(&nfillers, 1);
	*fp = f;
	return p;
}

/* Stop and reap filler f (NULL: none). */
static void
big_unfill(struct filler *f)
{
	if (f == NULL)
		return;
	atomic_store(&f->stop, 1);
	pthread_join(f->tid, NULL);
	free(f);
}

static void *
cm_malloc(size_t n, const char *file, int line)
{
	struct filler *f;
	void *p;
	int i;

	(void)file;
	(void)line;
	if (n < CRYPTOMEM_BIG || (p = big_alloc(n, &f)) == NULL)
		return malloc(n);
	pthread_mutex_lock(&big_mu);
	for (i = 0; i < NBIG && big[i].p != NULL; i++)
		;
	if (i < NBIG) {
		big[i].p = p;
		big[i].len = n;
		big[i].f = f;
		atomic_fetch_add(&nbig, 1);
	}
	pthread_mutex_unlock(&big_mu);
	if (i == NBIG) {
		big_unfill(f);
		bigbuf_free(p, n);
		return malloc(n);
	}
	atomic_fetch_add(&nallocs, 1);
	return p;
}

/* p's length if it is a big allocation, else 0; when fp is not NULL,
 * the entry is taken out of the table and *fp is its filler. */
static size_t
big_len(void *p, struct filler **fp)
{
	size_t len = 0;
	int i;

	if (atomic_load(&nbig) == 0)
		return 0;
	pthread_mutex_lock(&big_mu);
	for (i = 0; i < NBIG; i++)
		if (big[i].p == p) {
			len = big[i].len;
			if (fp != NULL) {
				*fp = big[i].f;
				big[i].p = NULL;
				big[i].f = NULL;
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
	struct filler *f = NULL;
	size_t len;

	(void)file;
	(void)line;
	if (p == NULL)
		return;
	if ((len = big_len(p, &f)) > 0) {
		/* The filler must be gone before the range can be reused. */
		big_unfill(f);
		bigbuf_free(p, len);
	} else {
		free(p);
	}
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
	if ((len = big_len(p, NULL)) == 0)
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

long
cryptomem_fillers(void)
{
	return atomic_load(&nfillers);
}
