/* contents.c - read a snapshot's recorded files and messages back, for
 * inspection (the demo prints the recorded balances from them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* Copy a name column into a fixed buffer; -1 if it is not a valid name. */
static int
copy_name(char out[NAME_MAX_LEN + 1], const char *name)
{
	if (!cfg_valid_name(name))
		return -1;
	snprintf(out, NAME_MAX_LEN + 1, "%s", name);
	return 0;
}

/* Agent row a's recorded file, from its chunks, checked against its
 * size and SHA-256, into f. */
static int
read_file_row(struct store *st, const struct row_agent *a,
    struct store_file *f, struct cs_err *e)
{
	struct fview v;
	uint8_t want[SHA_LEN], got[SHA_LEN], name[SHA_LEN];
	int rc = -1;

	if (!a->ok || copy_name(f->agent, a->name) < 0 ||
	    sha_unhex(a->sha, want) < 0)
		return cs_errf(e, "agent row %.64s is malformed", a->name);
	if (store_fview_open(st, a, &v, NULL, NULL, e) < 0) {
		cs_errctx(e, "recorded file of agent %s", a->name);
		return -1;
	}
	if (sha256_buf(v.p, (size_t)v.len, got) < 0 ||
	    (store_name(st, got, name), memcmp(name, want, SHA_LEN) != 0)) {
		cs_errf(e, "recorded file of agent %s does not match its "
		    "sha256", a->name);
		goto out;
	}
	if (v.len > 0 && (f->data = malloc((size_t)v.len)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	if (v.len > 0)
		memcpy(f->data, v.p, (size_t)v.len);
	f->len = (size_t)v.len;
	rc = 0;
out:
	store_fview_close(&v);
	return rc;
}

int
store_read_contents(struct store *st, uint64_t id, uint64_t *resolved,
    struct store_contents *out, struct cs_err *e)
{
	struct snap_rows r;
	size_t i;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	memset(&r, 0, sizeof(r));
	/* show reads the rows a restore would: an edit made without the key
	 * is refused here too. */
	if (store_snap_resolve(st, id, resolved, e) < 0 ||
	    store_rows_auth_verify(st, *resolved, e) < 0 ||
	    store_rows_load(st, *resolved, &r, e) < 0)
		return -1;
	if (r.nagents > 0 &&
	    (out->files = calloc(r.nagents, sizeof(*out->files))) == NULL)
		goto oom;
	if (r.nmsgs > 0 &&
	    (out->msgs = calloc(r.nmsgs, sizeof(*out->msgs))) == NULL)
		goto oom;
	/* Zeroed entries: freeing all of them is fine on any failure. */
	out->nfiles = r.nagents;
	out->nmsgs = r.nmsgs;
	for (i = 0; i < r.nagents; i++)
		if (read_file_row(st, &r.agents[i], &out->files[i], e) < 0)
			goto out;
	for (i = 0; i < r.nmsgs; i++) {
		const struct row_msg *m = &r.msgs[i];
		struct store_msg *o = &out->msgs[i];

		if (!m->ok || copy_name(o->src, m->src) < 0 ||
		    copy_name(o->dst, m->dst) < 0) {
			cs_errf(e, "message row %lld is malformed",
			    (long long)m->rowid);
			goto out;
		}
		o->seq = m->seq;
		if (m->len > 0 && (o->data = malloc(m->len)) == NULL)
			goto oom;
		if (m->len > 0)
			memcpy(o->data, m->data, m->len);
		o->len = m->len;
	}
	rc = 0;
	goto out;
oom:
	cs_errc(e, CS_E_NOMEM, "out of memory");
out:
	store_rows_free(&r);
	if (rc < 0)
		store_contents_free(out);
	return rc;
}

void
store_contents_free(struct store_contents *c)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < c->nfiles; i++)
		free(c->files[i].data);
	for (i = 0; i < c->nmsgs; i++)
		free(c->msgs[i].data);
	free(c->files);
	free(c->msgs);
	memset(c, 0, sizeof(*c));
}
