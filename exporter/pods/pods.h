/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pod attribution: a resolver thread maps network namespace inodes to Kubernetes pods (or to a
 * process name without Kubernetes); at render time the collectors' netns label is folded into
 * namespace/pod/container/process labels under a per-family series cap.
 */
#ifndef NETSTACK_PODS_H
#define NETSTACK_PODS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

#define POD_UID_LEN 36
#define CONTAINER_ID_MAX 64

/* What a kubepods cgroup path says about its task. */
struct kube_ids {
	char pod_uid[POD_UID_LEN + 1];		 /* dashed form, lower case */
	char container_id[CONTAINER_ID_MAX + 1]; /* "" for pod-level cgroups and conmon */
};

/*
 * Pod UID and container ID from one cgroup path (cgroupfs or systemd driver; containerd,
 * CRI-O, docker naming) (kubepods.c). 0 when the path is inside a kubepods pod cgroup, else
 * -ENOENT.
 */
int kubepods_parse(const char *path, struct kube_ids *out);

/* Attribution labels a collector may ask for in its pod_labels key. */
enum {
	POD_LABEL_NAMESPACE = 1 << 0,
	POD_LABEL_POD = 1 << 1,
	POD_LABEL_CONTAINER = 1 << 2,
	POD_LABEL_PROCESS = 1 << 3,
	POD_LABEL_NETNS = 1 << 4, /* keep the raw netns label too */
};

/* [pods] and the collectors' pod_labels, parsed into a value (struct config holds one). */
#define PODS_MAX_COLLECTORS 16
struct pods_config {
	int source; /* auto, kubernetes, kubelet, none */
	char api_url[256], token_file[256], ca_file[256], kubelet_url[256], node_name[254];
	unsigned refresh, grace, max_series, timeout;
	int n_per;
	struct {
		char name[32];
		unsigned mask; /* pod_labels */
		int line;      /* of pod_labels, for the error */
		bool netns;    /* its labels key lists netns */
	} per[PODS_MAX_COLLECTORS];
};

/* [pods] keys and per-collector pod_labels (podsconf.c); 0 or -EINVAL with err set. */
void pods_config_defaults(struct pods_config *c);
int pods_config_set(struct pods_config *c, const char *key, const char *value, char *err,
		    size_t errlen);
int pods_collector_labels(struct pods_config *c, const char *collector, const char *value, int line,
			  char *err, size_t errlen);
/* The collector's labels key, to check pod_labels has the netns label to work from. */
void pods_collector_netns(struct pods_config *c, const char *collector, const char *labels);
/* After loading: "path:line: ..." in err when pod_labels lacks netns; 0 or -EINVAL. */
int pods_config_check(const struct pods_config *c, const char *path, char *err, size_t errlen);
/* The collector's pod_labels mask in c (0: off). */
unsigned pods_labels_of(const struct pods_config *c, const char *collector);

/*
 * The resolver, configured with c (copied); it runs from pods_start. NULL: out of memory. Owned
 * by main.c, which hands it to the scrape.
 */
struct pods;
struct pods *pods_new(const struct pods_config *c);
/*
 * A reload (holding the scrape lock): max_series and unchanged settings apply in place, other
 * pod_labels replace the filters, another source or timing restarts the resolver; 0 or -errno,
 * logged.
 */
int pods_reconfigure(struct pods *p, const struct pods_config *c);

/* Start the resolver thread when some collector asked for pod labels; 0 or -errno, logged. */
int pods_start(struct pods *p);
/* Stop the threads and forget what they found; pods_free stops and frees. */
void pods_stop(struct pods *p);
void pods_free(struct pods *p);

/*
 * The render-time filter for a collector's families, or NULL; gen: the generation of its
 * counts (counters_generation in kernel/pin.h, podfold_filter_generation).
 */
struct expo_filter *pods_filter(struct pods *p, const char *collector, uint64_t gen);
/* The resolver's and the cap's own metrics. */
void pods_render_metrics(struct pods *p, struct expo *e);
/* The series cap the fold applies ([pods] max_series as running). */
unsigned pods_max_series(const struct pods *p);

#endif
