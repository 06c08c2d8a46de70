/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside the HTTP front end: a daemon and what it serves with (struct web), the server main.c
 * owns (struct http), and what http.c, httpreload.c, httpweb.c, httppem.c, httproute.c and
 * httpauth.c share. Not for callers outside http/: they have http.h.
 */
#ifndef NETSTACK_HTTPWEB_H
#define NETSTACK_HTTPWEB_H

#include <microhttpd.h>
#include <stdarg.h>

#include "config.h"
#include "http/httpguard.h"
#include "metrics.h"

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

/*
 * httpweb.c: what a daemon for cfg needs, certificates read from disk and checked (httppem.c);
 * NULL with the reason in err and errno set.
 */
struct web *web_new(const struct config *cfg, char *err, size_t errlen);
void web_free(struct web *w);
/* Start w's daemon on listen_fd (handed over); 0, or -errno with the reason in err. */
int web_start(struct web *w, int listen_fd, char *err, size_t errlen);
/* Stop a daemon and its guard (its password checks first: libmicrohttpd needs them resumed). */
void web_stop(struct web *w);

/*
 * httppem.c, no I/O: the GnuTLS priorities for min_version ("TLS10".."TLS13", checked by the
 * configuration) into buf; then whether w's certificate, key, client CA and priorities load as
 * libmicrohttpd will load them: 0, or -EINVAL (-ENOMEM) with the reason in err.
 */
void tls_priorities(char *buf, size_t len, const char *min_version);
int tls_check(const struct web *w, char *err, size_t errlen);

/*
 * httpauth.c: basic auth of a request to w (GUARD_AUTH_OK without users), and the answer to a
 * refused one (401, or 429 or 503 with Retry-After: retry seconds).
 */
enum guard_auth web_authorized(struct web *w, struct MHD_Connection *conn, struct guard_job **job,
			       unsigned *retry_after);
enum MHD_Result web_refuse(struct MHD_Connection *conn, enum guard_auth why, unsigned retry);

/* httproute.c: libmicrohttpd's callbacks of a daemon; cls is its struct web where one is. */
enum MHD_Result web_handle(void *cls, struct MHD_Connection *conn, const char *url,
			   const char *method, const char *version, const char *upload_data,
			   size_t *upload_data_size, void **req);
void web_completed(void *cls, struct MHD_Connection *conn, void **req,
		   enum MHD_RequestTerminationCode toe);
size_t web_unescape(void *cls, struct MHD_Connection *conn, char *s);
void web_log(void *cls, const char *fmt, va_list ap);
void web_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
		    enum MHD_ConnectionNotificationCode code);

#endif
