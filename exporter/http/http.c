// SPDX-License-Identifier: GPL-2.0-only
/*
 * HTTP front end: /metrics, the status page, /events and /healthz, optionally over TLS
 * (GnuTLS, with client certificates) and behind basic auth. One libmicrohttpd polling thread
 * per daemon; a reload starts a new daemon on a duplicate of the listening socket before the
 * old one stops, so scrapes take the scrape lock. Here the server's life: the listening
 * socket, the first daemon's start, the stop. A daemon is made, started and stopped in
 * httpweb.c, its TLS settings checked in httppem.c, its requests routed in httproute.c and
 * their passwords checked in httpauth.c; a reload is done in httpreload.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "base/parse.h"
#include "http/http.h"
#include "http/httpreload.h"
#include "http/httpweb.h"

/* The socket libmicrohttpd would make for w: SO_REUSEADDR, dual stack only for "any". */
static int listen_socket(const struct web *w, char *err, size_t errlen)
{
	int fd, on = 1, v6only, ret;
	struct sockaddr_storage ss;
	bool any;

	if (parse_listen_address(w->cfg.listen_address, &ss, &any)) {
		snprintf(err, errlen, "bad listen address '%s': " LISTEN_ADDRESS_FORM,
			 w->cfg.listen_address);
		return -EINVAL;
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
		ret = -errno;
		snprintf(err, errlen, "cannot serve on %s: %s", w->cfg.listen_address,
			 strerror(-ret));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	return fd;
}

struct http *http_open(const struct web_config *cfg, struct scrape *sc, const struct status *status,
		       struct events *evs)
{
	char err[512] = "";
	struct http *h = calloc(1, sizeof(*h));
	struct web *w = NULL;
	int ret = -ENOMEM;

	if (!h || !(h->guards = guard_pool_new()))
		snprintf(err, sizeof(err), "out of memory");
	else if (!(w = web_new(cfg, err, sizeof(err))))
		ret = errno ? -errno : -EINVAL;
	else
		ret = w->listen_fd = listen_socket(w, err, sizeof(err));
	if (!w || ret < 0) {
		log_error("%s", err);
		web_free(w);
		if (h)
			guard_pool_free(h->guards);
		free(h);
		errno = -ret;
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
	int fd = h->active->listen_fd, ret;
	char err[512];

	/* Handed over: libmicrohttpd closes it when it stops, or fails. */
	h->active->listen_fd = -1;
	ret = web_start(h->active, fd, err, sizeof(err));
	if (ret)
		log_error("%s", err);
	return ret;
}

void http_stop(struct http *h)
{
	if (!h)
		return;
	http_retire(h);
	if (h->active->daemon)
		web_stop(h->active);
	if (h->active->listen_fd >= 0)
		close(h->active->listen_fd);
	web_free(h->active);
	guard_pool_free(h->guards); /* after every daemon's guard */
	mbuf_free(&h->body);
	mbuf_free(&h->gz);
	free(h);
}
