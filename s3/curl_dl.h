/* curl_dl.h - libcurl, loaded when the first S3 repository is opened.
 *
 * Linked in, libcurl brings 28 shared libraries (gnutls, krb5, ldap,
 * ...) that every command would map and relocate at start-up: an empty
 * program linked with them takes 20-28 ms more CPU to start than one
 * linked with cutsnap's other libraries alone (perf stat -r 40, the
 * project's 2-vCPU VM). Only s3:// repositories need it, so s3.c reaches
 * libcurl through the table below, filled by dlopen on first use, and the
 * binary does not link it.
 *
 * Include after <curl/curl.h>, in s3.c only: the macros below turn its
 * calls of curl_X into calls through the table. */
#ifndef CUTSNAP_CURL_DL_H
#define CUTSNAP_CURL_DL_H

#include <curl/curl.h>
#include "../lib/err.h"

struct curl_fns {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	void (*easy_reset)(CURL *h);
	void (*easy_cleanup)(CURL *h);
	CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
	CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
	const char *(*easy_strerror)(CURLcode c);
	char *(*easy_escape)(CURL *h, const char *s, int len);
	void (*free)(void *p);
	struct curl_slist *(*slist_append)(struct curl_slist *l,
	    const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_cleanup)(CURLM *m);
	CURLMcode (*multi_add_handle)(CURLM *m, CURL *h);
	CURLMcode (*multi_remove_handle)(CURLM *m, CURL *h);
	CURLMcode (*multi_perform)(CURLM *m, int *running);
	CURLMsg *(*multi_info_read)(CURLM *m, int *left);
	CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd fds[],
	    unsigned int nfds, int timeout_ms, int *numfds);
	CURLMcode (*multi_wakeup)(CURLM *m);
};

/* Filled by curl_dl_load; read only after it returned 0. */
extern struct curl_fns curl_fn;

/* Loads libcurl (libcurl.so.4) and every function above, and runs
 * curl_global_init, once per process (thread-safe). 0, or -1 with e
 * saying what is missing. */
int curl_dl_load(struct cs_err *e);

/* curl.h makes these two type-checking macros under gcc. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_easy_init		curl_fn.easy_init
#define curl_easy_reset		curl_fn.easy_reset
#define curl_easy_cleanup	curl_fn.easy_cleanup
#define curl_easy_setopt	curl_fn.easy_setopt
#define curl_easy_getinfo	curl_fn.easy_getinfo
#define curl_easy_strerror	curl_fn.easy_strerror
#define curl_easy_escape	curl_fn.easy_escape
#define curl_free		curl_fn.free
#define curl_slist_append	curl_fn.slist_append
#define curl_slist_free_all	curl_fn.slist_free_all
#define curl_multi_init		curl_fn.multi_init
#define curl_multi_cleanup	curl_fn.multi_cleanup
#define curl_multi_add_handle	curl_fn.multi_add_handle
#define curl_multi_remove_handle curl_fn.multi_remove_handle
#define curl_multi_perform	curl_fn.multi_perform
#define curl_multi_info_read	curl_fn.multi_info_read
#define curl_multi_poll		curl_fn.multi_poll
#define curl_multi_wakeup	curl_fn.multi_wakeup

#endif
