/* test_admit.c - the agent's bounds on connections that have not
 * authenticated (agent/admit.c): oldest first per address and overall,
 * the queue left on close, refusal lines counted past the burst. */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../agent/agent_int.h"
#include "../../lib/log.h"

#define NMAX	16

struct fix {
	struct agent a;
	int lfd;		/* listening on 127.0.0.1 */
	struct sockaddr_in sin;
	int cli[NMAX];		/* the clients' ends */
	struct conn *c[NMAX];	/* the agent's ends */
	int n;
};

static int
setup(void **state)
{
	static struct fix f;
	socklen_t sl = sizeof(f.sin);

	memset(&f, 0, sizeof(f));
	f.a.ep = epoll_create1(EPOLL_CLOEXEC);
	f.a.lfd = f.a.spare = -1;
	f.a.aq_cap = 4;		/* set: not derived from RLIMIT_NOFILE */
	f.a.aq_src_cap = 2;
	f.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	f.sin.sin_family = AF_INET;
	f.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (f.a.ep == -1 || f.lfd == -1 ||
	    bind(f.lfd, (struct sockaddr *)&f.sin, sizeof(f.sin)) == -1 ||
	    getsockname(f.lfd, (struct sockaddr *)&f.sin, &sl) == -1 ||
	    listen(f.lfd, 64) == -1)
		return -1;
	*state = &f;
	return 0;
}

static int
teardown(void **state)
{
	struct fix *f = *state;
	int i;

	for (i = 0; i < f->n; i++)
		close(f->cli[i]);
	for (i = 0; i < f->n; i++)
		agent_conn_close(&f->a, f->c[i], NULL);
	agent_conn_reap(&f->a);
	agent_conn_lists_free(&f->a);
	close(f->lfd);
	close(f->a.ep);
	return 0;
}

/* A connection from src (127.0.0.x), accepted and admitted. */
static struct conn *
admit_from(struct fix *f, const char *src)
{
	struct sockaddr_in me;
	int fd;

	assert_true(f->n < NMAX);
	memset(&me, 0, sizeof(me));
	me.sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, src, &me.sin_addr), 1);
	f->cli[f->n] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(f->cli[f->n], (struct sockaddr *)&me,
	    sizeof(me)), 0);
	assert_int_equal(connect(f->cli[f->n], (struct sockaddr *)&f->sin,
	    sizeof(f->sin)), 0);
	fd = accept4(f->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	assert_true(fd >= 0);
	f->c[f->n] = agent_conn_new(&f->a, fd, ROLE_NEW, 0);
	assert_non_null(f->c[f->n]);
	agent_admit(&f->a, f->c[f->n]);
	return f->c[f->n++];
}

static void
oldest_of_one_address_closed_beyond_its_cap(void **state)
{
	struct fix *f = *state;
	struct conn *x1, *x2, *x3, *y1;

	x1 = admit_from(f, "127.0.0.2");
	x2 = admit_from(f, "127.0.0.2");
	y1 = admit_from(f, "127.0.0.3");
	assert_int_equal(f->a.naq, 3);
	x3 = admit_from(f, "127.0.0.2");	/* a third from .2: x1 goes */
	assert_true(x1->dead);
	assert_false(x2->dead || x3->dead || y1->dead);
	assert_int_equal(f->a.naq, 3);
	assert_ptr_equal(f->a.aq_old, x2);
	assert_ptr_equal(f->a.aq_new, x3);
}

static void
oldest_of_all_closed_beyond_the_cap(void **state)
{
	struct fix *f = *state;
	struct conn *c[5];
	int i;

	for (i = 0; i < 5; i++)
		c[i] = admit_from(f, i % 2 ? "127.0.0.4" : "127.0.0.5");
	/* .5 gave c0, c2, c4: c0 closed for its address at c4; then 4
	 * pending (c1..c4), the cap. */
	assert_true(c[0]->dead);
	assert_int_equal(f->a.naq, 4);
	c[0] = admit_from(f, "127.0.0.6");	/* over the cap: c1 goes */
	assert_true(c[1]->dead);
	assert_int_equal(f->a.naq, 4);
	assert_ptr_equal(f->a.aq_old, c[2]);
}

static void
closed_or_authenticated_leaves_the_queue(void **state)
{
	struct fix *f = *state;
	struct conn *x, *y, *z;

	x = admit_from(f, "127.0.0.7");
	y = admit_from(f, "127.0.0.8");
	z = admit_from(f, "127.0.0.9");
	agent_conn_close(&f->a, y, NULL);
	assert_int_equal(f->a.naq, 2);
	assert_ptr_equal(x->aq_next, z);
	assert_ptr_equal(z->aq_prev, x);
	agent_admit_done(&f->a, x);	/* as a finished handshake does */
	agent_admit_done(&f->a, x);	/* twice is once */
	assert_int_equal(f->a.naq, 1);
	assert_ptr_equal(f->a.aq_old, z);
	assert_int_equal(agent_admit_evict_oldest(&f->a, "test"), 0);
	assert_true(z->dead);
	assert_int_equal(f->a.naq, 0);
	assert_null(f->a.aq_old);
	assert_null(f->a.aq_new);
	assert_int_equal(agent_admit_evict_oldest(&f->a, "test"), -1);
}

static void
refusals_past_the_burst_are_counted(void **state)
{
	struct fix *f = *state;
	int i;

	for (i = 0; i < ADMIT_LOG_BURST + 7; i++)
		agent_admit_log(&f->a, "refused %d", i);
	assert_int_equal(f->a.rl_logged, ADMIT_LOG_BURST);
	assert_int_equal(f->a.rl_dropped, 7);
	/* Within the window: wake up when it ends, to log the count. */
	assert_true(agent_admit_tick(&f->a, f->a.rl_start + 1) > 0);
	assert_int_equal(agent_admit_tick(&f->a, f->a.rl_start +
	    ADMIT_LOG_MS), -1);
	assert_int_equal(f->a.rl_logged, 0);
	assert_int_equal(f->a.rl_dropped, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    oldest_of_one_address_closed_beyond_its_cap, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    oldest_of_all_closed_beyond_the_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    closed_or_authenticated_leaves_the_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    refusals_past_the_burst_are_counted, setup, teardown),
	};

	log_init("test", LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
