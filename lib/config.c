/* config.c - load and validate the cluster config (INI, via libinih). */
/*
 * Invariants of a struct cfg handed out by cfg_load/cfg_parse:
 * - 1 <= nagents <= CFG_MAX_AGENTS; names are valid and unique.
 * - path, run_dir and every agent's data and sock are absolute; no two
 *   agents share a data path; every sock is shorter than sun_path.
 * - chan[s*n+d] is 0 or 1 and chan[i*n+i] == 0.
 *
 * libinih parses keys, values and comments. Lines reach it through our own
 * reader, which counts them (the handler is not told the line number),
 * strips indentation (so an indented line is never read as a continuation
 * of the previous value), and reads section headers itself: libinih calls
 * the handler only for key = value lines, so an empty [agent X] would
 * otherwise go unseen, and it cuts long section names. libinih (as
 * distributions build it) reads lines of at most 197 bytes; a longer line
 * (a long data path, a channels list of many agents) reaches it cut
 * short: "KEY=", with the value, split off the way libinih splits it,
 * kept in pctx.longval for the handler.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "../net/xport_name.h"
#include "fsutil.h"

#define CFG_MAX_FILE (1u << 20)
#define SUN_PATH_LEN sizeof(((struct sockaddr_un *)0)->sun_path)

enum sect { S_NONE, S_CLUSTER, S_AGENT, S_BAD };

/* Parser state shared by the line reader and the key handler. */
struct pctx {
	const char *text;	/* NUL-terminated config text */
	size_t off;		/* reader position in text */
	int lineno;		/* line last handed to libinih */
	int stop;		/* 1: the reader returns EOF */
	const char *path;	/* config path as given, for messages */
	struct cfg *c;
	int *alines;		/* per agent: line of its [agent] header */
	int *dlines;		/* per agent: line of its data key, or 0 */
	enum sect sect;		/* section being read */
	int cur;		/* agent index while sect == S_AGENT */
	int cluster_line;	/* line of [cluster], or 0 */
	int run_line;		/* line of run_dir, or 0 */
	char run_raw[PATH_MAX];	/* run_dir as written */
	int tls_line;		/* line of tls_dir, or 0 */
	char tls_raw[PATH_MAX];	/* tls_dir as written */
	int cmin_line;		/* line of compact_min_size, or 0 */
	int shared_line;	/* line of shared_data, or 0 */
	int rate_line;		/* line of snapshot_max_rate, or 0 */
	char metrics[272];	/* [cluster] metrics_addr, or "" */
	uint64_t inbox_max;	/* [cluster] inbox_max_bytes, or 0 */
	char *channels;		/* channels value as written, or NULL */
	char *longval;		/* the value of a line too long for libinih,
				 * which the handler takes instead of its
				 * argument; NULL for other lines */
	int chan_line;
	int err_line;		/* line of the first error, or 0 */
	char err[CS_ERR_MAX];	/* its message (without file:line) */
};

int
cfg_valid_name(const char *name)
{
	size_t n;

	for (n = 0; name[n] != '\0'; n++) {
		if (n >= NAME_MAX_LEN)
			return 0;
		if (!((name[n] >= 'a' && name[n] <= 'z') ||
		    (name[n] >= 'A' && name[n] <= 'Z') ||
		    (name[n] >= '0' && name[n] <= '9') ||
		    name[n] == '_' || name[n] == '.' || name[n] == '-'))
			return 0;
	}
	return n > 0;
}

int
cfg_find(const struct cfg *c, const char *name)
{
	int i;

	for (i = 0; i < c->nagents; i++)
		if (strcmp(c->agents[i].name, name) == 0)
			return i;
	return -1;
}

int
cfg_has_channel(const struct cfg *c, int src, int dst)
{
	if (src < 0 || dst < 0 || src >= c->nagents || dst >= c->nagents)
		return 0;
	return c->chan[src * c->nagents + dst];
}

void
cfg_free(struct cfg *c)
{
	if (c == NULL)
		return;
	free(c->agents);
	free(c->chan);
	free(c->text);
	free(c);
}

/* Record the first error at the current line; later ones are noise. */
static void
perr(struct pctx *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
perr(struct pctx *p, const char *fmt, ...)
{
	va_list ap;

	if (p->err_line != 0)
		return;
	p->err_line = p->lineno;
	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
}

static char *
trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	return s;
}

static void
add_agent(struct pctx *p, const char *name)
{
	struct cfg *c = p->c;
	struct cfg_agent *a;
	int *al, *dl, n = c->nagents;

	if (n == CFG_MAX_AGENTS) {
		perr(p, "too many agents (at most %d)", CFG_MAX_AGENTS);
		goto bad;
	}
	if ((a = realloc(c->agents, (n + 1) * sizeof(*a))) == NULL)
		goto oom;
	c->agents = a;
	if ((al = realloc(p->alines, (n + 1) * sizeof(*al))) == NULL)
		goto oom;
	p->alines = al;
	if ((dl = realloc(p->dlines, (n + 1) * sizeof(*dl))) == NULL)
		goto oom;
	p->dlines = dl;
	memset(&a[n], 0, sizeof(a[n]));
	memcpy(a[n].name, name, strlen(name) + 1);
	al[n] = p->lineno;
	dl[n] = 0;
	c->nagents++;
	p->sect = S_AGENT;
	p->cur = n;
	return;
oom:
	perr(p, "out of memory");
bad:
	p->sect = S_BAD;
}

/* A "[...]" line: "[cluster]" or "[agent NAME]". */
static void
section(struct pctx *p, const char *s, size_t n)
{
	const char *end = memchr(s, ']', n);
	char buf[256], *name;
	size_t len;

	p->sect = S_BAD;
	if (end == NULL) {
		perr(p, "section header without ']'");
		return;
	}
	if ((len = (size_t)(end - s - 1)) >= sizeof(buf)) {
		perr(p, "section name too long");
		return;
	}
	memcpy(buf, s + 1, len);
	buf[len] = '\0';
	name = trim(buf);
	if (strcmp(name, "cluster") == 0) {
		if (p->cluster_line != 0) {
			perr(p, "duplicate section [cluster] (first at line "
			    "%d)", p->cluster_line);
			return;
		}
		p->cluster_line = p->lineno;
		p->sect = S_CLUSTER;
		return;
	}
	if (strncmp(name, "agent", 5) != 0 ||
	    (name[5] != '\0' && name[5] != ' ' && name[5] != '\t')) {
		perr(p, "unknown section [%s]; expected [cluster] or "
		    "[agent NAME]", name);
		return;
	}
	name = trim(name + 5);
	if (*name == '\0')
		perr(p, "section [agent] needs a name: [agent NAME]");
	else if (!cfg_valid_name(name))
		perr(p, "invalid agent name '%s' (1 to %d of A-Z a-z 0-9 _ . -)",
		    name, NAME_MAX_LEN);
	else if (cfg_find(p->c, name) != -1)
		perr(p, "duplicate agent '%s' (first at line %d)", name,
		    p->alines[cfg_find(p->c, name)]);
	else
		add_agent(p, name);
}

/* Where a value (or a key) ends, as libinih finds it: at one of chars
 * (NULL: none), or at an inline comment, a ';' after whitespace. */
static const char *
value_end(const char *s, const char *e, const char *chars)
{
	int was_space = 0;

	for (; s < e; s++) {
		if ((chars != NULL && strchr(chars, *s) != NULL) ||
		    (was_space && *s == ';'))
			break;
		was_space = *s == ' ' || *s == '\t' || *s == '\r';
	}
	return s;
}

/* A line s[0, n) longer than libinih reads: hand it str (num bytes) in
 * a form that fits ("KEY=" for a key line, the value in p->longval; a
 * placeholder for a comment or a section header, which section() has
 * read). 0, or -1 with the error recorded. */
static int
long_line(struct pctx *p, const char *s, size_t n, char *str, int num)
{
	const char *sep, *v, *ve;

	if (*s == ';' || *s == '#' || *s == '[') {
		snprintf(str, (size_t)num, "%s\n", *s == '[' ? "[long]" : ";");
		return 0;
	}
	sep = value_end(s, s + n, "=:");
	if (sep == s + n || *sep == ';') {
		/* No key = value: libinih says so, at this line. */
		snprintf(str, (size_t)num, "?\n");
		return 0;
	}
	if ((size_t)(sep - s) + 3 > (size_t)num - 1) {
		perr(p, "key longer than %d bytes", num - 4);
		return -1;
	}
	v = sep + 1;
	ve = value_end(v, s + n, NULL);
	while (v < ve && (*v == ' ' || *v == '\t'))
		v++;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t' || ve[-1] == '\r'))
		ve--;
	if ((p->longval = strndup(v, (size_t)(ve - v))) == NULL) {
		perr(p, "out of memory");
		return -1;
	}
	snprintf(str, (size_t)num, "%.*s=\n", (int)(sep - s), s);
	return 0;
}

/* libinih's fgets-style reader over p->text: one line per call. */
static char *
reader(char *str, int num, void *stream)
{
	struct pctx *p = stream;
	const char *s, *nl;
	size_t n;

	if (p->stop || p->text[p->off] == '\0')
		return NULL;
	s = p->text + p->off;
	nl = strchr(s, '\n');
	n = nl ? (size_t)(nl - s) : strlen(s);
	p->off += n + (nl != NULL);
	p->lineno++;
	if (p->lineno == 1 && n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
		s += 3;
		n -= 3;
	}
	while (n > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	if (n > 0 && *s == '[')
		section(p, s, n);
	/* libinih needs room for "\r\n\0"; a longer line would reach it
	 * in pieces and be misread. */
	if (num < 8 || n > (size_t)num - 3) {
		if (num < 8 || long_line(p, s, n, str, num) == -1) {
			p->stop = 1;
			return NULL;
		}
		return str;
	}
	memcpy(str, s, n);
	str[n] = '\n';
	str[n + 1] = '\0';
	return str;
}

static void
set_once(struct pctx *p, char *dst, size_t dstsz, int *line,
    const char *key, const char *value)
{
	if (*line != 0) {
		perr(p, "duplicate key '%s' (first at line %d)", key, *line);
		return;
	}
	if (strlen(value) >= dstsz) {
		perr(p, "value of '%s' too long", key);
		return;
	}
	memcpy(dst, value, strlen(value) + 1);
	*line = p->lineno;
}

/* A quantity: decimal digits, then optionally one of units ("KMG...",
 * powers of 1024, either case), from min to max. 0 / -1. */
static int
parse_suffixed(const char *s, const char *units, uint64_t min, uint64_t max,
    uint64_t *out)
{
	const char *suf;
	uint64_t v = 0, mul = 1;
	size_t i;

	for (i = 0; s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > max)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0)
		return -1;
	if (s[i] != '\0') {
		if ((s[i] & ~0x20) == 0 ||
		    (suf = strchr(units, s[i] & ~0x20)) == NULL ||
		    s[i + 1] != '\0')
			return -1;
		mul = 1ull << (10 * (suf - units + 1));
	}
	if (v > max / mul || v * mul < min)
		return -1;
	*out = v * mul;
	return 0;
}

/* compact_min_size: 1 byte to CFG_COMPACT_MIN_MAX, suffix K, M, G or T. */
static int
parse_size(const char *s, uint64_t *out)
{
	return parse_suffixed(s, "KMGT", 1, CFG_COMPACT_MIN_MAX, out);
}

int
cfg_parse_inbox_max(const char *s, uint64_t *out)
{
	return parse_suffixed(s, "KMGT", CFG_INBOX_MAX_MIN, CFG_INBOX_MAX_MAX,
	    out);
}

/* inbox_max_bytes (in [cluster] or [agent NAME]) into *dst, once. */
static void
set_inbox_max(struct pctx *p, uint64_t *dst, const char *value)
{
	if (*dst != 0)
		perr(p, "duplicate key 'inbox_max_bytes'");
	else if (cfg_parse_inbox_max(value, dst) == -1)
		perr(p, "inbox_max_bytes '%s': " CFG_INBOX_MAX_EXPECTED, value);
}

int
cfg_parse_rate(const char *s, uint64_t *out)
{
	if (strcmp(s, "0") == 0) {
		*out = 0;
		return 0;
	}
	return parse_suffixed(s, "KMG", CFG_RATE_MIN, CFG_RATE_MAX, out);
}

/* metrics_addr (in [cluster] or [agent NAME]) into dst, once. */
static void
set_metrics(struct pctx *p, char *dst, const char *value)
{
	char h[256], pt[8];

	if (dst[0] != '\0')
		perr(p, "duplicate key 'metrics_addr'");
	else if (strlen(value) >= sizeof(p->metrics) ||
	    xport_split(value, h, sizeof(h), pt, sizeof(pt)) == -1)
		perr(p, "bad metrics_addr '%s' (want HOST:PORT, PORT 1-65535; "
		    "0.0.0.0:PORT for every address)", value);
	else
		memcpy(dst, value, strlen(value) + 1);
}

/* One "key = value" line; nonzero means ok. */
static int
key_value(struct pctx *p, const char *key, const char *value)
{
	struct cfg_agent *a;

	switch (p->sect) {
	case S_BAD:
		return 1;	/* the section line already failed */
	case S_NONE:
		perr(p, "key '%s' outside any section; put it under "
		    "[cluster] or [agent NAME]", key);
		return 0;
	default:
		break;
	}
	if (*value == '\0') {
		perr(p, "empty value for '%s'", key);
		return 0;
	}
	if (p->sect == S_CLUSTER && strcmp(key, "run_dir") == 0) {
		set_once(p, p->run_raw, sizeof(p->run_raw), &p->run_line,
		    key, value);
	} else if (p->sect == S_CLUSTER && strcmp(key, "tls_dir") == 0) {
		set_once(p, p->tls_raw, sizeof(p->tls_raw), &p->tls_line,
		    key, value);
	} else if (p->sect == S_CLUSTER && strcmp(key, "channels") == 0) {
		if (p->chan_line != 0)
			perr(p, "duplicate key '%s' (first at line %d)", key,
			    p->chan_line);
		else if ((p->channels = strdup(value)) == NULL)
			perr(p, "out of memory");
		else
			p->chan_line = p->lineno;
	} else if (p->sect == S_CLUSTER &&
	    strcmp(key, "compact_min_size") == 0) {
		if (p->cmin_line != 0)
			perr(p, "duplicate key '%s' (first at line %d)", key,
			    p->cmin_line);
		else if (parse_size(value, &p->c->compact_min_size) == -1)
			perr(p, "compact_min_size '%s': expected a size from 1 "
			    "byte to 1T, with an optional suffix K, M or G "
			    "(e.g. 64M)", value);
		else
			p->cmin_line = p->lineno;
	} else if (p->sect == S_CLUSTER && strcmp(key, "shared_data") == 0) {
		if (p->shared_line != 0)
			perr(p, "duplicate key '%s' (first at line %d)", key,
			    p->shared_line);
		else if (strcmp(value, "yes") != 0 && strcmp(value, "no") != 0)
			perr(p, "shared_data '%s': expected yes or no", value);
		else {
			p->c->shared_data = strcmp(value, "yes") == 0;
			p->shared_line = p->lineno;
		}
	} else if (p->sect == S_CLUSTER &&
	    strcmp(key, "snapshot_max_rate") == 0) {
		if (p->rate_line != 0)
			perr(p, "duplicate key '%s' (first at line %d)", key,
			    p->rate_line);
		else if (cfg_parse_rate(value, &p->c->snapshot_max_rate) == -1)
			perr(p, "snapshot_max_rate '%s': " CFG_RATE_EXPECTED, value);
		else
			p->rate_line = p->lineno;
	} else if (strcmp(key, "metrics_addr") == 0) {
		set_metrics(p, p->sect == S_CLUSTER ? p->metrics :
		    p->c->agents[p->cur].metrics, value);
	} else if (strcmp(key, "inbox_max_bytes") == 0) {
		set_inbox_max(p, p->sect == S_CLUSTER ? &p->inbox_max :
		    &p->c->agents[p->cur].inbox_max, value);
	} else if (p->sect == S_CLUSTER) {
		perr(p, "unknown key '%s' in [cluster]", key);
	} else if (strcmp(key, "data") == 0) {
		a = &p->c->agents[p->cur];
		set_once(p, a->data, sizeof(a->data), &p->dlines[p->cur], key,
		    value);
	} else if (strcmp(key, "addr") == 0) {
		char h[256], pt[8];

		a = &p->c->agents[p->cur];
		if (a->addr[0] != '\0')
			perr(p, "duplicate key 'addr' in [agent %s]", a->name);
		else if (strlen(value) >= sizeof(a->addr) ||
		    xport_split(value, h, sizeof(h), pt, sizeof(pt)) == -1)
			perr(p, "bad addr '%s' (want HOST:PORT, PORT 1-65535)",
			    value);
		else
			memcpy(a->addr, value, strlen(value) + 1);
	} else {
		perr(p, "unknown key '%s' in [agent %s]", key,
		    p->c->agents[p->cur].name);
	}
	return p->err_line == 0 || p->err_line != p->lineno;
}

/* libinih's handler: a long line's value is the one the reader kept. */
static int
handler(void *user, const char *section_name, const char *key,
    const char *value)
{
	struct pctx *p = user;
	int ok;

	/* libinih's copy of the section name may be cut; ours is not. */
	(void)section_name;
	ok = key_value(p, key, p->longval != NULL ? p->longval : value);
	free(p->longval);
	p->longval = NULL;
	return ok;
}

/* The config file's directory as an absolute path: realpath when it
 * exists, else (a config stored in a manifest) made absolute lexically. */
static int
config_dir(const char *path, char out[PATH_MAX], struct cs_err *e)
{
	char dir[PATH_MAX], cwd[PATH_MAX];
	int n;

	fs_path_dirname(path, dir, sizeof(dir));
	if (realpath(dir, out) != NULL)
		return 0;
	if (dir[0] == '/') {
		memcpy(out, dir, strlen(dir) + 1);
		return 0;
	}
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		return cs_errno(e, "getcwd");
	n = snprintf(out, PATH_MAX, "%s/%s", cwd, dir);
	if (n < 0 || n >= PATH_MAX)
		return cs_errf(e, "%s: path too long", path);
	return 0;
}

/* dir/rel, or rel when it is absolute; leading "./" dropped. */
static int
join(const char *dir, const char *rel, char out[PATH_MAX])
{
	int n;

	if (rel[0] == '/') {
		n = snprintf(out, PATH_MAX, "%s", rel);
	} else {
		while (rel[0] == '.' && rel[1] == '/')
			for (rel += 2; *rel == '/'; rel++)
				;
		if (strcmp(rel, ".") == 0)
			rel = "";
		n = snprintf(out, PATH_MAX, "%s%s%s", dir,
		    dir[strlen(dir) - 1] == '/' || *rel == '\0' ? "" : "/", rel);
	}
	return (n < 0 || n >= PATH_MAX) ? -1 : 0;
}

static int
parse_channels(struct pctx *p, struct cs_err *e)
{
	struct cfg *c = p->c;
	char *tok, *save = NULL, *gt;
	int s, d;

	for (tok = strtok_r(p->channels, " \t", &save); tok != NULL;
	    tok = strtok_r(NULL, " \t", &save)) {
		gt = strchr(tok, '>');
		if (gt == NULL || gt == tok || gt[1] == '\0' ||
		    strchr(gt + 1, '>') != NULL)
			return cs_errf(e, "%s:%d: bad channel '%s'; write "
			    "SRC>DST", p->path, p->chan_line, tok);
		*gt = '\0';
		if ((s = cfg_find(c, tok)) == -1 ||
		    (d = cfg_find(c, gt + 1)) == -1) {
			cs_errf(e, "%s:%d: channel '%s>%s' names unknown agent "
			    "'%s'", p->path, p->chan_line, tok, gt + 1,
			    cfg_find(c, tok) == -1 ? tok : gt + 1);
			return -1;
		}
		if (s == d)
			return cs_errf(e, "%s:%d: channel '%s>%s' is a self-loop",
			    p->path, p->chan_line, tok, gt + 1);
		c->chan[s * c->nagents + d] = 1;	/* repeats are harmless */
	}
	return 0;
}

/* Everything that needs the whole file: agents present, paths, sockets,
 * channels. */
static int
finish(struct pctx *p, struct cs_err *e)
{
	struct cfg *c = p->c;
	const char *base;
	char dir[PATH_MAX], raw[PATH_MAX];
	int i, j, n = c->nagents, line;

	if (n == 0)
		return cs_errf(e, "%s: no agents; add an [agent NAME] section "
		    "with a data key", p->path);
	for (i = 0; i < n; i++)
		if (p->dlines[i] == 0)
			return cs_errf(e, "%s:%d: [agent %s] has no 'data' key",
			    p->path, p->alines[i], c->agents[i].name);
	if (config_dir(p->path, dir, e) == -1)
		return -1;
	base = strrchr(p->path, '/') ? strrchr(p->path, '/') + 1 : p->path;
	if (join(dir, base, c->path) == -1 ||
	    join(dir, p->run_line ? p->run_raw : "run", c->run_dir) == -1 ||
	    (p->tls_line && join(dir, p->tls_raw, c->tls_dir) == -1))
		return cs_errf(e, "%s: path too long", p->path);
	for (i = 0; i < n; i++) {
		if (c->agents[i].addr[0] != '\0' && !p->tls_line)
			return cs_errf(e, "%s:%d: [agent %s] has an addr but "
			    "[cluster] has no tls_dir", p->path, p->alines[i],
			    c->agents[i].name);
		if (p->tls_line && strcmp(c->agents[i].name,
		    XPORT_CLIENT_CN) == 0)
			return cs_errf(e, "%s:%d: an agent may not be called "
			    "'%s' with a tls_dir: it is the commands' "
			    "certificate name", p->path, p->alines[i],
			    XPORT_CLIENT_CN);
		for (j = 0; j < i; j++)
			if (c->agents[i].addr[0] != '\0' &&
			    strcmp(c->agents[i].addr, c->agents[j].addr) == 0)
				return cs_errf(e, "%s:%d: agents %s and %s "
				    "share the addr %s", p->path,
				    p->alines[i], c->agents[j].name,
				    c->agents[i].name, c->agents[i].addr);
	}
	/* [cluster]'s metrics_addr is every agent's that has none of its
	 * own: one agent per host, the same port on each (two agents on
	 * one host need their own, or the second cannot listen). */
	for (i = 0; i < n; i++) {
		if (c->agents[i].metrics[0] == '\0')
			memcpy(c->agents[i].metrics, p->metrics,
			    sizeof(p->metrics));
		if (c->agents[i].inbox_max == 0)
			c->agents[i].inbox_max = p->inbox_max != 0 ?
			    p->inbox_max : CFG_INBOX_MAX_DEFAULT;
	}
	for (i = 0; i < n; i++) {
		memcpy(raw, c->agents[i].data, sizeof(raw));
		if (join(dir, raw, c->agents[i].data) == -1)
			return cs_errf(e, "%s:%d: data path too long",
			    p->path, p->dlines[i]);
		for (j = 0; j < i; j++)
			if (strcmp(c->agents[i].data, c->agents[j].data) == 0)
				return cs_errf(e, "%s:%d: agents %s and %s "
				    "share the data file %s", p->path,
				    p->dlines[i], c->agents[j].name,
				    c->agents[i].name, c->agents[i].data);
		j = snprintf(c->agents[i].sock, sizeof(c->agents[i].sock),
		    "%s/%s.sock", c->run_dir, c->agents[i].name);
		if (j < 0 || (size_t)j >= SUN_PATH_LEN) {
			line = p->run_line ? p->run_line : p->alines[i];
			return cs_errf(e, "%s:%d: socket path %s/%s.sock is "
			    "too long for a Unix socket (%zu bytes at most); "
			    "set a shorter run_dir under [cluster]", p->path,
			    line, c->run_dir, c->agents[i].name,
			    SUN_PATH_LEN - 1);
		}
	}
	if ((c->chan = calloc((size_t)n * n, 1)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	if (p->channels != NULL)
		return parse_channels(p, e);
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			c->chan[i * n + j] = i != j;
	return 0;
}

/* Parse text (taking ownership of it) as the config file at path. */
static int
parse_owned(char *text, const char *path, struct cfg **out, struct cs_err *e)
{
	struct pctx p;
	int rc = -1, ret;

	*out = NULL;
	memset(&p, 0, sizeof(p));
	p.text = text;
	p.path = path;
	if ((p.c = calloc(1, sizeof(*p.c))) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	p.c->text = text;
	p.c->compact_min_size = CFG_COMPACT_MIN_DEFAULT;
	text = NULL;
	ret = ini_parse_stream(reader, &p, handler, &p);
	if (ret < 0) {
		cs_errf(e, "%s: out of memory", path);
		goto out;
	}
	/* libinih reports the first line it rejected, ours the first line
	 * we rejected; the earlier one is the first error in the file. */
	if (ret > 0 && (p.err_line == 0 || ret < p.err_line)) {
		cs_errf(e, "%s:%d: syntax error: expected [section] or "
		    "key = value", path, ret);
		goto out;
	}
	if (p.err_line != 0) {
		cs_errf(e, "%s:%d: %s", path, p.err_line, p.err);
		goto out;
	}
	if (finish(&p, e) == -1)
		goto out;
	*out = p.c;
	p.c = NULL;
	rc = 0;
out:
	free(text);
	cfg_free(p.c);
	free(p.alines);
	free(p.dlines);
	free(p.channels);
	free(p.longval);
	return rc;
}

int
cfg_parse(const char *text, const char *path, struct cfg **out,
    struct cs_err *e)
{
	char *copy;

	*out = NULL;
	if ((copy = strdup(text)) == NULL)
		return cs_errc(e, CS_E_NOMEM, "out of memory");
	return parse_owned(copy, path, out, e);
}

/* Read the whole file, NUL-terminated; a NUL inside is rejected. */
static int
read_text(const char *path, char **out, struct cs_err *e)
{
	struct stat sb;
	char *buf = NULL;
	size_t len = 0;
	ssize_t r;
	int fd, rc = -1;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		cs_errno(e, "open %s", path);
		goto out;
	}
	if (fstat(fd, &sb) == -1) {
		cs_errno(e, "stat %s", path);
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		cs_errf(e, "%s: not a regular file", path);
		goto out;
	}
	if ((buf = malloc(CFG_MAX_FILE + 1)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	/* Read up to one byte past the cap to notice a file that is too big
	 * (or grows while read). */
	for (;;) {
		r = read(fd, buf + len, CFG_MAX_FILE + 1 - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			cs_errno(e, "read %s", path);
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > CFG_MAX_FILE) {
			cs_errf(e, "%s: config file larger than %u bytes", path,
			    CFG_MAX_FILE);
			goto out;
		}
	}
	if (memchr(buf, '\0', len) != NULL) {
		cs_errf(e, "%s: not a text file (contains a NUL byte)", path);
		goto out;
	}
	/* Keep only what the file holds: cfg->text lives as long as cfg. */
	if ((*out = malloc(len + 1)) == NULL) {
		cs_errc(e, CS_E_NOMEM, "out of memory");
		goto out;
	}
	memcpy(*out, buf, len);
	(*out)[len] = '\0';
	rc = 0;
out:
	free(buf);
	if (fd != -1)
		close(fd);
	return rc;
}

int
cfg_load(const char *path, struct cfg **out, struct cs_err *e)
{
	char *text;

	*out = NULL;
	if (read_text(path, &text, e) == -1)
		return -1;
	return parse_owned(text, path, out, e);
}
