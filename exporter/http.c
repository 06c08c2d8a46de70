// SPDX-License-Identifier: GPL-2.0-only
/*
 * HTTP front end: /metrics, a landing page and /healthz. One libmicrohttpd polling thread,
 * so scrapes are serialised and the collectors need no locks.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "events_http.h"
#include "http.h"
#include "log.h"
#include "version.h"
#include "metrics.h"
#include "scrape.h"

static struct MHD_Daemon *daemon_handle;
static const struct config *config;
static struct mbuf body, gz;

static enum MHD_Result send_buffer(struct MHD_Connection *conn, unsigned status, const char *type,
				   const void *data, size_t len, bool gzipped)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (gzipped)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	if (status == MHD_HTTP_OK)
		MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
	return send_buffer(conn, status, "text/plain; charset=utf-8", text, strlen(text), false);
}

static enum MHD_Result serve_metrics(struct MHD_Connection *conn)
{
	const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept");
	const char *enc = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept-Encoding");
	enum metric_format format = negotiate_format(accept);

	scrape_render(&body, format);
	if (body.oom)
		return send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	if (accepts_gzip(enc) && !gzip_buffer(body.data, body.len, &gz) && !gz.oom)
		return send_buffer(conn, MHD_HTTP_OK, format_content_type(format), gz.data, gz.len,
				   true);
	return send_buffer(conn, MHD_HTTP_OK, format_content_type(format), body.data, body.len,
			   false);
}

static enum MHD_Result serve_landing(struct MHD_Connection *conn)
{
	struct mbuf page = { 0 };
	enum MHD_Result ret;

	mbuf_printf(&page,
		    "<!DOCTYPE html>\n<html><head><title>netstack_exporter</title></head><body>\n"
		    "<h1>netstack_exporter</h1>\n<p>Version %s (%s). <a href=\"%s\">Metrics</a> "
		    "&middot; <a href=\"/healthz\">Health</a></p>\n<h2>Collectors</h2>\n<ul>\n",
		    NETSTACK_VERSION, NETSTACK_COMMIT, config->metrics_path);
	for (struct collector *const *p = collectors; *p; p++)
		if ((*p)->enabled)
			mbuf_printf(&page, "<li><b>%s</b> (%s): %s</li>\n", (*p)->name,
				    (*p)->up ? "up" : "down", (*p)->description);
	mbuf_puts(&page, "</ul>\n</body></html>\n");
	ret = page.oom ? send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n")
		       : send_buffer(conn, MHD_HTTP_OK, "text/html; charset=utf-8", page.data,
				     page.len, false);
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

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req)
{
	static int announced, has_body;

	(void)cls;
	(void)version;
	(void)upload_data;
	/* The first call announces the request: refuse other methods before reading a body. */
	if (!*req) {
		*req = &announced;
		if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
			return send_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
		/* Likewise a GET or HEAD announcing a body: never read (up to gigabytes of) it. */
		if (declares_body(conn))
			return send_text(conn, MHD_HTTP_BAD_REQUEST, "GET takes no body\n");
		return MHD_YES;
	}
	/* A response may only be queued once the body is consumed: discard it, answer last. */
	if (*upload_data_size) {
		*upload_data_size = 0;
		*req = &has_body;
		return MHD_YES;
	}
	if (*req == &has_body)
		return send_text(conn, MHD_HTTP_BAD_REQUEST, "GET takes no body\n");
	if (!strcmp(url, config->metrics_path))
		return serve_metrics(conn);
	if (!strcmp(url, "/"))
		return serve_landing(conn);
	if (!strcmp(url, "/healthz"))
		return send_text(conn, MHD_HTTP_OK, "ok\n");
	if (!strcmp(url, "/events") || !strncmp(url, "/events/", 8))
		return events_http(conn, url);
	return send_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
}

/*
 * libmicrohttpd's percent-decoding, except that a string with "%00" is left encoded: a decoded
 * NUL would end the C string early, and "/metrics%00.png" would be served as /metrics.
 */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	(void)cls;
	(void)conn;
	if (strstr(s, "%00"))
		return strlen(s);
	return MHD_http_unescape(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = 0;
	log_debug("http: %s", msg);
}

int http_start(const struct config *cfg)
{
	/*
	 * One epoll thread: scrapes are serialised (collectors need no locks), idle or slow
	 * clients cost a file descriptor and a small pool each, never a thread.
	 */
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	struct sockaddr_storage ss;
	bool any;

	config = cfg;
	if (parse_listen_address(cfg->listen_address, &ss, &any)) {
		log_error("bad listen address '%s': " LISTEN_ADDRESS_FORM, cfg->listen_address);
		return -1;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6 | (any ? MHD_USE_DUAL_STACK : 0);
	daemon_handle = MHD_start_daemon(
		flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_SOCK_ADDR,
		(struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->max_per_ip, MHD_OPTION_CONNECTION_TIMEOUT,
		cfg->timeout_seconds,
		/* The per-connection pool holds the request line and headers. */
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->max_request, MHD_OPTION_END);
	if (!daemon_handle) {
		log_error("cannot listen on %s (address in use, or not local?)",
			  cfg->listen_address);
		return -1;
	}
	log_info("listening on %s, metrics at %s", cfg->listen_address, cfg->metrics_path);
	return 0;
}

void http_stop(void)
{
	if (daemon_handle)
		MHD_stop_daemon(daemon_handle);
	daemon_handle = NULL;
	mbuf_free(&body);
	mbuf_free(&gz);
}
