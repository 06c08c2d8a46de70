/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An analyzer is one file here plus one row in the table (registry.c): an entry function per
 * event type it cares about, which may enrich the record before it is stored, and its top-K
 * list rendered as JSON and as HTML. Entries run on the consumer thread with the event store
 * locked; the renderers run with it locked too, so analyzers need no locks of their own.
 */
#ifndef NETSTACK_ANALYZER_H
#define NETSTACK_ANALYZER_H

#include "../events.h"

struct kernel;

struct analyzer {
	const char *name;	       /* key of its list in /events/top */
	int (*init)(struct kernel *k); /* main thread, before the consumer starts; optional */
	void (*entry[EV_NR_TYPES])(struct event_rec *r);
	void (*top_json)(struct mbuf *m, double now); /* a JSON array */
	void (*top_html)(struct mbuf *m, double now); /* <h2> and a table */
	void (*reset)(void);			      /* free everything */
};

extern const struct analyzer *const analyzers[]; /* NULL-terminated */

/*
 * A bounded table of keys with per-key counts and maxima over a sliding window (TOPK_SLOTS
 * slots of TOPK_SLOT_SECONDS): what the analyzers rank. Full: the least recently seen key
 * makes room.
 */
#define TOPK_SLOTS 6
#define TOPK_SLOT_SECONDS 10
#define TOPK_CAP 512
#define TOPK_K 10
#define TOPK_KEY 48

struct topk_entry {
	unsigned char key[TOPK_KEY];
	struct event_rec last;	  /* the latest event with this key */
	int64_t slot[TOPK_SLOTS]; /* the slot number each counter belongs to */
	uint32_t count[TOPK_SLOTS];
	uint32_t max[TOPK_SLOTS];
};

struct topk {
	struct topk_entry *e;
	size_t n;
};

struct topk_item {
	const struct topk_entry *e;
	uint64_t count; /* in the window */
	uint32_t max;
};

void topk_add(struct topk *t, const void *key, size_t keylen, const struct event_rec *r,
	      uint32_t value);
/* Up to TOPK_K entries with events in the window, by count (or by max), largest first. */
size_t topk_top(const struct topk *t, double now, bool by_max, struct topk_item *out);
void topk_free(struct topk *t);

/* A flow's key: netns, family, protocol, addresses and ports. */
void flow_key(const struct event *ev, unsigned char key[TOPK_KEY]);
/* JSON members "netns", "saddr", ... of the flow (no braces), and the same as an HTML cell. */
void flow_json(struct mbuf *m, const struct event *ev);
void flow_html(struct mbuf *m, const struct event *ev);

#endif
