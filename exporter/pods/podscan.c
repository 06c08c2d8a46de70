// SPDX-License-Identifier: GPL-2.0-only
/*
 * The pod resolver's scanner: the kernel's walk of the node's processes (taskwalk.c) by network
 * namespace, matched to the API's pods, published as the snapshot scrapes fold with.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "pods/mono.h"
#include "pods/resolver.h"

static const char *const scan_error_kinds[NR_SE] = { "walk", "incomplete", "map_full" };

/* One namespace during a scan. */
struct scanned {
	uint32_t netns;
	uint32_t pid; /* representative: the lowest (global) process ID, the longest-lived */
	char comm[TASKS_COMM_LEN + 1];
	struct kube_ids ids;
	bool have_pod, matched; /* matched: container found among the API's */
};

struct scan {
	struct pods *p;
	struct scanned *v;
	size_t n, cap;
	const struct tasks_summary *sum;
};

static const struct pod *pod_by_uid(const struct pods *p, const char *uid)
{
	for (size_t i = 0; i < p->n_pods; i++)
		if (!strcmp(p->pods[i].uid, uid))
			return &p->pods[i];
	return NULL;
}

static const char *container_name(const struct pod *p, const char *id)
{
	for (int i = 0; p && i < p->nc; i++)
		if (id[0] && !strcmp(p->c[i].id, id))
			return p->c[i].name;
	return NULL;
}

static struct nsent *nsent_get(struct pods *p, uint32_t netns)
{
	struct nsent *v;

	for (size_t i = 0; i < p->n_nss; i++)
		if (p->nss[i].netns == netns)
			return &p->nss[i];
	v = pods_grow(p->nss, p->n_nss, &p->cap_nss, sizeof(*v), 64);
	if (!v)
		return NULL;
	p->nss = v;
	memset(&p->nss[p->n_nss], 0, sizeof(p->nss[0]));
	p->nss[p->n_nss].netns = netns;
	return &p->nss[p->n_nss++];
}

static int cmp_attr(const void *a, const void *b)
{
	const struct pod_attr *x = a, *y = b;

	return x->netns < y->netns ? -1 : x->netns > y->netns;
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

static void publish(struct pods *p, double now)
{
	struct pods_snapshot *s = calloc(1, sizeof(*s));

	if (!s || !(s->v = calloc(p->n_nss + 1, sizeof(*s->v)))) {
		free(s);
		return;
	}
	s->refs = 1;
	for (size_t i = 0; i < p->n_nss; i++) {
		const struct nsent *e = &p->nss[i];
		struct pod_attr *a = &s->v[s->n++];

		a->netns = e->netns;
		a->expired = e->gone && now - e->gone >= p->run.grace;
		a->namespace = dup_or_empty(e->ns);
		a->pod = dup_or_empty(e->pod);
		a->container = dup_or_empty(e->container);
		a->process = dup_or_empty(e->process);
		if (!a->namespace || !a->pod || !a->container || !a->process) {
			podsnap_free(s);
			return;
		}
	}
	qsort(s->v, s->n, sizeof(*s->v), cmp_attr);
	podsnap_publish(&p->snap, s);
}

/* One (netns, cgroup) pair of the kernel's walk, into its namespace's entry. */
static void scan_pair(const struct tasks_key *k, const struct tasks_val *val, void *arg)
{
	struct scan *sc = arg;
	struct pods *p = sc->p;
	struct scanned *s = NULL;
	struct kube_ids ids;

	for (size_t i = 0; i < sc->n && !s; i++)
		if (sc->v[i].netns == k->netns)
			s = &sc->v[i];
	if (!s) {
		struct scanned *v = pods_grow(sc->v, sc->n, &sc->cap, sizeof(*v), 64);

		if (!v)
			return;
		sc->v = v;
		s = &sc->v[sc->n++];
		memset(s, 0, sizeof(*s));
		s->netns = k->netns;
		s->pid = UINT32_MAX;
	}
	if (val->tgid < s->pid) {
		s->pid = val->tgid;
		memcpy(s->comm, val->comm, TASKS_COMM_LEN);
	}
	if (s->netns == sc->sum->host_netns || s->matched || kubepods_parse(val->path, &ids))
		return;
	/* Pods share one netns; prefer a container the API names over the pause one. */
	pthread_mutex_lock(&p->mu);
	s->matched = container_name(pod_by_uid(p, ids.pod_uid), ids.container_id);
	pthread_mutex_unlock(&p->mu);
	if (!s->have_pod || s->matched || (!s->ids.container_id[0] && ids.container_id[0]))
		s->ids = ids;
	s->have_pod = true;
}

/*
 * The namespaces of the walk into nss: 0, or -errno when the walk failed (nss left as it was;
 * logged once per kind): -ENOENT no walk loaded, -EIO incomplete, or the walk's own.
 */
static int apply_scan(struct pods *p, double now)
{
	struct tasks_summary sum = { 0 };
	struct scan sc = { .p = p, .sum = &sum };
	int err = p->walker ? tasks_walk(p->walker, scan_pair, &sc, &sum) : -ENOENT;

	pthread_mutex_lock(&p->mu);
	p->scan_seconds = mono() - now;
	p->scan_processes = sum.processes;
	p->scan_ok = !err && sum.complete;
	pthread_mutex_unlock(&p->mu);
	if (!p->walker)
		return err; /* logged when it did not load */
	if (err || !sum.complete || sum.dropped) {
		int kind = err ? SE_WALK : !sum.complete ? SE_INCOMPLETE : SE_MAP_FULL;

		pthread_mutex_lock(&p->mu);
		p->scan_errors[kind]++;
		pthread_mutex_unlock(&p->mu);
		if (err)
			log_once(p->scan_logged[kind], LOG_WARN,
				 "pods: reading the kernel's process walk failed: %s; namespaces "
				 "keep what the last scan found",
				 strerror(-err));
		else if (!sum.complete)
			log_once(p->scan_logged[kind], LOG_WARN,
				 "pods: the kernel's process walk stopped after %u processes; "
				 "namespaces keep what the last scan found",
				 sum.processes);
		else
			log_once(p->scan_logged[kind], LOG_WARN,
				 "pods: %u (netns, cgroup) pairs did not fit the walk's map (%d); "
				 "their namespaces may be unresolved",
				 sum.dropped, TASKS_MAX);
	}
	if (err || !sum.complete) {
		free(sc.v);
		return err ? err : -EIO;
	}
	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->n_nss; i++)
		p->nss[i].seen = false;
	for (size_t i = 0; i < sc.n; i++) {
		struct nsent *e = nsent_get(p, sc.v[i].netns);
		const struct pod *pod =
			sc.v[i].have_pod ? pod_by_uid(p, sc.v[i].ids.pod_uid) : NULL;
		const char *cname = container_name(pod, sc.v[i].ids.container_id);
		char id[13];

		if (!e)
			break;
		e->seen = true;
		/*
		 * Label values made valid UTF-8 without control characters (cut between
		 * characters) here, so that names that differ only in such bytes are one series:
		 * any process can set its comm, any tenant name its pod.
		 */
		label_text(e->ns, sizeof(e->ns), pod ? pod->ns : "");
		label_text(e->pod, sizeof(e->pod), pod ? pod->name : "");
		/* Without the API's name, the short form of the ID docker and crictl show. */
		if (!cname) {
			snprintf(id, sizeof(id), "%.*s", p->kube ? 0 : 12,
				 sc.v[i].ids.container_id);
			cname = id;
		}
		label_text(e->container, sizeof(e->container), cname);
		label_text(e->process, sizeof(e->process), sc.v[i].comm);
		e->gone = pod && pod->deleted ? (e->gone ? e->gone : pod->deleted) : 0;
	}
	/* Namespaces no process holds any more: gone now; forgotten twice the grace later. */
	for (size_t i = 0; i < p->n_nss;) {
		if (!p->nss[i].seen && !p->nss[i].gone)
			p->nss[i].gone = now;
		if (p->nss[i].gone && now - p->nss[i].gone > 2.0 * p->run.grace + p->run.refresh) {
			p->nss[i] = p->nss[--p->n_nss];
			continue;
		}
		i++;
	}
	pthread_mutex_unlock(&p->mu);
	free(sc.v);
	return 0;
}

static void scan(struct pods *p)
{
	double now = mono();
	bool ok = !apply_scan(p, now);

	/* Deleted pods: kept while a namespace may still name them. */
	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->n_pods;) {
		if (p->pods[i].deleted &&
		    now - p->pods[i].deleted > 2.0 * p->run.grace + p->run.refresh) {
			p->pods[i] = p->pods[--p->n_pods];
			continue;
		}
		i++;
	}
	pthread_mutex_unlock(&p->mu);
	if (ok)
		publish(p, now);
}

/* A counter family with one series per kind. */
static void render_kinds(struct expo *e, const char *name, const char *help,
			 const char *const *kinds, const uint64_t *v, int n)
{
	expo_family(e, name, METRIC_COUNTER, help);
	for (int i = 0; i < n; i++) {
		struct labels l = { 0 };

		labels_add(&l, "kind", kinds[i]);
		expo_u64(e, &l, v[i]);
	}
}

static void gauge_u64(struct expo *e, const char *name, const char *help, uint64_t v)
{
	expo_family(e, name, METRIC_GAUGE, help);
	expo_u64(e, NULL, v);
}

void pods_render_scan_metrics(struct pods *p, struct expo *e)
{
	uint64_t errs[NR_SE];
	uint32_t processes;
	double seconds;
	bool up;

	pthread_mutex_lock(&p->mu);
	memcpy(errs, p->scan_errors, sizeof(errs));
	processes = p->scan_processes;
	seconds = p->scan_seconds;
	up = p->scan_ok;
	pthread_mutex_unlock(&p->mu);
	gauge_u64(e, "netstack_pods_resolver_up",
		  "1 when the last walk of the node's processes (BPF task iterator) succeeded.",
		  up);
	gauge_u64(e, "netstack_pods_scan_processes", "Processes the last walk visited.", processes);
	expo_family(e, "netstack_pods_scan_duration_seconds", METRIC_GAUGE,
		    "How long the last walk of the node's processes took.");
	expo_double(e, NULL, seconds);
	render_kinds(e, "netstack_pods_scan_errors_total",
		     "Walks of the node's processes that failed (walk), stopped short (incomplete) "
		     "or had no room for every (netns, cgroup) pair (map_full).",
		     scan_error_kinds, errs, NR_SE);
}

void pods_nap(struct pods *p, double seconds, bool *flag)
{
	struct timespec ts;

	/* wake's clock: a step of the wall clock changes nothing */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)seconds;
	ts.tv_nsec += (long)((seconds - (time_t)seconds) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&p->mu);
	while (!p->stopping && !(flag && *flag))
		if (pthread_cond_timedwait(&p->wake, &p->mu, &ts))
			break;
	if (flag)
		*flag = false;
	pthread_mutex_unlock(&p->mu);
}

void *pods_scanner(void *arg)
{
	struct pods *p = arg;

	while (!__atomic_load_n(&p->stopping, __ATOMIC_RELAXED)) {
		scan(p);
		pods_nap(p, p->run.refresh, &p->rescan);
	}
	return NULL;
}
