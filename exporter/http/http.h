/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_HTTP_H
#define NETSTACK_HTTP_H

#include <microhttpd.h>

#include "config.h"
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
struct http *http_open(const struct config *cfg, struct scrape *sc, const struct status *status,
		       struct events *evs);
int http_start(struct http *h);
/*
 * A reload in three steps. Prepare reads and checks what a new configuration needs (the TLS
 * files parse, the key matches the certificate): NULL (reason in err, errno set) rejects it.
 * Begin serves with it beside the running daemon, on a duplicate of the same listening socket:
 * -errno (reason in err, w freed) rejects it and leaves the running daemon as it was. Retire stops the previous
 * daemon (its requests in flight get up to 1 s) and frees it; never call it holding the scrape
 * lock: the old daemon's requests may be waiting for it.
 */
struct web;
struct web *http_prepare(const struct config *cfg, char *err, size_t errlen);
int http_begin(struct http *h, struct web *w, char *err, size_t errlen);
void http_retire(struct http *h);
/* Free what http_prepare made without serving it (--check-config). */
void http_discard(struct web *w);
/* Stop serving and free h (NULL: nothing to do). */
void http_stop(struct http *h);

#endif
