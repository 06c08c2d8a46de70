/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_SCRAPE_H
#define NETSTACK_SCRAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "metrics.h"

/*
 * What /metrics renders, made and owned by main.c: the collectors, the pod resolver and the
 * sampled events, with the scrape lock and the outcome of the last configuration load.
 */
struct scrape;
/*
 * table: main.c's collectors (ops NULL after the last), changed only under the scrape lock,
 * under which it is read; pods (pods.h) and evs (events.h) may be NULL. All outlive the scrape.
 * NULL: out of memory.
 */
struct collector;
struct pods;
struct events;
struct scrape *scrape_new(struct collector *table, struct pods *pods, struct events *evs);
void scrape_free(struct scrape *s);

/*
 * Held around a scrape and around changes to the collectors (reload), so a scrape never sees
 * a half-applied configuration; also serialises scrapes when two HTTP daemons overlap.
 */
void scrape_lock(struct scrape *s);
void scrape_unlock(struct scrape *s);

/* One row of the collectors' table, for pages that list them. */
struct collector_status {
	const char *name, *description;
	bool enabled, up;
};
/* Row i (0, 1, ... until false: its end) of the collectors' table. Under the scrape lock. */
bool scrape_collector_at(const struct scrape *s, size_t i, struct collector_status *cs);

/* What the HTTP front end's guards refused (http/httpguard.c counts, the scrape renders). */
struct guard_stats {
	uint64_t evicted; /* connections closed to make room for another address's */
	uint64_t limited; /* password checks refused with 429: the address's failure budget */
	uint64_t busy;	  /* refused with 503: the check queue was full */
};

/*
 * Render every enabled collector and the exporter's own metrics into out, with what the HTTP
 * guards refused among them. Under the scrape lock.
 */
void scrape_render(struct scrape *s, struct mbuf *out, enum metric_format format,
		   const struct guard_stats *gs);

/* What scrape_read found of a collector. */
enum collector_reading {
	READING_OK,
	READING_NOT_BUILT, /* no collector of that name in this build */
	READING_DISABLED,
	READING_DOWN,	/* enabled, but it did not start */
	READING_FAILED, /* its collect failed (what tap had of it is to be thrown away) */
};

/*
 * One collector rendered as a scrape renders it (its pod labels folded in, its success and
 * duration noted), every family tap captures handed to tap after the fold and the rest thrown
 * away: the status page's readings. collector: a name from base/families.h. Under the
 * scrape lock.
 */
struct expo_filter;
enum collector_reading scrape_read(struct scrape *s, const char *collector,
				   struct expo_filter *tap);

/*
 * The one label added to every series (node): name must outlive the scrape, value is copied
 * through label_text().
 */
void scrape_constant_label(struct scrape *s, const char *name, const char *value);

/*
 * The outcome of loading the configuration (start-up counts as a successful one), for
 * netstack_config_last_reload_*. Under the scrape lock, or before any thread serves.
 */
void scrape_reload_result(struct scrape *s, bool ok);

#endif
