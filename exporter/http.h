/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_HTTP_H
#define NETSTACK_HTTP_H

#include "config.h"

/* Start serving in libmicrohttpd's own thread; 0 or -1 (logged). */
int http_start(const struct config *cfg);
/*
 * Serve with a new configuration (TLS files re-read, users, limits) on the same socket; on
 * failure (logged) the old configuration keeps serving. 0 or -1.
 */
int http_reload(const struct config *cfg);
void http_stop(void);

#endif
