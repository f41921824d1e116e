/* xport_name.c - the names and addresses xport's peers go by: an agent's
 * "HOST:PORT" split (xport_name.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xport_name.h"

int
xport_split(const char *addr, char *host, size_t hsz, char *port, size_t psz)
{
	const char *colon, *h = addr;
	size_t hl;
	char *end;
	long p;

	if ((colon = strrchr(addr, ':')) == NULL)
		return -1;
	hl = (size_t)(colon - addr);
	if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']') {
		h = addr + 1;
		hl -= 2;
	}
	if (hl == 0 || hl >= hsz || strlen(colon + 1) >= psz)
		return -1;
	/* Digits only: strtol alone would take " 12" or "+12". */
	if (colon[1] < '0' || colon[1] > '9')
		return -1;
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || p < 1 || p > 65535)
		return -1;
	memcpy(host, h, hl);
	host[hl] = '\0';
	snprintf(port, psz, "%ld", p);
	return 0;
}
