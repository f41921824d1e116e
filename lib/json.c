/* json.c - the streaming JSON writer: comma placement, nesting, escaping. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json.h"

/* Whether a document's first byte was written to stdout
 * (json_stdout_used): a writer set up but never used, as by a command
 * that failed before its output, leaves room for the error's document. */
static int stdout_used;

int
json_stdout_used(void)
{
	return stdout_used;
}

void
json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->want_value = 0;
	j->done = 0;
	j->err = 0;
	j->schema = 0;
}

void
json_init_doc(struct json *j, FILE *f, int schema)
{
	json_init(j, f);
	j->schema = schema;
}

/* Before a value: check it is allowed here and write the comma it needs. */
static int
begin_value(struct json *j)
{
	if (j->err)
		return -1;
	if (j->depth == 0) {
		if (j->done)
			goto misuse;
		if (j->f == stdout)
			stdout_used = 1;
		return 0;
	}
	if (j->kind[j->depth - 1] == '{') {
		if (!j->want_value)
			goto misuse;
		j->want_value = 0;
		return 0;
	}
	if (j->count[j->depth - 1] && putc(',', j->f) == EOF)
		goto ioerr;
	j->count[j->depth - 1] = 1;
	return 0;
misuse:
ioerr:
	j->err = 1;
	return -1;
}

/* After a value: a top-level value completes the document. */
static void
end_value(struct json *j)
{
	if (j->depth == 0)
		j->done = 1;
	if (ferror(j->f))
		j->err = 1;
}

static void
open_container(struct json *j, char kind)
{
	if (begin_value(j) == -1)
		return;
	if (j->depth == JSON_MAX_DEPTH) {
		j->err = 1;
		return;
	}
	j->kind[j->depth] = kind;
	j->count[j->depth] = 0;
	j->depth++;
	putc(kind, j->f);
	if (ferror(j->f))
		j->err = 1;
}

static void
close_container(struct json *j, char kind)
{
	if (j->err)
		return;
	if (j->depth == 0 || j->kind[j->depth - 1] != kind ||
	    j->want_value) {
		j->err = 1;
		return;
	}
	j->depth--;
	putc(kind == '{' ? '}' : ']', j->f);
	end_value(j);
}

void
json_obj(struct json *j)
{
	int top = j->depth == 0 && !j->done;

	open_container(j, '{');
	if (top && j->schema > 0)
		json_kint(j, "schema", j->schema);
}

void
json_obj_end(struct json *j)
{
	close_container(j, '{');
}

void
json_arr(struct json *j)
{
	open_container(j, '[');
}

void
json_arr_end(struct json *j)
{
	close_container(j, '[');
}

static void
put_string(FILE *f, const uint8_t *s, size_t n)
{
	size_t i;

	putc('"', f);
	for (i = 0; i < n; i++) {
		switch (s[i]) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (s[i] < 0x20 || s[i] > 0x7e)
				fprintf(f, "\\u%04x", s[i]);
			else
				putc(s[i], f);
		}
	}
	putc('"', f);
}

void
json_key(struct json *j, const char *key)
{
	if (key == NULL) {
		j->err = 1;
		return;
	}
	json_keyn(j, key, strlen(key));
}

void
json_keyn(struct json *j, const void *key, size_t n)
{
	if (j->err)
		return;
	if (j->depth == 0 || j->kind[j->depth - 1] != '{' || j->want_value) {
		j->err = 1;
		return;
	}
	if (j->count[j->depth - 1])
		putc(',', j->f);
	j->count[j->depth - 1] = 1;
	put_string(j->f, key, n);
	putc(':', j->f);
	j->want_value = 1;
	if (ferror(j->f))
		j->err = 1;
}

void
json_strn(struct json *j, const void *p, size_t n)
{
	if (begin_value(j) == -1)
		return;
	put_string(j->f, p, n);
	end_value(j);
}

void
json_str(struct json *j, const char *s)
{
	if (s == NULL)
		json_null(j);
	else
		json_strn(j, s, strlen(s));
}

void
json_int(struct json *j, int64_t v)
{
	if (begin_value(j) == -1)
		return;
	fprintf(j->f, "%" PRId64, v);
	end_value(j);
}

void
json_uint(struct json *j, uint64_t v)
{
	if (begin_value(j) == -1)
		return;
	fprintf(j->f, "%" PRIu64, v);
	end_value(j);
}

void
json_real(struct json *j, double v)
{
	char s[64];
	size_t n;

	if (!isfinite(v)) {
		json_null(j);
		return;
	}
	if (begin_value(j) == -1)
		return;
	/* Trailing zeros dropped: 1.5 not 1.500, 2 not 2.000. */
	snprintf(s, sizeof(s), "%.3f", v);
	n = strlen(s);
	while (n > 0 && s[n - 1] == '0')
		s[--n] = '\0';
	if (n > 0 && s[n - 1] == '.')
		s[--n] = '\0';
	if (strcmp(s, "-0") == 0)
		strcpy(s, "0");
	fputs(s, j->f);
	end_value(j);
}

void
json_bool(struct json *j, int v)
{
	if (begin_value(j) == -1)
		return;
	fputs(v ? "true" : "false", j->f);
	end_value(j);
}

void
json_null(struct json *j)
{
	if (begin_value(j) == -1)
		return;
	fputs("null", j->f);
	end_value(j);
}

void
json_kstr(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_str(j, s);
}

void
json_kint(struct json *j, const char *key, int64_t v)
{
	json_key(j, key);
	json_int(j, v);
}

void
json_kuint(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	json_uint(j, v);
}

void
json_kbool(struct json *j, const char *key, int v)
{
	json_key(j, key);
	json_bool(j, v);
}

int
json_end(struct json *j)
{
	if (j->err || j->depth != 0 || !j->done)
		return -1;
	putc('\n', j->f);
	if (fflush(j->f) == EOF || ferror(j->f)) {
		j->err = 1;
		return -1;
	}
	return 0;
}
