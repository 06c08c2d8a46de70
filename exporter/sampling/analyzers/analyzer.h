/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A sampled event type is one file here plus one row in the table (event_types.c): everything
 * that differs between types (the checks of a raw event, its analyzer, its JSON members and
 * HTML detail, its top-K list, its exemplars) lives in that file, so sampling/ handles every
 * type alike. A type keeps what its analyzer learns (top-K tables, exemplars) in a state its
 * init makes and fini frees, which the store (store.c) owns and hands to the other hooks: no
 * file-static state. The hooks run with the event store locked (entry on the consumer thread,
 * the renderers on the HTTP thread, in the store's visitors: http/events_http.c), so a type's state needs no lock of its own, but for what
 * scrapes read without that lock (exemplar).
 */
#ifndef NETSTACK_ANALYZER_H
#define NETSTACK_ANALYZER_H

#include <pthread.h>

#include "metrics.h"
#include "sampling/record.h"

struct kernel;

struct event_desc {
	/* "type" in JSON and GET /events, [sampling] <name>_* keys, its list in /events/top. */
	const char *name;
	/* Checks of the type's own fields (the common ones are done); optional. */
	bool (*valid)(const struct event *ev);
	/*
	 * Make the type's state in *state, once, before its first event (the main thread, before
	 * the consumer starts). k is read-only and outlives the state; NULL when there is no
	 * kernel context (the fuzzer): names are then left out. 0, or -ENOMEM with nothing made.
	 */
	int (*init)(const struct kernel *k, void **state);
	/* The analyzer: enrich the record before it is stored, count it. */
	void (*entry)(void *state, struct event_rec *r);
	void (*json)(struct mbuf *m, const struct event_rec *r); /* members after the flow's */
	void (*html)(struct mbuf *m, const struct event_rec *r); /* the detail cell, escaped */
	/* Its top-K list; state is NULL before init (sampling off): the list is empty. */
	void (*top_json)(void *state, struct mbuf *m, double now); /* a JSON array */
	void (*top_html)(void *state, struct mbuf *m, double now); /* <h2> and a table */
	/*
	 * The latest sampled event of a series its collector renders (series: the type's own
	 * key, e.g. struct drop_series), as exemplar labels (values in buf) and time; false when
	 * there is none. Called by scrapes, without the store's lock. Optional.
	 */
	bool (*exemplar)(void *state, const void *series, struct labels *l, char *buf, size_t len,
			 double *time);
	void (*fini)(void *state); /* free the state and everything in it */
};

/*
 * The latest sampled event of each series (at most EXEMPLAR_SERIES; the series seen longest ago
 * makes room), the exemplars of a collector's counter. Its own lock: scrapes read it without the
 * store's.
 */
#define EXEMPLAR_SERIES 256
struct exemplars {
	pthread_mutex_t lock;
	struct event_rec e[EXEMPLAR_SERIES];
};

void exemplars_init(struct exemplars *x);
/* Keep r as its series' latest (same: whether two events are of one series). */
void exemplars_remember(struct exemplars *x, const struct event_rec *r,
			bool (*same)(const struct event_rec *a, const struct event_rec *b));
/*
 * The latest event that match(event, q) accepts, as exemplar labels saddr, daddr, sport, dport
 * (values in buf) and its time; false when there is none.
 */
bool exemplars_find(struct exemplars *x, bool (*match)(const struct event_rec *r, const void *q),
		    const void *q, struct labels *l, char *buf, size_t len, double *time);
void exemplars_free(struct exemplars *x);

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
/*
 * Up to TOPK_K entries with events in the window, by count (or by max), largest first; none
 * when t is NULL.
 */
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
