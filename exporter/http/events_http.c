// SPDX-License-Identifier: GPL-2.0-only
/*
 * GET /events (JSON lines, filtered, streamed), GET /events/top (the top-K lists) and the
 * landing page's events section, from the store's visitors; each type's own members and cells
 * are its descriptor's (sampling/analyzers/).
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampling/analyzers/analyzer.h"
#include "sampling/events.h"
#include "http/events_http.h"
#include "http/httpreply.h"

#define HTML_EVENTS 20 /* latest events on the landing page */

static double unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Bytes of a streamed /events response libmicrohttpd asks for at a time: with the cursor's
 * piece (at most this plus one line) what one /events response holds, however many events.
 */
#define EVENTS_BLOCK ((size_t)16 * 1024)

struct args {
	struct event_filter f;
	unsigned limit;
	char err[160];
};

/* One query argument; the first bad one is reported. */
static enum MHD_Result parse_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct args *a = cls;
	unsigned long long n;
	char *end;

	(void)kind;
	if (a->err[0])
		return MHD_NO;
	if (!value)
		value = "";
	if (!strcmp(key, "type")) {
		const char *names[EV_NR_TYPES];
		unsigned n = 0;

		for (unsigned t = 1; t < EV_NR_TYPES; t++) {
			if (!event_descs[t])
				continue;
			names[n++] = event_descs[t]->name;
			if (!strcmp(value, event_descs[t]->name))
				a->f.type = t;
		}
		if (!a->f.type) {
			/* "bad type 'x': expected drop, retrans or rtt", from the registered types. */
			size_t used = snprintf(a->err, sizeof(a->err), "bad type '%.40s': expected",
					       value);

			for (unsigned i = 0; i < n && used < sizeof(a->err); i++)
				used += snprintf(a->err + used, sizeof(a->err) - used, "%s%s",
						 !i	      ? " "
						 : i == n - 1 ? " or "
							      : ", ",
						 names[i]);
			if (used < sizeof(a->err))
				snprintf(a->err + used, sizeof(a->err) - used, "\n");
		}
	} else if (!strcmp(key, "reason")) {
		/* Names are the kernel's: capitals, digits, '_' and ':' (subsystem reasons). */
		if (!*value || strlen(value) > 64 ||
		    value[strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:")])
			snprintf(a->err, sizeof(a->err),
				 "bad reason '%.40s': expected a drop reason name such as "
				 "NETFILTER_DROP\n",
				 value);
		a->f.reason = value;
	} else if (!strcmp(key, "netns")) {
		errno = 0;
		n = strtoull(value, &end, 10);
		if (*value < '0' || *value > '9' || *end || errno || !n || n > UINT32_MAX)
			snprintf(a->err, sizeof(a->err),
				 "bad netns '%.40s': expected a namespace inode number\n", value);
		a->f.netns = (uint32_t)n;
	} else if (!strcmp(key, "max_events")) {
		errno = 0;
		n = strtoull(value, &end, 10);
		if (*value < '0' || *value > '9' || *end || errno || !n || n > EVENTS_MAX)
			snprintf(a->err, sizeof(a->err),
				 "bad max_events '%.40s': expected a whole number from 1 to %u\n",
				 value, EVENTS_MAX);
		a->limit = (unsigned)n;
	} else if (!strcmp(key, "since")) {
		a->f.since = strtod(value, &end);
		if (!*value || *end || !(a->f.since >= 0 && a->f.since < 1e11))
			snprintf(a->err, sizeof(a->err),
				 "bad since '%.40s': expected Unix time in seconds\n", value);
	} else {
		snprintf(a->err, sizeof(a->err),
			 "unknown parameter '%.40s': expected type, reason, netns, since or "
			 "max_events\n",
			 key);
	}
	return a->err[0] ? MHD_NO : MHD_YES;
}

void events_stream_open(struct events *evs, struct events_stream *s, const struct event_filter *f,
			unsigned limit)
{
	memset(s, 0, sizeof(*s));
	store_cursor_open(events_store(evs), &s->c, f, limit);
}

/* One event's line; about max bytes per piece: the lock is held for a few dozen events at most. */
static bool render_line(void *ctx, const struct event_rec *r)
{
	struct events_stream *s = ctx;

	event_json(&s->pending, r);
	mbuf_puts(&s->pending, "\n");
	return s->pending.len < s->max;
}

long events_stream_read(struct events_stream *s, char *buf, size_t max)
{
	size_t n;

	if (s->off == s->pending.len) {
		mbuf_reset(&s->pending);
		s->off = 0;
		s->max = max;
		store_cursor_next(&s->c, render_line, s);
		if (s->pending.oom)
			return -ENOMEM;
	}
	n = s->pending.len - s->off;
	if (n > max)
		n = max;
	if (n)
		memcpy(buf, s->pending.data + s->off, n);
	s->off += n;
	return (long)n;
}

void events_stream_close(struct events_stream *s)
{
	mbuf_free(&s->pending);
}

static ssize_t read_events(void *cls, uint64_t pos, char *buf, size_t max)
{
	long n = events_stream_read(cls, buf, max);

	(void)pos;
	if (n < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return n ? n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void free_events(void *cls)
{
	events_stream_close(cls);
	free(cls);
}

/* The JSON lines, streamed: chunked in HTTP/1.1, until the connection closes in HTTP/1.0. */
static enum MHD_Result stream_events(struct events *evs, struct MHD_Connection *conn,
				     const struct args *a)
{
	struct events_stream *c = malloc(sizeof(*c));
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!c)
		return http_send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	events_stream_open(evs, c, &a->f, a->limit ? a->limit : EVENTS_MAX);
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, EVENTS_BLOCK, read_events, c,
					      free_events);
	if (!r) {
		free_events(c);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-ndjson");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

struct render_ctx {
	struct mbuf *m;
	double now; /* the top-K lists' window ends here */
	bool first; /* nothing rendered yet: no comma, no table head */
};

static void top_json(void *ctx, unsigned type, void *state)
{
	struct render_ctx *c = ctx;

	mbuf_printf(c->m, "%s\"%s\":", c->first ? "" : ",", event_descs[type]->name);
	event_descs[type]->top_json(state, c->m, c->now);
	c->first = false;
}

void events_top_json(struct events *evs, struct mbuf *m)
{
	struct render_ctx c = { m, unix_now(), true };

	mbuf_puts(m, "{");
	store_each_type(events_store(evs), top_json, &c);
	mbuf_puts(m, "}\n");
}

static void top_html(void *ctx, unsigned type, void *state)
{
	struct render_ctx *c = ctx;

	event_descs[type]->top_html(state, c->m, c->now);
}

/* A row of the latest events, the first after the table's head. */
static void event_row(void *ctx, const struct event_rec *r)
{
	struct render_ctx *c = ctx;
	struct mbuf *m = c->m;
	time_t t = (time_t)r->time;
	char when[32];
	struct tm tm;

	if (c->first)
		mbuf_puts(m, "<table class=\"events\">\n<tr><th>time</th><th>type</th>"
			     "<th>protocol</th><th>netns</th><th>source</th><th>destination</th>"
			     "<th>detail</th></tr>\n");
	c->first = false;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	mbuf_printf(m, "<tr><td>%s</td><td>%s</td>", when, event_type_name(r->ev.type));
	flow_html(m, &r->ev);
	mbuf_puts(m, "<td>");
	event_descs[r->ev.type]->html(m, r);
	mbuf_puts(m, "</td></tr>\n");
}

void events_status_html(struct events *evs, struct mbuf *m)
{
	struct render_ctx c = { m, unix_now(), true };

	store_each_type(events_store(evs), top_html, &c);
	mbuf_puts(m, "<h2>Latest sampled events</h2>\n");
	/* Newest first. */
	if (store_each_latest(events_store(evs), HTML_EVENTS, event_row, &c))
		mbuf_puts(m, "</table>\n");
	else
		mbuf_puts(m, "<p class=\"empty\">No sampled events yet (sampling is off by "
			     "default: [sampling] *_sample_rate).</p>\n");
}

enum MHD_Result events_http(struct events *evs, struct MHD_Connection *conn, const char *url)
{
	struct mbuf m = { 0 };
	struct args a = { 0 };
	enum MHD_Result ret;

	if (!strcmp(url, "/events")) {
		MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, parse_arg, &a);
		if (a.err[0])
			return http_send_text(conn, MHD_HTTP_BAD_REQUEST, a.err);
		return stream_events(evs, conn, &a);
	}
	if (strcmp(url, "/events/top"))
		return http_send_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
	/* Bounded: three lists of at most ten entries. */
	events_top_json(evs, &m);
	if (m.oom)
		ret = http_send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	else
		ret = http_send_mbuf(conn, "application/json", &m, false);
	mbuf_free(&m);
	return ret;
}
