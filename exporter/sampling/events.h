/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sampled events in user space, alike for every type: configuration ([sampling], settings.c),
 * the shared ring buffer (events.c) and its consumer thread (consumer.c), decoding and the JSON
 * form (decode.c), the bounded store of recent events and its queries (store.c), the counters
 * (stats.c). What is particular to a type (its checks, analyzer, JSON and HTML, exemplars) is its
 * descriptor in exporter/sampling/analyzers/. HTTP views in http/events_http.c.
 */
#ifndef NETSTACK_EXPORTER_EVENTS_H
#define NETSTACK_EXPORTER_EVENTS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample.h"
#include "metrics.h"

struct bpf_object;

/* Room for any event type's own fields in its record (a drop's are the largest). */
#define EVENT_DETAIL_SIZE 168

/* One decoded event plus what its type's analyzer found out about it. */
struct event_rec {
	struct event ev;
	uint64_t seq;	    /* 1, 2, ... in arrival order */
	double time;	    /* Unix time in seconds */
	const char *reason; /* what GET /events?reason= matches: a drop's reason name, or NULL */
	/* The type's own fields, written and read by its descriptor (analyzers/<type>.c) only. */
	_Alignas(max_align_t) unsigned char detail[EVENT_DETAIL_SIZE];
};

/*
 * The most events [sampling] max_events keeps and GET /events?max_events= asks for: the store
 * then holds about 30 MiB (sizeof(struct event_rec) each).
 */
#define EVENTS_MAX 100000u

/* [sampling], indexed by enum event_type where per type. */
struct sampling_config {
	unsigned rate[EV_NR_TYPES];	      /* <type>_sample_rate: 1 in N, 0 off */
	unsigned max_per_second[EV_NR_TYPES]; /* <type>_max_events_per_second per CPU, 0 no cap */
	unsigned burst[EV_NR_TYPES];	      /* <type>_burst */
	unsigned min_rtt_us;
	unsigned ring_bytes; /* ring_buffer_bytes */
	unsigned max_events; /* events kept for /events */
	bool to_stdout;	     /* stdout */
	unsigned stdout_per_second;
};

/* Built-in defaults of [sampling]. */
void events_defaults(struct sampling_config *c);
/* One [sampling] key; 0, or -EINVAL with err set. */
int events_set(struct sampling_config *c, const char *key, const char *value, char *err,
	       size_t errlen);
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
struct kernel;
int events_start(struct events *evs, const struct kernel *k);

/* netstack_events_*_total, during a scrape. */
void events_collect(struct events *evs, struct expo *e);

/* Validate raw ring buffer bytes: 0 and *out filled, or -EINVAL (never reads past len). */
int event_decode(const void *data, size_t len, struct event *out);
/* Run its type's analyzer on a decoded event and keep it (what the consumer thread does). */
void events_add(struct events *evs, const struct event *ev, double unix_time);
/* One event as a JSON object, no newline. */
void event_json(struct mbuf *m, const struct event_rec *r);
const char *event_type_name(unsigned type);

/* Filters of GET /events; zero fields match everything. */
struct event_filter {
	unsigned type;
	const char *reason;
	uint32_t netns;
	double since;
};

/*
 * GET /events streamed: the last `limit` stored events matching a filter, as JSON lines, oldest
 * first, read piecewise, so a response holds one piece in memory however many events it has and
 * however slowly its client reads. Events stored after the cursor was opened are not included;
 * events evicted before their turn are skipped.
 */
struct events_cursor {
	struct events *evs;
	struct event_filter f;
	char reason[72];     /* f.reason's copy */
	uint64_t next, end;  /* seq of the next event to look at, and of the last */
	unsigned left;	     /* matching events still to write */
	struct mbuf pending; /* rendered lines not yet read */
	size_t off;
};
void events_cursor_open(struct events *evs, struct events_cursor *c, const struct event_filter *f,
			unsigned limit);
/* Up to max bytes of JSON lines into buf: their number, 0 at the end, -ENOMEM. */
long events_cursor_read(struct events_cursor *c, char *buf, size_t max);
void events_cursor_close(struct events_cursor *c);
/* The analyzers' top-K lists as one JSON object. */
void events_top_json(struct events *evs, struct mbuf *m);
/* HTML fragments for the landing page: top-K lists and the latest events, escaped. */
void events_status_html(struct events *evs, struct mbuf *m);

/*
 * Exemplar of a series of type's collector: the latest sampled event of that series (type's
 * own key), as labels (values point into buf) and the event's time; false when there is none.
 */
struct labels;
bool events_exemplar(struct events *evs, enum event_type type, const void *series, struct labels *l,
		     char *buf, size_t len, double *time);
/*
 * The drop type's series (analyzers/drop.c): reason, family and protocol (drops.h enums) and,
 * when non-NULL/non-zero, function, netns and interface.
 */
struct drop_series {
	uint32_t reason;
	uint8_t family, proto;
	const char *function;
	uint32_t netns;
	const char *ifname;
};

/*
 * The reset type's series (analyzers/reset.c), of resets sent: reason (RS_REASON_NONE on kernels
 * without one), family and state (resets.h) and, when non-zero, netns.
 */
struct reset_series {
	uint32_t reason;
	uint8_t family, state;
	uint32_t netns;
};

#endif
