/* cryptomem.h - OpenSSL's allocations through our functions, so that its
 * large ones (scrypt's V: 64 MiB for a repository's password) come from
 * bigbuf, in huge pages.
 *
 * Why: scrypt reads V at random, 1 KiB at a time; in 4 KiB pages nearly
 * every read misses the TLB, and on a virtual machine each miss walks two
 * levels of page tables. Measured on the 2-vCPU bench machine, N=2^16,
 * r=8 (one derivation per process, 8 runs each): OpenSSL's scrypt with V
 * in huge pages 134-153 ms (two runs 214 and 303: no huge page free at
 * once), in 4 KiB pages 402-429 ms; libsodium's SSE2 scrypt, which maps
 * V itself, 340-385 ms.
 *
 * And why a thread faults V in: on that machine a process's first huge
 * pages are often cold (the hypervisor took them back when they were
 * free), and faulting 64 MiB of them in took 5-150 ms on top of the
 * derivation, in the one thread that derives. scrypt fills V from the
 * bottom; a thread of its own faults it in ahead of it, one huge page at
 * a time, on another core (cryptomem.c: fill_ahead says in which order).
 * Measured there, 8 derivations each, old and new in turn 3 s apart (so
 * cold): 236-306 ms (median 287) with V prefaulted before the
 * derivation, 201-226 ms (median 219) with the filler; back to back, both
 * 134-181 ms. */
#ifndef CUTSNAP_CRYPTOMEM_H
#define CUTSNAP_CRYPTOMEM_H

/* Install the functions (CRYPTO_set_mem_functions). Call it first in
 * main, before anything uses OpenSSL: once OpenSSL has allocated with
 * its own, it refuses, and this returns -1 (everything still works, V
 * in small pages). */
int cryptomem_init(void);
/* Allocations that went to bigbuf since the start: what the tests check. */
long cryptomem_big_allocs(void);
/* Filler threads started since the start (none on one core). */
long cryptomem_fillers(void);

#endif
