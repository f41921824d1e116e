/* shapar.c - the hashing floor of the snapshot, verify and restore rows:
 * SHA-256 (OpenSSL EVP, as cutsnap uses) of the files' bytes split in
 * N ranges of about equal size, one thread each, each range read with
 * pread in 4 MiB pieces. Prints the time taken in ms (start-up left
 * out). Usage: shapar N FILE... */
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PIECE (4u << 20)

struct range {
	const char *path;
	uint64_t lo, hi;
};

struct part {
	struct range *r;
	size_t nr;
	int failed;
};

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *
hash_part(void *arg)
{
	struct part *p = arg;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char *buf = malloc(PIECE);
	size_t i;
	ssize_t n;
	int fd;

	if (ctx == NULL || buf == NULL)
		goto fail;
	for (i = 0; i < p->nr; i++) {
		uint64_t off = p->r[i].lo;

		if ((fd = open(p->r[i].path, O_RDONLY)) == -1)
			goto fail;
		if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
			close(fd);
			goto fail;
		}
		while (off < p->r[i].hi) {
			size_t want = p->r[i].hi - off < PIECE ?
			    (size_t)(p->r[i].hi - off) : PIECE;

			n = pread(fd, buf, want, (off_t)off);
			if (n <= 0 || EVP_DigestUpdate(ctx, buf, (size_t)n) != 1) {
				close(fd);
				goto fail;
			}
			off += (uint64_t)n;
		}
		close(fd);
		if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1)
			goto fail;
	}
	goto out;
fail:
	p->failed = 1;
out:
	EVP_MD_CTX_free(ctx);
	free(buf);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct range *rs = NULL;
	struct part *ps = NULL;
	pthread_t *tids = NULL;
	struct stat sb;
	size_t nfiles, nr = 0;
	double t0;
	int n, i, k, started = 0, rc = 1;

	if (argc < 3 || (n = atoi(argv[1])) <= 0 || n > 256) {
		fprintf(stderr, "usage: shapar N FILE...\n");
		return 2;
	}
	nfiles = (size_t)argc - 2;
	if ((rs = calloc(nfiles * (size_t)n, sizeof(*rs))) == NULL ||
	    (ps = calloc((size_t)n, sizeof(*ps))) == NULL ||
	    (tids = calloc((size_t)n, sizeof(*tids))) == NULL)
		goto out;
	/* Each file in n ranges; thread k takes range k of every file. */
	for (i = 2; i < argc; i++) {
		if (stat(argv[i], &sb) == -1) {
			perror(argv[i]);
			goto out;
		}
		for (k = 0; k < n; k++) {
			rs[nr].path = argv[i];
			rs[nr].lo = (uint64_t)sb.st_size * (uint64_t)k / (uint64_t)n;
			rs[nr].hi = (uint64_t)sb.st_size * (uint64_t)(k + 1) /
			    (uint64_t)n;
			nr++;
		}
	}
	for (k = 0; k < n; k++) {
		ps[k].r = calloc(nfiles, sizeof(struct range));
		if (ps[k].r == NULL)
			goto out;
		for (i = 0; i < (int)nfiles; i++)
			ps[k].r[ps[k].nr++] = rs[(size_t)i * (size_t)n + (size_t)k];
	}
	t0 = now_ms();
	for (k = 0; k < n; k++) {
		if (pthread_create(&tids[k], NULL, hash_part, &ps[k]) != 0)
			break;
		started++;
	}
	for (k = 0; k < started; k++)
		pthread_join(tids[k], NULL);
	for (k = 0; k < started; k++)
		if (ps[k].failed)
			break;
	if (started < n || k < started) {
		fprintf(stderr, "shapar: a range could not be read or hashed\n");
		goto out;
	}
	printf("%.0f\n", now_ms() - t0);
	rc = 0;
out:
	for (k = 0; ps != NULL && k < n; k++)
		free(ps[k].r);
	free(rs);
	free(ps);
	free(tids);
	return rc;
}
