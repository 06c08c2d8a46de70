// SPDX-License-Identifier: GPL-2.0-only
/* GET /events (JSON lines, filtered, streamed) and GET /events/top (the top-K lists). */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/analyzers/analyzer.h"
#include "sampling/events.h"
#include "http/events_http.h"
#include "http/httpreply.h"

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

static ssize_t read_events(void *cls, uint64_t pos, char *buf, size_t max)
{
	long n = events_cursor_read(cls, buf, max);

	(void)pos;
	if (n < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return n ? n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void free_events(void *cls)
{
	events_cursor_close(cls);
	free(cls);
}

/* The JSON lines, streamed: chunked in HTTP/1.1, until the connection closes in HTTP/1.0. */
static enum MHD_Result stream_events(struct events *evs, struct MHD_Connection *conn,
				     const struct args *a)
{
	struct events_cursor *c = malloc(sizeof(*c));
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!c)
		return http_send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	events_cursor_open(evs, c, &a->f, a->limit ? a->limit : EVENTS_MAX);
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
