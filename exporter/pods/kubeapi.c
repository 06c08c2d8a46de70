// SPDX-License-Identifier: GPL-2.0-only
/*
 * The pod source's client (see kubeapi.h), its reflector: what to request when, after client-go's
 * (tools/cache/reflector.go and tools/pager/pager.go); kubeget.c makes each request:
 *
 * - LIST: resourceVersion "0" (the API server's watch cache) the first time, in pages of 500
 *   (limit + continue; the cache ignores limit for rv=0 on most servers and answers whole);
 *   later lists at the last resourceVersion seen, unpaged (served from the cache too) unless the
 *   first list came back in pages; a 410 on a continue page: the whole list at once; a 410 on
 *   the list itself: again at once with resourceVersion "" (a consistent read).
 * - WATCH from the list's resourceVersion, bookmarks on, timeoutSeconds random in [300, 600).
 *   A watch the server ends normally is renewed at once from the last resourceVersion (events and
 *   bookmarks move it), without a list. A refused connection or a 429: back off, watch again.
 *   Anything else (410, an ERROR event, an undecodable event, a watch closed within a second
 *   without an event): back off, list again. A watch closed within a second after events backs
 *   off too, where client-go would watch again at once.
 * - Back-off before every list but the first and before retried watches: 0.8 s doubling to a
 *   30 s cap, times 1 + U[0,1); back to 0.8 s only after 2 minutes without one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "pods/kubeapi.h"
#include "pods/kubeclient.h"
#include "pods/kubeget.h"
#include "pods/kubecurl.h"
#include "pods/mono.h"

#define PAGE_SIZE 500	/* the pager's */
#define MAX_PAGES 10000 /* a server handing out continue tokens for ever is no API server */
#define URL_MAX (1024 + 3 * KUBE_CONTINUE_MAX + 256)
#define LIST_TIMEOUT(k) (10L * (k)->cfg.timeout) /* a list page in all; stalled: timeout */

/* Uniform in [0, 1) (xorshift64*: jitter needs no more). */
static double uniform(struct kube_client *k)
{
	k->rand ^= k->rand >> 12;
	k->rand ^= k->rand << 25;
	k->rand ^= k->rand >> 27;
	return ((k->rand * 0x2545F4914F6CDD1DULL) >> 11) * 0x1.0p-53;
}

static void back_off(struct kube_client *k)
{
	k->sink.nap(k->sink.arg, kube_backoff_next(&k->backoff, mono(), uniform(k)));
}

/* url + "&name=value", value escaped; 0, -ENAMETOOLONG when it does not fit, or -ENOMEM. */
static int add_param(struct kube_client *k, char *url, const char *name, const char *value)
{
	char *v = kube_lc.easy_escape(k->curl, value, 0);
	size_t n = strlen(url);
	int w = v ? snprintf(url + n, URL_MAX - n, "&%s=%s", name, v) : -1;

	kube_lc.free(v);
	return !v ? -ENOMEM : w < 0 || (size_t)w >= URL_MAX - n ? -ENAMETOOLONG : 0;
}

static enum result list_url(struct kube_client *k, char *url, const char *rv, bool paged,
			    const char *cont)
{
	snprintf(url, URL_MAX, "%s", k->base);
	if ((*rv && !*cont && add_param(k, url, "resourceVersion", rv)) ||
	    (paged && add_param(k, url, "limit", "500")) ||
	    (*cont && add_param(k, url, "continue", cont))) {
		kube_count_error(k, E_PARSE,
				 "a resourceVersion or continue token too long for a URL");
		return K_FAIL;
	}
	return K_OK;
}

/* The pager: pages of PAGE_SIZE until no continue token; the list's pods have a new gen. */
static enum result list_pages(struct kube_client *k, const char *rv, bool paged, bool *paginated)
{
	char url[URL_MAX], cont[KUBE_CONTINUE_MAX] = "";
	enum result r;

	_Static_assert(PAGE_SIZE == 500, "the limit parameter above");
	*paginated = false;
	k->gen++;
	for (int page = 0; !kube_stopped(k); page++) {
		if (page == MAX_PAGES) {
			kube_count_error(k, E_PARSE, "more than %d pages", MAX_PAGES);
			return K_FAIL;
		}
		r = list_url(k, url, rv, paged, cont);
		if (r == K_OK)
			r = kube_get(k, V_LIST, url, LIST_TIMEOUT(k));
		if (r == K_GONE && *cont) {
			/* The continue token expired: the whole list in one, as the pager does. */
			*cont = '\0';
			r = list_url(k, url, rv, false, "");
			if (r == K_OK)
				r = kube_get(k, V_LIST, url, LIST_TIMEOUT(k));
			if (r == K_OK)
				*k->list.cont = '\0';
		}
		if (r != K_OK)
			return r;
		if (!*k->list.cont) {
			snprintf(k->rv, sizeof(k->rv), "%s", k->list.rv);
			k->sink.listed(k->sink.arg, k->gen);
			kube_synced(k);
			return K_OK;
		}
		snprintf(cont, sizeof(cont), "%s", k->list.cont);
		*paginated = true;
	}
	return K_FAIL;
}

/* The reflector's list: where from, and whether in pages. */
static enum result list(struct kube_client *k)
{
	char rv[KUBE_RV_MAX];
	bool paged, paginated;
	enum result r;

	snprintf(rv, sizeof(rv), "%s", k->rv_unavailable ? "" : *k->rv ? k->rv : "0");
	/* At a resourceVersion the cache serves only unpaged lists: no limit then. */
	paged = k->paginated || !*rv || !strcmp(rv, "0");
	r = list_pages(k, rv, paged, &paginated);
	if (r == K_GONE) {
		k->rv_unavailable = true; /* too old: the newest, from etcd, at once */
		*rv = '\0';
		r = list_pages(k, rv, true, &paginated);
	}
	if (r != K_OK)
		return r;
	/* Pages for rv=0: this server's cache pages (or it has none); page from now on. */
	k->paginated |= paginated && !strcmp(rv, "0");
	k->rv_unavailable = false;
	return K_OK;
}

/* Watches from k->rv until the watch needs a new list (after a back-off). */
static void watch(struct kube_client *k)
{
	char url[URL_MAX], t[16];

	while (!kube_stopped(k)) {
		double start = mono();
		unsigned timeout = 300 + (unsigned)(uniform(k) * 300);
		enum result r;

		snprintf(t, sizeof(t), "%u", timeout);
		snprintf(url, sizeof(url), "%s&watch=true&allowWatchBookmarks=true", k->base);
		if (add_param(k, url, "timeoutSeconds", t) ||
		    add_param(k, url, "resourceVersion", k->rv))
			return;
		r = kube_get(k, V_WATCH, url, timeout + k->cfg.timeout);
		if (kube_stopped(k))
			return;
		if (r == K_RETRY) {
			back_off(k); /* refused, 429: the same watch later, no list */
			continue;
		}
		if (r != K_OK)
			return;
		if (mono() - start < 1) {
			if (!k->events) {
				kube_count_error(k, E_CLOSED,
						 "a watch closed within a second, no event");
				return;
			}
			back_off(k);
		}
	}
}

/* The kubelet's /pods: one GET, no paging. */
static enum result poll_kubelet(struct kube_client *k)
{
	enum result r;

	k->gen++;
	r = kube_get(k, V_GET, k->cfg.kubelet_url, LIST_TIMEOUT(k));
	if (r != K_OK)
		return r;
	k->sink.listed(k->sink.arg, k->gen);
	kube_synced(k);
	return K_OK;
}

void kube_client_run(struct kube_client *k)
{
	for (bool first = true; !kube_stopped(k); first = false) {
		if (k->kubelet) {
			if (poll_kubelet(k) != K_OK)
				back_off(k);
			else
				k->sink.nap(k->sink.arg, k->cfg.refresh);
			continue;
		}
		/* client-go's wait.Until with the back-off: a delay before every list but the first */
		if (!first)
			back_off(k);
		if (!kube_stopped(k) && list(k) == K_OK)
			watch(k);
	}
}

struct kube_client *kube_client_new(const struct pods_config *c, bool kubelet,
				    const struct kube_sink *sink, struct kube_stats *stats)
{
	struct kube_client *k = calloc(1, sizeof(*k));
	char *node;

	if (!k)
		return NULL;
	k->cfg = *c;
	k->kubelet = kubelet;
	k->sink = *sink;
	k->stats = stats;
	if (getrandom(&k->rand, sizeof(k->rand), 0) != sizeof(k->rand))
		k->rand = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
	k->rand |= 1;
	k->curl = kube_lc.easy_init();
	node = k->curl ? kube_lc.easy_escape(k->curl, c->node_name, 0) : NULL;
	if (!node) {
		/* Out of memory: without the node's name the list would be every node's pods. */
		kube_client_free(k);
		errno = ENOMEM;
		return NULL;
	}
	snprintf(k->base, sizeof(k->base), "%s/api/v1/pods?fieldSelector=spec.nodeName%%3D%s",
		 c->api_url, node);
	kube_lc.free(node);
	return k;
}

void kube_client_free(struct kube_client *k)
{
	if (!k)
		return;
	if (k->curl) {
		kube_lc.slist_free_all(k->headers);
		kube_lc.easy_cleanup(k->curl);
	}
	free(k->lines.buf);
	kube_list_free(&k->list);
	free(k);
}
