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
 * state (capabilities are per thread). Both 0 or -1 (logged); http_stop cleans up either.
 */
int http_open(const struct config *cfg);
int http_start(void);
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

/* Answer with text (copied). */
enum MHD_Result http_send_text(struct MHD_Connection *conn, unsigned status, const char *text);
/* Answer 200 with m's bytes, handed over without a copy (m is emptied when that succeeds). */
enum MHD_Result http_send_mbuf(struct MHD_Connection *conn, const char *type, struct mbuf *m,
			       bool gzipped);

#endif
