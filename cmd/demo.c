/* demo.c - "cutsnap demo": the bank example end to end (tools/demo.c) in
 * a temporary directory, removed afterwards unless --keep. */
#include <sys/stat.h>

#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tools/demo.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap demo [--keep]\n"
    "\n"
    "Run the bank example end to end, with two real agents A and B in a\n"
    "temporary directory. A transfer is held in flight on a channel while\n"
    "the data files are copied one by one (whose totals are wrong) and while\n"
    "a snapshot is taken (whose cut, plus the message in flight, adds up);\n"
    "then the snapshot is verified and restored. Includes the non-FIFO\n"
    "control ('channel release --reverse', marker first): still right.\n"
    "\n"
    "      --keep   keep the temporary directory and print its path\n"
    "\n"
    "Exit status: 0 if every total is the expected one, 1 otherwise.\n";

/* Options without a short form (cmd_getopt). */
enum { OPT_KEEP = CMD_OPT_LONG };

static const struct option opts[] = {
	{ "keep", no_argument, NULL, OPT_KEEP },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)f;
	if (flag == FTW_DP)
		return rmdir(path);
	return unlink(path);
}

int
cmd_demo(int argc, char **argv)
{
	static const struct demo_env env = { cmd_start_cluster,
	    cmd_stop_cluster, cmd_warn };
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, CMD_OPT_NO_OPERANDS);
	char top[PATH_MAX];
	const char *tmp;
	size_t ncases;
	int ch, keep = 0, failed;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case OPT_KEEP:
			keep = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if ((tmp = getenv("TMPDIR")) == NULL || *tmp == '\0')
		tmp = "/tmp";
	if (snprintf(top, sizeof(top), "%s/cutsnap-demo.XXXXXX", tmp) >=
	    (int)sizeof(top) || mkdtemp(top) == NULL)
		return cmd_fail(EXIT_FAILED, "cannot create a directory in %s: "
		    "%s", tmp, strerror(errno));
	demo_catch_signals();
	failed = demo_run(&env, top, &ncases);
	if (keep)
		printf("files kept in %s\n", top);
	else if (nftw(top, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == -1)
		cmd_warn("remove %s: %s", top, strerror(errno));
	if (demo_interrupted())
		return cmd_fail(EXIT_FAILED, "interrupted");
	if (failed)
		return cmd_fail(EXIT_FAILED, "%d of %zu cases did not give the "
		    "expected totals", failed, ncases);
	printf("every consistent cut and every restore adds up; the "
	    "independent copies do not.\n");
	return EXIT_OK;
}
