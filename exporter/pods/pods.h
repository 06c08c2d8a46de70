/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pod attribution: a resolver thread maps network namespace inodes to Kubernetes pods (or to a
 * process name without Kubernetes); at render time the collectors' netns label is folded into
 * namespace/pod/container/process labels under a per-family series cap.
 */
#ifndef NETSTACK_PODS_H
#define NETSTACK_PODS_H

#include <stdint.h>

#include "metrics.h"

#include "pods/podsconf.h"

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
