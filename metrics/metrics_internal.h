/* SPDX-License-Identifier: GPL-2.0-only */
/* Shared between the library's files, not part of its interface (metrics.h). */
#ifndef NETSTACK_METRICS_INTERNAL_H
#define NETSTACK_METRICS_INTERNAL_H

#include <stdbool.h>

#include "metrics.h"

/* "-1.2345678901234567e-308" is 24 bytes; leave room for the OpenMetrics ".0". */
#define NUM_MAX 40

/*
 * v into buf[NUM_MAX] as Go's strconv.FormatFloat(v, 'g', -1, 64) does; canonical: with ".0"
 * for integral values, as OpenMetrics wants.
 */
void fmt_double(char *buf, double v, bool canonical);

/* sep, name, '=' and the value quoted and escaped as escape_label_value() does, in one go. */
void label_pair(struct mbuf *out, char sep, const char *name, const char *value);

#endif
