/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sampled events in user space, the facade main.c, the collectors, scrape.c and http/ use. It
 * composes four objects, each the only writer of its state: the ring buffer and its consumer
 * thread (ring.c), the store of recent events and the analyzers' state (store.c), the stdout
 * writer (stdout.c) and the types' counters (stats.c); [sampling] is settings.c, decoding and
 * the JSON form decode.c. What is particular to a type (its checks, analyzer, JSON and HTML,
 * exemplars) is its descriptor in exporter/sampling/analyzers/. The pages that show events
 * (/events, /events/top, the landing page's section) are http/events_http.c, over the store's
 * visitors (store.h).
 */
#ifndef NETSTACK_EXPORTER_EVENTS_H
#define NETSTACK_EXPORTER_EVENTS_H

#include <stdbool.h>

#include "metrics.h"
#include "sampling/decode.h"
#include "sampling/record.h"
#include "sampling/settings.h"

struct bpf_object;
struct event_store;
struct kernel;

/*
 * The sampled events of one exporter, run with c (copied): made before any collector starts
 * (main.c owns it), freed after every collector stopped and every thread that reads it joined.
 * NULL with errno set: out of memory.
 */
struct events;
struct events *events_new(const struct sampling_config *c);
void events_free(struct events *evs);
/*
 * A reload (holding the scrape lock): c applies now to the store and stdout; returns a bit
 * (1 << type) per event type whose collector must restart for its sampling settings (read-only
 * data of its BPF programs) or a new ring buffer. Then call events_start again.
 */
unsigned events_reconfigure(struct events *evs, const struct sampling_config *c);

/*
 * Called by a collector between open and load: fills the object's sample_cfg for type and,
 * when that type is sampled, makes the object use the shared ring buffer. 0 or -errno, logged.
 */
int events_prepare(struct events *evs, struct bpf_object *obj, enum event_type type,
		   struct sample_config *cfg);
/* After load: the object's counters are read from now on. */
void events_loaded(struct events *evs, struct bpf_object *obj, enum event_type type);
/* Its collector stops: the counters' own copy of the fd is closed (before the collector's). */
void events_unloaded(struct events *evs, enum event_type type);
/*
 * Start (again, after a reload) the consumer thread (a no-op when nothing is sampled). k
 * (reasons, TCP states, symbols) must outlive the thread: events_free joins it. 0 or -errno,
 * logged.
 */
int events_start(struct events *evs, const struct kernel *k);

/* netstack_events_*_total, during a scrape. */
void events_collect(struct events *evs, struct expo *e);

/* What the consumer thread does with a decoded event: store it, and write it to stdout if on. */
void events_add(struct events *evs, const struct event *ev, double unix_time);
/* The store of recent events, for the pages (store.h: its visitors and cursor). */
struct event_store *events_store(struct events *evs);

/*
 * Exemplar of a series of type's collector: the latest sampled event of that series (type's
 * own key, struct drop_series or reset_series), as labels (values point into buf) and the
 * event's time; false when there is none.
 */
struct labels;
bool events_exemplar(struct events *evs, enum event_type type, const void *series, struct labels *l,
		     char *buf, size_t len, double *time);

#endif
