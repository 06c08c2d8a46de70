/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside the pod resolver: struct pods, shared by its lifecycle (pods.c), its configuration
 * (podsconf.c), the scanner (podscan.c) and the API sink (podsink.c). Not for other modules:
 * they use pods.h.
 */
#ifndef NETSTACK_RESOLVER_H
#define NETSTACK_RESOLVER_H

#include <pthread.h>
#include <stdlib.h>

#include "pods/kubeapi.h"
#include "pods/podfold.h"
#include "pods/podsconf.h"
#include "pods/taskwalk.h"

/* What the resolver remembers of a namespace, across scans. */
struct nsent {
	uint32_t netns;
	bool seen;
	double gone; /* monotonic seconds it was last seen or its pod deleted; 0: alive */
	char ns[64], pod[254], container[64], process[3 * 16 + 1]; /* label_text() */
};

enum { SE_WALK, SE_INCOMPLETE, SE_MAP_FULL, NR_SE }; /* how a scan failed */

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

/*
 * v (n elements of size, room for *cap) with room for one more, doubling from first: the
 * array to use from now on, or NULL with errno ENOMEM (v is left as it was).
 */
static inline void *pods_grow(void *v, size_t n, size_t *cap, size_t size, size_t first)
{
	size_t c = *cap ? *cap * 2 : first;

	if (n < *cap)
		return v;
	v = realloc(v, c * size);
	if (v)
		*cap = c;
	return v;
}

/* podscan.c: the scanner thread (arg: the pods), and its metrics. */
void *pods_scanner(void *arg);
void pods_render_scan_metrics(struct pods *p, struct expo *e);
/* Sleep up to seconds, or until stopping or (flag set) *flag, which it clears. */
void pods_nap(struct pods *p, double seconds, bool *flag);

/* podsink.c: where the API client's pods go (into p->pods, under p->mu). */
struct kube_sink pods_sink(struct pods *p);

#endif
