/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Between the pod resolver (pods.c) and the render-time fold (podfold.c): the snapshot the
 * resolver publishes (podsnap.c) and the fold that reads it. The fold calls nothing of the
 * resolver's: it is handed the snapshot slot and its settings.
 */
#ifndef NETSTACK_PODFOLD_H
#define NETSTACK_PODFOLD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

/* Who owns one network namespace; strings are never NULL ("" when unknown). */
struct pod_attr {
	uint32_t netns;
	bool expired; /* gone longer than the grace period */
	const char *namespace, *pod, *container, *process;
};

/* An immutable table the resolver publishes; scrapes hold a reference while they render. */
struct pods_snapshot {
	int refs; /* under its slot's mu */
	size_t n;
	struct pod_attr *v; /* sorted by netns; strings owned */
};

/* Where the latest snapshot is published. */
struct podsnap {
	pthread_mutex_t mu;
	struct pods_snapshot *current;
};

void podsnap_init(struct podsnap *p);
/* A reference to the latest snapshot (NULL: none yet), to give back with podsnap_put. */
struct pods_snapshot *podsnap_get(struct podsnap *p);
void podsnap_put(struct podsnap *p, struct pods_snapshot *s);
/* Publish s (one reference, the slot's) in place of the latest; NULL forgets it. */
void podsnap_publish(struct podsnap *p, struct pods_snapshot *s);
/* Free a snapshot never published. */
void podsnap_free(struct pods_snapshot *s);
/* NULL when the namespace is unknown (not seen by the resolver, or s is NULL). */
const struct pod_attr *podsnap_find(const struct pods_snapshot *s, uint32_t netns);

/* The fold's families, reading snapshots from snap; NULL when out of memory. */
struct podfold *podfold_new(struct podsnap *snap);
/* The per-family series cap ([pods] max_series): read at render time, set under the scrape lock. */
void podfold_max_series(struct podfold *f, unsigned max);
/* The fold's own metrics (netstack_series_overflow_total). */
void podfold_render_metrics(struct podfold *f, struct expo *e);
/* A render-time filter folding netns into the labels of mask (free it with free()); NULL
 * when out of memory. */
struct expo_filter *podfold_filter_new(struct podfold *f, unsigned mask);
/*
 * The generation of the counts the filter's collector renders from now on: it changes exactly
 * when they start again from 0 (counters_generation); 0: unknown, a count below its last one
 * then tells.
 */
void podfold_filter_generation(struct expo_filter *f, uint64_t gen);
/* The collector whose families f folds, for podfold_forget. */
void podfold_filter_owner(struct expo_filter *f, const char *collector);
/* Forget the families the collector's filter folded (its pod_labels changed): they start afresh. */
void podfold_forget(struct podfold *fold, const char *collector);
/* Forget every family (the fold starts afresh), and free. */
void podfold_clear(struct podfold *f);
void podfold_free(struct podfold *f);

#endif
