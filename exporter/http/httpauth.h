/* SPDX-License-Identifier: GPL-2.0-only */
/* Basic auth of a request (httpauth.c). */
#ifndef NETSTACK_HTTPAUTH_H
#define NETSTACK_HTTPAUTH_H

#include <microhttpd.h>

#include "http/httpguard.h"

struct web;

/*
 * Basic auth of a request to w (GUARD_AUTH_OK without users), and the answer to a
 * refused one (401, or 429 or 503 with Retry-After: retry seconds).
 */
enum guard_auth web_authorized(struct web *w, struct MHD_Connection *conn, struct guard_job **job,
			       unsigned *retry_after);
enum MHD_Result web_refuse(struct MHD_Connection *conn, enum guard_auth why, unsigned retry);

#endif
