/* held.c - why a snapshot timed out: the held channels ("channel hold")
 * into the agents that have not reported, asked of their sources once
 * the deadline has passed, so that the message names the channel rather
 * than blaming the agent that waits behind it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coord_int.h"
#include "../proto/agstat.h"
#include "../lib/buf.h"
#include "../net/client.h"
#include "../lib/util.h"
#include "../net/wire.h"

#define HELD_ASK_MS 1000	/* per source agent: this is a diagnosis, */
#define HELD_ALL_MS 2000	/* and all of them, so the abort is prompt */

/* Agent s's status, parsed into st, by deadline (cs_now_ms clock); 0,
 * or -1 (it is not asked again). */
static int
ask_status(const struct cfg *c, int s, int64_t deadline, struct agstat *st)
{
	struct cs_err e;
	struct rbuf rb;
	const uint8_t *t;
	uint8_t code, *body = NULL;
	size_t blen, tlen;
	int64_t left;
	int fd, rc = -1;

	memset(st, 0, sizeof(*st));
	if ((fd = client_connect_agent(c, s, deadline, &e)) < 0)
		return -1;
	left = deadline - cs_now_ms();
	if (left <= 0 || client_call(fd, W_REQ_STATUS, NULL, 0, &code, &body,
	    &blen, (int)left, &e) < 0 || code != REPLY_OK)
		goto out;
	rbuf_init(&rb, body, blen);
	(void)rbuf_u32(&rb);
	t = rbuf_bytes(&rb, &tlen, AGSTAT_MAX_TEXT);
	if (rbuf_done(&rb) && agstat_parse((const char *)t, tlen, st, &e) == 0)
		rc = 0;
out:
	free(body);
	client_close(fd);
	return rc;
}

/* Append agent s's held channels into an agent of waiting[] to out. */
static void
add_held(const struct cfg *c, int s, int64_t end,
    const unsigned char *waiting, char *out, size_t outsz, int *n)
{
	int64_t deadline = cs_now_ms() + HELD_ASK_MS;
	struct agstat st;
	size_t j, len;
	int d;

	if (ask_status(c, s, deadline < end ? deadline : end, &st) < 0)
		return;
	for (j = 0; j < st.nout; j++) {
		d = cfg_find(c, st.out[j].peer);
		if (!st.out[j].held || d < 0 || !waiting[d])
			continue;
		len = strlen(out);
		if (len + 1 < outsz)
			snprintf(out + len, outsz - len, "%s%s->%s",
			    len ? ", " : "", c->agents[s].name,
			    c->agents[d].name);
		(*n)++;
	}
	agstat_free(&st);
}

int
coord_held_into(const struct cfg *c, const unsigned char *waiting,
    char *out, size_t outsz)
{
	int64_t end = cs_now_ms() + HELD_ALL_MS;
	int s, d, n = 0;

	out[0] = '\0';
	for (s = 0; s < c->nagents && cs_now_ms() < end; s++)
		for (d = 0; d < c->nagents; d++)
			if (waiting[d] && cfg_has_channel(c, s, d)) {
				add_held(c, s, end, waiting, out, outsz, &n);
				break;
			}
	return n;
}
