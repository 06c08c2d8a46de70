/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_EVENTS_HTTP_H
#define NETSTACK_EVENTS_HTTP_H

#include <microhttpd.h>

/* GET /events and /events/top of evs, and 404 for anything else under /events/. */
struct events;
enum MHD_Result events_http(struct events *evs, struct MHD_Connection *conn, const char *url);

#endif
