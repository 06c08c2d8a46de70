/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_HTTP_H
#define NETSTACK_HTTP_H

#include <microhttpd.h>

#include "webconfig.h"
#include "metrics.h"

/*
 * Start-up in two steps. Open reads the TLS files and binds the listening socket while the
 * process may still (ports below 1024, files only root reads); start serves in
 * libmicrohttpd's own thread, after privileges are dropped so the thread inherits the dropped
 * state (capabilities are per thread). Open returns NULL with errno set, start -errno, both
 * logged; http_stop cleans up either.
 * What it serves is main's, until after http_stop: sc renders /metrics, status is the status
 * page, evs the sampled events of /events.
 */
struct http;
struct scrape;
struct status;
struct events;
struct http *http_open(const struct web_config *cfg, struct scrape *sc, const struct status *status,
		       struct events *evs);
int http_start(struct http *h);
/* Stop serving and free h (NULL: nothing to do). */
void http_stop(struct http *h);

#include "http/httpreload.h"

#endif
