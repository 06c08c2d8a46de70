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

/*
 * Strings as protobuf carries them: unescaped, but valid UTF-8 and, for label values (label
 * true), with what the text formats cannot carry as U+FFFD, so that a value reads the same in
 * every format. text_clean says whether s is so already; text_raw appends the made-valid copy.
 */
bool text_clean(const char *s, bool label);
void text_raw(struct mbuf *out, const char *s, bool label);

/* The protobuf side of expo.c (proto.c): a family's start and end, and its samples. */
void proto_family_begin(struct expo *e, const char *name, enum metric_type type, const char *help);
void proto_family_end(struct expo *e);
void proto_scalar(struct expo *e, const struct labels *l, double v, const struct exemplar *ex);
void proto_histogram(struct expo *e, const struct labels *l, const double *bounds,
		     const uint64_t *counts, int nbounds, double sum, const struct native_hist *nh);

#endif
