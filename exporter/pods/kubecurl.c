// SPDX-License-Identifier: GPL-2.0-only
/*
 * libcurl, opened when pod attribution starts: linked in, it and what it pulls in (OpenSSL,
 * Kerberos, LDAP, SSH, ...) were 3.2 MB of the resident memory of every exporter, most of
 * which never attribute pods. Kept open once loaded (OpenSSL does not support unloading).
 */
#include <dlfcn.h>
#include <errno.h>

#include "base/log.h"
#include "pods/kubecurl.h"

struct kube_curl kube_lc;
static void *lc_handle;

/* 0, or -ELIBACC (no libcurl.so.4), -ELIBBAD (a function missing); logged. */
static int load_curl(void)
{
	static const char *const names[] = {
		"curl_global_init",    "curl_global_cleanup", "curl_easy_init",
		"curl_easy_setopt",    "curl_easy_perform",   "curl_easy_getinfo",
		"curl_easy_reset",     "curl_easy_cleanup",   "curl_easy_strerror",
		"curl_easy_escape",    "curl_free",	      "curl_slist_append",
		"curl_slist_free_all",
	};
	void **fn = (void **)&kube_lc;
	void *h;

	_Static_assert(sizeof(kube_lc) == sizeof(names) / sizeof(names[0]) * sizeof(void *),
		       "one name per libcurl function");
	if (lc_handle)
		return 0;
	h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		log_error("pods: cannot load libcurl (Debian libcurl4): %s", dlerror());
		return -ELIBACC;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		fn[i] = dlsym(h, names[i]);
		if (!fn[i]) {
			log_error("pods: libcurl.so.4 lacks %s", names[i]);
			return -ELIBBAD; /* h stays open: unloading libcurl is not safe either */
		}
	}
	lc_handle = h;
	return 0;
}

int kube_global_init(void)
{
	int err = load_curl();
	CURLcode rc;

	if (err)
		return err;
	rc = kube_lc.global_init(CURL_GLOBAL_DEFAULT);
	if (rc) {
		log_error("pods: libcurl's global initialisation failed: %s",
			  kube_lc.easy_strerror(rc));
		return rc == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EIO;
	}
	return 0;
}

void kube_global_cleanup(void)
{
	if (lc_handle)
		kube_lc.global_cleanup();
}
