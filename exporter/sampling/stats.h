/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The event types' counters (sampled, lost, rate-limited), read from our own copies of the
 * collectors' maps: netstack_events_*_total and the log lines of a first loss.
 */
#ifndef NETSTACK_SAMPLING_STATS_H
#define NETSTACK_SAMPLING_STATS_H

#include <stdint.h>

#include "sampling/settings.h"

struct bpf_object;
struct event_stats;
struct expo;

/* NULL with errno set: out of memory. */
struct event_stats *stats_new(void);
void stats_free(struct event_stats *s);
/* After load: the object's counters are read from now on. */
void stats_loaded(struct event_stats *s, struct bpf_object *obj, enum event_type type);
/* Its collector stops: our copy of the fd is closed. */
void stats_unloaded(struct event_stats *s, enum event_type type);
/* Log, once each, the first loss and the first refusal of each type; looks once a second. */
void stats_check_losses(struct event_stats *s, const struct sampling_config *c);
/* The families, during a scrape; lost[type] more lost than the kernel counted (stdout's). */
void stats_collect(struct event_stats *s, struct expo *e, const uint64_t lost[EV_NR_TYPES]);

#endif
