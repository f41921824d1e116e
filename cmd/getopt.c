/* getopt.c - the option loop every subcommand shares: getopt_long over
 * the command's table, with --help, a bad option and left-over operands
 * handled in one place.
 *
 * The table is the one list of a command's options: an entry whose val
 * is an ASCII letter is also that short option, one whose val is
 * CMD_OPT_LONG or above is long only. The short-option string is built
 * from it, so the two cannot disagree, and a check can read a command's
 * options from its table alone. */
#include <getopt.h>
#include <string.h>

#include "cmd.h"

/* The short-option string of table into out: ":" (report a missing
 * value as ':'), "+" first when options end at the first operand. */
static void
build_shorts(const struct option *opts, int in_order, char *out,
    size_t outsz)
{
	size_t n = 0;

	if (in_order)
		out[n++] = '+';
	out[n++] = ':';
	for (; opts->name != NULL; opts++) {
		if (opts->val >= CMD_OPT_LONG || opts->flag != NULL)
			continue;
		/* A letter per entry, a colon for a value: three bytes at
		 * most and the NUL; a table that outgrows out is a bug. */
		if (n + 3 > outsz)
			break;
		out[n++] = (char)opts->val;
		if (opts->has_arg == required_argument)
			out[n++] = ':';
		else if (opts->has_arg == optional_argument) {
			out[n++] = ':';
			out[n++] = ':';
		}
	}
	out[n] = '\0';
}

int
cmd_getopt(struct cmd_getopt *g, int argc, char **argv)
{
	int ch;

	if (g->shorts[0] == '\0') {
		build_shorts(g->opts, (g->flags & CMD_OPT_IN_ORDER) != 0,
		    g->shorts, sizeof(g->shorts));
		g->status = -1;
		optind = 1;
		opterr = 0;
	}
	ch = getopt_long(argc, argv, g->shorts, g->opts, NULL);
	switch (ch) {
	case -1:
		break;
	case 'h':
		g->status = cmd_help(g->usage);
		return -1;
	case '?':
	case ':':
		g->status = cmd_bad_option(argv, ch);
		return -1;
	default:
		return ch;
	}
	if (g->flags & CMD_OPT_IN_ORDER)
		cmd_skip_late_dashes(argc, argv);
	if ((g->flags & CMD_OPT_NO_OPERANDS) && optind < argc)
		g->status = cmd_usage_error("unexpected argument '%s'",
		    argv[optind]);
	return -1;
}
