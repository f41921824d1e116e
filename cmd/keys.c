/* keys.c - "cutsnap key": the keys of an encrypted repository. Each key
 * is the one master key sealed under a key derived from a password, so
 * adding, removing or changing a password rewrites no data. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../crypto/mac.h"
#include "../store/store.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap key -r REPO list [--json]\n"
    "       cutsnap key -r REPO add [--password-file FILE]\n"
    "                   [--new-password-file FILE] [--json]\n"
    "       cutsnap key -r REPO remove ID [--password-file FILE]\n"
    "       cutsnap key -r REPO passwd [--password-file FILE]\n"
    "                   [--new-password-file FILE] [--json]\n"
    "       cutsnap key -r REPO rotate [--password-file FILE]\n"
    "                   [--new-password-file FILE] [--json]\n"
    "\n"
    "The keys of an encrypted repository (cutsnap init --encrypt). Every\n"
    "key holds the repository's one master key, sealed (AES-256-GCM) under\n"
    "a key derived from its password with scrypt; any of them opens every\n"
    "snapshot, and no data is rewritten when keys change.\n"
    "\n"
    "  list     every key: id, when it was made, its scrypt parameters;\n"
    "           needs no password\n"
    "  add      a new key for a new password (the current password opens\n"
    "           the repository first)\n"
    "  remove   key ID; not the one the given password opens\n"
    "  passwd   change the password: a new key replaces the one the\n"
    "           current password opens, in one transaction\n"
    "  rotate   a new master key: every chunk object and recorded\n"
    "           message is sealed and named again under it (the old\n"
    "           objects are deleted), and one key for the new password\n"
    "           replaces every key (add the others again); refused while\n"
    "           a snapshot has a --key tag\n"
    "\n"
    "  -r, --repo REPO             the repository directory, or\n"
    "                              s3://BUCKET/PREFIX (an object store)\n"
    "      --password-file FILE    the current password (else\n"
    "                              CUTSNAP_PASSWORD_FILE, CUTSNAP_PASSWORD\n"
    "                              or the terminal)\n"
    "      --password-command CMD  the current password is what CMD (run\n"
    "                              by /bin/sh) prints (else\n"
    "                              CUTSNAP_PASSWORD_COMMAND)\n"
    "  -N, --new-password-file FILE\n"
    "                              the new password (else\n"
    "                              CUTSNAP_NEW_PASSWORD_FILE,\n"
    "                              CUTSNAP_NEW_PASSWORD, or asked twice on\n"
    "                              the terminal)\n"
    "  -j, --json                  list: [{\"id\":N,\"created\":T,"
    "\"kdf\":\"scrypt\",\n"
    "                              \"n\":N,\"r\":N,\"p\":N}]; add, passwd:\n"
    "                              {\"id\":N}\n"
    "\n"
    "--retry-lock DURATION: while the repository is locked, try again for\n"
    "up to DURATION (30s, 5m, 1h) before giving up.\n"
    "\n"
    "Exit status: 0 success, 1 the change could not be written, 2 bad\n"
    "usage, an unknown key or a repository that is not\n"
    "encrypted.\n"
    "Also: 10 no such repository, 11 locked (after --retry-lock), 12 a\n"
    "wrong password (cutsnap(1) EXIT STATUS).\n";

static const struct option opts[] = {
	{ "repo", required_argument, NULL, 'r' },
	{ "new-password-file", required_argument, NULL, 'N' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int
list_keys(struct store *st, int json)
{
	struct store_key *k = NULL;
	struct cs_err e;
	struct json j;
	size_t i, n;
	int rc = EXIT_OK;

	if (store_crypt_list_keys(st, &k, &n, &e) < 0)
		return cmd_fail(EXIT_USAGE, "%s", e.msg);
	if (json) {
		cmd_json_init(&j);
		json_arr(&j);
		for (i = 0; i < n; i++) {
			json_obj(&j);
			json_kuint(&j, "id", (uint64_t)k[i].id);
			json_kstr(&j, "created", k[i].created);
			json_kstr(&j, "kdf", k[i].kdf);
			json_kuint(&j, "n", k[i].n);
			json_kuint(&j, "r", k[i].r);
			json_kuint(&j, "p", k[i].p);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		if (json_end(&j) == -1)
			rc = cmd_fail(EXIT_FAILED, "write stdout failed");
	} else {
		printf("%-4s %-20s %s\n", "ID", "CREATED", "KDF");
		for (i = 0; i < n; i++)
			printf("%-4" PRId64 " %-20s %s N=%" PRIu64 " r=%u "
			    "p=%u\n", k[i].id, k[i].created, k[i].kdf,
			    k[i].n, k[i].r, k[i].p);
	}
	free(k);
	return rc;
}

/* add (replace 0), passwd (replace 1) or rotate (replace 2). */
static int
add_key(struct store *st, const char *repo, const char *newfile,
    int replace, int json)
{
	char pass[STORE_PASSWORD_MAX], what[PATH_MAX + 64];
	struct cs_err e;
	struct json j;
	size_t len;
	int64_t id;
	int rc;

	snprintf(what, sizeof(what), "new password of repository %s", repo);
	if (cmd_password(CMD_PW_NEW, newfile, what, pass, sizeof(pass), &len,
	    &e) < 0)
		return cmd_fail(EXIT_USAGE, "%s", e.msg);
	rc = replace == 2 ? store_key_rotate(st, pass, len, &id, &e) :
	    store_key_add(st, pass, len, replace, &id, &e);
	mac_cleanse(pass, sizeof(pass));
	if (rc < 0)
		return cmd_fail(EXIT_FAILED, "%s", e.msg);
	if (json) {
		cmd_json_init(&j);
		json_obj(&j);
		json_kuint(&j, "id", (uint64_t)id);
		json_obj_end(&j);
		if (json_end(&j) == -1)
			return cmd_fail(EXIT_FAILED, "write stdout failed");
	} else {
		printf("%s key %" PRId64 "\n", replace == 2 ? "a new master "
		    "key, everything sealed again under it; the new password "
		    "opens" : replace ? "password changed: the new password "
		    "opens" : "added", id);
	}
	return EXIT_OK;
}

int
cmd_keys(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, 0);
	const char *repo = NULL, *newfile = NULL, *verb;
	struct store *st = NULL;
	struct store_opts so;
	struct cs_err e;
	uint64_t id = 0;
	int ch, json = 0, rc, nargs;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'r':
			repo = optarg;
			break;
		case 'N':
			newfile = optarg;
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
	if (optind >= argc)
		return cmd_usage_error("missing list, add, remove, passwd or "
		    "rotate");
	verb = argv[optind];
	nargs = strcmp(verb, "remove") == 0 ? 2 : 1;
	if (strcmp(verb, "list") != 0 && strcmp(verb, "add") != 0 &&
	    strcmp(verb, "remove") != 0 && strcmp(verb, "passwd") != 0 &&
	    strcmp(verb, "rotate") != 0)
		return cmd_usage_error("unknown key command '%s' (list, add, "
		    "remove, passwd or rotate)", verb);
	if (argc - optind < nargs)
		return cmd_usage_error("remove needs a key ID");
	if (argc - optind > nargs)
		return cmd_usage_error("unexpected argument '%s'",
		    argv[optind + nargs]);
	if (nargs == 2 && cmd_parse_pos(argv[optind + 1], "key ID",
	    (uint64_t)INT64_MAX, &id) < 0)
		return EXIT_USAGE;
	/* Listing needs no password. */
	so = cmd_store_opts;
	if (strcmp(verb, "list") == 0)
		so.password = NULL;
	if (store_open_with(repo, strcmp(verb, "list") == 0 ? STORE_READ :
	    STORE_WRITE, &so, &st, &e) == -1)
		return cmd_fail_errs(EXIT_USAGE, &e);
	if (!store_encrypted(st)) {
		rc = cmd_fail(EXIT_USAGE, "repository %s is not encrypted "
		    "(it has no keys)", repo);
	} else if (strcmp(verb, "list") == 0) {
		rc = list_keys(st, json);
	} else if (strcmp(verb, "remove") == 0) {
		/* Naming a key that is not there, or the one in use, is
		 * bad input. */
		rc = store_key_remove(st, (int64_t)id, &e) < 0 ?
		    cmd_fail_errs(cs_err_code(&e) == CS_E_NOTFOUND ?
		    EXIT_USAGE : EXIT_FAILED, &e) : EXIT_OK;
		if (rc == EXIT_OK)
			printf("removed key %" PRIu64 "\n", id);
	} else if (strcmp(verb, "rotate") == 0 && cmd_lock(st, 1, &e) < 0) {
		rc = cmd_fail_err(&e);	/* rotate rewrites: exclusive */
	} else {
		rc = add_key(st, repo, newfile, strcmp(verb, "rotate") == 0 ?
		    2 : strcmp(verb, "passwd") == 0, json);
	}
	store_close(st);
	return rc;
}
