// SPDX-License-Identifier: GPL-2.0-only
/*
 * Pod attribution, the resolver's lifecycle: one thread has the kernel walk the node's processes
 * for network namespaces and their kubepods cgroups (podscan.c), another follows the node's pods
 * in the Kubernetes API (list, then watch from the list's resourceVersion) or polls the kubelet
 * (kubeapi.c into podsink.c). The scanner publishes an immutable snapshot that scrapes take a
 * reference to: a scrape never waits on the API server. Here: their start, stop and reload.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "kernel/kernel.h"
#include "pods/kubecurl.h"
#include "pods/pods.h"
#include "pods/resolver.h"

unsigned pods_max_series(const struct pods *p)
{
	return p->cfg.max_series;
}

static void *follower(void *arg)
{
	kube_client_run(arg);
	return NULL;
}

/* The configured source, resolved; SRC_NONE when the one configured cannot work (logged). */
static enum source pick_source(struct pods *p)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"),
		   *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *node = getenv("NODE_NAME");
	enum source s = p->cfg.source;

	if (!p->cfg.node_name[0] && node)
		snprintf(p->cfg.node_name, sizeof(p->cfg.node_name), "%s", node);
	if (!p->cfg.api_url[0] && host && *host)
		snprintf(p->cfg.api_url, sizeof(p->cfg.api_url),
			 strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
			 port && *port ? port : "443");
	if (s == SRC_AUTO) {
		struct stat st;

		s = p->cfg.kubelet_url[0]				 ? SRC_KUBELET
		    : p->cfg.api_url[0] && !stat(p->cfg.token_file, &st) ? SRC_KUBERNETES
									 : SRC_NONE;
	}
	if (s == SRC_KUBERNETES && (!p->cfg.api_url[0] || !p->cfg.node_name[0])) {
		log_error(
			"pods: the Kubernetes source needs the API address "
			"(KUBERNETES_SERVICE_HOST or [pods] api_url) and the node name (NODE_NAME "
			"or [pods] node_name); pod and namespace labels stay empty");
		s = SRC_NONE;
	}
	if (s == SRC_KUBELET && !p->cfg.kubelet_url[0]) {
		log_error("pods: source = kubelet needs [pods] kubelet_url; pod and namespace "
			  "labels stay empty");
		s = SRC_NONE;
	}
	/* kubeapi.c never sends the token in clear; refusing says why labels would be empty. */
	if (s != SRC_NONE && p->cfg.token_file[0] && !access(p->cfg.token_file, F_OK) &&
	    !strncmp(s == SRC_KUBELET ? p->cfg.kubelet_url : p->cfg.api_url, "http://", 7)) {
		log_error(
			"pods: [pods] %s is http:// while token_file %s holds a bearer token that "
			"would travel in clear: use https://, or set token_file empty (the "
			"kubelet's read-only port); pod and namespace labels stay empty",
			s == SRC_KUBELET ? "kubelet_url" : "api_url", p->cfg.token_file);
		s = SRC_NONE;
	}
	return s;
}

struct pods *pods_new(const struct pods_config *c)
{
	struct pods *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;

	if (!p)
		return NULL;
	p->fold = podfold_new(&p->snap);
	if (!p->fold) {
		free(p);
		return NULL;
	}
	p->conf = p->cfg = *c;
	podfold_max_series(p->fold, c->max_series);
	podsnap_init(&p->snap);
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&p->kstats.mu, NULL);
	return p;
}

/* A filter per collector asking for pod labels; 0 or -ENOMEM. */
static int make_filters(struct pods *p)
{
	for (int i = 0; i < p->cfg.n_per; i++) {
		if (!p->cfg.per[i].mask)
			continue;
		/* Without a pod source, labels degrade to the namespace and a process in it. */
		p->filters[i] =
			podfold_filter_new(p->fold, p->kube ? p->cfg.per[i].mask
							    : p->cfg.per[i].mask | POD_LABEL_NETNS |
								      POD_LABEL_PROCESS);
		if (!p->filters[i])
			return -ENOMEM;
		podfold_filter_owner(p->filters[i], p->cfg.per[i].name);
	}
	return 0;
}

/*
 * The fold of each collector whose pod_labels differ between the running settings and c starts
 * afresh; the others' folded series go on (a reload never moves an unchanged collector's back).
 */
static void forget_changed(struct pods *p, const struct pods_config *c)
{
	for (int i = 0; i < p->cfg.n_per; i++)
		if (pods_labels_of(c, p->cfg.per[i].name) != p->cfg.per[i].mask)
			podfold_forget(p->fold, p->cfg.per[i].name);
	for (int i = 0; i < c->n_per; i++)
		if (pods_labels_of(&p->cfg, c->per[i].name) != c->per[i].mask)
			podfold_forget(p->fold, c->per[i].name);
}

static void free_filters(struct pods *p)
{
	for (int i = 0; i < PODS_MAX_COLLECTORS; i++) {
		free(p->filters[i]);
		p->filters[i] = NULL;
	}
}

/*
 * NETSTACK_TASK_WALK=chunked: the walk of kernels without bpf_loop on any kernel, so that the
 * tests run it where bpf_loop exists (tests/integration/pods.sh).
 */
static bool pods_walk_chunked_forced(void)
{
	const char *v = getenv("NETSTACK_TASK_WALK");

	return v && !strcmp(v, "chunked");
}

int pods_start(struct pods *p)
{
	bool chunked;
	int err;

	p->cfg = p->conf;
	podfold_max_series(p->fold, p->cfg.max_series);
	if (!pods_config_wanted(&p->cfg))
		return 0;
	p->cfg.source = pick_source(p);
	p->kube = p->cfg.source != SRC_NONE;
	p->run = p->cfg;
	err = make_filters(p);
	if (err)
		goto fail;
	if (p->kube) {
		err = kube_global_init();
		if (err)
			return err; /* logged */
	}
	/* Without bpf_loop (before 5.17), a load probe says, the walk goes in tail-called chunks. */
	chunked = !kernel_has_bpf_loop() || pods_walk_chunked_forced();
	p->walker = tasks_open(chunked);
	if (!p->walker)
		log_error("pods: cannot load the kernel-side process walk (bpf/tasks.bpf.c, an "
			  "iter/task program, %s): %s; network namespaces stay unresolved, pod "
			  "labels empty (netstack_pods_resolver_up 0)",
			  chunked ? "in tail-called chunks (no bpf_loop)" : "with bpf_loop",
			  strerror(errno));
	else if (chunked)
		log_info("pods: no bpf_loop (Linux 5.17): the process walk runs in chunks of "
			 "tail calls, up to %u processes",
			 TASKS_CHUNKED_MAX);
	p->stopping = false;
	err = -pthread_create(&p->scan_thread, NULL, pods_scanner, p);
	if (err)
		goto fail;
	p->active = true;
	if (p->kube) {
		const struct kube_sink sink = pods_sink(p);

		p->client =
			kube_client_new(&p->run, p->run.source == SRC_KUBELET, &sink, &p->kstats);
		err = !p->client ? -errno
				 : -pthread_create(&p->follow_thread, NULL, follower, p->client);
		if (err)
			goto fail;
		p->following = true;
	}
	log_info("pods: resolving network namespaces every %us; pod source: %s%s (max_series=%u, "
		 "grace_seconds=%u)",
		 p->cfg.refresh,
		 p->cfg.source == SRC_KUBERNETES ? "Kubernetes API "
		 : p->cfg.source == SRC_KUBELET	 ? "kubelet "
						 : "none (labels: netns and process)",
		 p->cfg.source == SRC_KUBERNETES ? p->cfg.api_url
		 : p->cfg.source == SRC_KUBELET	 ? p->cfg.kubelet_url
						 : "",
		 p->cfg.max_series, p->cfg.grace);
	return 0;
fail:
	log_error("pods: cannot start the resolver: %s", strerror(-err));
	return err;
}

/* Stop the threads and the walk; what they found (pods, namespaces, snapshot, fold) stays. */
static void threads_stop(struct pods *p)
{
	pthread_mutex_lock(&p->mu);
	__atomic_store_n(&p->stopping, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->scan_thread, NULL);
	if (p->following)
		pthread_join(p->follow_thread, NULL);
	p->following = p->active = false;
	kube_client_free(p->client);
	p->client = NULL;
	tasks_close(p->walker);
	p->walker = NULL;
	p->scan_ok = false;
	free_filters(p);
	if (p->kube)
		kube_global_cleanup();
}

static void state_free(struct pods *p)
{
	podsnap_publish(&p->snap, NULL);
	free(p->nss);
	free(p->pods);
	p->nss = NULL;
	p->pods = NULL;
	p->n_nss = p->cap_nss = p->n_pods = p->cap_pods = 0;
	podfold_clear(p->fold);
}

void pods_stop(struct pods *p)
{
	if (!p->active) {
		free_filters(p); /* a start that failed half-way */
		tasks_close(p->walker);
		p->walker = NULL;
		return;
	}
	threads_stop(p);
	state_free(p);
}

int pods_reconfigure(struct pods *p, const struct pods_config *c)
{
	bool was = p->active, resolver = pods_config_resolver_differs(&p->conf, c),
	     masks = pods_config_masks_differ(&p->conf, c);
	int err;

	p->conf = *c;
	if (!resolver && !masks) {
		p->cfg.max_series = c->max_series; /* read at render time only */
		podfold_max_series(p->fold, c->max_series);
		return 0;
	}
	if (was && !resolver && pods_config_wanted(c)) {
		/* Same resolver, other labels: new filters; the changed collectors' folds start afresh. */
		forget_changed(p, c);
		free_filters(p);
		p->cfg.max_series = c->max_series;
		podfold_max_series(p->fold, c->max_series);
		memcpy(p->cfg.per, c->per, sizeof(p->cfg.per));
		p->cfg.n_per = c->n_per;
		err = make_filters(p);
		if (err)
			log_error("pods: pod_labels changed, not applied: %s; no pod labels",
				  strerror(-err));
		else
			log_info("pods: pod_labels changed, applied");
		return err;
	}
	if (!pods_config_wanted(c)) {
		pods_stop(p);
		p->cfg = p->conf;
		if (was)
			log_info("pods: no collector asks for pod labels any more; resolver "
				 "stopped");
		return 0;
	}
	if (!was) {
		pods_stop(p); /* a start that failed half-way */
		return pods_start(p);
	}
	/*
	 * A restart keeps what the old resolver knew, so that scrapes between the restart and the
	 * new source's first list still fold under the pods' labels (not under empty ones, which
	 * would keep those counts for good). The new list marks the pods it does not name deleted:
	 * generation 0 is one no list has.
	 */
	threads_stop(p);
	if (masks)
		forget_changed(p, c);
	for (size_t i = 0; i < p->n_pods; i++)
		p->pods[i].gen = 0;
	return pods_start(p);
}

struct expo_filter *pods_filter(struct pods *p, const char *collector, uint64_t gen)
{
	int i = p->active ? pods_config_find(&p->cfg, collector) : -ENOENT;

	if (i < 0 || !p->filters[i])
		return NULL;
	podfold_filter_generation(p->filters[i], gen);
	return p->filters[i];
}

void pods_render_metrics(struct pods *p, struct expo *e)
{
	size_t known = 0;

	if (!p->active)
		return;
	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->n_pods; i++)
		known += !p->pods[i].deleted;
	pthread_mutex_unlock(&p->mu);
	podfold_render_metrics(p->fold, e);
	pods_render_scan_metrics(p, e);
	if (!p->client)
		return;
	kube_stats_render(&p->kstats, p->run.source == SRC_KUBERNETES, e);
	expo_family(e, "netstack_pods_known", METRIC_GAUGE,
		    "Pods on this node the pod source reported.");
	expo_u64(e, NULL, known);
}

void pods_free(struct pods *p)
{
	if (!p)
		return;
	pods_stop(p);
	podfold_free(p->fold);
	pthread_mutex_destroy(&p->kstats.mu);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
