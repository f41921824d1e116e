/* init.c - "cutsnap init": create a repository with its settings. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../crypto/mac.h"
#include "../store/store.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap init -r REPO [--encrypt] [--password-file FILE]\n"
    "                    [--password-command CMD]\n"
    "                    [--compression zstd|none] [--json]\n"
    "\n"
    "Create the repository REPO and record its settings, which stay fixed\n"
    "for its lifetime. 'cutsnap snapshot' into a missing repository creates\n"
    "one with the defaults; init is how to choose otherwise.\n"
    "\n"
    "  -r, --repo REPO           the repository directory (must not hold a\n"
    "                            repository yet), or s3://BUCKET/PREFIX\n"
    "  -C, --compression ALGO    zstd (default): each chunk is compressed\n"
    "                            with zstd, or stored as it is when that does\n"
    "                            not make it smaller; none: chunks are stored\n"
    "                            as they are\n"
    "  -e, --encrypt             encrypt the repository (AES-256-GCM): a\n"
    "                            random master key, stored only sealed under\n"
    "                            a key derived from the password (scrypt);\n"
    "                            more keys with 'cutsnap key'\n"
    "      --password-file FILE  the password is FILE's content (one\n"
    "                            trailing newline dropped); else\n"
    "                            CUTSNAP_PASSWORD_FILE, CUTSNAP_PASSWORD, or\n"
    "                            asked twice on the terminal\n"
    "      --password-command CMD\n"
    "                            the password is what CMD (run by /bin/sh)\n"
    "                            prints; else CUTSNAP_PASSWORD_COMMAND\n"
    "  -j, --json                {\"repo\":R,\"compression\":ALGO,\n"
    "                            \"encrypted\":BOOL}\n"
    "\n"
    "Exit status: 0 created, 1 it could not be written, 2 bad usage or\n"
    "REPO holds a repository already.\n";

static const struct option opts[] = {
	{ "repo", required_argument, NULL, 'r' },
	{ "compression", required_argument, NULL, 'C' },
	{ "encrypt", no_argument, NULL, 'e' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* "zstd" or "none" into *out; -1 for anything else. */
static int
parse_compression(const char *s, int *out)
{
	if (strcmp(s, "zstd") == 0)
		*out = STORE_COMPRESS_ZSTD;
	else if (strcmp(s, "none") == 0)
		*out = STORE_COMPRESS_NONE;
	else
		return -1;
	return 0;
}

int
cmd_init(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, CMD_OPT_NO_OPERANDS);
	struct store_settings set;
	const char *repo = NULL;
	struct stat sb;
	struct cs_err e;
	struct json j;
	char pass[STORE_PASSWORD_MAX], what[PATH_MAX + 64];
	int ch, json = 0, rc;

	store_settings_default(&set);
	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'r':
			repo = optarg;
			break;
		case 'C':
			if (parse_compression(optarg, &set.compress) < 0)
				return cmd_usage_error("invalid --compression "
				    "'%s' (zstd or none)", optarg);
			break;
		case 'e':
			set.encrypt = 1;
			break;
		case 'j':
			json = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (repo == NULL)
		return cmd_usage_error("missing -r REPO");
	/* An existing repository is bad input, not a failed write; looked
	 * for before a password is asked (store_init checks again). */
	if (snprintf(what, sizeof(what), "%s/manifest.db", repo) <
	    (int)sizeof(what) && stat(what, &sb) == 0)
		return cmd_fail(EXIT_USAGE, "repository %s exists already",
		    repo);
	if (set.encrypt) {
		snprintf(what, sizeof(what), "new password of repository %s",
		    repo);
		if (cmd_password(CMD_PW_FIRST, cmd_password_file, what, pass,
		    sizeof(pass), &set.passlen, &e) < 0)
			return cmd_fail(EXIT_USAGE, "%s", e.msg);
		set.password = pass;
	}
	rc = store_init_with(repo, &set, &cmd_store_opts, &e);
	mac_cleanse(pass, sizeof(pass));
	if (rc < 0)
		return cmd_fail_err(&e);	/* exists already: usage */
	rc = EXIT_OK;
	if (json) {
		cmd_json_init(&j);
		json_obj(&j);
		json_kstr(&j, "repo", cmd_repo_name(repo));
		json_kstr(&j, "compression",
		    store_compress_name(set.compress));
		json_kbool(&j, "encrypted", set.encrypt);
		json_obj_end(&j);
		if (json_end(&j) == -1)
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	} else {
		printf("created repository %s (compression %s%s)\n",
		    cmd_repo_name(repo),
		    store_compress_name(set.compress),
		    set.encrypt ? ", encrypted" : "");
	}
	return rc;
}
