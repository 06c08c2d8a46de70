// SPDX-License-Identifier: GPL-2.0-only
/*
 * Routing: libmicrohttpd's callbacks, from a connection's start through a request's password
 * check and method checks to the page that answers it.
 */
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "http/events_http.h"
#include "http/httpreply.h"
#include "http/httpauth.h"
#include "http/httproute.h"
#include "http/server.h"
#include "http/status.h"
#include "metrics.h"
#include "scrape.h"

/* What a request's context points to once its headers were seen, or else a password check. */
static const char markers[2];
#define ANNOUNCED ((void *)&markers[0])
#define HAS_BODY ((void *)&markers[1])

/* A header's field lines as one list (RFC 9110 5.3: joined by ", " in order). */
struct field_lines {
	const char *name;
	struct mbuf *out;
	unsigned n;
};

static char ascii_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Header names compare case-insensitively, in ASCII whatever the locale. */
static bool name_ieq(const char *a, const char *b)
{
	while (*a && ascii_lower(*a) == ascii_lower(*b))
		a++, b++;
	return ascii_lower(*a) == ascii_lower(*b);
}

static enum MHD_Result join_line(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct field_lines *fl = cls;

	(void)kind;
	if (key && value && name_ieq(key, fl->name)) {
		if (fl->n++)
			mbuf_puts(fl->out, ", ");
		mbuf_puts(fl->out, value);
	}
	return MHD_YES;
}

/*
 * Every line of header name in out: the joined list, NULL when there is none, or the first
 * line alone when out of memory. libmicrohttpd's lookup returns only the first line.
 */
static const char *header_list(struct MHD_Connection *conn, const char *name, struct mbuf *out)
{
	struct field_lines fl = { .name = name, .out = out };

	MHD_get_connection_values(conn, MHD_HEADER_KIND, join_line, &fl);
	if (!fl.n)
		return NULL;
	return out->oom ? MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name) : out->data;
}

static enum MHD_Result serve_metrics(struct http *h, struct MHD_Connection *conn)
{
	struct mbuf accept_buf = { 0 }, enc_buf = { 0 };
	const char *accept = header_list(conn, MHD_HTTP_HEADER_ACCEPT, &accept_buf);
	const char *enc = header_list(conn, MHD_HTTP_HEADER_ACCEPT_ENCODING, &enc_buf);
	enum metric_format format;
	bool acceptable = negotiate_format(accept, &format);
	bool gzip = accepts_gzip(enc);
	struct guard_stats gs;
	enum MHD_Result ret;

	mbuf_free(&accept_buf);
	mbuf_free(&enc_buf);
	if (!acceptable)
		return http_send_text(conn, MHD_HTTP_NOT_ACCEPTABLE,
				      "Accept refuses text/plain and allows none of "
				      "application/openmetrics-text; version=1.0.0 and "
				      "application/vnd.google.protobuf\n");
	scrape_lock(h->scrape);
	mbuf_reserve(&h->body, h->body_hint); /* one allocation, not a doubling series */
	guard_stats(h->guards, &gs);
	scrape_render(h->scrape, &h->body, format, &gs);
	h->body_hint = h->body.len;
	/* A body gzip cannot compress is served as it is. */
	if (h->body.oom)
		ret = http_send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	else if (gzip && !gzip_buffer(h->body.data, h->body.len, &h->gz) && !h->gz.oom)
		ret = http_send_mbuf(conn, format_content_type(format), &h->gz, true);
	else
		ret = http_send_mbuf(conn, format_content_type(format), &h->body, false);
	mbuf_free(&h->body);
	mbuf_free(&h->gz);
	scrape_unlock(h->scrape);
	return ret;
}

static enum MHD_Result serve_landing(struct MHD_Connection *conn, const struct web *w)
{
	struct mbuf page = { 0 };
	enum MHD_Result ret;

	scrape_lock(w->h->scrape);
	status_page(w->h->status, &page, w->cfg.metrics_path);
	scrape_unlock(w->h->scrape);
	ret = page.oom ? http_send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n")
		       : http_send_mbuf(conn, "text/html; charset=utf-8", &page, false);
	mbuf_free(&page);
	return ret;
}

/* A body is announced by Transfer-Encoding or by a Content-Length other than 0. */
static bool declares_body(struct MHD_Connection *conn)
{
	const char *cl =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
	       (cl && cl[strspn(cl, "0")]);
}

/* The first call of a request: its password, then its method; MHD_YES lets it go on. */
static enum MHD_Result announce(struct web *w, struct MHD_Connection *conn, const char *method,
				void **req)
{
	struct guard_job *job = *req;
	unsigned retry = 1;
	enum guard_auth auth;

	if (!job)
		guard_request_begin(conn);
	auth = web_authorized(w, conn, &job, &retry);
	if (auth == GUARD_AUTH_PENDING) {
		*req = job;
		return MHD_YES;
	}
	*req = ANNOUNCED;
	if (auth != GUARD_AUTH_OK)
		return web_refuse(conn, auth, retry);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return http_send_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	/* Likewise a GET or HEAD announcing a body: never read (up to gigabytes of) it. */
	if (declares_body(conn))
		return http_send_text(conn, MHD_HTTP_BAD_REQUEST, "GET takes no body\n");
	return MHD_YES;
}

enum MHD_Result web_handle(void *cls, struct MHD_Connection *conn, const char *url,
			   const char *method, const char *version, const char *upload_data,
			   size_t *upload_data_size, void **req)
{
	struct web *w = cls;

	(void)version;
	(void)upload_data;
	/*
	 * The first call announces the request: refuse other methods before reading a body. A
	 * password check suspends the connection; then the handler sees the same call again.
	 */
	if (!*req || (*req != ANNOUNCED && *req != HAS_BODY))
		return announce(w, conn, method, req);
	/* A response may only be queued once the body is consumed: discard it, answer last. */
	if (*upload_data_size) {
		*upload_data_size = 0;
		*req = HAS_BODY;
		return MHD_YES;
	}
	if (*req == HAS_BODY)
		return http_send_text(conn, MHD_HTTP_BAD_REQUEST, "GET takes no body\n");
	if (!strcmp(url, w->cfg.metrics_path))
		return serve_metrics(w->h, conn);
	if (!strcmp(url, "/"))
		return serve_landing(conn, w);
	if (!strcmp(url, "/healthz"))
		return http_send_text(conn, MHD_HTTP_OK, "ok\n");
	if (!strcmp(url, "/events") || !strncmp(url, "/events/", 8))
		return events_http(w->h->events, conn, url);
	return http_send_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* A request ended: a password check it still holds is accounted for and freed. */
void web_completed(void *cls, struct MHD_Connection *conn, void **req,
		   enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)toe;
	if (*req && *req != ANNOUNCED && *req != HAS_BODY)
		guard_job_drop(*req);
	*req = NULL;
	guard_request_end(conn);
}

/*
 * libmicrohttpd's percent-decoding, except that a string with "%00" is left encoded: a decoded
 * NUL would end the C string early, and "/metrics%00.png" would be served as /metrics.
 */
size_t web_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	(void)cls;
	(void)conn;
	if (strstr(s, "%00"))
		return strlen(s);
	return MHD_http_unescape(s);
}

void web_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = 0;
	log_debug("http: %s", msg);
}

/*
 * mTLS: libmicrohttpd only requests a client certificate; require one and have GnuTLS verify
 * it against the client CA during the handshake, so unauthenticated clients never get in.
 */
void web_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
		    enum MHD_ConnectionNotificationCode code)
{
	const struct web *w = cls;
	const union MHD_ConnectionInfo *ci;

	guard_connection(w->guard, conn, socket_context, code);
	if (code != MHD_CONNECTION_NOTIFY_STARTED || !w->ca)
		return;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (ci && ci->tls_session) {
		gnutls_certificate_server_set_request(ci->tls_session, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_cert(ci->tls_session, NULL, 0);
	}
}
