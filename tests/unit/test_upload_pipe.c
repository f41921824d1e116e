/* test_upload_pipe.c - the upload pipe (store/upload_pipe.c) over an
 * in-memory backend: every object queued is put once, create-only, and
 * counted (an object already there as "had"); the first failure names
 * its key and comes back from drain and every later put; the bodies held
 * never pass STORE_PIPE_MEM, yet one larger body goes through alone; the
 * workers number b->parallel, within [1, 64]; stop with puts blocked and
 * objects queued returns once the blocked puts end, and frees it all.
 *
 * The backend's puts can be held at a gate and let through one by one;
 * every wait that the test's progress depends on is on a condition
 * variable, never on a clock. Only "this put must not return yet" has no
 * event to wait for: watch_returned gives a wrong pipe a bounded window
 * to show itself, which a right one always lets run out (the window sets
 * how likely a wrong pipe is caught, never whether a right one passes). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "../../store/upload_pipe.h"
#include "unit.h"

/* Bodies up to this size are kept, to be compared; larger ones are only
 * counted (the memory tests put hundreds of MiB through). */
#define MB_KEEP_MAX 65536

struct mb_obj {
	char *key;
	uint8_t *data;		/* NULL when len > MB_KEEP_MAX */
	size_t len;
};

/* The in-memory backend. Everything below b is guarded by mu. */
struct mem_backend {
	struct store_backend b;
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* any change below */
	struct mb_obj *objs;
	size_t n, cap;
	const char *fail_key;	/* a put of it fails (CS_E_IO) */
	int gate;		/* puts wait for a permit */
	size_t permits;		/* puts the gate lets through */
	size_t blocked;		/* puts waiting at the gate */
	size_t busy, max_busy;	/* puts under way: now, at most */
	uint64_t calls;		/* puts called */
	uint64_t completed, completed_bytes;	/* puts answered */
	/* The producer's side (mem_bound tests): puts store_pipe_put
	 * returned from, and the most body bytes the pipe held by that
	 * count (returned minus answered: a lower bound of what it held). */
	uint64_t returned, returned_bytes, max_held;
};

static struct mb_obj *
mb_find(struct mem_backend *mb, const char *key)
{
	size_t i;

	for (i = 0; i < mb->n; i++)
		if (strcmp(mb->objs[i].key, key) == 0)
			return &mb->objs[i];
	return NULL;
}

/* Under mu: stores a copy of the object; 0, or -1 with e set. */
static int
mb_store(struct mem_backend *mb, const char *key, const void *data,
    size_t len, struct cs_err *e)
{
	struct mb_obj *o;

	if (mb->fail_key != NULL && strcmp(key, mb->fail_key) == 0)
		return cs_errc(e, CS_E_IO, "%s: injected: disk full",
		    key);
	if (mb_find(mb, key) != NULL)
		return cs_errc(e, CS_E_EXISTS, "%s: exists", key);
	if (mb->n == mb->cap) {
		mb->cap = mb->cap ? mb->cap * 2 : 64;
		mb->objs = realloc(mb->objs, mb->cap * sizeof(*mb->objs));
		assert_non_null(mb->objs);
	}
	o = &mb->objs[mb->n++];
	o->key = strdup(key);
	assert_non_null(o->key);
	o->len = len;
	o->data = NULL;
	if (len <= MB_KEEP_MAX) {
		o->data = malloc(len > 0 ? len : 1);
		assert_non_null(o->data);
		memcpy(o->data, data, len);
	}
	return 0;
}

static int
mb_put(struct store_backend *b, const char *key, const void *data,
    size_t len, enum store_put_cond cond, const char *tag_in,
    char tag_out[STORE_TAG_MAX], struct cs_err *e)
{
	struct mem_backend *mb = (struct mem_backend *)b;
	int rc;

	assert_int_equal(cond, STORE_PUT_CREATE);
	assert_null(tag_in);
	(void)tag_out;
	pthread_mutex_lock(&mb->mu);
	mb->calls++;
	if (++mb->busy > mb->max_busy)
		mb->max_busy = mb->busy;
	mb->blocked++;
	pthread_cond_broadcast(&mb->cv);
	while (mb->gate && mb->permits == 0)
		pthread_cond_wait(&mb->cv, &mb->mu);
	if (mb->gate)
		mb->permits--;
	mb->blocked--;
	rc = mb_store(mb, key, data, len, e);
	mb->busy--;
	mb->completed++;
	mb->completed_bytes += len;
	pthread_cond_broadcast(&mb->cv);
	pthread_mutex_unlock(&mb->mu);
	return rc;
}

static const struct store_backend_ops mb_ops = { .put = mb_put };

static void
mb_init(struct mem_backend *mb, int parallel)
{
	memset(mb, 0, sizeof(*mb));
	mb->b.ops = &mb_ops;
	mb->b.parallel = parallel;
	assert_int_equal(pthread_mutex_init(&mb->mu, NULL), 0);
	assert_int_equal(pthread_cond_init(&mb->cv, NULL), 0);
}

static void
mb_free(struct mem_backend *mb)
{
	size_t i;

	for (i = 0; i < mb->n; i++) {
		free(mb->objs[i].key);
		free(mb->objs[i].data);
	}
	free(mb->objs);
	pthread_cond_destroy(&mb->cv);
	pthread_mutex_destroy(&mb->mu);
}

/* Lets n more puts through the gate. */
static void
mb_permit(struct mem_backend *mb, size_t n)
{
	pthread_mutex_lock(&mb->mu);
	mb->permits += n;
	pthread_cond_broadcast(&mb->cv);
	pthread_mutex_unlock(&mb->mu);
}

/* Opens the gate for good. */
static void
mb_open(struct mem_backend *mb)
{
	pthread_mutex_lock(&mb->mu);
	mb->gate = 0;
	pthread_cond_broadcast(&mb->cv);
	pthread_mutex_unlock(&mb->mu);
}

/* Waits until n puts wait at the gate. */
static void
mb_wait_blocked(struct mem_backend *mb, size_t n)
{
	pthread_mutex_lock(&mb->mu);
	while (mb->blocked < n)
		pthread_cond_wait(&mb->cv, &mb->mu);
	pthread_mutex_unlock(&mb->mu);
}

/* How long watch_returned watches: ample for a memcpy of 64 MiB. */
#define WATCH_MS 200

/* Under mu: watches for WATCH_MS whether the producer returns from more
 * than n puts; the count it reached. */
static uint64_t
watch_returned(struct mem_backend *mb, uint64_t n)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += WATCH_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	while (mb->returned <= n)
		if (pthread_cond_timedwait(&mb->cv, &mb->mu, &until) != 0)
			break;
	return mb->returned;
}

static void
fill(uint8_t *p, size_t len, unsigned seed)
{
	size_t j;

	for (j = 0; j < len; j++)
		p[j] = (uint8_t)(seed * 7 + j * 13);
}

static void
thousand_objects_all_put_stats_exact(void **state)
{
	struct mem_backend mb;
	struct store_pipe *p;
	struct store_pipe_stats st;
	struct cs_err e;
	struct mb_obj *o;
	uint8_t body[200], want[200];
	char key[64];
	uint64_t bytes = 0;
	unsigned i;

	(void)state;
	mb_init(&mb, 8);
	assert_int_equal(store_pipe_start(&mb.b, &p, &e), 0);
	for (i = 0; i < 1000; i++) {
		size_t len = i % 200 + 1;

		snprintf(key, sizeof(key), "blobs/%02x/%u", i & 0xff, i);
		fill(body, len, i);
		assert_int_equal(store_pipe_put(p, key, body, len, &e), 0);
		/* The pipe copied it: the caller's buffer is its own. */
		memset(body, 0xee, len);
		bytes += len;
	}
	assert_int_equal(store_pipe_drain(p, &st, &e), 0);
	assert_int_equal(st.put, 1000);
	assert_int_equal(st.bytes, bytes);
	assert_int_equal(st.had, 0);
	store_pipe_stop(p);

	assert_int_equal(mb.n, 1000);
	assert_int_equal(mb.calls, 1000);
	for (i = 0; i < 1000; i++) {
		size_t len = i % 200 + 1;

		snprintf(key, sizeof(key), "blobs/%02x/%u", i & 0xff, i);
		assert_non_null(o = mb_find(&mb, key));
		assert_int_equal(o->len, len);
		fill(want, len, i);
		assert_memory_equal(o->data, want, len);
	}
	assert_true(mb.max_busy >= 1 && mb.max_busy <= 8);
	mb_free(&mb);
}

static void
objects_already_there_count_as_had(void **state)
{
	struct mem_backend mb;
	struct store_pipe *p;
	struct store_pipe_stats st;
	struct cs_err e;
	char key[64];
	int i;

	(void)state;
	mb_init(&mb, 4);
	assert_int_equal(store_pipe_start(&mb.b, &p, &e), 0);
	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "blobs/k%d", i);
		assert_int_equal(store_pipe_put(p, key, "abcd", 4, &e), 0);
	}
	assert_int_equal(store_pipe_drain(p, &st, &e), 0);
	assert_int_equal(st.put, 100);
	assert_int_equal(st.had, 0);

	/* The pipe takes more after a drain; the counts go on. */
	for (i = 0; i < 150; i++) {
		snprintf(key, sizeof(key), "blobs/k%d", i);
		assert_int_equal(store_pipe_put(p, key, "abcd", 4, &e), 0);
	}
	assert_int_equal(store_pipe_put(p, "blobs/twice", "x", 1, &e), 0);
	assert_int_equal(store_pipe_put(p, "blobs/twice", "x", 1, &e), 0);
	assert_int_equal(store_pipe_drain(p, &st, &e), 0);
	assert_int_equal(st.put, 151);
	assert_int_equal(st.bytes, 150 * 4 + 1);
	assert_int_equal(st.had, 101);
	store_pipe_stop(p);
	assert_int_equal(mb.n, 151);
	mb_free(&mb);
}

static void
failed_put_names_its_key_in_drain_and_later_puts(void **state)
{
	struct mem_backend mb;
	struct store_pipe *p;
	struct store_pipe_stats st;
	struct cs_err e, e2;
	char key[64];
	int i, rc = 0;

	(void)state;
	mb_init(&mb, 4);
	mb.fail_key = "blobs/bad";
	assert_int_equal(store_pipe_start(&mb.b, &p, &e), 0);
	for (i = 0; i < 40 && rc == 0; i++) {
		if (i == 10)
			snprintf(key, sizeof(key), "blobs/bad");
		else
			snprintf(key, sizeof(key), "blobs/ok%d", i);
		rc = store_pipe_put(p, key, "data", 4, &e);
	}
	/* A put may already have seen the failure; drain always does. */
	if (rc < 0) {
		assert_non_null(strstr(e.msg, "blobs/bad"));
		assert_true(i > 10);
	}
	memset(&e, 0, sizeof(e));
	assert_int_equal(store_pipe_drain(p, &st, &e), -1);
	/* The backend's own words, kind and all, reach the caller. */
	assert_string_equal(e.msg, "blobs/bad: injected: disk full");
	assert_int_equal(cs_err_code(&e), CS_E_IO);
	assert_true(st.put >= 10 && st.put <= 39);
	assert_int_equal(st.had, 0);

	assert_int_equal(store_pipe_put(p, "blobs/after", "x", 1, &e2), -1);
	assert_string_equal(e2.msg, e.msg);
	assert_int_equal(cs_err_code(&e2), CS_E_IO);
	assert_int_equal(store_pipe_drain(p, NULL, &e2), -1);
	assert_string_equal(e2.msg, e.msg);
	store_pipe_stop(p);
	assert_null(mb_find(&mb, "blobs/after"));
	assert_null(mb_find(&mb, "blobs/bad"));
	mb_free(&mb);
}

/* mem_bound's producer: NBIG bodies of STORE_PIPE_MEM / 8. */
#define NBIG 12
#define BIG (STORE_PIPE_MEM / 8)

struct producer {
	struct mem_backend *mb;
	struct store_pipe *p;
	const uint8_t *body;
	size_t len;
	int count;
	int rc;			/* the first failed put's, else 0 */
};

static void *
produce(void *arg)
{
	struct producer *pr = arg;
	struct mem_backend *mb = pr->mb;
	struct cs_err e;
	char key[64];
	int i;

	for (i = 0; i < pr->count; i++) {
		snprintf(key, sizeof(key), "blobs/big/%d", i);
		if ((pr->rc = store_pipe_put(pr->p, key, pr->body, pr->len,
		    &e)) < 0)
			break;
		pthread_mutex_lock(&mb->mu);
		mb->returned++;
		mb->returned_bytes += pr->len;
		if (mb->returned_bytes > mb->completed_bytes &&
		    mb->returned_bytes - mb->completed_bytes > mb->max_held)
			mb->max_held = mb->returned_bytes -
			    mb->completed_bytes;
		pthread_cond_broadcast(&mb->cv);
		pthread_mutex_unlock(&mb->mu);
	}
	return NULL;
}

/* A wrong pipe fails these tests cleanly: what they see is asserted only
 * once the gate is open and the pipe stopped, so that no thread is left
 * blocked on a test's stack. */
static void
bodies_held_stay_within_pipe_mem(void **state)
{
	struct mem_backend mb;
	struct store_pipe *p;
	struct store_pipe_stats st;
	struct producer pr;
	struct cs_err e;
	pthread_t th;
	uint8_t *body;
	uint64_t k, first, done0, over = 0;
	int rc;

	(void)state;
	mb_init(&mb, 2);
	mb.gate = 1;
	assert_non_null(body = malloc(BIG));
	fill(body, BIG, 1);
	assert_int_equal(store_pipe_start(&mb.b, &p, &e), 0);
	pr = (struct producer){ &mb, p, body, BIG, NBIG, 0 };
	assert_int_equal(pthread_create(&th, NULL, produce, &pr), 0);

	/* Both workers wait at the gate, and eight bodies fill the pipe:
	 * the ninth waits. */
	pthread_mutex_lock(&mb.mu);
	while (mb.returned < 8 || mb.blocked < 2)
		pthread_cond_wait(&mb.cv, &mb.mu);
	first = watch_returned(&mb, 8);
	done0 = mb.completed;
	pthread_mutex_unlock(&mb.mu);

	/* Each answer makes room for one body, no more. */
	for (k = 1; k <= NBIG - 8; k++) {
		mb_permit(&mb, 1);
		pthread_mutex_lock(&mb.mu);
		while (mb.returned < 8 + k)
			pthread_cond_wait(&mb.cv, &mb.mu);
		if (mb.returned != 8 + k || mb.completed != k)
			over++;
		pthread_mutex_unlock(&mb.mu);
	}
	mb_open(&mb);
	assert_int_equal(pthread_join(th, NULL), 0);
	rc = store_pipe_drain(p, &st, &e);
	store_pipe_stop(p);
	free(body);
	mb_free(&mb);

	assert_int_equal(first, 8);
	assert_int_equal(done0, 0);
	assert_int_equal(over, 0);
	assert_int_equal(mb.max_held, STORE_PIPE_MEM);
	assert_int_equal(mb.max_busy, 2);
	assert_int_equal(pr.rc, 0);
	assert_int_equal(rc, 0);
	assert_int_equal(st.put, NBIG);
	assert_int_equal(st.bytes, (uint64_t)NBIG * BIG);
}

static void
body_larger_than_pipe_mem_goes_through_alone(void **state)
{
	struct mem_backend mb;
	struct store_pipe *p;
	struct store_pipe_stats st;
	struct producer pr;
	struct cs_err e;
	pthread_t th;
	uint8_t *body;
	size_t len = STORE_PIPE_MEM + 4096;
	uint64_t early;
	int rc;

	(void)state;
	mb_init(&mb, 2);
	assert_non_null(body = malloc(len));
	fill(body, len, 2);
	assert_int_equal(store_pipe_start(&mb.b, &p, &e), 0);
	assert_int_equal(store_pipe_put(p, "blobs/huge", body, len, &e), 0);
	assert_int_equal(store_pipe_drain(p, &st, &e), 0);
	assert_int_equal(st.put, 1);
	assert_int_equal(st.bytes, len);

	/* Behind a small body in flight, it waits for that one's answer:
	 * the two never reach the backend together. */
	mb.gate = 1;
	assert_int_equal(store_pipe_put(p, "blobs/small", "s", 1, &e), 0);
	mb_wait_blocked(&mb, 1);
	pr = (struct producer){ &mb, p, body, len, 1, 0 };
	assert_int_equal(pthread_create(&th, NULL, produce, &pr), 0);
	pthread_mutex_lock(&mb.mu);
	early = watch_returned(&mb, 0);
	pthread_mutex_unlock(&mb.mu);
	mb_open(&mb);
	assert_int_equal(pthread_join(th, NULL), 0);
	rc = store_pipe_drain(p, &st, &e);
	store_pipe_stop(p);
	free(body);
	mb_free(&mb);

	assert_int_equal(early, 0);
	assert_int_equal(mb.max_busy, 1);
	assert_int_equal(pr.rc, 0);
	assert_int_equal(rc, 0);
	assert_int_equal(st.put, 3);
	assert_int_equal(st.bytes, 2 * (uint64_t)len + 1);
}

static void
workers_number_parallel_within_1_and_64(void **state)
{
	static const int par[] = { 0, 3, 1000 };
	static const size_t want[] = { 1, 3, 64 };
	struct mem_backend mb;
	struct store_pipe *p;
	struct store_pipe_stats st;
	struct cs_err e;
	char key[64];
	size_t t;
	int i, n;

	(void)state;
	for (t = 0; t < sizeof(par) / sizeof(par[0]); t++) {
		mb_init(&mb, par[t]);
		mb.gate = 1;
		assert_int_equal(store_pipe_start(&mb.b, &p, &e), 0);
		/* One per worker, and the four per worker that may wait
		 * in the queue: none of these puts blocks. */
		n = (int)want[t] * 5;
		for (i = 0; i < n; i++) {
			snprintf(key, sizeof(key), "blobs/w%d", i);
			assert_int_equal(store_pipe_put(p, key, "w", 1, &e),
			    0);
		}
		mb_wait_blocked(&mb, want[t]);
		mb_open(&mb);
		assert_int_equal(store_pipe_drain(p, &st, &e), 0);
		assert_int_equal(st.put, n);
		store_pipe_stop(p);
		assert_int_equal(mb.max_busy, want[t]);
		mb_free(&mb);
	}
}

struct stopper {
	struct mem_backend *mb;
	struct store_pipe *p;
	int stopped;
};

static void *
stop_pipe(void *arg)
{
	struct stopper *s = arg;

	store_pipe_stop(s->p);
	pthread_mutex_lock(&s->mb->mu);
	s->stopped = 1;
	pthread_mutex_unlock(&s->mb->mu);
	return NULL;
}

static void
stop_with_puts_blocked_and_objects_queued(void **state)
{
	struct mem_backend mb;
	struct store_pipe *p;
	struct stopper s;
	struct cs_err e;
	pthread_t th;
	char key[64];
	int i;

	(void)state;
	mb_init(&mb, 2);
	mb.gate = 1;
	assert_int_equal(store_pipe_start(&mb.b, &p, &e), 0);
	/* Two under way, eight (four per worker) queued. */
	for (i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "blobs/q%d", i);
		assert_int_equal(store_pipe_put(p, key, "queued", 6, &e), 0);
	}
	mb_wait_blocked(&mb, 2);
	s = (struct stopper){ &mb, p, 0 };
	assert_int_equal(pthread_create(&th, NULL, stop_pipe, &s), 0);
	/* Stop waits for the two puts under way; it cannot return before
	 * they are let through. */
	mb_open(&mb);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(s.stopped, 1);
	/* The two blocked puts ended, and of the 8 queued only those the
	 * workers took before they saw the stop (usually none: which comes
	 * first is the scheduler's) were put; the rest were freed unput
	 * (valgrind: no leak). */
	assert_true(mb.calls >= 2 && mb.calls <= 10);
	assert_int_equal(mb.completed, mb.calls);
	assert_int_equal(mb.n, mb.calls);
	mb_free(&mb);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(thousand_objects_all_put_stats_exact),
		cmocka_unit_test(objects_already_there_count_as_had),
		cmocka_unit_test(
		    failed_put_names_its_key_in_drain_and_later_puts),
		cmocka_unit_test(bodies_held_stay_within_pipe_mem),
		cmocka_unit_test(body_larger_than_pipe_mem_goes_through_alone),
		cmocka_unit_test(workers_number_parallel_within_1_and_64),
		cmocka_unit_test(stop_with_puts_blocked_and_objects_queued),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
