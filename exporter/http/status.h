/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_STATUS_H
#define NETSTACK_STATUS_H

#include "metrics.h"

/* Seconds between two samples, and how many of them the page shows (15 minutes). */
#define STATUS_STEP 15
#define STATUS_POINTS 60
/* Reasons with a row (and a sparkline) of their own per table; the others share "other". */
#define STATUS_ROWS 16
/* Reason values whose last reading is kept (the kernel's enums have fewer); more go to other. */
#define STATUS_NAMES 256

/*
 * The status page's memory: for drops, TCP resets sent and TCP retransmits, the last reading of
 * each reason's (cause's) counter and the increase of each row over the last STATUS_POINTS
 * samples; for RTT and handshake times, the histograms' buckets at the last minute's samples
 * and their p50 and p99. Owned by main.c, which samples; served by the HTTP front end. Both
 * under the scrape lock.
 */
struct status;
/* sc (scrape.h) and evs (events.h, NULL: none) outlive the status; NULL with errno set. */
struct scrape;
struct events;
struct status *status_new(struct scrape *sc, struct events *evs);
void status_free(struct status *s);
/*
 * Take a sample when one is due (the first at once); returns the seconds until the next is
 * due. Takes the scrape lock: never call it holding that.
 */
double status_tick(struct status *s);
/* One sample at now (CLOCK_MONOTONIC seconds), holding the scrape lock: what tick does. */
void status_sample_at(struct status *s, double now);
/* Append the landing page (a status view) to m. Under the scrape lock. */
void status_page(const struct status *s, struct mbuf *m, const char *metrics_path);

#endif
