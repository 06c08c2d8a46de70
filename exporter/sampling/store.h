/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The store of recent events: a bounded ring of records, filled through each type's analyzer,
 * and the analyzers' state (made by store_start, freed by store_free, nowhere else). Readers get
 * records and states through the visitors below, which run under the store's lock: a visitor
 * renders or copies what it needs and calls nothing of the store. http/ renders the pages
 * from them.
 */
#ifndef NETSTACK_SAMPLING_STORE_H
#define NETSTACK_SAMPLING_STORE_H

#include <stdbool.h>

#include "sampling/record.h"

struct kernel;
struct labels;
struct event_store;

/* At most max records (max_events). NULL with errno set: out of memory. */
struct event_store *store_new(unsigned max);
/* No other thread left, and no scrape running or starting (their exemplars). */
void store_free(struct event_store *s);
/*
 * Each type's state, made once (later calls return 0); k (reasons, TCP states, symbols) must
 * outlive the store. 0 or -errno, logged.
 */
int store_start(struct event_store *s, const struct kernel *k);
/* Keep the newest events that fit in max. */
void store_resize(struct event_store *s, unsigned max);
/*
 * Run its type's analyzer on a decoded event and keep it; the states are made without the
 * kernel's names if store_start did not run (the fuzzer). *out (when non-NULL) is filled with
 * the record as stored. false: not stored (out of memory, logged once by the analyzers).
 */
bool store_add(struct event_store *s, const struct event *ev, double unix_time,
	       struct event_rec *out);
/*
 * Exemplar of a series of type's collector: the latest sampled event of that series (type's
 * own key), as labels (values point into buf) and the event's time; false when there is none.
 * Without the store's lock (scrapes).
 */
bool store_exemplar(struct event_store *s, enum event_type type, const void *series,
		    struct labels *l, char *buf, size_t len, double *time);

/* visit(ctx, type, state) for each type this build decodes, state NULL before store_start. */
void store_each_type(struct event_store *s, void (*visit)(void *ctx, unsigned type, void *state),
		     void *ctx);
/* visit the latest max events, newest first; returns how many it visited. */
size_t store_each_latest(struct event_store *s, size_t max,
			 void (*visit)(void *ctx, const struct event_rec *r), void *ctx);

/* Filters of GET /events; zero fields match everything. */
struct event_filter {
	unsigned type;
	const char *reason;
	uint32_t netns;
	double since;
};

/*
 * A position in the store: the last `limit` stored events matching a filter, oldest first, read
 * piecewise (events stored after the cursor was opened are not included; events evicted before
 * their turn are skipped). Written by store.c only.
 */
struct store_cursor {
	struct event_store *s;
	struct event_filter f;
	char reason[72];    /* f.reason's copy */
	uint64_t next, end; /* seq of the next event to look at, and of the last */
	unsigned left;	    /* matching events still to visit */
};
void store_cursor_open(struct event_store *s, struct store_cursor *c, const struct event_filter *f,
		       unsigned limit);
/*
 * visit the cursor's next matching events, oldest first, while visit returns true: it is called
 * with the lock held, so it should stop after a few dozen. Nothing left: visit is not called.
 */
void store_cursor_next(struct store_cursor *c, bool (*visit)(void *ctx, const struct event_rec *r),
		       void *ctx);

#endif
