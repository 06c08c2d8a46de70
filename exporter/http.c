// SPDX-License-Identifier: GPL-2.0-only
/*
 * HTTP front end: /metrics, the status page, /events and /healthz, optionally over TLS
 * (GnuTLS, with client certificates) and behind basic auth. One libmicrohttpd polling thread
 * per daemon; a reload starts a new daemon on the same listening socket, so scrapes take the
 * scrape lock.
 */
#include <arpa/inet.h>
#include <crypt.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "events_http.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "scrape.h"
#include "status.h"

#define AUTH_CACHE 16

/* One daemon and everything it serves with; freed only after its daemon stopped. */
struct web {
	struct config cfg;
	char *cert, *key, *ca; /* PEM, read at start and at each reload */
	char priorities[96];
	struct MHD_Daemon *daemon;
	int listen_fd; /* bound by http_open, until a daemon takes it over */
	/* SHA-256 of credentials bcrypt accepted (HTTP thread only; a reload starts afresh). */
	unsigned char granted[AUTH_CACHE][32];
	unsigned n_granted;
};

static struct web *active;
static struct mbuf body, gz; /* under the scrape lock */
static size_t body_hint;     /* the last body's size: the next one starts with that room */

/*
 * The response copies data, or with mode MHD_RESPMEM_MUST_FREE takes it over (then the caller
 * lets go of it only when this succeeds).
 */
static struct MHD_Response *new_response(unsigned status, const char *type, const void *data,
					 size_t len, bool gzipped, enum MHD_ResponseMemoryMode mode)
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

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status, struct MHD_Response *r)
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
	return queue(conn, status,
		     new_response(status, type, data, len, gzipped, MHD_RESPMEM_MUST_COPY));
}

/*
 * A rendered body goes to the response without a copy, and the response frees it once sent:
 * kept for the next scrape, a 10k-series body held a megabyte between scrapes for nothing.
 */
enum MHD_Result http_send_mbuf(struct MHD_Connection *conn, const char *type, struct mbuf *m,
			       bool gzipped)
{
	struct MHD_Response *r =
		new_response(MHD_HTTP_OK, type, m->data, m->len, gzipped, MHD_RESPMEM_MUST_FREE);

	if (r)
		*m = (struct mbuf){ 0 };
	return queue(conn, MHD_HTTP_OK, r);
}

enum MHD_Result http_send_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
	return send_buffer(conn, status, "text/plain; charset=utf-8", text, strlen(text), false);
}

static enum MHD_Result serve_metrics(struct MHD_Connection *conn)
{
	const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept");
	const char *enc = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept-Encoding");
	enum metric_format format = negotiate_format(accept);
	enum MHD_Result ret;

	scrape_lock();
	mbuf_reserve(&body, body_hint); /* one allocation, not a doubling series */
	scrape_render(&body, format);
	body_hint = body.len;
	if (body.oom)
		ret = http_send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	else if (accepts_gzip(enc) && !gzip_buffer(body.data, body.len, &gz) && !gz.oom)
		ret = http_send_mbuf(conn, format_content_type(format), &gz, true);
	else
		ret = http_send_mbuf(conn, format_content_type(format), &body, false);
	mbuf_free(&body);
	mbuf_free(&gz);
	scrape_unlock();
	return ret;
}

static enum MHD_Result serve_landing(struct MHD_Connection *conn, const struct config *config)
{
	struct mbuf page = { 0 };
	enum MHD_Result ret;

	scrape_lock();
	status_page(&page, config->metrics_path);
	scrape_unlock();
	ret = page.oom ? http_send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n")
		       : http_send_mbuf(conn, "text/html; charset=utf-8", &page, false);
	mbuf_free(&page);
	return ret;
}

/* Equal strings, in a time that depends on their lengths only. */
static bool same_string(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return !diff;
}

/* Whether "name:pass" hashes to one of the credentials bcrypt accepted before (d: its hash). */
static bool granted_before(const struct web *w, const char *name, const char *pass,
			   unsigned char d[32])
{
	size_t ln = strlen(name), lp = strlen(pass);
	char *both = malloc(ln + lp + 2);
	bool hit = false;

	memset(d, 0, 32);
	if (!both)
		return false;
	snprintf(both, ln + lp + 2, "%s:%s", name, pass);
	if (!gnutls_hash_fast(GNUTLS_DIG_SHA256, both, ln + lp + 1, d))
		for (unsigned i = 0; i < w->n_granted && i < AUTH_CACHE; i++)
			hit |= !gnutls_memcmp(w->granted[i], d, 32);
	explicit_bzero(both, ln + lp + 2);
	free(both);
	return hit;
}

/*
 * Basic auth against the bcrypt hashes. An unknown user costs the same bcrypt run, against a
 * configured user's hash, so the answer's timing does not tell which users exist. Credentials
 * bcrypt accepted are remembered by their SHA-256 (as Prometheus' exporter-toolkit does), so a
 * scraper pays bcrypt once, not on every scrape; a wrong password always pays it.
 */
static bool authorized(struct web *w, struct MHD_Connection *conn)
{
	const struct web_user *user = NULL;
	char *pass = NULL, *name;
	struct crypt_data *cd;
	unsigned char d[32];
	bool ok = false;

	if (!w->cfg.n_users)
		return true;
	name = MHD_basic_auth_get_username_password(conn, &pass);
	if (name && pass && granted_before(w, name, pass, d)) {
		ok = true;
	} else if (name && pass && (cd = calloc(1, sizeof(*cd)))) {
		const char *hash, *out;

		for (unsigned i = 0; i < w->cfg.n_users; i++)
			if (same_string(name, w->cfg.users[i].name))
				user = &w->cfg.users[i];
		hash = user ? user->hash : w->cfg.users[0].hash;
		out = crypt_r(pass, hash, cd);
		ok = user && out && same_string(out, hash);
		free(cd);
		if (ok)
			memcpy(w->granted[w->n_granted++ % AUTH_CACHE], d, 32);
	}
	MHD_free(name);
	MHD_free(pass);
	return ok;
}

static enum MHD_Result ask_credentials(struct MHD_Connection *conn)
{
	static const char text[] = "unauthorized\n";
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	ret = MHD_queue_basic_auth_fail_response(conn, "netstack_exporter", r);
	MHD_destroy_response(r);
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
	struct web *w = cls;

	(void)version;
	(void)upload_data;
	/* The first call announces the request: refuse other methods before reading a body. */
	if (!*req) {
		*req = &announced;
		if (!authorized(w, conn))
			return ask_credentials(conn);
		if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
			return http_send_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
					      "method not allowed\n");
		/* Likewise a GET or HEAD announcing a body: never read (up to gigabytes of) it. */
		if (declares_body(conn))
			return http_send_text(conn, MHD_HTTP_BAD_REQUEST, "GET takes no body\n");
		return MHD_YES;
	}
	/* A response may only be queued once the body is consumed: discard it, answer last. */
	if (*upload_data_size) {
		*upload_data_size = 0;
		*req = &has_body;
		return MHD_YES;
	}
	if (*req == &has_body)
		return http_send_text(conn, MHD_HTTP_BAD_REQUEST, "GET takes no body\n");
	if (!strcmp(url, w->cfg.metrics_path))
		return serve_metrics(conn);
	if (!strcmp(url, "/"))
		return serve_landing(conn, &w->cfg);
	if (!strcmp(url, "/healthz"))
		return http_send_text(conn, MHD_HTTP_OK, "ok\n");
	if (!strcmp(url, "/events") || !strncmp(url, "/events/", 8))
		return events_http(conn, url);
	return http_send_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
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

/*
 * mTLS: libmicrohttpd only requests a client certificate; require one and have GnuTLS verify
 * it against the client CA during the handshake, so unauthenticated clients never get in.
 */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	const struct web *w = cls;
	const union MHD_ConnectionInfo *ci;

	(void)socket_context;
	if (code != MHD_CONNECTION_NOTIFY_STARTED || !w->ca)
		return;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (ci && ci->tls_session) {
		gnutls_certificate_server_set_request(ci->tls_session, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_cert(ci->tls_session, NULL, 0);
	}
}

/* A whole PEM file (at most 1 MiB), NUL-terminated; NULL logged. */
static char *read_pem(const char *key, const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n = 0;

	if (f) {
		buf = malloc(1 << 20);
		n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
		if (!buf || ferror(f) || !feof(f) || !n) {
			free(buf);
			buf = NULL;
		}
		fclose(f);
	}
	if (!buf) {
		log_error("[web] %s: cannot read %s%s%s", key, path, f ? "" : ": ",
			  f ? " (empty, unreadable or over 1 MiB)" : strerror(errno));
		return NULL;
	}
	buf[n] = 0;
	return buf;
}

static void web_free(struct web *w)
{
	if (!w)
		return;
	free(w->cert);
	free(w->key);
	free(w->ca);
	free(w);
}

/* What a daemon for cfg needs, certificates read from disk; NULL logged. */
static struct web *web_new(const struct config *cfg)
{
	static const char *const versions[] = { "TLS10", "TLS11", "TLS12", "TLS13" };
	static const char *const gnutls_names[] = { "TLS1.0", "TLS1.1", "TLS1.2", "TLS1.3" };
	struct web *w = calloc(1, sizeof(*w));
	size_t used;
	int v = 0;

	if (!w) {
		log_error("out of memory");
		return NULL;
	}
	w->cfg = *cfg;
	w->listen_fd = -1;
	if (!cfg->tls_cert_file[0])
		return w;
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		log_error("[web] tls_cert_file: this libmicrohttpd has no TLS support");
		goto fail;
	}
	w->cert = read_pem("tls_cert_file", cfg->tls_cert_file);
	w->key = w->cert ? read_pem("tls_key_file", cfg->tls_key_file) : NULL;
	if (!w->key)
		goto fail;
	if (cfg->tls_client_ca_file[0] &&
	    !(w->ca = read_pem("tls_client_ca_file", cfg->tls_client_ca_file)))
		goto fail;
	/* The GnuTLS defaults with only the versions from the minimum up. */
	while (strcmp(versions[v], cfg->tls_min_version))
		v++;
	used = (size_t)snprintf(w->priorities, sizeof(w->priorities), "NORMAL:-VERS-ALL");
	for (int i = 3; i >= v; i--)
		used += (size_t)snprintf(w->priorities + used, sizeof(w->priorities) - used,
					 ":+VERS-%s", gnutls_names[i]);
	return w;
fail:
	web_free(w);
	return NULL;
}

/* Start w's daemon on cfg.listen_address, or on listen_fd when >= 0; 0 or -1 (logged). */
static int start_daemon(struct web *w, int listen_fd)
{
	/*
	 * One epoll thread: scrapes are serialised (collectors need no locks), idle or slow
	 * clients cost a file descriptor and a small pool each, never a thread. ITC lets a reload
	 * take the listening socket over (MHD_quiesce_daemon).
	 */
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
	struct MHD_OptionItem opts[8];
	struct sockaddr_storage ss;
	int n = 0;
	bool any;

	if (parse_listen_address(w->cfg.listen_address, &ss, &any)) {
		log_error("bad listen address '%s': " LISTEN_ADDRESS_FORM, w->cfg.listen_address);
		return -1;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6 | (any ? MHD_USE_DUAL_STACK : 0);
	if (listen_fd >= 0)
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL };
	else
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &ss };
	if (w->cert) {
		flags |= MHD_USE_TLS;
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, w->cert };
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, w->key };
		opts[n++] =
			(struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0, w->priorities };
	}
	if (w->ca)
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0, w->ca };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	w->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, handle, w, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_NOTIFY_CONNECTION,
		on_connection, w, MHD_OPTION_CONNECTION_LIMIT, w->cfg.max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, w->cfg.max_per_ip,
		MHD_OPTION_CONNECTION_TIMEOUT, w->cfg.timeout_seconds,
		/* The per-connection pool holds the request line and headers. */
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)w->cfg.max_request, MHD_OPTION_ARRAY,
		opts, MHD_OPTION_END);
	if (!w->daemon) {
		log_error("cannot serve on %s (address in use, not local, or bad TLS "
			  "certificate/key: see --log-level debug)",
			  w->cfg.listen_address);
		return -1;
	}
	log_info("listening on %s (%s from %s), metrics at %s, %u basic auth user(s)",
		 w->cfg.listen_address,
		 !w->cert ? "plain HTTP"
		 : w->ca  ? "mTLS"
			  : "TLS",
		 w->cert ? w->cfg.tls_min_version : "-", w->cfg.metrics_path, w->cfg.n_users);
	return 0;
}

/* The socket libmicrohttpd would make for w: SO_REUSEADDR, dual stack only for "any". */
static int listen_socket(const struct web *w)
{
	int fd, on = 1, v6only;
	struct sockaddr_storage ss;
	bool any;

	if (parse_listen_address(w->cfg.listen_address, &ss, &any)) {
		log_error("bad listen address '%s': " LISTEN_ADDRESS_FORM, w->cfg.listen_address);
		return -1;
	}
	v6only = !any;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) ||
	    (ss.ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only))) ||
	    bind(fd, (struct sockaddr *)&ss,
		 ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					  : sizeof(struct sockaddr_in)) ||
	    listen(fd, SOMAXCONN)) {
		log_error("cannot serve on %s: %s", w->cfg.listen_address, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int http_open(const struct config *cfg)
{
	struct web *w = web_new(cfg);

	if (!w || (w->listen_fd = listen_socket(w)) < 0) {
		web_free(w);
		return -1;
	}
	active = w;
	return 0;
}

int http_start(void)
{
	int fd = active->listen_fd;

	/* Handed over: libmicrohttpd closes it when it stops, or fails. */
	active->listen_fd = -1;
	return start_daemon(active, fd);
}

struct web *http_prepare(const struct config *cfg)
{
	return web_new(cfg);
}

/* Up to 1 s for the requests of a quiesced daemon to finish (idle keep-alives do not wait). */
static void drain(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *info;

	for (int i = 0; i < 100; i++) {
		info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if (!info || !info->num_connections)
			return;
		usleep(10000);
	}
}

int http_switch(struct web *w)
{
	struct web *old = active;
	MHD_socket fd;

	if (strcmp(w->cfg.listen_address, old->cfg.listen_address))
		log_warn("[web] listen_address: a new address applies at restart; still on %s",
			 old->cfg.listen_address);
	strcpy(w->cfg.listen_address, old->cfg.listen_address);
	/* The old daemon stops accepting and hands its socket over to the new one. */
	fd = MHD_quiesce_daemon(old->daemon);
	if (fd == MHD_INVALID_SOCKET) {
		log_error("reload: cannot take over the listening socket; [web] unchanged");
		web_free(w);
		return -1;
	}
	if (start_daemon(w, fd)) {
		struct MHD_Daemon *quiesced = old->daemon;

		web_free(w);
		/* Serve on as before, on the same socket. */
		if (start_daemon(old, fd))
			log_error("reload: not serving HTTP any more");
		MHD_stop_daemon(quiesced);
		return -1;
	}
	drain(old->daemon);
	MHD_stop_daemon(old->daemon);
	web_free(old);
	active = w;
	return 0;
}

void http_stop(void)
{
	if (active && active->daemon)
		MHD_stop_daemon(active->daemon);
	if (active && active->listen_fd >= 0)
		close(active->listen_fd);
	web_free(active);
	active = NULL;
	mbuf_free(&body);
	mbuf_free(&gz);
	status_free();
}
