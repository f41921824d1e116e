/* curl_dl.c - libcurl loaded on first use (curl_dl.h says why). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "curl_dl.h"

/* The soname of Debian's libcurl4 (OpenSSL flavour), which
 * libcurl4-openssl-dev builds against. */
#define CURL_SONAME "libcurl.so.4"

struct curl_fns curl_fn;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_err[256];	/* empty: loaded */

/* Sets *slot to the symbol, or records what is missing; 0 / -1. */
#define LOAD(h, field, name)						\
	((curl_fn.field = (__typeof__(curl_fn.field))dlsym((h), (name))) \
	    != NULL ? 0 : (snprintf(load_err, sizeof(load_err),		\
	    "s3:// repositories need libcurl 7.75 or later: %s has no %s",	\
	    CURL_SONAME, (name)), -1))

static void
load(void)
{
	void *h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (h == NULL) {
		snprintf(load_err, sizeof(load_err),
		    "s3:// repositories need libcurl (Debian: libcurl4): %s",
		    dlerror());
		return;
	}
	if (LOAD(h, global_init, "curl_global_init") < 0 ||
	    LOAD(h, easy_init, "curl_easy_init") < 0 ||
	    LOAD(h, easy_reset, "curl_easy_reset") < 0 ||
	    LOAD(h, easy_cleanup, "curl_easy_cleanup") < 0 ||
	    LOAD(h, easy_setopt, "curl_easy_setopt") < 0 ||
	    LOAD(h, easy_getinfo, "curl_easy_getinfo") < 0 ||
	    LOAD(h, easy_strerror, "curl_easy_strerror") < 0 ||
	    LOAD(h, easy_escape, "curl_easy_escape") < 0 ||
	    LOAD(h, free, "curl_free") < 0 ||
	    LOAD(h, slist_append, "curl_slist_append") < 0 ||
	    LOAD(h, slist_free_all, "curl_slist_free_all") < 0 ||
	    LOAD(h, multi_init, "curl_multi_init") < 0 ||
	    LOAD(h, multi_cleanup, "curl_multi_cleanup") < 0 ||
	    LOAD(h, multi_add_handle, "curl_multi_add_handle") < 0 ||
	    LOAD(h, multi_remove_handle, "curl_multi_remove_handle") < 0 ||
	    LOAD(h, multi_perform, "curl_multi_perform") < 0 ||
	    LOAD(h, multi_info_read, "curl_multi_info_read") < 0 ||
	    LOAD(h, multi_poll, "curl_multi_poll") < 0 ||
	    LOAD(h, multi_wakeup, "curl_multi_wakeup") < 0)
		return;		/* h stays open: harmless, and rare */
	/* curl_global_init is not thread-safe; here it runs once. */
	if (curl_fn.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(load_err, sizeof(load_err), "curl_global_init failed");
		return;
	}
}

int
curl_dl_load(struct cs_err *e)
{
	pthread_once(&once, load);
	if (load_err[0] != '\0')
		return cs_errf(e, "%s", load_err);
	return 0;
}
