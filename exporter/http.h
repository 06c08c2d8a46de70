/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_HTTP_H
#define NETSTACK_HTTP_H

#include "config.h"

/* Start serving in libmicrohttpd's own thread; 0 or -1 (logged). */
int http_start(const struct config *cfg);
/*
 * A reload in two steps. Prepare reads what a new configuration needs (TLS files): NULL
 * (logged) rejects it. Switch serves with it on the same socket (requests in flight on the
 * old one get up to 1 s) and frees it; on failure (logged) the old one keeps serving.
 * Never switch holding the scrape lock: the old daemon's requests may be waiting for it.
 */
struct web;
struct web *http_prepare(const struct config *cfg);
int http_switch(struct web *w);
void http_stop(void);

#endif
