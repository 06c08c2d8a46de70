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
 * CRI-O, docker naming). 0 when the path is inside a kubepods pod cgroup, else -1.
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

/* [pods] keys and per-collector pod_labels; 0 or -1 with err set. */
void pods_config_defaults(struct pods_config *c);
int pods_config_set(struct pods_config *c, const char *key, const char *value, char *err,
		    size_t errlen);
int pods_collector_labels(struct pods_config *c, const char *collector, const char *value, int line,
			  char *err, size_t errlen);
/* The collector's labels key, to check pod_labels has the netns label to work from. */
void pods_collector_netns(struct pods_config *c, const char *collector, const char *labels);
/* After loading: "path:line: ..." in err when pod_labels lacks netns; 0 or -1. */
int pods_config_check(const struct pods_config *c, const char *path, char *err, size_t errlen);
/* The collector's pod_labels mask in c (0: off). */
unsigned pods_labels_of(const struct pods_config *c, const char *collector);

/* The configuration to start with (copied), before pods_start. */
void pods_configure(const struct pods_config *c);
/*
 * A reload (holding the scrape lock): max_series and unchanged settings apply in place, other
 * pod_labels replace the filters, another source or timing restarts the resolver; 0 or -1.
 */
int pods_reconfigure(const struct pods_config *c);

/* Start the resolver thread when some collector asked for pod labels; 0 or -1. */
int pods_start(void);
void pods_stop(void);

/* The render-time filter for a collector's families, or NULL. */
struct expo_filter *pods_filter(const char *collector);
/* The resolver's and the cap's own metrics. */
void pods_render_metrics(struct expo *e);

/* ---- between the resolver (pods.c) and the render-time fold (podfold.c) ---- */

/* Who owns one network namespace; strings are never NULL ("" when unknown). */
struct pod_attr {
	uint32_t netns;
	bool expired; /* gone longer than the grace period */
	const char *namespace, *pod, *container, *process;
};

/* An immutable table the resolver publishes; scrapes hold a reference while they render. */
struct pods_snapshot;
struct pods_snapshot *pods_snapshot_get(void);
void pods_snapshot_put(struct pods_snapshot *s);
/* NULL when the namespace is unknown (not seen by the resolver, or s is NULL). */
const struct pod_attr *pods_snapshot_find(const struct pods_snapshot *s, uint32_t netns);

/* Render-time settings the fold needs from the configuration. */
unsigned pods_max_series(void);
bool pods_kubernetes(void); /* false: no pod source, labels degrade to netns + process */

/* The fold's own metrics (netstack_series_overflow_total). */
void podfold_render_metrics(struct expo *e);
/* A render-time filter folding netns into the labels of mask. */
struct expo_filter *podfold_filter_new(unsigned mask);
void podfold_free(void);

#endif
