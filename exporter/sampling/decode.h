/* SPDX-License-Identifier: GPL-2.0-only */
/* decode.c: a raw event checked and decoded, an event's JSON form, a type's name. */
#ifndef NETSTACK_SAMPLING_DECODE_H
#define NETSTACK_SAMPLING_DECODE_H

#include "sampling/record.h"

struct mbuf;

/* Validate raw ring buffer bytes: 0 and *out filled, or -EINVAL (never reads past len). */
int event_decode(const void *data, size_t len, struct event *out);
/* One event as a JSON object, no newline: a line of stdout and of GET /events. */
void event_json(struct mbuf *m, const struct event_rec *r);
const char *event_type_name(unsigned type);

#endif
