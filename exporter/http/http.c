// SPDX-License-Identifier: GPL-2.0-only
/*
 * HTTP front end: /metrics, the status page, /events and /healthz, optionally over TLS
 * (GnuTLS, with client certificates) and behind basic auth. One libmicrohttpd polling thread
 * per daemon; a reload starts a new daemon on a duplicate of the listening socket before the
 * old one stops, so scrapes take the scrape lock.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/events_http.h"
#include "http/http.h"
#include "http/httpguard.h"
#include "http/httpreply.h"
#include "base/log.h"
#include "metrics.h"
#include "scrape.h"
#include "http/status.h"

#define AUTH_CACHE 16

/* One daemon and everything it serves with; freed only after its daemon stopped. */
struct web {
	struct http *h; /* the server it serves for, from http_open or http_begin */
	struct config cfg;
	char *cert, *key, *ca; /* PEM, read at start and at each reload */
	char priorities[96];
	struct MHD_Daemon *daemon;
	struct guard *guard; /* daemon's; a daemon's connections find theirs themselves */
	int listen_fd;	     /* bound by http_open, until a daemon takes it over */
	/* SHA-256 of credentials bcrypt accepted (HTTP thread only; a reload starts afresh). */
	unsigned char granted[AUTH_CACHE][32];
	unsigned n_granted;
};

/* The server main.c owns: the daemon serving, and what every daemon shares. */
struct http {
	/* retiring: the previous daemon, while a reload replaces it */
	struct web *active, *retiring;
	struct guard_pool *guards;
	struct mbuf body, gz; /* under the scrape lock */
	size_t body_hint;     /* the last body's size: the next one starts with that room */
	/* main's: what /metrics, the status page and /events show */
	struct scrape *scrape;
	const struct status *status;
	struct events *events;
};

/* What a request's context points to once its headers were seen, or else a password check. */
static const char markers[2];
#define ANNOUNCED ((void *)&markers[0])
#define HAS_BODY ((void *)&markers[1])

static enum MHD_Result serve_metrics(struct http *h, struct MHD_Connection *conn)
{
	const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept");
	const char *enc = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept-Encoding");
	enum metric_format format = negotiate_format(accept);
	struct guard_stats gs;
	enum MHD_Result ret;

	scrape_lock(h->scrape);
	mbuf_reserve(&h->body, h->body_hint); /* one allocation, not a doubling series */
	guard_stats(h->guards, &gs);
	scrape_render(h->scrape, &h->body, format, &gs);
	h->body_hint = h->body.len;
	if (h->body.oom)
		ret = http_send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	else if (accepts_gzip(enc) && !gzip_buffer(h->body.data, h->body.len, &h->gz) && !h->gz.oom)
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
 * scraper pays bcrypt once, not on every scrape. Others go to the guard's worker thread (the
 * connection waits suspended, the HTTP thread serves on), within a failure budget per address.
 */
static enum guard_auth authorized(struct web *w, struct MHD_Connection *conn,
				  struct guard_job **job, unsigned *retry_after)
{
	const struct web_user *user = NULL;
	enum guard_auth ret = GUARD_AUTH_FAIL;
	char *pass = NULL, *name;
	unsigned char d[32];

	if (!w->cfg.n_users)
		return GUARD_AUTH_OK;
	name = MHD_basic_auth_get_username_password(conn, &pass);
	if (!name || !pass) {
		guard_job_drop(*job);
		*job = NULL;
	} else if (!*job && granted_before(w, name, pass, d)) {
		ret = GUARD_AUTH_OK;
	} else {
		for (unsigned i = 0; i < w->cfg.n_users; i++)
			if (same_string(name, w->cfg.users[i].name))
				user = &w->cfg.users[i];
		ret = guard_auth(w->guard, conn, job, pass,
				 user ? user->hash : w->cfg.users[0].hash, user, retry_after);
		if (ret == GUARD_AUTH_OK) {
			granted_before(w, name, pass, d);
			memcpy(w->granted[w->n_granted++ % AUTH_CACHE], d, 32);
		}
	}
	MHD_free(name);
	MHD_free(pass);
	return ret;
}

/* 429 or 503 with Retry-After: the client may try again later. */
static enum MHD_Result try_later(struct MHD_Connection *conn, unsigned status, unsigned seconds)
{
	const char *text = status == MHD_HTTP_TOO_MANY_REQUESTS ? "too many failed logins\n"
								: "busy checking passwords\n";
	struct MHD_Response *r = http_response(status, "text/plain; charset=utf-8", text,
					       strlen(text), false, MHD_RESPMEM_PERSISTENT);
	char v[16];

	snprintf(v, sizeof(v), "%u", seconds);
	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
	return http_queue(conn, status, r);
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
	struct web *w = cls;

	(void)version;
	(void)upload_data;
	/*
	 * The first call announces the request: refuse other methods before reading a body. A
	 * password check suspends the connection; then the handler sees the same call again.
	 */
	if (!*req || (*req != ANNOUNCED && *req != HAS_BODY)) {
		struct guard_job *job = *req;
		unsigned retry = 1;

		if (!job)
			guard_request_begin(conn);
		switch (authorized(w, conn, &job, &retry)) {
		case GUARD_AUTH_PENDING:
			*req = job;
			return MHD_YES;
		case GUARD_AUTH_OK:
			break;
		case GUARD_AUTH_FAIL:
			*req = ANNOUNCED;
			return ask_credentials(conn);
		case GUARD_AUTH_LIMITED:
			*req = ANNOUNCED;
			return try_later(conn, MHD_HTTP_TOO_MANY_REQUESTS, retry);
		case GUARD_AUTH_BUSY:
			*req = ANNOUNCED;
			return try_later(conn, MHD_HTTP_SERVICE_UNAVAILABLE, retry);
		}
		*req = ANNOUNCED;
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
static void completed(void *cls, struct MHD_Connection *conn, void **req,
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

	guard_connection(w->guard, conn, socket_context, code);
	if (code != MHD_CONNECTION_NOTIFY_STARTED || !w->ca)
		return;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (ci && ci->tls_session) {
		gnutls_certificate_server_set_request(ci->tls_session, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_cert(ci->tls_session, NULL, 0);
	}
}

/* A whole PEM file (at most 1 MiB), NUL-terminated; NULL with the reason in err. */
static char *read_pem(const char *key, const char *path, char *err, size_t errlen)
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
		snprintf(err, errlen, "[web] %s: cannot read %s%s%s", key, path, f ? "" : ": ",
			 f ? " (empty, unreadable or over 1 MiB)" : strerror(errno));
		return NULL;
	}
	buf[n] = 0;
	return buf;
}

static gnutls_datum_t datum(const char *pem)
{
	return (gnutls_datum_t){ (unsigned char *)pem, (unsigned)strlen(pem) };
}

/* Whether the certificate chain and the key parse; 0, or -1 with the reason in err. */
static int parse_pem(const struct web *w, char *err, size_t errlen)
{
	gnutls_datum_t cert = datum(w->cert), key = datum(w->key);
	gnutls_x509_crt_t *crts = NULL;
	gnutls_x509_privkey_t pk;
	unsigned n = 0;
	int ret;

	ret = gnutls_x509_crt_list_import2(&crts, &n, &cert, GNUTLS_X509_FMT_PEM, 0);
	for (unsigned i = 0; i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	if (ret < 0) {
		snprintf(err, errlen, "[web] tls_cert_file %s: %s", w->cfg.tls_cert_file,
			 gnutls_strerror(ret));
		return -1;
	}
	ret = gnutls_x509_privkey_init(&pk);
	if (ret >= 0) {
		ret = gnutls_x509_privkey_import2(pk, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
		gnutls_x509_privkey_deinit(pk);
	}
	if (ret < 0) {
		snprintf(err, errlen, "[web] tls_key_file %s: %s", w->cfg.tls_key_file,
			 gnutls_strerror(ret));
		return -1;
	}
	return 0;
}

/*
 * Load w's certificate, key, client CA and priorities into scratch GnuTLS objects, as
 * libmicrohttpd will: a pair that does not parse or does not match is found here, before the
 * running daemon is touched. 0, or -1 with the reason in err.
 */
static int check_tls(const struct web *w, char *err, size_t errlen)
{
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t cert = datum(w->cert), key = datum(w->key), ca;
	gnutls_priority_t prio;
	const char *pos = NULL;
	int ret;

	/*
	 * Each file parsed on its own first: a clearer reason, and GnuTLS 3.7 leaks in
	 * gnutls_certificate_set_x509_key_mem2 when the certificate does not parse.
	 */
	if (parse_pem(w, err, errlen))
		return -1;
	ret = gnutls_certificate_allocate_credentials(&cred);
	if (ret < 0) {
		snprintf(err, errlen, "[web] TLS: %s", gnutls_strerror(ret));
		return -1;
	}
	ret = gnutls_certificate_set_x509_key_mem2(cred, &cert, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (ret < 0)
		snprintf(err, errlen, "[web] tls_cert_file %s with tls_key_file %s: %s",
			 w->cfg.tls_cert_file, w->cfg.tls_key_file, gnutls_strerror(ret));
	if (ret >= 0 && w->ca) {
		ca = datum(w->ca);
		ret = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
		if (ret <= 0) {
			snprintf(err, errlen, "[web] tls_client_ca_file %s: %s",
				 w->cfg.tls_client_ca_file,
				 ret ? gnutls_strerror(ret) : "no certificate in it");
			ret = -1;
		}
	}
	gnutls_certificate_free_credentials(cred);
	if (ret < 0)
		return -1;
	ret = gnutls_priority_init(&prio, w->priorities, &pos);
	if (ret < 0) {
		snprintf(err, errlen, "[web] tls_min_version: %s", gnutls_strerror(ret));
		return -1;
	}
	gnutls_priority_deinit(prio);
	return 0;
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

/* What a daemon for cfg needs, certificates read from disk and checked; NULL with err set. */
static struct web *web_new(const struct config *cfg, char *err, size_t errlen)
{
	static const char *const versions[] = { "TLS10", "TLS11", "TLS12", "TLS13" };
	static const char *const gnutls_names[] = { "TLS1.0", "TLS1.1", "TLS1.2", "TLS1.3" };
	struct web *w = calloc(1, sizeof(*w));
	size_t used;
	int v = 0;

	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->cfg = *cfg;
	w->listen_fd = -1;
	if (!cfg->tls_cert_file[0])
		return w;
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		snprintf(err, errlen, "[web] tls_cert_file: this libmicrohttpd has no TLS support");
		goto fail;
	}
	w->cert = read_pem("tls_cert_file", cfg->tls_cert_file, err, errlen);
	w->key = w->cert ? read_pem("tls_key_file", cfg->tls_key_file, err, errlen) : NULL;
	if (!w->key)
		goto fail;
	if (cfg->tls_client_ca_file[0] &&
	    !(w->ca = read_pem("tls_client_ca_file", cfg->tls_client_ca_file, err, errlen)))
		goto fail;
	/* The GnuTLS defaults with only the versions from the minimum up. */
	while (strcmp(versions[v], cfg->tls_min_version))
		v++;
	used = (size_t)snprintf(w->priorities, sizeof(w->priorities), "NORMAL:-VERS-ALL");
	for (int i = 3; i >= v; i--)
		used += (size_t)snprintf(w->priorities + used, sizeof(w->priorities) - used,
					 ":+VERS-%s", gnutls_names[i]);
	if (check_tls(w, err, errlen))
		goto fail;
	return w;
fail:
	web_free(w);
	return NULL;
}

/* File descriptors open now. */
static unsigned open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	if (!d)
		return 256;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/*
 * max_connections within RLIMIT_NOFILE, whose soft limit is raised (up to the hard one) when
 * it is too low, as Go programs do at start: past it accept() fails and the daemon stops
 * accepting for a while, the scraper included. What still does not fit is served less.
 */
static unsigned fit_nofile(unsigned want)
{
	/* TLS files, pods' API connections, a reload's new maps, the new daemon's epoll. */
	rlim_t base = open_fds() + 64, headroom = guard_mhd_limit(0);
	rlim_t need = base + guard_mhd_limit(want), fit = 1;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need)
		return want;
	if (rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
		if (!setrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur >= need)
			return want;
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur > base + headroom + 1)
		fit = rl.rlim_cur - base - headroom;
	log_warn("[web] max_connections: %u do not fit in the open file limit (%llu); serving %u",
		 want, (unsigned long long)rl.rlim_cur, (unsigned)fit);
	return (unsigned)fit;
}

/* Stop a daemon and its guard (its password checks first: libmicrohttpd needs them resumed). */
static void stop_daemon(struct MHD_Daemon *d, struct guard *g)
{
	guard_quiesce(g);
	MHD_stop_daemon(d);
	guard_free(g);
}

/* Start w's daemon on cfg.listen_address, or on listen_fd when >= 0; 0 or -1 (logged). */
static int start_daemon(struct web *w, int listen_fd)
{
	/*
	 * One epoll thread: scrapes are serialised (collectors need no locks), idle or slow
	 * clients cost a file descriptor and a small pool each, never a thread. ITC lets a reload
	 * take the listening socket over (MHD_quiesce_daemon); suspending lets a connection wait
	 * for its password check while the thread serves others.
	 */
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC |
			 MHD_ALLOW_SUSPEND_RESUME;
	unsigned max_conns = fit_nofile(w->cfg.max_connections);
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
	w->guard = guard_new(w->h->guards, max_conns);
	if (!w->guard) {
		log_error("out of memory");
		return -1;
	}
	w->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, handle, w, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_NOTIFY_CONNECTION,
		on_connection, w, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
		MHD_OPTION_CONNECTION_LIMIT, guard_mhd_limit(max_conns),
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, w->cfg.max_per_ip,
		MHD_OPTION_CONNECTION_TIMEOUT, w->cfg.timeout_seconds,
		/* The per-connection pool holds the request line and headers. */
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)w->cfg.max_request, MHD_OPTION_ARRAY,
		opts, MHD_OPTION_END);
	if (!w->daemon) {
		guard_free(w->guard);
		w->guard = NULL;
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

struct http *http_open(const struct config *cfg, struct scrape *sc, const struct status *status,
		       struct events *evs)
{
	char err[512] = "";
	struct http *h = calloc(1, sizeof(*h));
	struct web *w = NULL;

	if (!h || !(h->guards = guard_pool_new()))
		snprintf(err, sizeof(err), "out of memory");
	else
		w = web_new(cfg, err, sizeof(err));
	if (!w)
		log_error("%s", err);
	if (!w || (w->listen_fd = listen_socket(w)) < 0) {
		web_free(w);
		if (h)
			guard_pool_free(h->guards);
		free(h);
		return NULL;
	}
	w->h = h;
	h->scrape = sc;
	h->status = status;
	h->events = evs;
	h->active = w;
	return h;
}

int http_start(struct http *h)
{
	int fd = h->active->listen_fd;

	/* Handed over: libmicrohttpd closes it when it stops, or fails. */
	h->active->listen_fd = -1;
	return start_daemon(h->active, fd);
}

struct web *http_prepare(const struct config *cfg, char *err, size_t errlen)
{
	return web_new(cfg, err, errlen);
}

void http_discard(struct web *w)
{
	web_free(w);
}

/* Close fd unless libmicrohttpd did: only while it still is the socket with inode ino. */
static void close_if_ours(int fd, ino_t ino)
{
	struct stat st;

	if (!fstat(fd, &st) && S_ISSOCK(st.st_mode) && st.st_ino == ino)
		close(fd);
}

int http_begin(struct http *h, struct web *w, char *err, size_t errlen)
{
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(h->active->daemon, MHD_DAEMON_INFO_LISTEN_FD);
	struct stat st;
	int fd;

	w->h = h;
	strcpy(w->cfg.listen_address, h->active->cfg.listen_address);
	/*
	 * The new daemon gets a duplicate of the listening socket: libmicrohttpd closes what it
	 * was handed when it fails to start, and the running daemon must keep its own.
	 */
	fd = info ? fcntl(info->listen_fd, F_DUPFD_CLOEXEC, 3) : -1;
	/* Non-blocking (shared by both): one daemon's accept must never wait for the other's. */
	if (fd < 0 || fstat(fd, &st) || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)) {
		snprintf(err, errlen, "[web] cannot duplicate the listening socket: %s",
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		web_free(w);
		return -1;
	}
	if (start_daemon(w, fd)) {
		snprintf(err, errlen, "[web] cannot start serving with it (see --log-level debug)");
		close_if_ours(fd, st.st_ino);
		web_free(w);
		return -1;
	}
	/* Both accept on the socket until http_retire. */
	h->retiring = h->active;
	h->active = w;
	return 0;
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

void http_retire(struct http *h)
{
	struct web *old = h->retiring;
	MHD_socket fd;

	if (!old)
		return;
	h->retiring = NULL;
	/* Stop accepting; the socket (its own duplicate) is closed once its thread is gone. */
	fd = MHD_quiesce_daemon(old->daemon);
	drain(old->daemon);
	stop_daemon(old->daemon, old->guard);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	web_free(old);
}

void http_stop(struct http *h)
{
	if (!h)
		return;
	http_retire(h);
	if (h->active->daemon)
		stop_daemon(h->active->daemon, h->active->guard);
	if (h->active->listen_fd >= 0)
		close(h->active->listen_fd);
	web_free(h->active);
	guard_pool_free(h->guards); /* after every daemon's guard */
	mbuf_free(&h->body);
	mbuf_free(&h->gz);
	free(h);
}
