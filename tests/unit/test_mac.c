/* test_mac.c - HMAC-SHA256 (RFC 4231 vectors), the constant-time compare
 * and key files. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../crypto/mac.h"
#include "../../crypto/sha.h"
#include "unit.h"

static void
mac_hex(const void *key, size_t klen, const void *msg, size_t n,
    char hex[SHA_HEX_LEN])
{
	uint8_t tag[MAC_LEN];
	struct cs_err e;

	assert_int_equal(mac_hmac_sha256(key, klen, msg, n, tag, &e), 0);
	sha_hex(tag, hex);
}

static void
test_rfc4231(void **state)
{
	uint8_t key1[20], key6[131];
	char hex[SHA_HEX_LEN];
	const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key "
	    "First";

	(void)state;
	memset(key1, 0x0b, sizeof(key1));
	mac_hex(key1, sizeof(key1), "Hi There", 8, hex);
	assert_string_equal(hex, "b0344c61d8db38535ca8afceaf0bf12b"
	    "881dc200c9833da726e9376c2e32cff7");
	mac_hex("Jefe", 4, "what do ya want for nothing?", 28, hex);
	assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c7"
	    "5a003f089d2739839dec58b964ec3843");
	memset(key6, 0xaa, sizeof(key6));
	mac_hex(key6, sizeof(key6), m6, strlen(m6), hex);
	assert_string_equal(hex, "60e431591ee0b67f0d8a26aacbf5b77f"
	    "8e0bc6213728c5140546040f0ee37f54");
}

static void
test_equal(void **state)
{
	uint8_t a[MAC_LEN], b[MAC_LEN];

	(void)state;
	memset(a, 7, sizeof(a));
	memcpy(b, a, sizeof(b));
	assert_true(mac_equal(a, b, MAC_LEN));
	b[0] ^= 1;
	assert_false(mac_equal(a, b, MAC_LEN));
	b[0] ^= 1;
	b[MAC_LEN - 1] ^= 0x80;
	assert_false(mac_equal(a, b, MAC_LEN));
}

static void
write_key(const char *path, size_t n)
{
	FILE *f = fopen(path, "wb");
	size_t i;

	assert_non_null(f);
	for (i = 0; i < n; i++)
		fputc((int)(i & 0xff), f);
	assert_int_equal(fclose(f), 0);
}

static void
test_key_files(void **state)
{
	const char *path = unit_path("key");
	struct cs_err e;
	uint8_t *key = NULL;
	size_t klen = 0;

	(void)state;
	write_key(path, MAC_KEY_MIN - 1);
	assert_int_equal(mac_key_load(path, &key, &klen, &e), -1);
	assert_null(key);
	assert_non_null(strstr(e.msg, "15 bytes, at least 16"));
	write_key(path, MAC_KEY_MAX + 1);
	assert_int_equal(mac_key_load(path, &key, &klen, &e), -1);
	assert_non_null(strstr(e.msg, "larger than 4096"));
	write_key(path, 32);
	assert_int_equal(mac_key_load(path, &key, &klen, &e), 0);
	assert_int_equal(klen, 32);
	assert_int_equal(key[31], 31);
	mac_key_free(key, klen);
	unlink(path);
	assert_int_equal(mac_key_load(path, &key, &klen, &e), -1);
	assert_non_null(strstr(e.msg, "key file"));
	mac_key_free(NULL, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc4231),
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_key_files),
	};

	return cmocka_run_group_tests(tests, unit_setup, unit_teardown);
}
