/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * [sampling] stdout: events as JSON lines on standard output, at most stdout_max_per_second,
 * buffered while stdout does not take them (up to a bound; the rest are counted as lost). Used
 * by the consumer thread alone, but for the lost counts scrapes read.
 */
#ifndef NETSTACK_SAMPLING_STDOUT_H
#define NETSTACK_SAMPLING_STDOUT_H

#include <stdint.h>

#include "sampling/record.h"

struct stdout_writer;

/* NULL with errno set: out of memory. */
struct stdout_writer *stdout_writer_new(unsigned per_second);
/* Lines not yet written are dropped. */
void stdout_writer_free(struct stdout_writer *w);
/* A new stdout_max_per_second (the consumer thread stopped). */
void stdout_writer_set_rate(struct stdout_writer *w, unsigned per_second);
/* Queue r's line, or count it when over the rate or the buffer; a long backlog is written now. */
void stdout_writer_add(struct stdout_writer *w, const struct event_rec *r);
/* Write what stdout takes without blocking; the rest waits for the next call. */
void stdout_writer_flush(struct stdout_writer *w);
/* Events of type the buffer had no room for (netstack_events_lost_total), from any thread. */
uint64_t stdout_writer_lost(const struct stdout_writer *w, enum event_type type);

#endif
