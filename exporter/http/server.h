/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside the HTTP front end: a daemon and what it serves with (struct web) and the server main.c
 * owns (struct http), shared by http/'s files. Not for callers outside http/: they have http.h.
 */
#ifndef NETSTACK_HTTP_SERVER_H
#define NETSTACK_HTTP_SERVER_H

#include <microhttpd.h>

#include "webconfig.h"
#include "http/httpguard.h"
#include "metrics.h"

#define AUTH_CACHE 16

/* One daemon and everything it serves with; freed only after its daemon stopped. */
struct web {
	struct http *h; /* the server it serves for, from http_open or http_begin */
	struct web_config cfg;
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

#endif
