/* direct.h - the chunk copy's O_DIRECT writer of temp files (direct.c):
 * whole aligned pieces direct, the tail buffered, buffered throughout
 * where the filesystem refuses O_DIRECT. Internal to store/. */
#ifndef CUTSNAP_STORE_DIRECT_H
#define CUTSNAP_STORE_DIRECT_H

#include <stddef.h>
#include <stdint.h>

/* n rounded up to the direct writes' alignment. */
size_t store_direct_align(size_t n);
/* Create the temp file tmp, with O_DIRECT where the filesystem has it;
 * *direct says which. The descriptor, or -1 with errno set. */
int store_direct_create(const char *tmp, int *direct);
/* Write buf[0, len) to the new file tfd. 0, or -1 with errno set. */
int store_direct_write(int tfd, int direct, const uint8_t *buf, size_t len);

#endif
