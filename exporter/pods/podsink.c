// SPDX-License-Identifier: GPL-2.0-only
/* The pod resolver's sink for the API client (kubeapi.h): the pods it reports, kept under mu. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pods/mono.h"
#include "pods/resolver.h"

/* Insert or replace under mu. */
static void pod_put(struct pods *p, const struct pod *pod)
{
	struct pod *v;

	for (size_t i = 0; i < p->n_pods; i++) {
		if (!strcmp(p->pods[i].uid, pod->uid)) {
			p->pods[i] = *pod;
			return;
		}
	}
	v = pods_grow(p->pods, p->n_pods, &p->cap_pods, sizeof(*v), 32);
	if (!v)
		return; /* out of memory: the pod stays unknown */
	p->pods = v;
	p->pods[p->n_pods++] = *pod;
}

static void sink_pod(void *arg, const struct pod *pod)
{
	struct pods *p = arg;

	pthread_mutex_lock(&p->mu);
	pod_put(p, pod);
	pthread_mutex_unlock(&p->mu);
}

static void sink_changed(void *arg)
{
	struct pods *p = arg;

	pthread_mutex_lock(&p->mu);
	p->rescan = true;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
}

/* A list completed: the pods it did not name were deleted meanwhile. */
static void sink_listed(void *arg, unsigned gen)
{
	struct pods *p = arg;
	double now = mono();

	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->n_pods; i++)
		if (!p->pods[i].deleted && p->pods[i].gen != gen)
			p->pods[i].deleted = now;
	pthread_mutex_unlock(&p->mu);
	sink_changed(arg);
}

static void sink_nap(void *arg, double seconds)
{
	pods_nap(arg, seconds, NULL);
}

static bool sink_stopping(void *arg)
{
	struct pods *p = arg;

	return __atomic_load_n(&p->stopping, __ATOMIC_RELAXED);
}

struct kube_sink pods_sink(struct pods *p)
{
	return (struct kube_sink){
		.arg = p,
		.pod = sink_pod,
		.listed = sink_listed,
		.changed = sink_changed,
		.nap = sink_nap,
		.stopping = sink_stopping,
	};
}
