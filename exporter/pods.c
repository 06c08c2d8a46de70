// SPDX-License-Identifier: GPL-2.0-only
/*
 * Pod attribution, the resolver side: one thread has the kernel walk the node's processes for
 * network namespaces and their kubepods cgroups (exporter/taskwalk.c), another follows the
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

#include "collector.h"
#include "config.h"
#include "kernel.h"
#include "kubeapi.h"
#include "log.h"
#include "pods.h"
#include "taskwalk.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

enum source { SRC_AUTO, SRC_KUBERNETES, SRC_KUBELET, SRC_NONE };

/*
 * conf: as configured (pods_configure, a reload); cfg: conf with the source resolved, what
 * runs; run: the copy the resolver threads read. filters[i] folds cfg.per[i]'s families.
 */
static struct pods_config conf, cfg, run;
static struct expo_filter *filters[PODS_MAX_COLLECTORS];

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

unsigned pods_max_series(void)
{
	return cfg.max_series;
}

/* ---- shared state ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* everything below */
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static bool stopping, rescan;
static bool active, kube; /* started; with a pod source */

static struct pod *pods;
static size_t n_pods, cap_pods;

struct pods_snapshot {
	int refs;
	size_t n;
	struct pod_attr *v; /* sorted by netns; strings owned */
};
static struct pods_snapshot *current;

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct pods_snapshot *pods_snapshot_get(void)
{
	struct pods_snapshot *s;

	pthread_mutex_lock(&mu);
	s = current;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&mu);
	return s;
}

static void snapshot_free(struct pods_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free((char *)s->v[i].namespace);
		free((char *)s->v[i].pod);
		free((char *)s->v[i].container);
		free((char *)s->v[i].process);
	}
	free(s->v);
	free(s);
}

void pods_snapshot_put(struct pods_snapshot *s)
{
	bool last;

	if (!s)
		return;
	pthread_mutex_lock(&mu);
	last = --s->refs == 0;
	pthread_mutex_unlock(&mu);
	if (last)
		snapshot_free(s);
}

const struct pod_attr *pods_snapshot_find(const struct pods_snapshot *s, uint32_t netns)
{
	size_t lo = 0, hi = s ? s->n : 0;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->v[mid].netns == netns)
			return &s->v[mid];
		if (s->v[mid].netns < netns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool pods_kubernetes(void)
{
	return kube;
}

/* ---- the scanner: the node's processes, from the kernel ---- */

/* What the resolver remembers of a namespace, across scans. */
struct nsent {
	uint32_t netns;
	bool seen;
	double gone; /* monotonic seconds it was last seen or its pod deleted; 0: alive */
	char ns[64], pod[254], container[64], process[3 * 16 + 1]; /* valid UTF-8 */
};
static struct nsent *nss;
static size_t n_nss, cap_nss;

/* One namespace during a scan. */
struct scanned {
	uint32_t netns;
	uint32_t pid; /* representative: the lowest (global) process ID, the longest-lived */
	char comm[TASKS_COMM_LEN + 1];
	struct kube_ids ids;
	bool have_pod, matched; /* matched: container found among the API's */
};

struct scan {
	struct scanned *v;
	size_t n, cap;
	const struct tasks_summary *sum;
};

/* The kernel's walk (NULL: it did not load) and what the last scans did, under mu. */
static struct tasks *walker;
static const char *const scan_error_kinds[] = { "walk", "incomplete", "map_full" };
enum { SE_WALK, SE_INCOMPLETE, SE_MAP_FULL, NR_SE };
static uint64_t scan_errors[NR_SE];
static bool scan_logged[NR_SE], scan_ok;
static uint32_t scan_processes;
static double scan_seconds;

static const struct pod *pod_by_uid(const char *uid)
{
	for (size_t i = 0; i < n_pods; i++)
		if (!strcmp(pods[i].uid, uid))
			return &pods[i];
	return NULL;
}

static const char *container_name(const struct pod *p, const char *id)
{
	for (int i = 0; p && i < p->nc; i++)
		if (id[0] && !strcmp(p->c[i].id, id))
			return p->c[i].name;
	return NULL;
}

static struct nsent *nsent_get(uint32_t netns)
{
	for (size_t i = 0; i < n_nss; i++)
		if (nss[i].netns == netns)
			return &nss[i];
	if (n_nss == cap_nss) {
		size_t cap = cap_nss ? cap_nss * 2 : 64;
		struct nsent *v = realloc(nss, cap * sizeof(*v));

		if (!v)
			return NULL;
		nss = v;
		cap_nss = cap;
	}
	memset(&nss[n_nss], 0, sizeof(nss[0]));
	nss[n_nss].netns = netns;
	return &nss[n_nss++];
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

static void publish(double now)
{
	struct pods_snapshot *s = calloc(1, sizeof(*s)), *old;

	if (!s || !(s->v = calloc(n_nss + 1, sizeof(*s->v)))) {
		free(s);
		return;
	}
	s->refs = 1;
	for (size_t i = 0; i < n_nss; i++) {
		struct pod_attr *a = &s->v[s->n++];

		a->netns = nss[i].netns;
		a->expired = nss[i].gone && now - nss[i].gone >= run.grace;
		a->namespace = dup_or_empty(nss[i].ns);
		a->pod = dup_or_empty(nss[i].pod);
		a->container = dup_or_empty(nss[i].container);
		a->process = dup_or_empty(nss[i].process);
		if (!a->namespace || !a->pod || !a->container || !a->process) {
			snapshot_free(s);
			return;
		}
	}
	qsort(s->v, s->n, sizeof(*s->v), cmp_attr);
	pthread_mutex_lock(&mu);
	old = current;
	current = s;
	pthread_mutex_unlock(&mu);
	pods_snapshot_put(old);
}

/* One (netns, cgroup) pair of the kernel's walk, into its namespace's entry. */
static void scan_pair(const struct tasks_key *k, const struct tasks_val *val, void *arg)
{
	struct scan *sc = arg;
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
	pthread_mutex_lock(&mu);
	s->matched = container_name(pod_by_uid(ids.pod_uid), ids.container_id);
	pthread_mutex_unlock(&mu);
	if (!s->have_pod || s->matched || (!s->ids.container_id[0] && ids.container_id[0]))
		s->ids = ids;
	s->have_pod = true;
}

/* The namespaces of the walk into nss: 0, or -1 when the walk failed (nss left as it was). */
static int apply_scan(double now)
{
	struct tasks_summary sum = { 0 };
	struct scan sc = { .sum = &sum };
	int err = walker ? tasks_walk(walker, scan_pair, &sc, &sum) : -ENOENT;

	pthread_mutex_lock(&mu);
	scan_seconds = mono() - now;
	scan_processes = sum.processes;
	scan_ok = !err && sum.complete;
	pthread_mutex_unlock(&mu);
	if (!walker)
		return -1; /* logged when it did not load */
	if (err || !sum.complete || sum.dropped) {
		int kind = err ? SE_WALK : !sum.complete ? SE_INCOMPLETE : SE_MAP_FULL;

		pthread_mutex_lock(&mu);
		scan_errors[kind]++;
		pthread_mutex_unlock(&mu);
		if (err)
			log_once(scan_logged[kind], LOG_WARN,
				 "pods: reading the kernel's process walk failed: %s; namespaces "
				 "keep what the last scan found",
				 strerror(-err));
		else if (!sum.complete)
			log_once(scan_logged[kind], LOG_WARN,
				 "pods: the kernel's process walk stopped after %u processes; "
				 "namespaces keep what the last scan found",
				 sum.processes);
		else
			log_once(scan_logged[kind], LOG_WARN,
				 "pods: %u (netns, cgroup) pairs did not fit the walk's map (%d); "
				 "their namespaces may be unresolved",
				 sum.dropped, TASKS_MAX);
	}
	if (err || !sum.complete) {
		free(sc.v);
		return -1;
	}
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_nss; i++)
		nss[i].seen = false;
	for (size_t i = 0; i < sc.n; i++) {
		struct nsent *e = nsent_get(sc.v[i].netns);
		const struct pod *p = sc.v[i].have_pod ? pod_by_uid(sc.v[i].ids.pod_uid) : NULL;
		const char *cname = container_name(p, sc.v[i].ids.container_id);

		if (!e)
			break;
		e->seen = true;
		/*
		 * Label values made valid UTF-8 (cut between characters) here, so that names that
		 * differ only in invalid bytes are one series: any process can set its comm.
		 */
		utf8_copy(e->ns, sizeof(e->ns), p ? p->ns : "");
		utf8_copy(e->pod, sizeof(e->pod), p ? p->name : "");
		/* Without the API's name, the short form of the ID docker and crictl show. */
		if (cname)
			utf8_copy(e->container, sizeof(e->container), cname);
		else
			snprintf(e->container, sizeof(e->container), "%.*s", kube ? 0 : 12,
				 sc.v[i].ids.container_id);
		utf8_copy(e->process, sizeof(e->process), sc.v[i].comm);
		e->gone = p && p->deleted ? (e->gone ? e->gone : p->deleted) : 0;
	}
	/* Namespaces no process holds any more: gone now; forgotten twice the grace later. */
	for (size_t i = 0; i < n_nss;) {
		if (!nss[i].seen && !nss[i].gone)
			nss[i].gone = now;
		if (nss[i].gone && now - nss[i].gone > 2.0 * run.grace + run.refresh) {
			nss[i] = nss[--n_nss];
			continue;
		}
		i++;
	}
	pthread_mutex_unlock(&mu);
	free(sc.v);
	return 0;
}

static void scan(void)
{
	double now = mono();
	bool ok = !apply_scan(now);

	/* Deleted pods: kept while a namespace may still name them. */
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_pods;) {
		if (pods[i].deleted && now - pods[i].deleted > 2.0 * run.grace + run.refresh) {
			pods[i] = pods[--n_pods];
			continue;
		}
		i++;
	}
	pthread_mutex_unlock(&mu);
	if (ok)
		publish(now);
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
static void render_scan_metrics(struct expo *e)
{
	uint64_t errs[NR_SE];
	uint32_t processes;
	double seconds;
	bool up;

	pthread_mutex_lock(&mu);
	memcpy(errs, scan_errors, sizeof(errs));
	processes = scan_processes;
	seconds = scan_seconds;
	up = scan_ok;
	pthread_mutex_unlock(&mu);
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
static void nap(double seconds, bool *flag)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)seconds;
	ts.tv_nsec += (long)((seconds - (time_t)seconds) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&mu);
	while (!stopping && !(flag && *flag))
		if (pthread_cond_timedwait(&wake, &mu, &ts))
			break;
	if (flag)
		*flag = false;
	pthread_mutex_unlock(&mu);
}

static void *scanner(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
		scan();
		nap(run.refresh, &rescan);
	}
	return NULL;
}

/* ---- the pod source: kubeapi.c's client feeds the pods above ---- */

static struct kube_client *client;
static struct kube_stats kstats = { .mu = PTHREAD_MUTEX_INITIALIZER }; /* across restarts */

/* Insert or replace under mu. */
static void pod_put(const struct pod *p)
{
	for (size_t i = 0; i < n_pods; i++) {
		if (!strcmp(pods[i].uid, p->uid)) {
			pods[i] = *p;
			return;
		}
	}
	if (n_pods == cap_pods) {
		size_t cap = cap_pods ? cap_pods * 2 : 32;
		struct pod *v = realloc(pods, cap * sizeof(*v));

		if (!v)
			return;
		pods = v;
		cap_pods = cap;
	}
	pods[n_pods++] = *p;
}

static void sink_pod(void *arg, const struct pod *p)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	pod_put(p);
	pthread_mutex_unlock(&mu);
}

static void sink_changed(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	rescan = true;
	pthread_cond_broadcast(&wake);
	pthread_mutex_unlock(&mu);
}

/* A list completed: the pods it did not name were deleted meanwhile. */
static void sink_listed(void *arg, unsigned gen)
{
	double now = mono();

	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_pods; i++)
		if (!pods[i].deleted && pods[i].gen != gen)
			pods[i].deleted = now;
	pthread_mutex_unlock(&mu);
	sink_changed(arg);
}

static void sink_nap(void *arg, double seconds)
{
	(void)arg;
	nap(seconds, NULL);
}

static bool sink_stopping(void *arg)
{
	(void)arg;
	return __atomic_load_n(&stopping, __ATOMIC_RELAXED);
}

static void *follower(void *arg)
{
	kube_client_run(arg);
	return NULL;
}

/* ---- lifecycle ---- */

static pthread_t scan_thread, follow_thread;
static bool following;

/* The configured source, resolved; 0 or -1 when it cannot work (logged). */
static enum source pick_source(void)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"),
		   *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *node = getenv("NODE_NAME");
	enum source s = cfg.source;

	if (!cfg.node_name[0] && node)
		snprintf(cfg.node_name, sizeof(cfg.node_name), "%s", node);
	if (!cfg.api_url[0] && host && *host)
		snprintf(cfg.api_url, sizeof(cfg.api_url),
			 strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
			 port && *port ? port : "443");
	if (s == SRC_AUTO) {
		struct stat st;

		s = cfg.kubelet_url[0]				   ? SRC_KUBELET
		    : cfg.api_url[0] && !stat(cfg.token_file, &st) ? SRC_KUBERNETES
								   : SRC_NONE;
	}
	if (s == SRC_KUBERNETES && (!cfg.api_url[0] || !cfg.node_name[0])) {
		log_error(
			"pods: the Kubernetes source needs the API address "
			"(KUBERNETES_SERVICE_HOST or [pods] api_url) and the node name (NODE_NAME "
			"or [pods] node_name); pod and namespace labels stay empty");
		s = SRC_NONE;
	}
	if (s == SRC_KUBELET && !cfg.kubelet_url[0]) {
		log_error("pods: source = kubelet needs [pods] kubelet_url; pod and namespace "
			  "labels stay empty");
		s = SRC_NONE;
	}
	/* kubeapi.c never sends the token in clear; refusing says why labels would be empty. */
	if (s != SRC_NONE && cfg.token_file[0] && !access(cfg.token_file, F_OK) &&
	    !strncmp(s == SRC_KUBELET ? cfg.kubelet_url : cfg.api_url, "http://", 7)) {
		log_error(
			"pods: [pods] %s is http:// while token_file %s holds a bearer token that "
			"would travel in clear: use https://, or set token_file empty (the "
			"kubelet's read-only port); pod and namespace labels stay empty",
			s == SRC_KUBELET ? "kubelet_url" : "api_url", cfg.token_file);
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

void pods_configure(const struct pods_config *c)
{
	conf = *c;
	cfg = conf;
}

/* A filter per collector asking for pod labels; 0 or -1. */
static int make_filters(void)
{
	for (int i = 0; i < cfg.n_per; i++) {
		if (!cfg.per[i].mask)
			continue;
		/* Without a pod source, labels degrade to the namespace and a process in it. */
		filters[i] = podfold_filter_new(kube ? cfg.per[i].mask
						     : cfg.per[i].mask | POD_LABEL_NETNS |
								POD_LABEL_PROCESS);
		if (!filters[i])
			return -1;
	}
	return 0;
}

static void free_filters(void)
{
	for (int i = 0; i < PODS_MAX_COLLECTORS; i++) {
		free(filters[i]);
		filters[i] = NULL;
	}
}

int pods_start(void)
{
	cfg = conf;
	if (!wanted(&cfg))
		return 0;
	cfg.source = pick_source();
	kube = cfg.source != SRC_NONE;
	run = cfg;
	if (make_filters() || (kube && kube_global_init()))
		return -1;
	walker = tasks_open();
	if (!walker)
		log_error("pods: cannot load the kernel-side process walk (bpf/tasks.bpf.c, an "
			  "iter/task program with bpf_loop: Linux 5.17 or later%s): %s; network "
			  "namespaces stay unresolved, pod labels empty "
			  "(netstack_pods_resolver_up 0)",
			  kernel_at_least(5, 17) ? "" : ", this kernel is older", strerror(errno));
	stopping = false;
	if (pthread_create(&scan_thread, NULL, scanner, NULL))
		return -1;
	active = true;
	if (kube) {
		static const struct kube_sink sink = {
			.pod = sink_pod,
			.listed = sink_listed,
			.changed = sink_changed,
			.nap = sink_nap,
			.stopping = sink_stopping,
		};

		client = kube_client_new(&run, run.source == SRC_KUBELET, &sink, &kstats);
		if (!client || pthread_create(&follow_thread, NULL, follower, client))
			return -1;
		following = true;
	}
	log_info("pods: resolving network namespaces every %us; pod source: %s%s (max_series=%u, "
		 "grace_seconds=%u)",
		 cfg.refresh,
		 cfg.source == SRC_KUBERNETES ? "Kubernetes API "
		 : cfg.source == SRC_KUBELET  ? "kubelet "
					      : "none (labels: netns and process)",
		 cfg.source == SRC_KUBERNETES ? cfg.api_url
		 : cfg.source == SRC_KUBELET  ? cfg.kubelet_url
					      : "",
		 cfg.max_series, cfg.grace);
	return 0;
}

/* Stop the threads and the walk; what they found (pods, namespaces, snapshot, fold) stays. */
static void threads_stop(void)
{
	pthread_mutex_lock(&mu);
	__atomic_store_n(&stopping, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&wake);
	pthread_mutex_unlock(&mu);
	pthread_join(scan_thread, NULL);
	if (following)
		pthread_join(follow_thread, NULL);
	following = active = false;
	kube_client_free(client);
	client = NULL;
	tasks_close(walker);
	walker = NULL;
	scan_ok = false;
	free_filters();
	if (kube)
		kube_global_cleanup();
}

static void state_free(void)
{
	pods_snapshot_put(current);
	current = NULL;
	free(nss);
	free(pods);
	nss = NULL;
	pods = NULL;
	n_nss = cap_nss = n_pods = cap_pods = 0;
	podfold_free();
}

void pods_stop(void)
{
	if (!active) {
		free_filters(); /* a start that failed half-way */
		tasks_close(walker);
		walker = NULL;
		return;
	}
	threads_stop();
	state_free();
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

int pods_reconfigure(const struct pods_config *c)
{
	bool was = active, resolver = resolver_differs(&conf, c), masks = masks_differ(&conf, c);

	conf = *c;
	if (!resolver && !masks) {
		cfg.max_series = c->max_series; /* read at render time only */
		return 0;
	}
	if (was && !resolver && wanted(c)) {
		/* Same resolver, other labels: new filters; the fold starts afresh. */
		podfold_free();
		free_filters();
		cfg.max_series = c->max_series;
		memcpy(cfg.per, c->per, sizeof(cfg.per));
		cfg.n_per = c->n_per;
		log_info("pods: pod_labels changed, applied");
		return make_filters();
	}
	if (!wanted(c)) {
		pods_stop();
		cfg = conf;
		if (was)
			log_info("pods: no collector asks for pod labels any more; resolver "
				 "stopped");
		return 0;
	}
	if (!was) {
		pods_stop(); /* a start that failed half-way */
		return pods_start();
	}
	/*
	 * A restart keeps what the old resolver knew, so that scrapes between the restart and the
	 * new source's first list still fold under the pods' labels (not under empty ones, which
	 * would keep those counts for good). The new list marks the pods it does not name deleted:
	 * generation 0 is one no list has.
	 */
	threads_stop();
	if (masks)
		podfold_free();
	for (size_t i = 0; i < n_pods; i++)
		pods[i].gen = 0;
	return pods_start();
}

struct expo_filter *pods_filter(const char *collector)
{
	int i = active ? per_find(&cfg, collector) : -1;

	return i < 0 ? NULL : filters[i];
}

void pods_render_metrics(struct expo *e)
{
	size_t known = 0;

	if (!active)
		return;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_pods; i++)
		known += !pods[i].deleted;
	pthread_mutex_unlock(&mu);
	podfold_render_metrics(e);
	render_scan_metrics(e);
	if (!client)
		return;
	kube_stats_render(&kstats, run.source == SRC_KUBERNETES, e);
	expo_family(e, "netstack_pods_known", METRIC_GAUGE,
		    "Pods on this node the pod source reported.");
	expo_u64(e, NULL, known);
}
