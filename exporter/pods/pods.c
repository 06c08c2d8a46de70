// SPDX-License-Identifier: GPL-2.0-only
/*
 * Pod attribution, the resolver side: one thread has the kernel walk the node's processes for
 * network namespaces and their kubepods cgroups (exporter/pods/taskwalk.c), another follows the
 * node's pods in the Kubernetes API (list, then watch from the list's resourceVersion) or polls
 * the kubelet. The scanner publishes an immutable snapshot that scrapes take a reference to: a
 * scrape never waits on the API server.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collectors/collector.h"
#include "config.h"
#include "kernel/kernel.h"
#include "pods/kubeapi.h"
#include "base/log.h"
#include "pods/podfold.h"
#include "pods/pods.h"
#include "pods/taskwalk.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

enum source { SRC_AUTO, SRC_KUBERNETES, SRC_KUBELET, SRC_NONE };

/* What the resolver remembers of a namespace, across scans. */
struct nsent {
	uint32_t netns;
	bool seen;
	double gone; /* monotonic seconds it was last seen or its pod deleted; 0: alive */
	char ns[64], pod[254], container[64], process[3 * 16 + 1]; /* label_text() */
};

static const char *const scan_error_kinds[] = { "walk", "incomplete", "map_full" };
enum { SE_WALK, SE_INCOMPLETE, SE_MAP_FULL, NR_SE };

struct pods {
	/*
	 * conf: as configured (pods_new, a reload); cfg: conf with the source resolved, what
	 * runs; run: the copy the resolver threads read. filters[i] folds cfg.per[i]'s families.
	 */
	struct pods_config conf, cfg, run;
	struct expo_filter *filters[PODS_MAX_COLLECTORS];
	struct podsnap snap;  /* the latest table the scanner published */
	struct podfold *fold; /* render time, under the scrape lock */

	pthread_mutex_t mu; /* everything below */
	pthread_cond_t wake;
	bool stopping, rescan;
	bool active, kube; /* started; with a pod source */
	struct pod *pods;
	size_t n_pods, cap_pods;
	struct nsent *nss;
	size_t n_nss, cap_nss;
	/* The kernel's walk (NULL: it did not load) and what the last scans did. */
	struct tasks *walker;
	uint64_t scan_errors[NR_SE];
	bool scan_logged[NR_SE], scan_ok;
	uint32_t scan_processes;
	double scan_seconds;

	struct kube_client *client;
	struct kube_stats kstats; /* across restarts */
	pthread_t scan_thread, follow_thread;
	bool following;
};

void pods_config_defaults(struct pods_config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->token_file, SA_DIR "/token");
	strcpy(c->ca_file, SA_DIR "/ca.crt");
	c->refresh = 10;
	c->grace = 300;
	c->max_series = 1000;
	c->timeout = 10;
}

static int set_str(char *dst, size_t size, const char *s, char *err, size_t errlen)
{
	if (strlen(s) >= size) {
		snprintf(err, errlen, "value longer than %zu characters", size - 1);
		return -1;
	}
	strcpy(dst, s);
	return 0;
}

int pods_config_set(struct pods_config *c, const char *key, const char *value, char *err,
		    size_t errlen)
{
	if (!strcmp(key, "source")) {
		static const char *const names[] = { "auto", "kubernetes", "kubelet", "none" };

		for (int i = 0; i < 4; i++) {
			if (!strcmp(value, names[i])) {
				c->source = i;
				return 0;
			}
		}
		snprintf(err, errlen, "expected auto, kubernetes, kubelet or none, got '%s'",
			 value);
		return -1;
	}
	if (!strcmp(key, "api_url") || !strcmp(key, "kubelet_url")) {
		if (*value && strncmp(value, "https://", 8) && strncmp(value, "http://", 7)) {
			snprintf(err, errlen, "expected an http:// or https:// URL, got '%s'",
				 value);
			return -1;
		}
		return key[0] == 'a' ? set_str(c->api_url, sizeof(c->api_url), value, err, errlen)
				     : set_str(c->kubelet_url, sizeof(c->kubelet_url), value, err,
					       errlen);
	}
	if (!strcmp(key, "token_file"))
		return set_str(c->token_file, sizeof(c->token_file), value, err, errlen);
	if (!strcmp(key, "ca_file"))
		return set_str(c->ca_file, sizeof(c->ca_file), value, err, errlen);
	if (!strcmp(key, "node_name"))
		return set_str(c->node_name, sizeof(c->node_name), value, err, errlen);
	if (!strcmp(key, "refresh_seconds"))
		return parse_uint(value, 1, 3600, &c->refresh, err, errlen);
	if (!strcmp(key, "grace_seconds"))
		return parse_uint(value, 0, 86400, &c->grace, err, errlen);
	if (!strcmp(key, "max_series"))
		return parse_uint(value, 1, 1u << 20, &c->max_series, err, errlen);
	if (!strcmp(key, "timeout_seconds"))
		return parse_uint(value, 1, 600, &c->timeout, err, errlen);
	snprintf(err, errlen, "unknown key '%s' in [pods]", key);
	return -1;
}

static int per_find(const struct pods_config *c, const char *collector)
{
	for (int i = 0; i < c->n_per; i++)
		if (!strcmp(c->per[i].name, collector))
			return i;
	return -1;
}

static int per_index(struct pods_config *c, const char *collector)
{
	int i = per_find(c, collector);

	if (i >= 0)
		return i;
	if (c->n_per == PODS_MAX_COLLECTORS || strlen(collector) >= sizeof(c->per[0].name))
		return -1;
	memset(&c->per[c->n_per], 0, sizeof(c->per[0]));
	strcpy(c->per[c->n_per].name, collector);
	return c->n_per++;
}

int pods_collector_labels(struct pods_config *c, const char *collector, const char *value, int line,
			  char *err, size_t errlen)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = { { "namespace", POD_LABEL_NAMESPACE },
		      { "pod", POD_LABEL_POD },
		      { "container", POD_LABEL_CONTAINER },
		      { "process", POD_LABEL_PROCESS },
		      { "netns", POD_LABEL_NETNS } };
	char buf[256], *save, *tok;
	unsigned mask = 0;
	int i = per_index(c, collector);

	if (i < 0 || strlen(value) >= sizeof(buf)) {
		snprintf(err, errlen, "list too long");
		return -1;
	}
	strcpy(buf, value);
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		size_t j;

		for (j = 0; j < sizeof(names) / sizeof(names[0]) && strcmp(tok, names[j].name); j++)
			;
		if (j == sizeof(names) / sizeof(names[0])) {
			snprintf(err, errlen,
				 "unknown label '%s' (known: namespace, pod, container, process, "
				 "netns)",
				 tok);
			return -1;
		}
		mask |= names[j].bit;
	}
	c->per[i].mask = mask;
	c->per[i].line = line;
	return 0;
}

void pods_collector_netns(struct pods_config *c, const char *collector, const char *labels)
{
	char buf[256], *save, *tok;
	int i = per_index(c, collector);

	if (i < 0)
		return;
	c->per[i].netns = false;
	snprintf(buf, sizeof(buf), "%s", labels);
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save))
		c->per[i].netns |= !strcmp(tok, "netns");
}

int pods_config_check(const struct pods_config *c, const char *path, char *err, size_t errlen)
{
	for (int i = 0; i < c->n_per; i++) {
		if (c->per[i].mask && !c->per[i].netns) {
			snprintf(err, errlen,
				 "%s:%d: pod_labels: needs netns in the labels of "
				 "[collector.%s] (the kernel keys counts by network namespace)",
				 path, c->per[i].line, c->per[i].name);
			return -1;
		}
	}
	return 0;
}

unsigned pods_labels_of(const struct pods_config *c, const char *collector)
{
	int i = per_find(c, collector);

	return i < 0 ? 0 : c->per[i].mask;
}

unsigned pods_max_series(const struct pods *p)
{
	return p->cfg.max_series;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- the scanner: the node's processes, from the kernel ---- */

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
	for (size_t i = 0; i < p->n_nss; i++)
		if (p->nss[i].netns == netns)
			return &p->nss[i];
	if (p->n_nss == p->cap_nss) {
		size_t cap = p->cap_nss ? p->cap_nss * 2 : 64;
		struct nsent *v = realloc(p->nss, cap * sizeof(*v));

		if (!v)
			return NULL;
		p->nss = v;
		p->cap_nss = cap;
	}
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
		if (sc->n == sc->cap) {
			size_t c = sc->cap ? sc->cap * 2 : 64;
			struct scanned *nv = realloc(sc->v, c * sizeof(*nv));

			if (!nv)
				return;
			sc->v = nv;
			sc->cap = c;
		}
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

/* The namespaces of the walk into nss: 0, or -1 when the walk failed (nss left as it was). */
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
		return -1; /* logged when it did not load */
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
		return -1;
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

/* The scanner's own metrics. */
static void render_scan_metrics(struct pods *p, struct expo *e)
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

/* Sleep up to seconds, or until woken (stop, or news from the API). */
static void nap(struct pods *p, double seconds, bool *flag)
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

static void *scanner(void *arg)
{
	struct pods *p = arg;

	while (!__atomic_load_n(&p->stopping, __ATOMIC_RELAXED)) {
		scan(p);
		nap(p, p->run.refresh, &p->rescan);
	}
	return NULL;
}

/* ---- the pod source: kubeapi.c's client feeds the pods above ---- */

/* Insert or replace under mu. */
static void pod_put(struct pods *p, const struct pod *pod)
{
	for (size_t i = 0; i < p->n_pods; i++) {
		if (!strcmp(p->pods[i].uid, pod->uid)) {
			p->pods[i] = *pod;
			return;
		}
	}
	if (p->n_pods == p->cap_pods) {
		size_t cap = p->cap_pods ? p->cap_pods * 2 : 32;
		struct pod *v = realloc(p->pods, cap * sizeof(*v));

		if (!v)
			return;
		p->pods = v;
		p->cap_pods = cap;
	}
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
	nap(arg, seconds, NULL);
}

static bool sink_stopping(void *arg)
{
	struct pods *p = arg;

	return __atomic_load_n(&p->stopping, __ATOMIC_RELAXED);
}

static void *follower(void *arg)
{
	kube_client_run(arg);
	return NULL;
}

/* ---- lifecycle ---- */

/* The configured source, resolved; 0 or -1 when it cannot work (logged). */
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

static bool wanted(const struct pods_config *c)
{
	for (int i = 0; i < c->n_per; i++)
		if (c->per[i].mask)
			return true;
	return false;
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

/* A filter per collector asking for pod labels; 0 or -1. */
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
			return -1;
	}
	return 0;
}

static void free_filters(struct pods *p)
{
	for (int i = 0; i < PODS_MAX_COLLECTORS; i++) {
		free(p->filters[i]);
		p->filters[i] = NULL;
	}
}

int pods_start(struct pods *p)
{
	p->cfg = p->conf;
	podfold_max_series(p->fold, p->cfg.max_series);
	if (!wanted(&p->cfg))
		return 0;
	p->cfg.source = pick_source(p);
	p->kube = p->cfg.source != SRC_NONE;
	p->run = p->cfg;
	if (make_filters(p) || (p->kube && kube_global_init()))
		return -1;
	p->walker = tasks_open();
	if (!p->walker)
		log_error("pods: cannot load the kernel-side process walk (bpf/tasks.bpf.c, an "
			  "iter/task program with bpf_loop: Linux 5.17 or later%s): %s; network "
			  "namespaces stay unresolved, pod labels empty "
			  "(netstack_pods_resolver_up 0)",
			  kernel_at_least(5, 17) ? "" : ", this kernel is older", strerror(errno));
	p->stopping = false;
	if (pthread_create(&p->scan_thread, NULL, scanner, p))
		return -1;
	p->active = true;
	if (p->kube) {
		const struct kube_sink sink = {
			.arg = p,
			.pod = sink_pod,
			.listed = sink_listed,
			.changed = sink_changed,
			.nap = sink_nap,
			.stopping = sink_stopping,
		};

		p->client =
			kube_client_new(&p->run, p->run.source == SRC_KUBELET, &sink, &p->kstats);
		if (!p->client || pthread_create(&p->follow_thread, NULL, follower, p->client))
			return -1;
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

/* Whether the resolver threads would run otherwise with b than with a. */
static bool resolver_differs(const struct pods_config *a, const struct pods_config *b)
{
	return a->source != b->source || strcmp(a->api_url, b->api_url) ||
	       strcmp(a->token_file, b->token_file) || strcmp(a->ca_file, b->ca_file) ||
	       strcmp(a->kubelet_url, b->kubelet_url) || strcmp(a->node_name, b->node_name) ||
	       a->refresh != b->refresh || a->grace != b->grace || a->timeout != b->timeout;
}

static bool masks_differ(const struct pods_config *a, const struct pods_config *b)
{
	for (int i = 0; i < a->n_per; i++)
		if (pods_labels_of(b, a->per[i].name) != a->per[i].mask)
			return true;
	for (int i = 0; i < b->n_per; i++)
		if (pods_labels_of(a, b->per[i].name) != b->per[i].mask)
			return true;
	return false;
}

int pods_reconfigure(struct pods *p, const struct pods_config *c)
{
	bool was = p->active, resolver = resolver_differs(&p->conf, c),
	     masks = masks_differ(&p->conf, c);

	p->conf = *c;
	if (!resolver && !masks) {
		p->cfg.max_series = c->max_series; /* read at render time only */
		podfold_max_series(p->fold, c->max_series);
		return 0;
	}
	if (was && !resolver && wanted(c)) {
		/* Same resolver, other labels: new filters; the fold starts afresh. */
		podfold_clear(p->fold);
		free_filters(p);
		p->cfg.max_series = c->max_series;
		podfold_max_series(p->fold, c->max_series);
		memcpy(p->cfg.per, c->per, sizeof(p->cfg.per));
		p->cfg.n_per = c->n_per;
		log_info("pods: pod_labels changed, applied");
		return make_filters(p);
	}
	if (!wanted(c)) {
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
		podfold_clear(p->fold);
	for (size_t i = 0; i < p->n_pods; i++)
		p->pods[i].gen = 0;
	return pods_start(p);
}

struct expo_filter *pods_filter(struct pods *p, const char *collector)
{
	int i = p->active ? per_find(&p->cfg, collector) : -1;

	return i < 0 ? NULL : p->filters[i];
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
	render_scan_metrics(p, e);
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
