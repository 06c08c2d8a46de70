/* SPDX-License-Identifier: GPL-2.0-only */
/* The [pods] section and the collectors' pod_labels, parsed into a value (podsconf.c, pure). */
#ifndef NETSTACK_PODSCONF_H
#define NETSTACK_PODSCONF_H

#include <stdbool.h>
#include <stddef.h>

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
enum source { SRC_AUTO, SRC_KUBERNETES, SRC_KUBELET, SRC_NONE };
struct pods_config {
	int source; /* enum source */
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

/* [pods] keys and per-collector pod_labels; 0 or -EINVAL with err set. */
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

/* Questions about a configuration. */
int pods_config_find(const struct pods_config *c, const char *collector); /* index or -ENOENT */
bool pods_config_wanted(const struct pods_config *c); /* some collector asks for pod labels */
/* Whether the resolver threads would run otherwise with b than with a. */
bool pods_config_resolver_differs(const struct pods_config *a, const struct pods_config *b);
bool pods_config_masks_differ(const struct pods_config *a, const struct pods_config *b);

#endif
