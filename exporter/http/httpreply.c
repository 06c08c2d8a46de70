// SPDX-License-Identifier: GPL-2.0-only
/* Responses: what every page of the HTTP front end answers with (a leaf below httproute.c). */
#include <microhttpd.h>
#include <string.h>

#include "http/httpreply.h"

struct MHD_Response *http_response(unsigned status, const char *type, const void *data, size_t len,
				   bool gzipped, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)data, mode);

	if (!r)
		return NULL;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (gzipped)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	if (status == MHD_HTTP_OK)
		MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	return r;
}

enum MHD_Result http_queue(struct MHD_Connection *conn, unsigned status, struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_buffer(struct MHD_Connection *conn, unsigned status, const char *type,
				   const void *data, size_t len, bool gzipped)
{
	return http_queue(conn, status,
			  http_response(status, type, data, len, gzipped, MHD_RESPMEM_MUST_COPY));
}

/*
 * A rendered body goes to the response without a copy, and the response frees it once sent:
 * kept for the next scrape, a 10k-series body held a megabyte between scrapes for nothing.
 */
enum MHD_Result http_send_mbuf(struct MHD_Connection *conn, const char *type, struct mbuf *m,
			       bool gzipped)
{
	struct MHD_Response *r =
		http_response(MHD_HTTP_OK, type, m->data, m->len, gzipped, MHD_RESPMEM_MUST_FREE);

	if (r)
		*m = (struct mbuf){ 0 };
	return http_queue(conn, MHD_HTTP_OK, r);
}

enum MHD_Result http_send_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
	return send_buffer(conn, status, "text/plain; charset=utf-8", text, strlen(text), false);
}
