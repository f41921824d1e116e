/* cert.c - "cutsnap cert": the cluster's CA and the certificates of its
 * agents and commands in tls_dir (tools/ca.c), creating only what is
 * missing, and saying what it created. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../net/role.h"
#include "../tools/ca.h"
#include "cmd.h"

static const char usage_text[] =
    "usage: cutsnap cert -c CONF [--days N]\n"
    "       cutsnap cert -c CONF --client NAME --role ROLE [--out DIR]\n"
    "                    [--days N]\n"
    "\n"
    "Create the cluster's TLS files in the tls_dir of CONF's [cluster]\n"
    "section, only those that are missing: the CA (ca.crt, ca.key), each\n"
    "agent's NAME.crt and NAME.key (CN = the agent's name, a SAN with the\n"
    "host of its addr) and client.crt/client.key, the commands' admin\n"
    "certificate. Keys are EC P-256, mode 0600, tls_dir mode 0700.\n"
    "Running it again creates nothing; it says what it created. Copy\n"
    "ca.crt, NAME.crt/NAME.key and client.crt/client.key to each host;\n"
    "ca.key stays where certificates are made.\n"
    "\n"
    "With --client, issue one client certificate instead, NAME.crt and\n"
    "NAME.key in DIR (default tls_dir), signed by the CA, its role in the\n"
    "Subject's OU: admin (every request), backup (snapshot, status and\n"
    "reads) or read-only (status and reads). Commands present it with\n"
    "--cert NAME (or DIR/NAME) or CUTSNAP_CLIENT_CERT.\n"
    "\n"
    "  -c, --config CONF   the cluster config file (with tls_dir)\n"
    "      --days N        validity of new certificates (default 3650)\n"
    "      --client NAME   issue the client certificate NAME\n"
    "      --role ROLE     its role: admin, backup or read-only\n"
    "      --out DIR       where to write it (default: tls_dir)\n"
    "\n"
    "Exit status: 0 done, 1 a file could not be read or written, or is\n"
    "open to group or others, 2 bad usage or bad config (no tls_dir).\n";

/* Options without a short form. */
enum { OPT_DAYS = CMD_OPT_LONG, OPT_CLIENT, OPT_ROLE, OPT_OUT };

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "days", required_argument, NULL, OPT_DAYS },
	{ "client", required_argument, NULL, OPT_CLIENT },
	{ "role", required_argument, NULL, OPT_ROLE },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The days of new certificates; CUTSNAP_TEST_CERT_DAYS, which may be
 * negative (an expired certificate), overrides it for the tests. */
static long
cert_days(long days)
{
	const char *t = getenv("CUTSNAP_TEST_CERT_DAYS");
	char *end;
	long v;

	if (t == NULL || *t == '\0')
		return days;
	errno = 0;
	v = strtol(t, &end, 10);
	if (errno != 0 || *end != '\0' || v < -CA_DAYS_MAX ||
	    v > CA_DAYS_MAX || v == 0)
		return days;
	return v;
}

/* Say what was created. */
static void
say_made(void *arg, const char *crt, const char *key)
{
	const char *role = arg;

	if (role != NULL)
		printf("created %s and %s (role %s)\n", crt, key, role);
	else
		printf("created %s and %s\n", crt, key);
}

/* --client, --role and --out go together; EXIT_OK or EXIT_USAGE. */
static int
client_args(const char *client, const char *role, const char *out)
{
	if (client == NULL && (role != NULL || out != NULL))
		return cmd_usage_error("%s needs --client NAME",
		    role != NULL ? "--role" : "--out");
	if (client == NULL)
		return EXIT_OK;
	if (!cfg_valid_name(client) || strcmp(client, "ca") == 0)
		return cmd_usage_error("bad client name '%s' (letters, "
		    "digits, '_', '-' and '.'; not 'ca')", client);
	if (role == NULL)
		return cmd_usage_error("--client needs --role admin, backup "
		    "or read-only");
	if (cs_role_parse(role) == CS_ROLE_BAD)
		return cmd_usage_error("unknown role '%s' (admin, backup or "
		    "read-only)", role);
	return EXIT_OK;
}

int
cmd_cert(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, CMD_OPT_NO_OPERANDS);
	const char *conf = NULL, *client = NULL, *role = NULL, *out = NULL;
	uint64_t days = CA_DAYS_DEFAULT;
	struct cfg *c = NULL;
	struct cs_err e;
	int ch, rc, n;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case OPT_DAYS:
			if (cmd_parse_pos(optarg, "days", CA_DAYS_MAX, &days)
			    == -1)
				return EXIT_USAGE;
			break;
		case OPT_CLIENT:
			client = optarg;
			break;
		case OPT_ROLE:
			role = optarg;
			break;
		case OPT_OUT:
			out = optarg;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if ((rc = client_args(client, role, out)) != 0)
		return rc;
	if ((rc = cmd_load_config(conf, &c)) != 0)
		return rc;
	if (c->tls_dir[0] == '\0')
		rc = cmd_fail(EXIT_USAGE, "%s has no tls_dir under [cluster]; "
		    "add one (tls_dir = tls)", c->path);
	else if (client != NULL && cfg_find(c, client) != -1)
		rc = cmd_usage_error("--client %s is an agent's name: a "
		    "client's certificate needs a name of its own", client);
	else if (client != NULL && ca_issue_client(c, client, role, out,
	    cert_days((long)days), say_made, (void *)role, &e) == -1)
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
	else if (client == NULL && (n = ca_cluster(c, cert_days((long)days),
	    say_made, NULL, &e)) == -1)
		rc = cmd_fail(EXIT_FAILED, "%s", e.msg);
	else if (client == NULL && n == 0)
		printf("nothing to create: every certificate is in %s\n",
		    c->tls_dir);
	cfg_free(c);
	return rc;
}
