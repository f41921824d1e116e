/* password.c - an encrypted repository's password: from --password-file
 * FILE, --password-command CMD, CUTSNAP_PASSWORD_FILE,
 * CUTSNAP_PASSWORD_COMMAND, CUTSNAP_PASSWORD or the terminal (no echo),
 * never from the command line. A new password (init --encrypt, key add,
 * key passwd) has its own sources, and from the terminal it is asked
 * twice. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "../lib/fsutil.h"
#include "../crypto/mac.h"
#include "../store/store.h"
#include "cmd.h"

const char *cmd_password_file;	/* --password-file, taken out by main */
const char *cmd_password_command; /* --password-command, the same */

/* Strip one trailing newline: LF, or CRLF as an editor on Windows
 * writes it. A CR without its LF is part of the password (a key file of
 * random bytes may end in one). */
static void
chomp(char *buf, size_t *len)
{
	if (*len == 0 || buf[*len - 1] != '\n')
		return;
	(*len)--;
	if (*len > 0 && buf[*len - 1] == '\r')
		(*len)--;
}

static int
from_file(const char *path, char *buf, size_t sz, size_t *len,
    struct cs_err *e)
{
	ssize_t n;
	size_t off = 0;
	int fd, rc = -1;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return cs_errno(e, "password file %s", path);
	while (off < sz) {
		n = read(fd, buf + off, sz - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cs_errno(e, "read password file %s", path);
			goto out;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	if (off == sz) {
		cs_errf(e, "password file %s is longer than %zu bytes", path,
		    sz - 1);
		goto out;
	}
	*len = off;
	chomp(buf, len);
	if (*len == 0) {
		cs_errf(e, "password file %s is empty", path);
		goto out;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

/* The stdout of "/bin/sh -c CMD" (stdin and stderr are ours, so that it
 * may ask on the terminal): the password, one trailing newline stripped.
 * A command that fails, is killed or prints nothing is an error. */
static int
from_command(const char *cmd, char *buf, size_t sz, size_t *len,
    struct cs_err *e)
{
	int p[2], st, rc = -1, over = 0;
	size_t off = 0;
	ssize_t n;
	pid_t pid;
	char sink[256];

	if (pipe2(p, O_CLOEXEC) < 0)
		return cs_errno(e, "password command: pipe");
	if ((pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return cs_errno(e, "password command: fork");
	}
	if (pid == 0) {
		if (dup2(p[1], STDOUT_FILENO) < 0)
			_exit(127);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	/* Read to the end even past the cap: a writer stopped by a full
	 * pipe would never exit. */
	for (;;) {
		if (off < sz)
			n = read(p[0], buf + off, sz - off);
		else
			n = read(p[0], sink, sizeof(sink));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (off < sz)
			off += (size_t)n;
		else
			over = 1;
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			cs_errno(e, "password command: wait");
			goto out;
		}
	if (WIFSIGNALED(st)) {
		cs_errf(e, "password command '%s' was killed by signal %d",
		    cmd, WTERMSIG(st));
		goto out;
	}
	if (WEXITSTATUS(st) != 0) {
		cs_errf(e, "password command '%s' failed with exit status %d",
		    cmd, WEXITSTATUS(st));
		goto out;
	}
	if (over || off == sz) {
		cs_errf(e, "password command '%s' printed more than %zu bytes",
		    cmd, sz - 1);
		goto out;
	}
	*len = off;
	chomp(buf, len);
	if (*len == 0) {
		cs_errf(e, "password command '%s' printed no password", cmd);
		goto out;
	}
	rc = 0;
out:
	if (rc < 0)
		mac_cleanse(buf, sz);
	return rc;
}

/* One line from the terminal, not echoed. */
static int
from_tty(const char *prompt, char *buf, size_t sz, size_t *len,
    struct cs_err *e)
{
	struct termios old, quiet;
	size_t off = 0;
	ssize_t n;
	char c;
	int fd, rc = -1, restore = 0;

	if ((fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)) < 0)
		return cs_errf(e, "a password is needed: give --password-file "
		    "FILE, --password-command CMD, CUTSNAP_PASSWORD_FILE, "
		    "CUTSNAP_PASSWORD_COMMAND or CUTSNAP_PASSWORD, or run on a "
		    "terminal");
	if (tcgetattr(fd, &old) == 0) {
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
		quiet.c_lflag |= ICANON;
		restore = tcsetattr(fd, TCSAFLUSH, &quiet) == 0;
	}
	(void)fs_write_all(fd, prompt, strlen(prompt));
	for (;;) {
		n = read(fd, &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || c == '\n')
			break;
		if (off + 1 >= sz) {
			cs_errf(e, "password longer than %zu bytes", sz - 1);
			goto out;
		}
		buf[off++] = c;
	}
	/* The LF ended the read; a terminal without ICRNL sends CR LF. */
	if (off > 0 && buf[off - 1] == '\r')
		off--;
	*len = off;
	if (*len == 0) {
		cs_errf(e, "empty password");
		goto out;
	}
	rc = 0;
out:
	if (restore)
		(void)tcsetattr(fd, TCSAFLUSH, &old);
	(void)fs_write_all(fd, "\n", 1);
	c = 0;
	close(fd);
	return rc;
}

int
cmd_password(int mode, const char *file, const char *what, char *buf,
    size_t sz, size_t *len, struct cs_err *e)
{
	const char *envfile = mode == CMD_PW_NEW ?
	    "CUTSNAP_NEW_PASSWORD_FILE" : "CUTSNAP_PASSWORD_FILE";
	const char *envpw = mode == CMD_PW_NEW ? "CUTSNAP_NEW_PASSWORD" :
	    "CUTSNAP_PASSWORD";
	char prompt[PATH_MAX + 64], again[STORE_PASSWORD_MAX];
	const char *s;
	size_t alen;
	int rc;

	*len = 0;
	if (file != NULL)
		return from_file(file, buf, sz, len, e);
	/* A new key's password has sources of its own, no command. */
	if (mode != CMD_PW_NEW && cmd_password_command != NULL)
		return from_command(cmd_password_command, buf, sz, len, e);
	if ((s = getenv(envfile)) != NULL && *s != '\0')
		return from_file(s, buf, sz, len, e);
	if (mode != CMD_PW_NEW && (s = getenv("CUTSNAP_PASSWORD_COMMAND")) !=
	    NULL && *s != '\0')
		return from_command(s, buf, sz, len, e);
	if ((s = getenv(envpw)) != NULL && *s != '\0') {
		if (strlen(s) >= sz)
			return cs_errf(e, "%s is longer than %zu bytes", envpw,
			    sz - 1);
		*len = strlen(s);
		memcpy(buf, s, *len);
		return 0;
	}
	snprintf(prompt, sizeof(prompt), "%s: ", what);
	if (from_tty(prompt, buf, sz, len, e) < 0)
		return -1;
	if (mode == CMD_PW_CURRENT)
		return 0;
	snprintf(prompt, sizeof(prompt), "%s again: ", what);
	rc = from_tty(prompt, again, sizeof(again), &alen, e);
	if (rc == 0 && (alen != *len || memcmp(again, buf, alen) != 0))
		rc = cs_errf(e, "the passwords differ");
	mac_cleanse(again, sizeof(again));
	return rc;
}

/* store_password_fn: the password of an encrypted repository. */
static int
repo_password(void *ctx, const char *repo, char *buf, size_t bufsz,
    size_t *len, struct cs_err *e)
{
	char what[PATH_MAX + 32];

	(void)ctx;
	snprintf(what, sizeof(what), "password of repository %s", repo);
	return cmd_password(CMD_PW_CURRENT, cmd_password_file, what, buf,
	    bufsz, len, e);
}

void
cmd_password_setup(void)
{
	cmd_store_opts.password = repo_password;
	cmd_store_opts.password_ctx = NULL;
}

/* Take "--NAME VALUE" or "--NAME=VALUE" out of argv (before any "--")
 * into *out. 0, or -1 when VALUE is missing. */
static int
take_opt(int *argc, char **argv, const char *name, const char **out)
{
	size_t n = strlen(name);
	int i, j;

	for (i = 1; i < *argc && strcmp(argv[i], "--") != 0; i++) {
		if (strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') {
			*out = argv[i] + n + 1;
			j = 1;
		} else if (strcmp(argv[i], name) == 0) {
			if (i + 1 >= *argc)
				return -1;
			*out = argv[i + 1];
			j = 2;
		} else {
			continue;
		}
		memmove(&argv[i], &argv[i + j],
		    (size_t)(*argc - i - j + 1) * sizeof(*argv));
		*argc -= j;
		i--;
	}
	return 0;
}

int
cmd_take_password_file(int *argc, char **argv)
{
	if (take_opt(argc, argv, "--password-file", &cmd_password_file) < 0)
		return cmd_usage_error("--password-file needs FILE");
	if (take_opt(argc, argv, "--password-command",
	    &cmd_password_command) < 0)
		return cmd_usage_error("--password-command needs CMD");
	return -1;
}
