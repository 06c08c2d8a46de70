/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libcurl's functions, loaded at run time (kubecurl.c): inside pods/ only, for the API client.
 * Process-wide by nature: the library is loaded once and stays.
 */
#ifndef NETSTACK_KUBECURL_H
#define NETSTACK_KUBECURL_H

#include <curl/curl.h>

/* What the client calls of libcurl; set by kube_global_init. */
struct kube_curl {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_reset)(CURL *c);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode rc);
	char *(*easy_escape)(CURL *c, const char *s, int len);
	void (*free)(void *p);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
};
extern struct kube_curl kube_lc;

/* dlopen libcurl (and curl_global_init) once; 0 or -errno, logged. */
int kube_global_init(void);
void kube_global_cleanup(void);

#endif
