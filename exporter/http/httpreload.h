/* SPDX-License-Identifier: GPL-2.0-only */
/* A reload of the HTTP front end (httpreload.c); http.h includes it for main.c. */
#ifndef NETSTACK_HTTPRELOAD_H
#define NETSTACK_HTTPRELOAD_H

#include <stddef.h>

struct web_config;
struct http;

/*
 * A reload in three steps. Prepare reads and checks what a new configuration needs (the TLS
 * files parse, the key matches the certificate): NULL (reason in err, errno set) rejects it.
 * Begin serves with it beside the running daemon, on a duplicate of the same listening socket:
 * -errno (reason in err, w freed) rejects it and leaves the running daemon as it was. Retire stops the previous
 * daemon (its requests in flight get up to 1 s) and frees it; never call it holding the scrape
 * lock: the old daemon's requests may be waiting for it.
 */
struct web;
struct web *http_prepare(const struct web_config *cfg, char *err, size_t errlen);
int http_begin(struct http *h, struct web *w, char *err, size_t errlen);
void http_retire(struct http *h);
/* Free what http_prepare made without serving it (--check-config). */
void http_discard(struct web *w);

#endif
