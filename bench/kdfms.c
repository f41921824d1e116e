/* kdfms.c - the key-derivation part of the encrypted rows' floors: one
 * scrypt derivation as cutsnap makes it (aead_scrypt, the product's own
 * code, V in huge pages as in cutsnap) with the parameters a
 * repository's key records. Prints the time taken in ms. Usage: kdfms N R P */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "crypto/aead.h"
#include "crypto/cryptomem.h"

int
main(int argc, char **argv)
{
	static const uint8_t salt[17] = "0123456789abcdef";
	uint8_t k[AEAD_KEY_LEN];
	struct timespec a, b;
	struct cs_err e;

	if (argc != 4) {
		fprintf(stderr, "usage: kdfms N R P\n");
		return 2;
	}
	/* As cmd/main.c does: V in huge pages. */
	if (cryptomem_init() != 0) {
		fprintf(stderr, "kdfms: cryptomem_init refused\n");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (aead_scrypt("x", 1, salt, 16,
	    strtoull(argv[1], NULL, 10), (uint32_t)strtoul(argv[2], NULL, 10),
	    (uint32_t)strtoul(argv[3], NULL, 10), k, &e) != 0) {
		fprintf(stderr, "kdfms: %s\n", e.msg);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.0f\n", (double)(b.tv_sec - a.tv_sec) * 1e3 +
	    (double)(b.tv_nsec - a.tv_nsec) / 1e6);
	return 0;
}
