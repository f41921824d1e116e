/* test_aead.c - the primitives of encrypted repositories: scrypt (RFC 7914
 * vector) and HKDF-SHA256 (RFC 5869 vector), and AES-256-GCM sealing:
 * a round trip, a fresh nonce per seal, and a flipped bit anywhere (nonce,
 * ciphertext, tag) or other associated data or key refused; an opening
 * split between two buffers (aead_open_split) authenticates the whole. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../crypto/aead.h"
#include "../../lib/bigbuf.h"
#include "../../crypto/cryptomem.h"
#include "../../crypto/sha.h"

static void
hex_of(const uint8_t *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", p[i]);
}

static void
test_scrypt_rfc7914(void **state)
{
	uint8_t k[AEAD_KEY_LEN];
	char hex[2 * AEAD_KEY_LEN + 1];
	struct cs_err e;

	(void)state;
	/* scrypt("password", "NaCl", N=1024, r=8, p=16): the first 32 of the
	 * vector's 64 bytes. */
	assert_int_equal(aead_scrypt("password", 8, (const uint8_t *)"NaCl", 4,
	    1024, 8, 16, k, &e), 0);
	hex_of(k, sizeof(k), hex);
	assert_string_equal(hex, "fdbabe1c9d3472007856e7190d01e9fe"
	    "7c6ad7cbc8237830e77376634b373162");
	assert_false(aead_scrypt_valid(1000, 8, 1));	/* not a power of 2 */
	assert_false(aead_scrypt_valid(1u << 23, 8, 1));
	assert_false(aead_scrypt_valid(1024, 0, 1));
	assert_true(aead_scrypt_valid(1u << 16, 8, 1));
	assert_int_equal(aead_scrypt("x", 1, (const uint8_t *)"s", 1, 1000, 8,
	    1, k, &e), -1);
	assert_non_null(strstr(e.msg, "invalid scrypt parameters"));
}

/* RFC 7914's first and third vectors, the third's 16 MiB V in a bigbuf
 * mapping (the process installed cryptomem, as main does), given back
 * after; then the shapes scrypt handles apart (r = 1, odd r, p > 1, the
 * smallest N), against keys that libsodium's scrypt and OpenSSL's both
 * gave (the test compared the two while cutsnap used libsodium's). */
static void
test_scrypt_vectors_in_big_pages(void **state)
{
	static const struct {
		uint64_t n;
		uint32_t r, p;
		const char *hex;
	} c[] = {
		{ 2, 1, 1, "8cb19066974548087f3a807fe89b3ad0"
		    "e156f75fe788d834e1cb84efa5d2724d" },
		{ 16, 1, 1, "edb1bcce059b8654066e96a3703f1ea0"
		    "e4392151e6fceb7683a4a7b5e19577e2" },
		{ 64, 3, 2, "e7fade0b34cc4676be6c3abc09a81e9c"
		    "9f54ce1eb5e33ba4443451dd2f60d131" },
		{ 256, 8, 1, "72768f433f1bcb49eaedcfceaab3a647"
		    "20a7dd3448187fae9a93f04d7411b1fd" },
		{ 128, 5, 3, "509ef359b82c18cec2fc4f9727fa1966"
		    "2d03f8b97202cd3ff5d8c6b973f1d458" },
		{ 1024, 32, 1, "278ff0f2b1dd297cc382277c39c1abe3"
		    "0deeaaac523f335bdb3e022ff61fed7a" },
		{ 4, 2, 32, "6c5443a71b022e899ae900d9e43b2f5c"
		    "f54106e0e34f4b39bc16571384612e35" },
	};
	uint8_t k[AEAD_KEY_LEN], salt[16];
	char hex[2 * AEAD_KEY_LEN + 1];
	long live = bigbuf_live(), nbig = cryptomem_big_allocs();
	struct cs_err e;
	size_t i, done = 0;

	(void)state;
	assert_int_equal(aead_scrypt("", 0, (const uint8_t *)"", 0, 16, 1, 1,
	    k, &e), 0);
	hex_of(k, sizeof(k), hex);
	assert_string_equal(hex, "77d6576238657b203b19ca42c18a0497"
	    "f16b4844e3074ae8dfdffa3fede21442");
	assert_int_equal(cryptomem_big_allocs(), nbig);
	assert_int_equal(aead_scrypt("pleaseletmein", 13,
	    (const uint8_t *)"SodiumChloride", 14, 16384, 8, 1, k, &e), 0);
	hex_of(k, sizeof(k), hex);
	assert_string_equal(hex, "7023bdcb3afd7348461c06cd81fd38eb"
	    "fda8fbba904f8e3ea9b543f6545da1f2");
	assert_true(cryptomem_big_allocs() > nbig);
	assert_int_equal(bigbuf_live(), live);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		memset(salt, (int)(0x5a + i), sizeof(salt));
		assert_int_equal(aead_scrypt("pass word", 9 - i % 2, salt,
		    sizeof(salt) - i, c[i].n, c[i].r, c[i].p, k, &e), 0);
		hex_of(k, sizeof(k), hex);
		assert_string_equal(hex, c[i].hex);
		done++;
	}
	assert_int_equal(done, 7);
}

static void
test_hkdf_rfc5869(void **state)
{
	uint8_t ikm[22], k[AEAD_KEY_LEN], k2[AEAD_KEY_LEN];
	char hex[2 * AEAD_KEY_LEN + 1];
	struct cs_err e;

	(void)state;
	/* Test case 3: no salt, no info; the first 32 bytes of the OKM. */
	memset(ikm, 0x0b, sizeof(ikm));
	assert_int_equal(aead_hkdf(ikm, sizeof(ikm), "", k, &e), 0);
	hex_of(k, sizeof(k), hex);
	assert_string_equal(hex, "8da4e775a563c18f715f802a063c5a31"
	    "b8a11f5c5ee1879ec3454e5f3c738d2d");
	/* Other labels, other keys. */
	assert_int_equal(aead_hkdf(ikm, sizeof(ikm), "cutsnap names 1", k2,
	    &e), 0);
	assert_memory_not_equal(k, k2, sizeof(k));
}

static void
test_seal_open(void **state)
{
	uint8_t key[AEAD_KEY_LEN], other[AEAD_KEY_LEN];
	const char *msg = "add bal 4321";
	size_t n = strlen(msg), sn = n + AEAD_OVERHEAD, i;
	uint8_t s1[64], s2[64], bad[64], out[64];
	struct cs_err e;
	int refused = 0;

	(void)state;
	assert_int_equal(aead_random(key, sizeof(key), &e), 0);
	memcpy(other, key, sizeof(key));
	other[0] ^= 1;
	assert_int_equal(aead_seal(key, "ctx", 3, (const uint8_t *)msg, n, s1,
	    &e), 0);
	assert_int_equal(aead_seal(key, "ctx", 3, (const uint8_t *)msg, n, s2,
	    &e), 0);
	/* A fresh nonce each time: the same message seals differently. */
	assert_memory_not_equal(s1, s2, AEAD_NONCE_LEN);
	assert_memory_not_equal(s1, s2, sn);
	assert_null(memmem(s1, sn, msg, n));
	assert_int_equal(aead_open(key, "ctx", 3, s1, sn, out, &e), 0);
	assert_memory_equal(out, msg, n);
	/* Every single flipped bit is refused. */
	for (i = 0; i < sn * 8; i++) {
		memcpy(bad, s1, sn);
		bad[i / 8] ^= (uint8_t)(1u << (i % 8));
		refused += aead_open(key, "ctx", 3, bad, sn, out, &e) < 0;
	}
	assert_int_equal(refused, (int)(sn * 8));
	assert_non_null(strstr(e.msg, "authentication failed"));
	assert_int_equal(aead_open(key, "ctY", 3, s1, sn, out, &e), -1);
	assert_int_equal(aead_open(other, "ctx", 3, s1, sn, out, &e), -1);
	assert_int_equal(aead_open(key, "ctx", 3, s1, AEAD_OVERHEAD - 1, out,
	    &e), -1);
	/* In place, as the chunk objects are sealed and opened. */
	memcpy(bad + AEAD_NONCE_LEN, msg, n);
	assert_int_equal(aead_seal(key, NULL, 0, bad + AEAD_NONCE_LEN, n, bad,
	    &e), 0);
	assert_int_equal(aead_open(key, NULL, 0, bad, sn, bad + AEAD_NONCE_LEN,
	    &e), 0);
	assert_memory_equal(bad + AEAD_NONCE_LEN, msg, n);
}

/* where for aead_open_split: the header's first byte picks the buffer
 * (ctx: two buffers); counts its calls in calls. */
static int calls;
static uint8_t *
pick(void *ctx, const uint8_t *first)
{
	uint8_t **bufs = ctx;

	calls++;
	return bufs[first[0] & 1];
}

static void
test_open_split(void **state)
{
	uint8_t key[AEAD_KEY_LEN], msg[300], sealed[300 + AEAD_OVERHEAD];
	uint8_t head[16], a[300], b[300], *bufs[2] = { a, b };
	struct cs_err e;
	size_t i;

	(void)state;
	memset(key, 7, sizeof(key));
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 31 + 1);
	msg[0] = 1;	/* the rest goes to b */
	assert_int_equal(aead_seal(key, "ad", 2, msg, sizeof(msg), sealed, &e),
	    0);
	calls = 0;
	memset(a, 0, sizeof(a));
	assert_int_equal(aead_open_split(key, "ad", 2, sealed, sizeof(sealed),
	    head, 16, pick, bufs, &e), 0);
	assert_int_equal(calls, 1);
	assert_memory_equal(head, msg, 16);
	assert_memory_equal(b, msg + 16, sizeof(msg) - 16);
	for (i = 0; i < sizeof(a); i++)
		assert_int_equal(a[i], 0);
	/* Split at 0 bytes or at the end: the same as aead_open. */
	assert_int_equal(aead_open_split(key, "ad", 2, sealed, sizeof(sealed),
	    a, sizeof(msg), pick, bufs, &e), 0);
	assert_memory_equal(a, msg, sizeof(msg));
	/* A flipped bit in the part that goes elsewhere, or other
	 * associated data: refused. */
	sealed[AEAD_NONCE_LEN + 200] ^= 4;
	assert_int_equal(aead_open_split(key, "ad", 2, sealed, sizeof(sealed),
	    head, 16, pick, bufs, &e), -1);
	assert_non_null(strstr(e.msg, "authentication failed"));
	sealed[AEAD_NONCE_LEN + 200] ^= 4;
	assert_int_equal(aead_open_split(key, "ax", 2, sealed, sizeof(sealed),
	    head, 16, pick, bufs, &e), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scrypt_rfc7914),
		cmocka_unit_test(test_scrypt_vectors_in_big_pages),
		cmocka_unit_test(test_hkdf_rfc5869),
		cmocka_unit_test(test_seal_open),
		cmocka_unit_test(test_open_split),
	};

	/* As cmd/main.c does, before OpenSSL's first allocation. */
	if (cryptomem_init() != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
