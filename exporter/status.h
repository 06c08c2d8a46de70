/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_STATUS_H
#define NETSTACK_STATUS_H

#include "metrics.h"

/* Append the landing page (a status view) to m. Called from the HTTP thread only. */
void status_page(struct mbuf *m, const char *metrics_path);
void status_free(void);

#endif
