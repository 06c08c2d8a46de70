// SPDX-License-Identifier: GPL-2.0-only
/* GET /events (JSON lines, filtered) and GET /events/top (the analyzers' top-K lists). */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "events_http.h"
#include "http.h"

struct args {
	struct event_filter f;
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
		for (unsigned t = 1; t < EV_NR_TYPES; t++)
			if (!strcmp(value, event_type_name(t)))
				a->f.type = t;
		if (!a->f.type)
			snprintf(a->err, sizeof(a->err),
				 "bad type '%.40s': expected drop, retrans or rtt\n", value);
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
	} else if (!strcmp(key, "since")) {
		a->f.since = strtod(value, &end);
		if (!*value || *end || !(a->f.since >= 0 && a->f.since < 1e11))
			snprintf(a->err, sizeof(a->err),
				 "bad since '%.40s': expected Unix time in seconds\n", value);
	} else {
		snprintf(a->err, sizeof(a->err),
			 "unknown parameter '%.40s': expected type, reason, netns or since\n", key);
	}
	return a->err[0] ? MHD_NO : MHD_YES;
}

enum MHD_Result events_http(struct MHD_Connection *conn, const char *url)
{
	struct mbuf m = { 0 };
	struct args a = { 0 };
	enum MHD_Result ret;

	if (!strcmp(url, "/events")) {
		MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, parse_arg, &a);
		if (a.err[0])
			return http_send_text(conn, MHD_HTTP_BAD_REQUEST, a.err);
		events_json_lines(&m, &a.f);
	} else if (!strcmp(url, "/events/top")) {
		events_top_json(&m);
	} else {
		return http_send_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
	}
	if (m.oom)
		ret = http_send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	else
		ret = http_send_mbuf(
			conn, !strcmp(url, "/events") ? "application/x-ndjson" : "application/json",
			&m, false);
	mbuf_free(&m);
	return ret;
}
