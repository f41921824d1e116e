/* bigbuf.c - chunk-sized buffers backed by huge pages where the kernel
 * allows (bigbuf.h says why). */
#include "bigbuf.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* Linux 5.14; older kernels refuse it (EINVAL) and the pages fault in
 * on first touch, as with malloc. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define HUGE_SZ ((size_t)2 << 20)

static atomic_long live;

/* len rounded up to whole pages (what is mapped and unmapped). */
static size_t
map_len(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) / page * page;
}

/* bigbuf_alloc's mapping, prefaulted when populate. */
static void *
map_buf(size_t len, int populate)
{
	size_t n, extra;
	uint8_t *p, *q;

	if (len > SIZE_MAX - 2 * HUGE_SZ) {
		errno = EINVAL;
		return NULL;
	}
	n = map_len(len > 0 ? len : 1);
	/* Below one huge page, alignment buys nothing. */
	extra = n >= HUGE_SZ ? HUGE_SZ : 0;
	p = mmap(NULL, n + extra, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	q = p;
	if (extra > 0) {
		q = (uint8_t *)(((uintptr_t)p + HUGE_SZ - 1) & ~(HUGE_SZ - 1));
		/* Give back the ends outside the aligned range. */
		if (q > p)
			(void)munmap(p, (size_t)(q - p));
		if (q + n < p + n + extra)
			(void)munmap(q + n, (size_t)(p + n + extra - (q + n)));
		/* Advice only: a kernel without THP (or with it off) says
		 * EINVAL, and the buffer stays in small pages. */
		(void)madvise(q, n, MADV_HUGEPAGE);
	}
	/* One call instead of a fault per page (or per huge page). */
	if (populate)
		(void)madvise(q, n, MADV_POPULATE_WRITE);
	atomic_fetch_add(&live, 1);
	return q;
}

void *
bigbuf_alloc(size_t len)
{
	return map_buf(len, 1);
}

void *
bigbuf_alloc_lazy(size_t len)
{
	return map_buf(len, 0);
}

int
bigbuf_populate(void *p, size_t off, size_t len)
{
	return madvise((uint8_t *)p + off, len, MADV_POPULATE_WRITE);
}

void
bigbuf_free(void *p, size_t len)
{
	if (p == NULL)
		return;
	(void)munmap(p, map_len(len > 0 ? len : 1));
	atomic_fetch_sub(&live, 1);
}

long
bigbuf_live(void)
{
	return atomic_load(&live);
}
