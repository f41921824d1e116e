/* dump.c - "cutsnap dump": print an agent data file's keys and watermarks,
 * offline. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../log/datalog.h"
#include "../lib/fsutil.h"
#include "../lib/json.h"
#include "../log/kvmap.h"
#include "cmd.h"

#define DUMP_MAX_FILE ((size_t)2 << 30)	/* 2 GiB */

static const char usage_text[] =
    "usage: cutsnap dump DATAFILE [--json]\n"
    "\n"
    "Read an agent's data file offline (the agent may be running: only the\n"
    "file is read) and print \"KEY<TAB>VALUE\" per key, sorted by key, then\n"
    "the channel watermarks: \"#sent<TAB>DST<TAB>SEQ\",\n"
    "\"#applied<TAB>SRC<TAB>SEQ\" and \"#acked<TAB>DST<TAB>SEQ\", then a line\n"
    "per dead letter, open or resolved: \"#dead<TAB>SRC<TAB>SEQ<TAB>KEY<TAB>\n"
    "AMOUNT<TAB>REASON<TAB>STATE\" (STATE: open, retried or refunded),\n"
    "then \"#fenced<TAB>SNAPSHOT\" for a file restored alone whose agent\n"
    "has not yet checked every channel with its peers. A torn tail left\n"
    "by a crash is ignored, with a note on stderr.\n"
    "\n"
    "Keys and values are escaped so that each is one field of one line:\n"
    "backslash as \\\\, tab \\t, newline \\n, carriage return \\r, other\n"
    "control bytes \\xHH, and a key's leading # as \\# (only watermark\n"
    "and dead letter lines start with #). Other bytes, UTF-8 included, are\n"
    "written as they are; --json gives every byte exactly.\n"
    "\n"
    "  -j, --json   {\"keys\":{...},\"versions\":{KEY:N,...},\n"
    "               \"sent\":{...},\"applied\":{...},\n"
    "               \"acked\":{...},\"dead_letters\":[{\"src\":S,\"seq\":N,\n"
    "               \"key\":K,\"amount\":N,\"reason\":R,\"from\":K|null,\n"
    "               \"state\":S},...],\"fenced\":SNAPSHOT|null}; bytes\n"
    "               outside printable ASCII are\n"
    "               written as \\u00XX\n"
    "\n"
    "Exit status: 0 success, 2 bad usage or a missing, unreadable or\n"
    "corrupt data file.\n";

static const struct option opts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int
wm_cmp(const void *a, const void *b)
{
	return strcmp(((const struct wm *)a)->peer,
	    ((const struct wm *)b)->peer);
}

/* Write p[0, n) as one tab-free line field (usage_text: the escaping);
 * key: also escape a leading '#'. */
static void
put_escaped(const uint8_t *p, size_t n, int key)
{
	size_t i;

	for (i = 0; i < n; i++) {
		switch (p[i]) {
		case '\\':
			fputs("\\\\", stdout);
			break;
		case '\t':
			fputs("\\t", stdout);
			break;
		case '\n':
			fputs("\\n", stdout);
			break;
		case '\r':
			fputs("\\r", stdout);
			break;
		case '#':
			fputs(key && i == 0 ? "\\#" : "#", stdout);
			break;
		default:
			if (p[i] < 0x20 || p[i] == 0x7f)
				printf("\\x%02x", p[i]);
			else
				putchar(p[i]);
		}
	}
}

/* The watermarks of s, as "#label" lines or, with j, as member label. */
static void
print_wms(struct wm_set *s, const char *label, struct json *j)
{
	size_t i;

	if (s->n > 1)
		qsort(s->v, s->n, sizeof(s->v[0]), wm_cmp);
	if (j != NULL) {
		json_key(j, label);
		json_obj(j);
	}
	for (i = 0; i < s->n; i++) {
		if (j != NULL)
			json_kuint(j, s->v[i].peer, s->v[i].seq);
		else
			printf("#%s\t%s\t%llu\n", label, s->v[i].peer,
			    (unsigned long long)s->v[i].seq);
	}
	if (j != NULL)
		json_obj_end(j);
}

/* Every dead letter of s, as "#dead" lines or, with j, a member. */
static void
print_dead(const struct dl_state *s, struct json *j)
{
	const struct dl_dead *d;
	size_t i;

	if (j != NULL) {
		json_key(j, "dead_letters");
		json_arr(j);
	}
	for (i = 0; i < s->ndead; i++) {
		d = &s->dead[i];
		if (j != NULL) {
			cmd_dead_json(j, d, NULL);
			continue;
		}
		printf("#dead\t%s\t%llu\t", d->peer,
		    (unsigned long long)d->seq);
		put_escaped(d->key, d->klen, 0);
		printf("\t%lld\t%s\t%s\n", (long long)d->amount,
		    dl_dead_reason_name(d->reason),
		    dl_resolve_name(d->resolved));
	}
	if (j != NULL)
		json_arr_end(j);
}

int
cmd_dump(int argc, char **argv)
{
	struct cmd_getopt g = CMD_GETOPT(opts, usage_text, 0);
	const struct kv_entry **ents = NULL;
	struct dl_state st;
	struct json j;
	struct cs_err e;
	uint8_t *buf = NULL;
	size_t len = 0, valid = 0, n = 0, i;
	const char *path;
	int ch, json = 0, inited = 0, rc = EXIT_USAGE;

	while ((ch = cmd_getopt(&g, argc, argv)) != -1) {
		switch (ch) {
		case 'j':
			json = 1;
			break;
		}
	}
	if (g.status != -1)
		return g.status;
	if (argc - optind != 1)
		return cmd_usage_error("expected DATAFILE, got %d arguments",
		    argc - optind);
	path = argv[optind];
	if (fs_read_file(path, DUMP_MAX_FILE, &buf, &len, &e) == -1) {
		cmd_warn("%s", e.msg);
		goto out;
	}
	if (dl_state_init(&st, 0) == -1) {
		rc = cmd_fail(EXIT_FAILED, "out of memory");
		goto out;
	}
	inited = 1;
	if (dl_replay(buf, len, path, 1, &st, &valid, &e) == -1) {
		cmd_warn("%s", e.msg);
		goto out;
	}
	if (valid < len)
		cmd_warn("note: %zu bytes of torn tail ignored (at offset %zu)",
		    len - valid, valid);
	if (kvmap_sorted(st.kv, &ents, &n) == -1) {
		rc = cmd_fail(EXIT_FAILED, "out of memory");
		goto out;
	}
	if (json) {
		json_init(&j, stdout);
		json_obj(&j);
		json_key(&j, "keys");
		json_obj(&j);
	}
	for (i = 0; i < n; i++) {
		if (json) {
			/* A key is bytes; escape it like a value. */
			json_keyn(&j, ents[i]->key, ents[i]->klen);
			json_strn(&j, ents[i]->val, ents[i]->vlen);
		} else {
			put_escaped(ents[i]->key, ents[i]->klen, 1);
			putchar('\t');
			put_escaped(ents[i]->val, ents[i]->vlen, 0);
			putchar('\n');
		}
	}
	if (json) {
		json_obj_end(&j);
		/* Each key's version (datalog.h), what W_REQ_GETV answers. */
		json_key(&j, "versions");
		json_obj(&j);
		for (i = 0; i < n; i++) {
			json_keyn(&j, ents[i]->key, ents[i]->klen);
			json_uint(&j, ents[i]->ver);
		}
		json_obj_end(&j);
	}
	print_wms(&st.sent, "sent", json ? &j : NULL);
	print_wms(&st.applied, "applied", json ? &j : NULL);
	print_wms(&st.acked, "acked", json ? &j : NULL);
	print_dead(&st, json ? &j : NULL);
	if (json) {
		json_key(&j, "fenced");
		if (st.fenced)
			json_uint(&j, st.fence_snap);
		else
			json_null(&j);
		json_obj_end(&j);
	} else if (st.fenced)
		printf("#fenced\t%" PRIu64 "\n", st.fence_snap);
	rc = EXIT_OK;
	if ((json && json_end(&j) == -1) || fflush(stdout) == EOF ||
	    ferror(stdout))
		rc = cmd_fail(EXIT_FAILED, "write stdout failed");
out:
	free(ents);
	if (inited)
		dl_state_free(&st);
	free(buf);
	return rc;
}
