/* remote.c - commands on a repository on an object store
 * (-r s3://BUCKET/PREFIX): the command's own arguments that concern the
 * session (--commit, prune's --grace), its standard output held back
 * until the commit made it true, and the command run on the session's
 * local stand-in (store/objrepo.c does the rest). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "../store/objrepo.h"
#include "../store/store.h"

/* The index in argv of the repository argument's value (its own word or
 * the tail of "-rVAL" / "--repo=VAL"), with *off its offset; -1 if none. */
static int
find_repo(int argc, char **argv, size_t *off)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if ((strcmp(argv[i], "-r") == 0 ||
		    strcmp(argv[i], "--repo") == 0) && i + 1 < argc) {
			*off = 0;
			return i + 1;
		}
		if (strncmp(argv[i], "--repo=", 7) == 0) {
			*off = 7;
			return i;
		}
		if (strncmp(argv[i], "-r", 2) == 0 && argv[i][2] != '\0') {
			*off = 2;
			return i;
		}
	}
	return -1;
}

/* A writer's stdout (a snapshot's id, init's line, load's summary) is
 * held back in a temp file until the commit has made it true, and
 * dropped when publishing fails: a snapshot id is printed only once the
 * snapshot is visible in the bucket. */
static int
hold_stdout(int *saved, FILE **held, struct cs_err *e)
{
	*saved = -1;
	fflush(stdout);
	if ((*held = tmpfile()) == NULL)
		return cs_errno(e, "tmpfile");
	if ((*saved = dup(STDOUT_FILENO)) < 0 ||
	    dup2(fileno(*held), STDOUT_FILENO) < 0) {
		cs_errno(e, "dup stdout");
		if (*saved >= 0)
			close(*saved);
		*saved = -1;
		fclose(*held);
		*held = NULL;
		return -1;
	}
	return 0;
}

static void
release_stdout(int saved, FILE *held, int show)
{
	char buf[8192];
	size_t n;

	if (held == NULL)
		return;
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	if (show && fseek(held, 0, SEEK_SET) == 0)
		while ((n = fread(buf, 1, sizeof(buf), held)) > 0)
			if (fwrite(buf, 1, n, stdout) != n)
				break;
	fflush(stdout);
	fclose(held);
}

/* Takes the first "--NAME VALUE" / "--NAME=VALUE" out of argv, its
 * VALUE into *val (borrowed from argv): 1, or 0 when there is none. */
static int
take_value(int *argc, char **argv, const char *name, const char **val)
{
	size_t n = strlen(name);
	int i, j, k;

	for (i = 1; i < *argc; i++) {
		if (strcmp(argv[i], name) == 0 && i + 1 < *argc) {
			*val = argv[i + 1];
			k = 2;
		} else if (strncmp(argv[i], name, n) == 0 &&
		    argv[i][n] == '=') {
			*val = argv[i] + n + 1;
			k = 1;
		} else {
			continue;
		}
		for (j = i; j + k <= *argc; j++)
			argv[j] = argv[j + k];
		*argc -= k;
		return 1;
	}
	return 0;
}

/* "--commit N": a reader reads the manifest of commit N instead of the
 * newest one (an older state, or the one before a damaged commit). 1
 * when given, 0 when not, -1 when bad. */
static int
take_commit(int *argc, char **argv, uint64_t *num)
{
	const char *v;
	char *end;
	int found = 0;

	while (take_value(argc, argv, "--commit", &v)) {
		errno = 0;
		*num = strtoull(v, &end, 10);
		if (errno != 0 || *end != '\0' || *num == 0 ||
		    !isdigit((unsigned char)*v)) {
			cmd_usage_error("--commit: '%s' is not a commit number",
			    v);
			return -1;
		}
		found = 1;
	}
	return found;
}

/* "--grace DURATION": how old an unreferenced object must be to go. */
static int
take_grace(int *argc, char **argv, int64_t *grace)
{
	const char *v;

	while (take_value(argc, argv, "--grace", &v)) {
		if (strcmp(v, "0") == 0)
			*grace = 0;
		else if (cmd_parse_duration(v, grace) == -1)
			return -1;
	}
	return 0;
}

static int
has_arg(int argc, char **argv, const char *a, const char *b)
{
	int i;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], a) == 0 || strcmp(argv[i], b) == 0)
			return 1;
	return 0;
}

/* ---- the command ---- */

static int
kind_of(const char *name, enum objrepo_kind *k)
{
	static const char *const w[] = { "snapshot", "forget", "init", "key",
	    "load" };
	size_t i;

	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (strcmp(name, w[i]) == 0) {
			*k = OBJREPO_WRITE;
			return 0;
		}
	if (strcmp(name, "ls") == 0 || strcmp(name, "check") == 0)
		*k = OBJREPO_META;
	else if (strcmp(name, "show") == 0 || strcmp(name, "verify") == 0 ||
	    strcmp(name, "restore") == 0)
		*k = OBJREPO_BLOBS;
	else if (strcmp(name, "prune") == 0)
		*k = OBJREPO_PRUNE;
	else
		return -1;
	return 0;
}

int
cmd_remote_wants(const char *name, int argc, char **argv)
{
	size_t off;
	int i;
	enum objrepo_kind k;

	if (kind_of(name, &k) < 0 || (i = find_repo(argc, argv, &off)) < 0)
		return 0;
	return store_objrepo_is(argv[i] + off);
}

/* The writing command's session, for cmd_repo_published (load). */
static struct objrepo *active;

int
cmd_repo_published(struct cs_err *e)
{
	return active == NULL ? 0 : store_objrepo_publish(active, 1, e);
}

int
cmd_remote_run(const char *name, int (*fn)(int, char **), int argc,
    char **argv)
{
	struct objrepo_args a;
	struct objrepo *r = NULL;
	struct cs_err e;
	char **av = NULL, *rep = NULL;
	const char *dir;
	size_t off;
	FILE *held = NULL;
	int i, k, ri, rc = EXIT_FAILED, dry = 0, saved = -1, verbose;

	memset(&a, 0, sizeof(a));
	a.grace = 3600;
	a.warn = cmd_warn;
	e.msg[0] = '\0';
	if ((av = calloc((size_t)argc + 1, sizeof(*av))) == NULL)
		return cmd_fail(EXIT_FAILED, "out of memory");
	for (i = 0; i < argc; i++)
		av[i] = argv[i];
	kind_of(name, &a.kind);
	if (a.kind == OBJREPO_PRUNE) {
		if (take_grace(&argc, av, &a.grace) < 0) {
			rc = EXIT_USAGE;
			goto out;
		}
		dry = has_arg(argc, av, "-n", "--dry-run");
	}
	if ((k = take_commit(&argc, av, &a.want)) < 0) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (k == 1 && a.kind != OBJREPO_META && a.kind != OBJREPO_BLOBS) {
		rc = cmd_usage_error("--commit is for commands that read (ls, "
		    "show, verify, restore), not %s", name);
		goto out;
	}
	if (has_arg(argc, av, "-h", "--help")) {
		rc = fn(argc, av);
		goto out;
	}
	/* Its objects would have to be in the cache, and the old ones
	 * stay in the bucket: not done over an object store yet. */
	if (strcmp(name, "key") == 0 && has_arg(argc, av, "rotate", "rotate")) {
		rc = cmd_usage_error("key rotate needs a directory repository: "
		    "it is not done over s3:// yet");
		goto out;
	}
	/* The prune of an object store is a session of its own (stand-ins,
	 * its grace period), not the tail of a writer's. */
	if (strcmp(name, "forget") == 0 && has_arg(argc, av, "--prune",
	    "--prune")) {
		rc = cmd_usage_error("forget --prune needs a directory "
		    "repository: over s3:// run forget, then prune");
		goto out;
	}
	verbose = has_arg(argc, av, "-v", "--verbose");
	ri = find_repo(argc, av, &off);
	if (store_objrepo_open(av[ri] + off, &a, &r, &e) < 0)
		goto fail;
	/* The command, on the local stand-in for the bucket. */
	dir = store_objrepo_dir(r);
	if ((rep = malloc(off + strlen(dir) + 1)) == NULL) {
		cs_errc(&e, CS_E_NOMEM, "out of memory");
		goto fail;
	}
	sprintf(rep, "%.*s%s", (int)off, av[ri], dir);
	av[ri] = rep;
	if (a.kind == OBJREPO_WRITE) {
		if (hold_stdout(&saved, &held, &e) < 0)
			goto fail;
		active = r;
	}
	store_objrepo_opts(r, &cmd_store_opts);
	cmd_repo_alias(dir, store_objrepo_name(r));
	rc = fn(argc, av);
	store_objrepo_opts_clear(&cmd_store_opts);
	active = NULL;
	fflush(stdout);
	if (rc != EXIT_OK)
		goto out;
	if (a.kind == OBJREPO_WRITE) {
		if (store_objrepo_publish(r, 0, &e) < 0)
			goto fail;
		/* The commit stands whatever happens to the cache. */
		store_objrepo_collect(r);
	}
	release_stdout(saved, held, 1);
	held = NULL;
	if (a.kind == OBJREPO_PRUNE && !dry && store_objrepo_prune(r, &e) < 0)
		goto fail;
	if (verbose)
		store_objrepo_report(r, stderr);
	goto out;
fail:
	/* The kind the store or the bucket named (usage, locked, auth, no
	 * repository) gives the status. */
	rc = cmd_fail_errs(EXIT_FAILED, &e);
out:
	/* A failed command's own output (a --json error object) still shows. */
	release_stdout(saved, held, rc != EXIT_OK && e.msg[0] == '\0');
	cmd_repo_alias(NULL, NULL);
	store_objrepo_opts_clear(&cmd_store_opts);
	active = NULL;
	store_objrepo_close(r);
	free(rep);
	free(av);
	return rc;
}
