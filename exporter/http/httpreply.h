/* SPDX-License-Identifier: GPL-2.0-only */
/* Responses of the HTTP front end (httpreply.c), for httproute.c and the pages it routes to. */
#ifndef NETSTACK_HTTPREPLY_H
#define NETSTACK_HTTPREPLY_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "metrics.h"

/*
 * The response copies data, or with mode MHD_RESPMEM_MUST_FREE takes it over (then the caller
 * lets go of it only when this succeeds). NULL when out of memory.
 */
struct MHD_Response *http_response(unsigned status, const char *type, const void *data, size_t len,
				   bool gzipped, enum MHD_ResponseMemoryMode mode);
/* Queue r (NULL: MHD_NO) and drop our reference. */
enum MHD_Result http_queue(struct MHD_Connection *conn, unsigned status, struct MHD_Response *r);
/* Answer with text (copied). */
enum MHD_Result http_send_text(struct MHD_Connection *conn, unsigned status, const char *text);
/* Answer 200 with m's bytes, handed over without a copy (m is emptied when that succeeds). */
enum MHD_Result http_send_mbuf(struct MHD_Connection *conn, const char *type, struct mbuf *m,
			       bool gzipped);

#endif
