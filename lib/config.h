/* config.h - the cluster config file (INI, parsed with libinih).
 *
 *   [cluster]
 *   run_dir = run          ; default: run/ beside the config
 *   channels = A>B B>A     ; default: full mesh
 *   tls_dir = tls          ; certificates, needed once an agent has addr
 *   compact_min_size = 64M ; automatic compaction from this size (K/M/G)
 *   shared_data = no       ; yes: every data path is readable where the
 *                          ; coordinator runs (else agents with addr
 *                          ; stream their chunks)
 *   snapshot_max_rate = 50M ; snapshots copy at most this many bytes/s
 *   metrics_addr = :9477   ; every agent serves GET /metrics there
 *   inbox_max_bytes = 64M  ; an inbox admits no application message once
 *                          ; it holds this many bytes (back-pressure)
 *   [agent A]
 *   data = a.data
 *   addr = host1:7101      ; optional: TCP + mutual TLS, not run_dir/A.sock
 *   metrics_addr = 127.0.0.1:9478 ; optional: this agent's, not [cluster]'s
 *   inbox_max_bytes = 1G   ; optional: this agent's, not [cluster]'s
 *
 * Relative paths are relative to the config file's directory; all paths in
 * struct cfg are absolute after loading. */
#ifndef CUTSNAP_CONFIG_H
#define CUTSNAP_CONFIG_H

#include <limits.h>
#include <stdint.h>
#include "err.h"
#include "names.h"

#define CFG_MAX_AGENTS 256

struct cfg_agent {
	char name[NAME_MAX_LEN + 1];	/* [A-Za-z0-9_.-], 1..63 chars */
	char data[PATH_MAX];		/* absolute data file path */
	char sock[PATH_MAX];		/* run_dir/NAME.sock (< 108 bytes) */
	char addr[272];			/* HOST:PORT (TCP + TLS), or "" */
	char metrics[272];		/* HOST:PORT of /metrics (its own
					 * metrics_addr, else [cluster]'s),
					 * or "" (none) */
	uint64_t inbox_max;		/* inbox_max_bytes: its own, else
					 * [cluster]'s, else the default */
};

struct cfg {
	char path[PATH_MAX];		/* absolute path of the config file */
	char run_dir[PATH_MAX];		/* absolute */
	char tls_dir[PATH_MAX];		/* absolute, or "" (no tls_dir) */
	int nagents;
	struct cfg_agent *agents;	/* in file order */
	unsigned char *chan;		/* nagents*nagents: chan[s*n+d] = 1 */
	char *text;			/* the file's bytes, NUL-terminated */
	uint64_t compact_min_size;	/* bytes (CFG_COMPACT_MIN_DEFAULT) */
	int shared_data;		/* shared_data = yes: the coordinator
					 * reads every data file by its path,
					 * also of agents with an addr */
	uint64_t snapshot_max_rate;	/* bytes/s (ratelimit.h); 0: none */
};

#define CFG_COMPACT_MIN_DEFAULT (64ull << 20)
/* inbox_max_bytes: what an agent's inbox holds before it admits no more
 * application messages (its senders wait), and its bounds. */
#define CFG_INBOX_MAX_DEFAULT (64ull << 20)
#define CFG_INBOX_MAX_MIN 1ull
#define CFG_INBOX_MAX_MAX (1ull << 40)
#define CFG_INBOX_MAX_EXPECTED "expected a size from 1 byte to 1T, with " \
	"an optional suffix K, M, G or T (e.g. 64M)"
/* An inbox_max_bytes value: 0 / -1. */
int cfg_parse_inbox_max(const char *s, uint64_t *out);
/* Largest compact_min_size accepted: 1T. */
#define CFG_COMPACT_MIN_MAX (1ull << 40)

/* A rate in bytes per second (snapshot_max_rate, snapshot --max-rate):
 * decimal digits, then optionally K, M or G (powers of 1024), from
 * CFG_RATE_MIN to CFG_RATE_MAX, or "0" (no limit). 0 / -1. */
#define CFG_RATE_MIN (32ull << 10)
#define CFG_RATE_MAX (1ull << 40)
#define CFG_RATE_EXPECTED "expected bytes per second from 32K to 1024G, " \
	"with an optional suffix K, M or G (e.g. 50M), or 0 for no limit"
int cfg_parse_rate(const char *s, uint64_t *out);

/* Load and validate (unknown sections/keys, duplicate agents, bad names,
 * missing data, channels naming unknown agents or self-loops, socket path
 * too long, fewer than 1 agent). Error lines name the file and line. */
int cfg_load(const char *path, struct cfg **out, struct cs_err *e);
/* Parse config text as if it were the file at path (used for the config
 * stored in a manifest). */
int cfg_parse(const char *text, const char *path, struct cfg **out,
    struct cs_err *e);
void cfg_free(struct cfg *c);

int cfg_find(const struct cfg *c, const char *name);	/* index or -1 */
int cfg_has_channel(const struct cfg *c, int src, int dst);
int cfg_valid_name(const char *name);			/* 1 / 0 */

#endif
