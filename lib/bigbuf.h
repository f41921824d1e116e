/* bigbuf.h - buffers of megabytes (a chunk, its object), each mapped on
 * its own, page-aligned (so fit for O_DIRECT) and, from 2 MiB up,
 * aligned to 2 MiB and offered to the kernel for transparent huge pages.
 *
 * Why: snapshot, verify and restore are one-shot processes that fault
 * their chunk buffers in afresh every run, and on a virtual machine a
 * page fault is dear. Measured on the 2-vCPU machine the bench runs on:
 * twelve 4 MiB buffers touched through 4 KiB faults took 120-134 ms,
 * prefaulted with MADV_POPULATE_WRITE 63-65 ms, backed by huge pages
 * 3.4-4.1 ms (a first run that had to compact memory, 75 ms). Where the
 * kernel gives no huge pages the buffer is prefaulted in one call. */
#ifndef CUTSNAP_BIGBUF_H
#define CUTSNAP_BIGBUF_H

#include <stddef.h>

/* len bytes (0 counts as 1), zeroed, aligned to at least the page size, or
 * NULL (errno set) when the mapping fails. */
void *bigbuf_alloc(size_t len);
/* As bigbuf_alloc, but not prefaulted: its pages fault in on first
 * touch, or through bigbuf_populate. */
void *bigbuf_alloc_lazy(size_t len);
/* Prefault [off, off + len) of p (off page-aligned): 0, or -1 with errno
 * set (EINVAL on a kernel before 5.14; the pages then fault in on first
 * touch). */
int bigbuf_populate(void *p, size_t off, size_t len);
/* Unmap p, from bigbuf_alloc with the same len; NULL is ignored. */
void bigbuf_free(void *p, size_t len);
/* Buffers allocated and not yet freed, in this process: what the tests
 * check to find a leak, as LeakSanitizer does not see mappings. */
long bigbuf_live(void);

#endif
