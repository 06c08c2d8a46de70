/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside the API client: the client's state, shared by the reflector (kubeapi.c) and its requests
 * (kubeget.c). Not for other modules: they use kubeapi.h.
 */
#ifndef NETSTACK_KUBECLIENT_H
#define NETSTACK_KUBECLIENT_H

#include <curl/curl.h>

#include "pods/kubedecode.h"
#include "pods/kubesink.h"
#include "pods/kubestats.h"
#include "pods/podsconf.h"

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

#endif
