/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pages of sampled events, rendered from the store's visitors and cursor
 * (sampling/store.h): GET /events and /events/top, and the landing page's events section.
 */
#ifndef NETSTACK_EVENTS_HTTP_H
#define NETSTACK_EVENTS_HTTP_H

#include <microhttpd.h>

#include "metrics.h"
#include "sampling/store.h"

struct events;

/* GET /events and /events/top of evs, and 404 for anything else under /events/. */
enum MHD_Result events_http(struct events *evs, struct MHD_Connection *conn, const char *url);

/*
 * GET /events streamed: the store cursor's events as JSON lines, rendered piecewise, so a
 * response holds one piece in memory however many events it has and however slowly its client
 * reads.
 */
struct events_stream {
	struct store_cursor c;
	struct mbuf pending; /* rendered lines not yet read */
	size_t off;
	size_t max; /* bytes wanted by the read being served */
};
void events_stream_open(struct events *evs, struct events_stream *s, const struct event_filter *f,
			unsigned limit);
/* Up to max bytes of JSON lines into buf: their number, 0 at the end, -ENOMEM. */
long events_stream_read(struct events_stream *s, char *buf, size_t max);
void events_stream_close(struct events_stream *s);
/* The analyzers' top-K lists as one JSON object (GET /events/top). */
void events_top_json(struct events *evs, struct mbuf *m);
/* HTML fragments for the landing page: top-K lists and the latest events, escaped. */
void events_status_html(struct events *evs, struct mbuf *m);

#endif
