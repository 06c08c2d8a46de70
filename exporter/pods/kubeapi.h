/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pod source's client of the Kubernetes API (or of the kubelet's /pods), shaped after
 * client-go's reflector: a paged LIST from the API server's cache, a WATCH from its
 * resourceVersion, exponential back-off with jitter. What it reads is decoded by the pure
 * decoders of kubedecode.h.
 */
#ifndef NETSTACK_KUBEAPI_H
#define NETSTACK_KUBEAPI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "pods/kubedecode.h"
#include "pods/pods.h"

/* What the client calls back into the pod store (podsink.c); arg is the sink's. */
struct kube_sink {
	void *arg;
	void (*pod)(void *arg, const struct pod *p); /* listed, or changed (p->deleted set) */
	void (*listed)(void *arg, unsigned gen);     /* a list completed: others are gone */
	void (*changed)(void *arg);		     /* a watch event changed a pod */
	void (*nap)(void *arg, double seconds);	     /* sleep, cut short by stopping */
	bool (*stopping)(void *arg);
};

/* dlopen libcurl (and curl_global_init) once (kubecurl.c); 0 or -errno, logged. */
int kube_global_init(void);
void kube_global_cleanup(void);

#define KUBE_NR_ERRORS 9   /* connect timeout tls forbidden http parse gone closed other */
#define KUBE_NR_VERBS 3	   /* list watch get */
#define KUBE_REQ_SERIES 32 /* (verb, code) pairs; more codes count as code="other" */
/* What clients count, kept by their owner: a new client (a reload) counts on from there. */
struct kube_stats {
	pthread_mutex_t mu;
	uint64_t errors[KUBE_NR_ERRORS], other_codes[KUBE_NR_VERBS];
	struct {
		int verb;
		char code[8];
		uint64_t n;
	} req[KUBE_REQ_SERIES];
	int n_req;
	double last_sync, watch_start;
	bool logged[KUBE_NR_ERRORS]; /* each kind of failure is logged once */
};

struct kube_client;
/*
 * A client for c's source (kubelet: poll kubelet_url, else list+watch api_url), after
 * kube_global_init; NULL with errno ENOMEM.
 */
struct kube_client *kube_client_new(const struct pods_config *c, bool kubelet,
				    const struct kube_sink *sink, struct kube_stats *stats);
/* Follows the pods until the sink says stop; each kind of failure logged once (stats). */
void kube_client_run(struct kube_client *k);
void kube_client_free(struct kube_client *k);

/* Requests, errors, the watch's age (watch: the API source) and the last sync (kubestats.c). */
/* One request of verb (0 list, 1 watch, 2 get) that ended with code (an HTTP status, a kind). */
void kube_stats_count(struct kube_stats *s, int verb, const char *code);
void kube_stats_render(struct kube_stats *s, bool watch, struct expo *e);

#endif
