/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside the API client: the client's state, shared by the reflector (kubeapi.c), its requests
 * (kubeget.c) and its counts (kubestats.c). Not for other modules: they use kubeapi.h.
 */
#ifndef NETSTACK_KUBECLIENT_H
#define NETSTACK_KUBECLIENT_H

#include <curl/curl.h>

#include "pods/kubeapi.h"

enum verb { V_LIST, V_WATCH, V_GET, NR_V };
enum { E_CONNECT, E_TIMEOUT, E_TLS, E_FORBIDDEN, E_HTTP, E_PARSE, E_GONE, E_CLOSED, E_OTHER, NR_E };
_Static_assert(NR_E == KUBE_NR_ERRORS && NR_V == KUBE_NR_VERBS, "kubeapi.h's counts");
extern const char *const kube_verbs[NR_V], *const kube_error_kinds[NR_E]; /* label values */

/* How a request ended: fine; failed; 410 Gone; failed in a way worth the same request again. */
enum result { K_OK, K_FAIL, K_GONE, K_RETRY };

struct kube_client {
	struct pods_config cfg;
	bool kubelet;
	struct kube_sink sink;
	char base[1024]; /* the list URL without paging or resourceVersion */
	CURL *curl;
	struct curl_slist *headers;
	uint64_t rand;
	/* the request in flight */
	enum verb verb;
	long status;
	enum result verdict; /* from the body: an ERROR event, something undecodable */
	unsigned events;
	struct kube_lines lines;
	struct kube_list list;
	/* the reflector's */
	char rv[KUBE_RV_MAX];
	bool rv_unavailable, paginated;
	unsigned gen;
	struct kube_backoff backoff;
	struct kube_stats *stats; /* its owner's: counts go on across clients */
};

static inline bool kube_stopped(struct kube_client *k)
{
	return k->sink.stopping(k->sink.arg);
}

/*
 * GET url, its body decoded as it arrives (a PodList, or watch events applied to the sink):
 * how it ended, each failure counted and logged (kube_count_error).
 */
enum result kube_get(struct kube_client *k, enum verb v, const char *url, long total_timeout);
/* A failure of kind: counted every time, logged the first time per kind. */
void kube_count_error(struct kube_client *k, int kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The pod list is known current now (netstack_pods_last_sync_timestamp_seconds). */
void kube_synced(struct kube_client *k);

#endif
