/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A sampled event type is one file here plus one row in the table (registry.c): everything
 * that differs between types (the checks of a raw event, its analyzer, its JSON members and
 * HTML detail, its top-K list, its exemplars) lives in that file, so events.c handles every
 * type alike. The hooks run with the event store locked (entry on the consumer thread, the
 * renderers on the HTTP thread), so a type's state needs no lock of its own.
 */
#ifndef NETSTACK_ANALYZER_H
#define NETSTACK_ANALYZER_H

#include "../events.h"

struct kernel;

struct event_desc {
	/* "type" in JSON and GET /events, [sampling] <name>_* keys, its list in /events/top. */
	const char *name;
	/* Checks of the type's own fields (the common ones are done); optional. */
	bool (*valid)(const struct event *ev);
	int (*init)(const struct kernel *k); /* main thread, before the consumer starts; optional */
	/* The analyzer: enrich the record before it is stored, count it. */
	void (*entry)(struct event_rec *r);
	void (*json)(struct mbuf *m, const struct event_rec *r); /* members after the flow's */
	void (*html)(struct mbuf *m, const struct event_rec *r); /* the detail cell, escaped */
	void (*top_json)(struct mbuf *m, double now);		 /* a JSON array */
	void (*top_html)(struct mbuf *m, double now);		 /* <h2> and a table */
	void (*reset)(void);					 /* free everything */
};

/* By enum event_type; NULL: a type this build does not decode. */
extern const struct event_desc *const event_descs[EV_NR_TYPES];

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
/* JSON members "family", "saddr", ... of the flow (no braces), and the same as HTML cells. */
void flow_json(struct mbuf *m, const struct event *ev);
void flow_html(struct mbuf *m, const struct event *ev);
/* "10.0.0.1" / "fd00::1" for the flow's family, "" otherwise. */
void flow_addr(const struct event_flow *f, bool src, char *buf, size_t len);
/* TCP flags as "SYN|ACK" (at most 31 characters). */
void tcp_flag_names(char buf[static 40], unsigned f);
/* A JSON member ,"name":"v" with v escaped. */
void json_str(struct mbuf *m, const char *name, const char *v);

#endif
