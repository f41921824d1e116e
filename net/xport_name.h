/* xport_name.h - the names and addresses xport's peers go by, apart from
 * xport.h so that the configuration (lib/config.c), which checks them,
 * does not depend on the transport, which reads the configuration. */
#ifndef CUTSNAP_XPORT_NAME_H
#define CUTSNAP_XPORT_NAME_H

#include <stddef.h>

#define XPORT_CLIENT_CN	"client"

/* Parse "HOST:PORT" or "[V6]:PORT". 0 / -1. */
int xport_split(const char *addr, char *host, size_t hsz, char *port,
    size_t psz);

#endif
