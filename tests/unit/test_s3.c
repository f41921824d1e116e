/* test_s3.c - the S3 client's URL and environment checks (s3_open): what
 * it accepts, how it names the repository, and every refusal. Requests
 * are tested against a real server by tests/e2e/t038*. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../s3/s3.h"

static int
creds(void **state)
{
	(void)state;
	setenv("AWS_ACCESS_KEY_ID", "KEY", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
	unsetenv("AWS_REGION");
	unsetenv("AWS_SESSION_TOKEN");
	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1/", 1);
	return 0;
}

/* s3_open(url) fails with a message containing want. */
static void
refused(const char *url, const char *want)
{
	struct s3 *s = NULL;
	struct cs_err e;

	e.msg[0] = '\0';
	assert_int_equal(s3_open(url, &s, &e), -1);
	assert_null(s);
	if (strstr(e.msg, want) == NULL)
		fail_msg("s3_open(%s): \"%s\" lacks \"%s\"", url, e.msg, want);
}

static void
names_are_normalised(void **state)
{
	static const char *const in[][2] = {
		{ "s3://bucket", "s3://bucket" },
		{ "s3://bucket/", "s3://bucket" },
		{ "s3://my-bucket.x/a/b/", "s3://my-bucket.x/a/b" },
		{ "s3://abc/Pre_fix-1.2", "s3://abc/Pre_fix-1.2" },
	};
	struct s3 *s;
	struct cs_err e;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		s = NULL;
		assert_int_equal(s3_open(in[i][0], &s, &e), 0);
		assert_string_equal(s3_url(s), in[i][1]);
		s3_close(s);
	}
	s3_close(NULL);
}

static void
bad_urls_are_refused(void **state)
{
	(void)state;
	refused("gs://bucket/x", "not an s3:// URL");
	refused("s3://", "bucket name");
	refused("s3://ab/x", "bucket name");
	refused("s3://Upper/x", "bucket name");
	refused("s3://under_score", "bucket name");
	refused("s3://bucket/a b", "prefix must be segments");
	refused("s3://bucket/a//b", "prefix must be segments");
	refused("s3://bucket/a/../b", "prefix must be segments");
	refused("s3://bucket/a?x=1", "prefix must be segments");
	/* Segments a server would fold or that make keys with an empty or
	 * dot segment: the repository could not find itself again. */
	refused("s3://bucket/./x", "prefix must be segments");
	refused("s3://bucket//x", "prefix must be segments");
	refused("s3://bucket/a/./b", "prefix must be segments");
	refused("s3://bucket/a/.", "prefix must be segments");
	refused("s3://bucket/a//", "prefix must be segments");
	refused("s3://bucket/..", "prefix must be segments");
}

static void
environment_is_checked(void **state)
{
	(void)state;
	unsetenv("AWS_SECRET_ACCESS_KEY");
	refused("s3://bucket/x", "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
	setenv("AWS_SECRET_ACCESS_KEY", "", 1);
	refused("s3://bucket/x", "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
	setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
	setenv("AWS_ACCESS_KEY_ID", "a:b", 1);
	refused("s3://bucket/x", "must not contain ':'");
	setenv("AWS_ACCESS_KEY_ID", "KEY", 1);
	setenv("AWS_REGION", "us:east", 1);
	refused("s3://bucket/x", "is not a region");
	unsetenv("AWS_REGION");
	setenv("AWS_ENDPOINT_URL", "ftp://host", 1);
	refused("s3://bucket/x", "must start with http:// or https://");
}

/* Without an endpoint, a bucket is addressed as AWS's host name, but a
 * dotted one in the path: its certificate covers one label only. */
static void
dotted_buckets_use_the_path(void **state)
{
	struct s3 *s = NULL;
	struct cs_err e;

	(void)state;
	unsetenv("AWS_ENDPOINT_URL");
	setenv("AWS_REGION", "eu-west-1", 1);
	assert_int_equal(s3_open("s3://plain-bucket/x", &s, &e), 0);
	assert_string_equal(s3_endpoint(s), "");	/* the bucket's host */
	s3_close(s);
	s = NULL;
	assert_int_equal(s3_open("s3://my.dotted.bucket/x", &s, &e), 0);
	assert_string_equal(s3_endpoint(s), "https://s3.eu-west-1.amazonaws.com");
	s3_close(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(names_are_normalised, creds),
		cmocka_unit_test_setup(bad_urls_are_refused, creds),
		cmocka_unit_test_setup(environment_is_checked, creds),
		cmocka_unit_test_setup(dotted_buckets_use_the_path, creds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
