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
 * V itself, 340-385 ms. */
#ifndef CUTSNAP_CRYPTOMEM_H
#define CUTSNAP_CRYPTOMEM_H

/* Install the functions (CRYPTO_set_mem_functions). Call it first in
 * main, before anything uses OpenSSL: once OpenSSL has allocated with
 * its own, it refuses, and this returns -1 (everything still works, V
 * in small pages). */
int cryptomem_init(void);
/* Allocations that went to bigbuf since the start: what the tests check. */
long cryptomem_big_allocs(void);

#endif
