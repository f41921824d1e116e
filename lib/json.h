/* json.h - a small streaming JSON writer: objects, arrays, strings, numbers. */
#ifndef CUTSNAP_JSON_H
#define CUTSNAP_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

/* A writer for one JSON document on a stdio stream, written compactly on
 * one line. It inserts the commas and checks the nesting itself: a value
 * inside an object must follow json_key; a misuse (a value where a key is
 * expected, an unbalanced end, nesting deeper than JSON_MAX_DEPTH) or a
 * write error sets err, makes every later call a no-op and json_end
 * return -1. The caller owns f. */
struct json {
	FILE *f;
	int depth;			/* open containers */
	char kind[JSON_MAX_DEPTH];	/* '{' or '[' per open container */
	uint8_t count[JSON_MAX_DEPTH];	/* 1 once a container has a member */
	int want_value;			/* a key was written, its value next */
	int done;			/* the top-level value is complete */
	int err;
	int schema;			/* > 0: the top-level object's first
					 * member is "schema": this number */
};

void json_init(struct json *j, FILE *f);
/* json_init for a document whose format is versioned: when its top-level
 * value is an object, that object opens with "schema": schema, so a
 * script can tell a format it knows from a newer one. */
void json_init_doc(struct json *j, FILE *f, int schema);
/* 1 once a document's first value was written to stdout in this
 * process: a command's output started, so an error must not add a
 * second document. */
int json_stdout_used(void);
void json_obj(struct json *j);
void json_obj_end(struct json *j);
void json_arr(struct json *j);
void json_arr_end(struct json *j);
/* An object member's name; the next call writes its value. */
void json_key(struct json *j, const char *key);
/* The same for a key of n bytes (escaped like json_strn). */
void json_keyn(struct json *j, const void *key, size_t n);
/* Strings are byte strings: '"', '\\' and control characters are escaped,
 * and every byte outside printable ASCII is written as \u00XX (so any
 * bytes, not only UTF-8, give valid JSON; a reader gets code points
 * U+0000..U+00FF, one per byte). s == NULL writes null. */
void json_str(struct json *j, const char *s);
void json_strn(struct json *j, const void *p, size_t n);
void json_int(struct json *j, int64_t v);
void json_uint(struct json *j, uint64_t v);
/* A finite double with up to 3 decimals; NaN and infinities as null. */
void json_real(struct json *j, double v);
void json_bool(struct json *j, int v);
void json_null(struct json *j);

/* key + value in one call, for object members. */
void json_kstr(struct json *j, const char *key, const char *s);
void json_kint(struct json *j, const char *key, int64_t v);
void json_kuint(struct json *j, const char *key, uint64_t v);
void json_kbool(struct json *j, const char *key, int v);

/* Finish the document: write a newline and flush. 0 when the document is
 * complete and balanced and every write succeeded, otherwise -1. */
int json_end(struct json *j);

#endif
