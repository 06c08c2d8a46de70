// SPDX-License-Identifier: GPL-2.0-only
/* The pod source's own metrics: requests by verb and code, failures by kind, the watch's age. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "pods/kubestats.h"
#include "pods/mono.h"

const char *const kube_verbs[NR_V] = { "list", "watch", "get" };
const char *const kube_error_kinds[NR_E] = { "connect", "timeout", "tls",    "forbidden", "http",
					     "parse",	"gone",	   "closed", "other" };

void kube_stats_count(struct kube_stats *s, int verb, const char *code)
{
	int i;

	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->n_req && (s->req[i].verb != verb || strcmp(s->req[i].code, code)); i++)
		;
	/* One code="other" series per verb: codes past the table's room join what ended so. */
	if (i == KUBE_REQ_SERIES || !strcmp(code, "other")) {
		s->other_codes[verb]++;
	} else {
		if (i == s->n_req) {
			s->req[i].verb = verb;
			snprintf(s->req[i].code, sizeof(s->req[i].code), "%s", code);
			s->n_req++;
		}
		s->req[i].n++;
	}
	pthread_mutex_unlock(&s->mu);
}

void kube_stats_render(struct kube_stats *s, bool watch, struct expo *e)
{
	uint64_t errs[NR_E], other[NR_V], n[KUBE_REQ_SERIES];
	char codes[KUBE_REQ_SERIES][8];
	int vs[KUBE_REQ_SERIES];
	double sync, start;
	int nreq;

	pthread_mutex_lock(&s->mu);
	memcpy(errs, s->errors, sizeof(errs));
	memcpy(other, s->other_codes, sizeof(other));
	nreq = s->n_req;
	for (int i = 0; i < nreq; i++) {
		vs[i] = s->req[i].verb;
		memcpy(codes[i], s->req[i].code, sizeof(codes[i]));
		n[i] = s->req[i].n;
	}
	sync = s->last_sync;
	start = s->watch_start;
	pthread_mutex_unlock(&s->mu);

	expo_family(
		e, "netstack_pods_api_requests_total", METRIC_COUNTER,
		"Requests to the pod source, by verb (list, watch, get: the kubelet's /pods) and "
		"HTTP status code (or connect, timeout, tls, other without a response).");
	for (int i = 0; i < nreq; i++) {
		struct labels l = { 0 };

		labels_add(&l, "verb", kube_verbs[vs[i]]);
		labels_add(&l, "code", codes[i]);
		expo_u64(e, &l, n[i]);
	}
	for (int v = 0; v < NR_V; v++) {
		struct labels l = { 0 };

		if (!other[v])
			continue;
		labels_add(&l, "verb", kube_verbs[v]);
		labels_add(&l, "code", "other");
		expo_u64(e, &l, other[v]);
	}
	expo_family(e, "netstack_pods_api_errors_total", METRIC_COUNTER,
		    "Failed requests for the node's pods, by kind of failure.");
	for (int i = 0; i < NR_E; i++) {
		struct labels l = { 0 };

		labels_add(&l, "kind", kube_error_kinds[i]);
		expo_u64(e, &l, errs[i]);
	}
	if (watch) {
		expo_family(e, "netstack_pods_watch_age_seconds", METRIC_GAUGE,
			    "How long the current watch of the node's pods has been open; 0: none "
			    "is.");
		expo_double(e, NULL, start ? mono() - start : 0);
	}
	expo_family(e, "netstack_pods_last_sync_timestamp_seconds", METRIC_GAUGE,
		    "When the pod list was last known current (list or watch event); 0: never.");
	expo_double(e, NULL, sync);
}
