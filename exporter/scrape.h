/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_SCRAPE_H
#define NETSTACK_SCRAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "metrics.h"

/*
 * Held around a scrape and around changes to the collectors (reload), so a scrape never sees
 * a half-applied configuration; also serialises scrapes when two HTTP daemons overlap.
 */
void scrape_lock(void);
void scrape_unlock(void);

/*
 * The collectors to render: main.c's table (ops NULL after the last), given once before any
 * thread starts and changed only under the scrape lock, under which it is read.
 */
struct collector;
void scrape_set_collectors(struct collector *table);
struct collector *scrape_collectors(void);
/* The pod resolver (pods.h) whose filters and metrics scrapes render, given like the table. */
struct pods;
void scrape_set_pods(struct pods *p);

/*
 * Render every enabled collector and the exporter's own metrics into out, with what the HTTP
 * guards refused (httpguard.h) among them.
 */
struct guard_stats;
void scrape_render(struct mbuf *out, enum metric_format format, const struct guard_stats *gs);

/* Value of every optional label of the series counting what a bounded map had no room for. */
#define OVERFLOW_LABEL "__overflow__"

/* A label added to every series (e.g. node); name and value must outlive the exporter. */
void scrape_constant_label(const char *name, const char *value);

/*
 * The outcome of loading the configuration (start-up counts as a successful one), for
 * netstack_config_last_reload_*; call before serving or holding the scrape lock.
 */
void scrape_reload_result(bool ok);

/* Called by collectors while collecting: entries a bounded map had no room for. */
void scrape_map_overflow(const char *map, uint64_t count);

#endif
