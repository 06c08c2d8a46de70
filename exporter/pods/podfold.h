/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The render-time fold of the netns label into pod labels, under a per-family series cap. It
 * calls nothing of the resolver's: it is handed the snapshot slot (podsnap.h) and its settings.
 */
#ifndef NETSTACK_PODFOLD_H
#define NETSTACK_PODFOLD_H

#include <stdint.h>

#include "metrics.h"
#include "pods/podsnap.h"

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
