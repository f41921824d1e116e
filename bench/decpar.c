/* decpar.c - the decoding floor of the encrypted verify rows: the files'
 * bytes cut in 4 MiB pieces (as cutsnap cuts its chunks), each compressed
 * as cutsnap compresses a chunk (chunkobj_zstd_frame; kept as it is when
 * that does not make it smaller), untimed; then, timed, N threads take
 * the pieces in turn and decompress and SHA-256 each (OpenSSL EVP, as
 * cutsnap hashes): the least CPU work a verify of those bytes does
 * besides reading and decrypting them, on every core. Prints the time in
 * ms. Usage: decpar N FILE... */
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "proto/chunkobj.h"

#define PIECE (4u << 20)

struct piece {
	uint8_t *obj;		/* the zstd frame, or the plain bytes */
	size_t objlen, len;
	int zstd;
};

static struct piece *pieces;
static size_t npieces;
static atomic_size_t next;
static atomic_int failed;

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Read path in PIECE pieces, each compressed as cutsnap would store it.
 * 0, or -1. */
static int
load(const char *path)
{
	uint8_t *plain = malloc(PIECE), *out;
	size_t bound = ZSTD_compressBound(PIECE), n;
	struct piece *p;
	ssize_t got;
	int fd = open(path, O_RDONLY);

	if (fd == -1 || plain == NULL)
		return -1;
	while ((got = read(fd, plain, PIECE)) > 0) {
		if ((p = realloc(pieces, (npieces + 1) * sizeof(*p))) == NULL ||
		    (out = malloc(bound)) == NULL)
			return -1;
		pieces = p;
		p = &pieces[npieces++];
		p->len = (size_t)got;
		n = chunkobj_zstd_frame(plain, p->len, out, bound);
		p->zstd = n != 0 && n < p->len;
		if (!p->zstd) {
			n = p->len;
			memcpy(out, plain, n);
		}
		p->obj = out;
		p->objlen = n;
	}
	close(fd);
	free(plain);
	return got == 0 ? 0 : -1;
}

static void *
work(void *arg)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;
	uint8_t *buf = malloc(PIECE);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	const uint8_t *plain;
	struct piece *p;
	size_t i;

	(void)arg;
	if (buf == NULL || ctx == NULL)
		goto fail;
	while ((i = atomic_fetch_add(&next, 1)) < npieces) {
		p = &pieces[i];
		plain = p->obj;
		if (p->zstd) {
			if (ZSTD_decompress(buf, PIECE, p->obj, p->objlen) !=
			    p->len)
				goto fail;
			plain = buf;
		}
		if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
		    EVP_DigestUpdate(ctx, plain, p->len) != 1 ||
		    EVP_DigestFinal_ex(ctx, md, &mdlen) != 1)
			goto fail;
	}
	goto out;
fail:
	atomic_store(&failed, 1);
out:
	EVP_MD_CTX_free(ctx);
	free(buf);
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t th[64];
	int n, i;
	double t0;

	if (argc < 3 || (n = atoi(argv[1])) < 1 || n > 64) {
		fprintf(stderr, "usage: decpar N FILE...\n");
		return 2;
	}
	for (i = 2; i < argc; i++)
		if (load(argv[i]) == -1) {
			fprintf(stderr, "decpar: cannot read %s\n", argv[i]);
			return 1;
		}
	t0 = now_ms();
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, work, NULL) != 0) {
			fprintf(stderr, "decpar: no thread\n");
			return 1;
		}
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (atomic_load(&failed)) {
		fprintf(stderr, "decpar: a piece did not decode or hash\n");
		return 1;
	}
	printf("%.0f\n", now_ms() - t0);
	return 0;
}
