/* SPDX-License-Identifier: GPL-2.0-only */
/* One daemon: made, started and stopped (httpweb.c). */
#ifndef NETSTACK_HTTPWEB_H
#define NETSTACK_HTTPWEB_H

#include <stddef.h>

#include "http/server.h"

/*
 * What a daemon for cfg needs, certificates read from disk and checked (httppem.c);
 * NULL with the reason in err and errno set.
 */
struct web *web_new(const struct web_config *cfg, char *err, size_t errlen);
void web_free(struct web *w);
/* Start w's daemon on listen_fd (handed over); 0, or -errno with the reason in err. */
int web_start(struct web *w, int listen_fd, char *err, size_t errlen);
/* Stop a daemon and its guard (its password checks first: libmicrohttpd needs them resumed). */
void web_stop(struct web *w);

#endif
