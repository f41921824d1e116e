/* names.h - the longest agent name, shared by the config (which checks
 * names) and the wire protocol (which carries them), so that neither has
 * to include the other. */
#ifndef CUTSNAP_NAMES_H
#define CUTSNAP_NAMES_H

#define NAME_MAX_LEN 63		/* agent names */

#endif
