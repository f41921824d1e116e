/* test_config.c - the cluster config: a good file, path resolution,
 * channels, and one error line (file:line: what) per malformed case. */
#include <sys/stat.h>

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../lib/config.h"
#include "unit.h"

static const char good[] =
    "; the bank cluster\n"
    "[cluster]\n"
    "run_dir = sockets          ; agents' sockets live here\n"
    "\n"
    "[agent A]\n"
    "data = a.data\n"
    "\n"
    "  [agent B]\n"
    "  data = ./data/b.data\n"
    "[agent C.x-1_]\n"
    "data=/srv/c.data\n";

static void
good_config_loads_with_absolute_paths(void **state)
{
	struct cfg *c;
	struct cs_err e;
	char path[PATH_MAX], want[PATH_MAX + 64];
	int s, d;

	(void)state;
	snprintf(path, sizeof(path), "%s/cluster.ini", unit_dir);
	unit_write_text(path, good);
	assert_int_equal(cfg_load(path, &c, &e), 0);
	assert_string_equal(c->path, path);
	snprintf(want, sizeof(want), "%s/sockets", unit_dir);
	assert_string_equal(c->run_dir, want);
	assert_int_equal(c->nagents, 3);
	assert_string_equal(c->agents[0].name, "A");
	snprintf(want, sizeof(want), "%s/a.data", unit_dir);
	assert_string_equal(c->agents[0].data, want);
	snprintf(want, sizeof(want), "%s/sockets/A.sock", unit_dir);
	assert_string_equal(c->agents[0].sock, want);
	assert_string_equal(c->agents[1].name, "B");
	snprintf(want, sizeof(want), "%s/data/b.data", unit_dir);
	assert_string_equal(c->agents[1].data, want);
	assert_string_equal(c->agents[2].name, "C.x-1_");
	assert_string_equal(c->agents[2].data, "/srv/c.data");
	snprintf(want, sizeof(want), "%s/sockets/C.x-1_.sock", unit_dir);
	assert_string_equal(c->agents[2].sock, want);
	/* text holds the file's bytes. */
	assert_string_equal(c->text, good);
	/* No channels key: the full mesh, no self-loops. */
	for (s = 0; s < 3; s++)
		for (d = 0; d < 3; d++)
			assert_int_equal(cfg_has_channel(c, s, d), s != d);
	assert_int_equal(cfg_find(c, "B"), 1);
	assert_int_equal(cfg_find(c, "Z"), -1);
	assert_int_equal(cfg_has_channel(c, -1, 0), 0);
	assert_int_equal(cfg_has_channel(c, 0, 3), 0);
	cfg_free(c);
	cfg_free(NULL);
}

/* A relative config path resolves against the config's own directory,
 * not the working directory. */
static void
relative_paths_resolve_against_the_config_dir(void **state)
{
	struct cfg *c;
	struct cs_err e;
	char sub[PATH_MAX], path[PATH_MAX + 32], cwd[PATH_MAX];
	char want[PATH_MAX + 64];

	(void)state;
	snprintf(sub, sizeof(sub), "%s/etc", unit_dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(path, sizeof(path), "%s/cluster.ini", sub);
	unit_write_text(path, "[agent A]\ndata = ../var/a.data\n");
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(unit_dir), 0);
	assert_int_equal(cfg_load("etc/cluster.ini", &c, &e), 0);
	assert_int_equal(chdir(cwd), 0);
	assert_string_equal(c->path, path);
	snprintf(want, sizeof(want), "%s/../var/a.data", sub);
	assert_string_equal(c->agents[0].data, want);
	/* Default run_dir: run/ beside the config. */
	snprintf(want, sizeof(want), "%s/run", sub);
	assert_string_equal(c->run_dir, want);
	/* A single agent is a valid cluster with no channels. */
	assert_int_equal(c->nagents, 1);
	assert_int_equal(cfg_has_channel(c, 0, 0), 0);
	cfg_free(c);

	/* A config kept elsewhere (a manifest) parses as if at its path. */
	assert_int_equal(cfg_parse("[agent A]\ndata = a.data\n",
	    "/no/such/dir/cluster.ini", &c, &e), 0);
	assert_string_equal(c->path, "/no/such/dir/cluster.ini");
	assert_string_equal(c->agents[0].data, "/no/such/dir/a.data");
	assert_string_equal(c->run_dir, "/no/such/dir/run");
	cfg_free(c);
}

static void
channels_are_parsed_and_duplicates_ignored(void **state)
{
	struct cfg *c;
	struct cs_err e;

	(void)state;
	assert_int_equal(cfg_parse(
	    "[cluster]\n"
	    "channels = A>B  B>C\tA>B\n"
	    "[agent A]\ndata = a\n[agent B]\ndata = b\n[agent C]\ndata = c\n",
	    "/x/c.ini", &c, &e), 0);
	assert_int_equal(cfg_has_channel(c, 0, 1), 1);
	assert_int_equal(cfg_has_channel(c, 1, 2), 1);
	assert_int_equal(cfg_has_channel(c, 1, 0), 0);
	assert_int_equal(cfg_has_channel(c, 0, 2), 0);
	assert_int_equal(cfg_has_channel(c, 2, 0), 0);
	assert_int_equal(cfg_has_channel(c, 2, 1), 0);
	cfg_free(c);
}

struct bad_case {
	const char *text;
	const char *want;	/* the whole error line */
};

static void
malformed_configs_name_file_and_line(void **state)
{
	static const struct bad_case cases[] = {
		{ "[cluster]\n\n[agent A]\ndata = a\n\n[agent B]\n"
		  "foo = 1\ndata = b\n",
		  "cluster.ini:7: unknown key 'foo' in [agent B]" },
		{ "[cluster]\nrun_dirs = r\n[agent A]\ndata = a\n",
		  "cluster.ini:2: unknown key 'run_dirs' in [cluster]" },
		{ "[agent A]\ndata = a\n[agents]\n",
		  "cluster.ini:3: unknown section [agents]; expected [cluster] "
		  "or [agent NAME]" },
		{ "[agent A]\ndata = a\n[agent A]\ndata = b\n",
		  "cluster.ini:3: duplicate agent 'A' (first at line 1)" },
		{ "[agent A]\ndata = a\n[agent a/b]\ndata = b\n",
		  "cluster.ini:3: invalid agent name 'a/b' (1 to 63 of A-Z a-z "
		  "0-9 _ . -)" },
		{ "[agent]\ndata = a\n",
		  "cluster.ini:1: section [agent] needs a name: [agent NAME]" },
		{ "[agent A]\ndata = a\n[agent B\ndata = b\n",
		  "cluster.ini:3: section header without ']'" },
		{ "[agent A]\ndata = a\n[agent B]\n\n",
		  "cluster.ini:3: [agent B] has no 'data' key" },
		{ "[cluster]\nrun_dir = r\n",
		  "cluster.ini: no agents; add an [agent NAME] section with a "
		  "data key" },
		{ "data = a\n[agent A]\ndata = a\n",
		  "cluster.ini:1: key 'data' outside any section; put it under "
		  "[cluster] or [agent NAME]" },
		{ "[agent A]\ndata = a\ndata = b\n",
		  "cluster.ini:3: duplicate key 'data' (first at line 2)" },
		{ "[agent A]\ndata =\n",
		  "cluster.ini:2: empty value for 'data'" },
		{ "[agent A]\ndata = a\njust some words\n[agent B]\ndata = b\n",
		  "cluster.ini:3: syntax error: expected [section] or "
		  "key = value" },
		{ "[agent A]\ndata = a\n[agent B]\ndata = ./a\n",
		  NULL },	/* shared data path, checked below */
		{ "[cluster]\nchannels = A>B B>C\n[agent A]\ndata = a\n"
		  "[agent B]\ndata = b\n",
		  "cluster.ini:2: channel 'B>C' names unknown agent 'C'" },
		{ "[cluster]\nchannels = A>A\n[agent A]\ndata = a\n",
		  "cluster.ini:2: channel 'A>A' is a self-loop" },
		{ "[cluster]\nchannels = A-B\n[agent A]\ndata = a\n"
		  "[agent B]\ndata = b\n",
		  "cluster.ini:2: bad channel 'A-B'; write SRC>DST" },
		{ "[cluster]\nchannels = A>B>A\n[agent A]\ndata = a\n"
		  "[agent B]\ndata = b\n",
		  "cluster.ini:2: bad channel 'A>B>A'; write SRC>DST" },
		{ "[cluster]\n[cluster]\n[agent A]\ndata = a\n",
		  "cluster.ini:2: duplicate section [cluster] (first at line 1)" },
	};
	struct cfg *c = (struct cfg *)1;
	struct cs_err e;
	char cwd[PATH_MAX], want[PATH_MAX * 2];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&e, 0, sizeof(e));
		assert_int_equal(cfg_parse(cases[i].text, "cluster.ini", &c,
		    &e), -1);
		assert_null(c);
		if (cases[i].want == NULL) {
			assert_non_null(getcwd(cwd, sizeof(cwd)));
			snprintf(want, sizeof(want), "cluster.ini:4: agents A "
			    "and B share the data file %s/a", cwd);
			assert_string_equal(e.msg, want);
			continue;
		}
		assert_string_equal(e.msg, cases[i].want);
	}
}

/* The earliest bad line wins, whoever (libinih or we) found it. */
static void
first_error_in_the_file_is_reported(void **state)
{
	struct cfg *c;
	struct cs_err e;

	(void)state;
	assert_int_equal(cfg_parse("[agent A]\nnonsense\ndata = a\nfoo = 1\n",
	    "c.ini", &c, &e), -1);
	assert_string_equal(e.msg,
	    "c.ini:2: syntax error: expected [section] or key = value");
	assert_int_equal(cfg_parse("[agent A]\nfoo = 1\nnonsense\ndata = a\n",
	    "c.ini", &c, &e), -1);
	assert_string_equal(e.msg, "c.ini:2: unknown key 'foo' in [agent A]");
	assert_int_equal(cfg_parse("[bogus]\nx = 1\nnonsense\n", "c.ini", &c,
	    &e), -1);
	assert_string_equal(e.msg, "c.ini:1: unknown section [bogus]; "
	    "expected [cluster] or [agent NAME]");
}

static void
long_socket_path_is_rejected(void **state)
{
	struct cfg *c;
	struct cs_err e;
	char text[512], dir[200];

	(void)state;
	/* 100 + "/A.sock" = 107 bytes: fits (sun_path holds 107 + NUL). */
	memset(dir, 'd', sizeof(dir));
	dir[0] = '/';
	dir[100] = '\0';
	snprintf(text, sizeof(text), "[cluster]\nrun_dir = %s\n[agent A]\n"
	    "data = a\n", dir);
	assert_int_equal(cfg_parse(text, "/etc/c.ini", &c, &e), 0);
	assert_int_equal(strlen(c->agents[0].sock), 107);
	cfg_free(c);

	/* One byte more does not. */
	snprintf(text, sizeof(text), "[cluster]\nrun_dir = %s\n[agent AB]\n"
	    "data = a\n", dir);
	assert_int_equal(cfg_parse(text, "/etc/c.ini", &c, &e), -1);
	assert_non_null(strstr(e.msg, "/etc/c.ini:2: socket path /ddd"));
	assert_non_null(strstr(e.msg, "/AB.sock is too long for a Unix socket "
	    "(107 bytes at most); set a shorter run_dir under [cluster]"));

	/* Without run_dir the agent's section line is named. */
	snprintf(text, sizeof(text), "[agent A]\ndata = a\n");
	assert_int_equal(cfg_parse(text, "/ddddddddddddddddddddddddddddddddddd"
	    "ddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
	    "ddddddddddd/c.ini", &c, &e), -1);
	assert_non_null(strstr(e.msg, "c.ini:1: socket path "));
}

static void
names_lines_and_files_are_bounded(void **state)
{
	struct cfg *c;
	struct cs_err e;
	char path[PATH_MAX];
	char name[70];

	(void)state;
	assert_int_equal(cfg_valid_name("A"), 1);
	assert_int_equal(cfg_valid_name("agent_1.prod-2"), 1);
	assert_int_equal(cfg_valid_name(""), 0);
	assert_int_equal(cfg_valid_name("a b"), 0);
	assert_int_equal(cfg_valid_name("a/b"), 0);
	assert_int_equal(cfg_valid_name("a>b"), 0);
	memset(name, 'n', sizeof(name));
	name[63] = '\0';
	assert_int_equal(cfg_valid_name(name), 1);
	name[63] = 'n';
	name[64] = '\0';
	assert_int_equal(cfg_valid_name(name), 0);

	snprintf(path, sizeof(path), "%s/missing.ini", unit_dir);
	assert_int_equal(cfg_load(path, &c, &e), -1);
	assert_non_null(strstr(e.msg, "No such file or directory"));
	assert_non_null(strstr(e.msg, path));
}

/* Lines longer than libinih reads (197 bytes) are read whole: a long
 * data path with an inline comment, a long channels list, a long
 * comment and section header; a key that long is refused, named. */
static void
long_lines_are_read_whole(void **state)
{
	char text[2048], want[400], line[300];
	struct cfg *c;
	struct cs_err e;
	int i;

	(void)state;
	memset(want, 0, sizeof(want));
	want[0] = '/';
	memset(want + 1, 'x', 299);
	memset(line, 0, sizeof(line));
	memset(line, 'y', 260);
	snprintf(text, sizeof(text), "; %s\n[cluster]\nchannels =", line);
	for (i = 0; i < 40; i++)
		strcat(text, " A>B  B>A");
	snprintf(text + strlen(text), sizeof(text) - strlen(text),
	    " ; both ways\n[agent A]   ; %s\ndata = %s ; %s\n"
	    "[agent B]\ndata = /b;c\n", line, want, line);
	assert_int_equal(cfg_parse(text, "/x/c.ini", &c, &e), 0);
	assert_string_equal(c->agents[0].name, "A");
	assert_string_equal(c->agents[0].data, want);
	assert_string_equal(c->agents[1].data, "/b;c");
	assert_int_equal(cfg_has_channel(c, 0, 1), 1);
	assert_int_equal(cfg_has_channel(c, 1, 0), 1);
	cfg_free(c);

	/* A long line without "=": the syntax error at its line. */
	snprintf(text, sizeof(text), "[agent A]\ndata = /a\n%s\n", line);
	assert_int_equal(cfg_parse(text, "/x/c.ini", &c, &e), -1);
	assert_non_null(strstr(e.msg, "/x/c.ini:3: syntax error"));

	/* An unknown long key is named as any other. */
	snprintf(text, sizeof(text), "[agent A]\ndata = /a\nzz = %s\n",
	    line);
	assert_int_equal(cfg_parse(text, "/x/c.ini", &c, &e), -1);
	assert_non_null(strstr(e.msg, "/x/c.ini:3: unknown key 'zz'"));

	/* A key too long for libinih is refused, not misread. */
	snprintf(text, sizeof(text), "[agent A]\ndata = /a\n%s = 1\n", line);
	assert_int_equal(cfg_parse(text, "/x/c.ini", &c, &e), -1);
	assert_non_null(strstr(e.msg, "/x/c.ini:3: key longer than"));
}

static void
compact_min_size_accepts_suffixes(void **state)
{
	static const struct {
		const char *v;
		uint64_t want;	/* 0: refused */
	} cases[] = {
		{ "4M", 4ull << 20 }, { "1k", 1024 }, { "3G", 3ull << 30 },
		{ "1T", 1ull << 40 }, { "65536", 65536 }, { "0", 0 },
		{ "2T", 0 }, { "12Q", 0 }, { "M", 0 }, { "4MB", 0 },
		{ "-1", 0 }, { "99999999999999999999", 0 },
	};
	char text[256];
	struct cfg *c;
	struct cs_err e;
	size_t i;

	(void)state;
	assert_int_equal(cfg_parse("[agent A]\ndata = a\n", "c.ini", &c, &e),
	    0);
	assert_int_equal(c->compact_min_size, CFG_COMPACT_MIN_DEFAULT);
	cfg_free(c);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "[cluster]\ncompact_min_size = "
		    "%s\n[agent A]\ndata = a\n", cases[i].v);
		if (cases[i].want == 0) {
			assert_int_equal(cfg_parse(text, "c.ini", &c, &e), -1);
			assert_non_null(strstr(e.msg, "c.ini:2: "
			    "compact_min_size"));
			continue;
		}
		assert_int_equal(cfg_parse(text, "c.ini", &c, &e), 0);
		assert_int_equal(c->compact_min_size, cases[i].want);
		cfg_free(c);
	}
}

/* inbox_max_bytes: [cluster]'s for every agent without its own, the
 * default without either; a bad size or a second one refused by line. */
static void
inbox_max_bytes_per_agent_or_cluster(void **state)
{
	struct cfg *c;
	struct cs_err e;

	(void)state;
	assert_int_equal(cfg_parse("[agent A]\ndata = a\n", "c.ini", &c, &e),
	    0);
	assert_true(c->agents[0].inbox_max == CFG_INBOX_MAX_DEFAULT);
	cfg_free(c);
	assert_int_equal(cfg_parse("[cluster]\ninbox_max_bytes = 2M\n"
	    "[agent A]\ndata = a\ninbox_max_bytes = 1K\n[agent B]\n"
	    "data = b\n", "c.ini", &c, &e), 0);
	assert_true(c->agents[0].inbox_max == 1024);
	assert_true(c->agents[1].inbox_max == 2ull << 20);
	cfg_free(c);
	assert_int_equal(cfg_parse("[agent A]\ndata = a\n"
	    "inbox_max_bytes = 0\n", "c.ini", &c, &e), -1);
	assert_non_null(strstr(e.msg, "c.ini:3: inbox_max_bytes '0': "
	    "expected a size"));
	assert_int_equal(cfg_parse("[agent A]\ndata = a\n"
	    "inbox_max_bytes = 2T\n", "c.ini", &c, &e), -1);
	assert_non_null(strstr(e.msg, "c.ini:3: inbox_max_bytes"));
	assert_int_equal(cfg_parse("[agent A]\ndata = a\n"
	    "inbox_max_bytes = 1K\ninbox_max_bytes = 2K\n", "c.ini", &c,
	    &e), -1);
	assert_non_null(strstr(e.msg, "c.ini:4: duplicate key "
	    "'inbox_max_bytes'"));
}

static void
shared_data_is_yes_or_no(void **state)
{
	struct cfg *c;
	struct cs_err e;

	(void)state;
	assert_int_equal(cfg_parse("[agent A]\ndata = a\n", "c.ini", &c, &e),
	    0);
	assert_int_equal(c->shared_data, 0);
	cfg_free(c);
	assert_int_equal(cfg_parse("[cluster]\nshared_data = yes\n[agent A]\n"
	    "data = a\n", "c.ini", &c, &e), 0);
	assert_int_equal(c->shared_data, 1);
	cfg_free(c);
	assert_int_equal(cfg_parse("[cluster]\nshared_data = no\n[agent A]\n"
	    "data = a\n", "c.ini", &c, &e), 0);
	assert_int_equal(c->shared_data, 0);
	cfg_free(c);
	assert_int_equal(cfg_parse("[cluster]\nshared_data = true\n"
	    "[agent A]\ndata = a\n", "c.ini", &c, &e), -1);
	assert_non_null(strstr(e.msg, "c.ini:2: shared_data 'true': expected "
	    "yes or no"));
	assert_int_equal(cfg_parse("[cluster]\nshared_data = no\nshared_data = "
	    "yes\n[agent A]\ndata = a\n", "c.ini", &c, &e), -1);
	assert_non_null(strstr(e.msg, "duplicate key 'shared_data'"));
}

static void
rates_parse_with_suffixes_and_bounds(void **state)
{
	static const struct {
		const char *s;
		int ok;
		uint64_t want;
	} cases[] = {
		{ "0", 1, 0 }, { "32K", 1, 32768 }, { "32k", 1, 32768 },
		{ "50M", 1, 50ull << 20 }, { "1G", 1, 1ull << 30 },
		{ "1024G", 1, 1ull << 40 }, { "1048576", 1, 1048576 },
		{ "32768", 1, 32768 },
		{ "31K", 0, 0 }, { "32767", 0, 0 }, { "1025G", 0, 0 },
		{ "1T", 0, 0 }, { "", 0, 0 }, { "M", 0, 0 }, { "5MB", 0, 0 },
		{ "1.5M", 0, 0 }, { "-1", 0, 0 }, { " 5M", 0, 0 },
		{ "5 M", 0, 0 }, { "00", 0, 0 }, { "0K", 0, 0 },
		{ "99999999999999999999", 0, 0 },
	};
	uint64_t v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = 12345;
		assert_int_equal(cfg_parse_rate(cases[i].s, &v),
		    cases[i].ok ? 0 : -1);
		assert_int_equal(v, cases[i].ok ? cases[i].want : 12345);
	}
	assert_int_equal(i, 22);
}

static void
snapshot_max_rate_is_a_rate(void **state)
{
	struct cfg *c;
	struct cs_err e;

	(void)state;
	assert_int_equal(cfg_parse("[agent A]\ndata = a\n", "c.ini", &c, &e),
	    0);
	assert_int_equal(c->snapshot_max_rate, 0);
	cfg_free(c);
	assert_int_equal(cfg_parse("[cluster]\nsnapshot_max_rate = 50M\n"
	    "[agent A]\ndata = a\n", "c.ini", &c, &e), 0);
	assert_int_equal(c->snapshot_max_rate, 50ull << 20);
	cfg_free(c);
	assert_int_equal(cfg_parse("[cluster]\nsnapshot_max_rate = 10Q\n"
	    "[agent A]\ndata = a\n", "c.ini", &c, &e), -1);
	assert_string_equal(e.msg, "c.ini:2: snapshot_max_rate '10Q': "
	    CFG_RATE_EXPECTED);
	assert_int_equal(cfg_parse("[cluster]\nsnapshot_max_rate = 0\n"
	    "snapshot_max_rate = 1M\n[agent A]\ndata = a\n", "c.ini", &c,
	    &e), -1);
	assert_string_equal(e.msg, "c.ini:3: duplicate key "
	    "'snapshot_max_rate' (first at line 2)");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_config_loads_with_absolute_paths),
		cmocka_unit_test(relative_paths_resolve_against_the_config_dir),
		cmocka_unit_test(channels_are_parsed_and_duplicates_ignored),
		cmocka_unit_test(malformed_configs_name_file_and_line),
		cmocka_unit_test(first_error_in_the_file_is_reported),
		cmocka_unit_test(long_socket_path_is_rejected),
		cmocka_unit_test(names_lines_and_files_are_bounded),
		cmocka_unit_test(long_lines_are_read_whole),
		cmocka_unit_test(compact_min_size_accepts_suffixes),
		cmocka_unit_test(inbox_max_bytes_per_agent_or_cluster),
		cmocka_unit_test(shared_data_is_yes_or_no),
		cmocka_unit_test(rates_parse_with_suffixes_and_bounds),
		cmocka_unit_test(snapshot_max_rate_is_a_rate),
	};

	return cmocka_run_group_tests(tests, unit_setup, unit_teardown);
}
