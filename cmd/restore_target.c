/* restore_target.c - restore --target DIR: a snapshot restored into a
 * directory of its own instead of the cluster's data paths.
 *
 * DIR gets the snapshot's cluster as a config of its own, DIR/cluster.ini
 * (its agents and channels, data files NAME.data, sockets in DIR/run; no
 * addr, no tls_dir), and the files a restore writes: each agent's
 * recorded file with the recorded channel messages replayed into their
 * receivers, so that `cutsnap start -c DIR/cluster.ini` starts the cut's
 * cluster there and `cutsnap dump` reads each file. No agent of the live
 * cluster is contacted or changed. DIR is created when missing; a config
 * or data file already there is never overwritten (restic's --target
 * overwrites; here an old copy would mix two histories). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/fsutil.h"
#include "../store/store.h"
#include "cmd.h"

/* 1 when path names something (a dangling link too). */
static int
exists(const char *path)
{
	struct stat sb;

	return lstat(path, &sb) == 0 || errno != ENOENT;
}

int
cmd_restore_target(struct store *st, uint64_t id, const char *dir,
    uint64_t *resolved, char *conf, size_t confsz, struct cfg **out)
{
	struct cfg *c = NULL;
	struct cs_err e;
	char *text = NULL, cwd[PATH_MAX];
	int i, rc = EXIT_FAILED;

	*out = NULL;
	conf[0] = '\0';
	if (store_target_config(st, id, resolved, &text, &e) < 0)
		return cmd_fail(EXIT_FAILED, "%s", e.msg);
	/* An absolute path: the config's relative paths are resolved
	 * against its own directory. */
	if (dir[0] != '/' && getcwd(cwd, sizeof(cwd)) == NULL) {
		rc = cmd_fail(EXIT_FAILED, "getcwd: %s", strerror(errno));
		goto out;
	}
	if ((size_t)snprintf(conf, confsz, "%s%s%s/cluster.ini",
	    dir[0] == '/' ? "" : cwd, dir[0] == '/' ? "" : "/", dir) >=
	    confsz) {
		rc = cmd_usage_error("--target %s: path too long", dir);
		goto out;
	}
	if (cfg_parse(text, conf, &c, &e) < 0) {
		rc = cmd_fail(EXIT_USAGE, "--target %s: %s", dir, e.msg);
		goto out;
	}
	if (exists(conf)) {
		rc = cmd_fail(EXIT_USAGE, "--target %s already holds "
		    "cluster.ini: restore --target overwrites nothing; give a "
		    "new or empty directory", dir);
		goto out;
	}
	for (i = 0; i < c->nagents; i++)
		if (exists(c->agents[i].data)) {
			rc = cmd_fail(EXIT_USAGE, "--target %s already holds "
			    "%s.data: restore --target overwrites nothing; "
			    "give a new or empty directory", dir,
			    c->agents[i].name);
			goto out;
		}
	/* Checked before DIR is made: never a directory inside the
	 * repository. */
	if (store_check_paths(st, c, &e) == -1) {
		rc = cmd_fail(EXIT_USAGE, "%s", e.msg);
		goto out;
	}
	if (fs_mkdir_p(dir, 0755, &e) < 0) {
		rc = cmd_fail(EXIT_FAILED, "--target %s: %s", dir, e.msg);
		goto out;
	}
	if (fs_atomic_write_file(conf, text, strlen(text), 0644, &e) < 0) {
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
		goto out;
	}
	/* What the user will start the agents with. */
	cfg_free(c);
	c = NULL;
	if (cfg_load(conf, out, &e) < 0) {
		*out = NULL;
		(void)unlink(conf);
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
		goto out;
	}
	rc = EXIT_OK;
out:
	if (rc != EXIT_OK)
		conf[0] = '\0';
	cfg_free(c);
	free(text);
	return rc;
}
