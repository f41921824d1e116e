/* restore_paths.c - where restore may write: never inside the repository
 * it reads (a data path of REPO/manifest.db would replace the manifest),
 * and never one file for two agents. Paths are compared by the file they
 * name, not as text: "x.data", "sub/../x.data" and a symlinked directory
 * leading to x.data are one place. A place is the realpath of the
 * deepest existing ancestor of the path's directory, the rest taken
 * lexically (those directories do not exist yet, so hold no symlinks),
 * plus the file's name: where restore's rename puts the file. When the
 * file exists, its device and inode also identify it (hard links). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store_int.h"
#include "../lib/fsutil.h"

struct place {
	char dir[PATH_MAX];	/* canonical directory */
	char loc[PATH_MAX];	/* dir/name */
	int exists;		/* stat (following links) succeeded */
	dev_t dev;
	ino_t ino;
};

/* Drop the last component of the canonical path p ("/" stays). */
static void
pop(char *p)
{
	char *s = strrchr(p, '/');

	if (s == NULL || s == p)
		p[1] = '\0';
	else
		*s = '\0';
}

/* The canonical form of the absolute path in (see the top). */
static int
canon_once(const char *in, char out[PATH_MAX], struct cs_err *e)
{
	char head[PATH_MAX], tail[PATH_MAX], tmp[PATH_MAX], *s, *tok, *save;
	size_t n;

	if (snprintf(head, sizeof(head), "%s", in) >= (int)sizeof(head) ||
	    head[0] != '/')
		return cs_errf(e, "path %.200s is not absolute or too long",
		    in);
	tail[0] = '\0';
	while (realpath(head, out) == NULL) {
		if (errno != ENOENT && errno != ENOTDIR)
			return cs_errno(e, "resolve %.200s", head);
		s = strrchr(head, '/');
		if (snprintf(tmp, sizeof(tmp), "%s/%s", s + 1, tail) >=
		    (int)sizeof(tmp))
			return cs_errf(e, "path %.200s is too long", in);
		memcpy(tail, tmp, sizeof(tail));
		if (s == head)
			head[1] = '\0';
		else
			*s = '\0';
	}
	for (tok = strtok_r(tail, "/", &save); tok != NULL;
	    tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0) {
			pop(out);
			continue;
		}
		n = strlen(out);
		if (snprintf(out + n, PATH_MAX - n, "%s%s",
		    out[n - 1] == '/' ? "" : "/", tok) >= (int)(PATH_MAX - n))
			return cs_errf(e, "path %.200s is too long", in);
	}
	return 0;
}

/* Twice: a ".." in the missing part may lead back into existing
 * directories, whose symlinks the second pass resolves. */
static int
canon(const char *in, char out[PATH_MAX], struct cs_err *e)
{
	char mid[PATH_MAX];

	if (canon_once(in, mid, e) < 0)
		return -1;
	return canon_once(mid, out, e);
}

static int
place_of(const char *path, struct place *p, struct cs_err *e)
{
	const char *name = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat sb;

	memset(p, 0, sizeof(*p));
	if (name == NULL || name[1] == '\0' || strcmp(name + 1, ".") == 0 ||
	    strcmp(name + 1, "..") == 0)
		return cs_errf(e, "data path %.200s does not name a file",
		    path);
	name++;
	fs_path_dirname(path, dir, sizeof(dir));
	if (canon(dir, p->dir, e) < 0)
		return -1;
	if (snprintf(p->loc, sizeof(p->loc), "%s%s%s", p->dir,
	    strcmp(p->dir, "/") == 0 ? "" : "/", name) >= (int)sizeof(p->loc))
		return cs_errf(e, "data path %.200s is too long", path);
	if (stat(path, &sb) == 0) {
		p->exists = 1;
		p->dev = sb.st_dev;
		p->ino = sb.st_ino;
	}
	return 0;
}

/* Is place p inside (or equal to) the repository directory, whose
 * canonical path is repo and whose identity is rsb? By path, and by
 * device and inode of every existing ancestor (a bind mount of REPO). */
static int
inside(const struct place *p, const char *repo, const struct stat *rsb)
{
	char up[PATH_MAX];
	struct stat sb;
	size_t n = strlen(repo);

	if (strcmp(repo, "/") == 0 || (strncmp(p->loc, repo, n) == 0 &&
	    (p->loc[n] == '\0' || p->loc[n] == '/')))
		return 1;
	if (p->exists && p->dev == rsb->st_dev && p->ino == rsb->st_ino)
		return 1;
	memcpy(up, p->dir, sizeof(up));
	for (;;) {
		if (stat(up, &sb) == 0 && sb.st_dev == rsb->st_dev &&
		    sb.st_ino == rsb->st_ino)
			return 1;
		if (strcmp(up, "/") == 0)
			return 0;
		pop(up);
	}
}

int
store_check_paths(struct store *st, const struct cfg *c, struct cs_err *e)
{
	struct place *pl = NULL;
	char repo[PATH_MAX];
	struct stat rsb;
	int i, j, rc = -1;

	if (realpath(st->repo, repo) == NULL || stat(repo, &rsb) < 0)
		return cs_errno(e, "resolve repository %s", st->repo);
	if ((pl = calloc((size_t)c->nagents + 1, sizeof(*pl))) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	for (i = 0; i < c->nagents; i++) {
		if (place_of(c->agents[i].data, &pl[i], e) < 0) {
			cs_errctx(e, "agent %s", c->agents[i].name);
			goto out;
		}
		if (inside(&pl[i], repo, &rsb)) {
			cs_errf(e, "agent %s: data path %s is inside repository "
			    "%s, which restore reads: choose a data path "
			    "outside the repository", c->agents[i].name,
			    c->agents[i].data, st->repo);
			goto out;
		}
		for (j = 0; j < i; j++)
			if (strcmp(pl[i].loc, pl[j].loc) == 0 ||
			    (pl[i].exists && pl[j].exists &&
			    pl[i].dev == pl[j].dev && pl[i].ino == pl[j].ino)) {
				cs_errf(e, "agents %s and %s: data paths %s and "
				    "%s name the same file: give each agent "
				    "its own data file", c->agents[j].name,
				    c->agents[i].name, c->agents[j].data,
				    c->agents[i].data);
				goto out;
			}
	}
	rc = 0;
out:
	free(pl);
	return rc;
}
