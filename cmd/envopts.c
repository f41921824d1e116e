/* envopts.c - CUTSNAP_REPOSITORY and CUTSNAP_CONFIG: the repository and the
 * config of a command that names neither on its command line, as restic
 * reads RESTIC_REPOSITORY.
 *
 * The value is put into argv as "-r VALUE" / "-c VALUE" before the
 * command's own words, so that every later reader of argv (the command's
 * getopt, the object-store session that looks for an s3:// repository)
 * sees one repository, whichever way it was given. An option on the
 * command line always wins: the variable is not used at all then. */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

/* The commands whose -r/--repo names the repository they work on. load's
 * -r is not one: it turns on snapshots during the load. */
static const char *const repo_cmds[] = { "init", "key", "snapshot", "ls",
    "show", "verify", "forget", "prune", "restore", "check", NULL };
/* The commands that read the cluster's config with -c/--config. */
static const char *const conf_cmds[] = { "agent", "start", "stop", "status",
    "check", "put", "get", "del", "add", "transfer", "channel", "deadletter",
    "snapshot", "restore", "compact", "load", "cert", NULL };

static int
listed(const char *const *list, const char *name)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, name) == 0)
			return 1;
	return 0;
}

/* 1 when argv (before any "--") holds the short or long option: "-r X",
 * "-rX", "--repo X", "--repo=X". */
static int
has_opt(int argc, char **argv, char s, const char *l)
{
	size_t ln = strlen(l);
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (argv[i][0] == '-' && argv[i][1] == s)
			return 1;
		if (strncmp(argv[i], "--", 2) == 0 &&
		    strncmp(argv[i] + 2, l, ln) == 0 &&
		    (argv[i][2 + ln] == '\0' || argv[i][2 + ln] == '='))
			return 1;
	}
	return 0;
}

/* The argument vector cmd_env_defaults built, kept for the process's
 * life. Only written: volatile, so that the compiler keeps the store and
 * a leak checker at exit still finds the vector referenced. */
static char **volatile env_argv;

int
cmd_env_defaults(const char *name, int *argc, char ***argv)
{
	const char *repo = getenv("CUTSNAP_REPOSITORY");
	const char *conf = getenv("CUTSNAP_CONFIG");
	char **av;
	int n = 0, i;

	if (repo != NULL && (*repo == '\0' || !listed(repo_cmds, name) ||
	    has_opt(*argc, *argv, 'r', "repo")))
		repo = NULL;
	if (conf != NULL && (*conf == '\0' || !listed(conf_cmds, name) ||
	    has_opt(*argc, *argv, 'c', "config")))
		conf = NULL;
	/* restore --target writes a config of its own and takes none. */
	if (conf != NULL && strcmp(name, "restore") == 0 &&
	    (has_opt(*argc, *argv, 't', "target")))
		conf = NULL;
	if (repo == NULL && conf == NULL)
		return 0;
	/* Lives as long as the process, as argv does (env_argv). */
	if ((av = calloc((size_t)*argc + 5, sizeof(*av))) == NULL)
		return -1;
	env_argv = av;
	av[n++] = (*argv)[0];
	if (repo != NULL) {
		av[n++] = "-r";
		av[n++] = (char *)repo;
	}
	if (conf != NULL) {
		av[n++] = "-c";
		av[n++] = (char *)conf;
	}
	for (i = 1; i < *argc; i++)
		av[n++] = (*argv)[i];
	av[n] = NULL;
	*argc = n;
	*argv = av;
	return 0;
}
