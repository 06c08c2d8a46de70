/* SPDX-License-Identifier: GPL-2.0-only */
/* settings.c: [sampling], parsed and compared, and what the BPF side of each type reads of it. */
#ifndef NETSTACK_SAMPLING_SETTINGS_H
#define NETSTACK_SAMPLING_SETTINGS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

#include "sample.h"

/*
 * The most events [sampling] max_events keeps and GET /events?max_events= asks for: the store
 * then holds about 30 MiB (sizeof(struct event_rec) each).
 */
#define EVENTS_MAX 100000u

/* [sampling], indexed by enum event_type where per type. */
struct sampling_config {
	unsigned rate[EV_NR_TYPES];	      /* <type>_sample_rate: 1 in N, 0 off */
	unsigned max_per_second[EV_NR_TYPES]; /* <type>_max_events_per_second per CPU, 0 no cap */
	unsigned burst[EV_NR_TYPES];	      /* <type>_burst */
	unsigned min_rtt_us;
	unsigned ring_bytes; /* ring_buffer_bytes */
	unsigned max_events; /* events kept for /events */
	bool to_stdout;	     /* stdout */
	unsigned stdout_per_second;
};

/* Built-in defaults of [sampling]. */
void events_defaults(struct sampling_config *c);
/* One [sampling] key; 0, or -EINVAL with err set. */
int events_set(struct sampling_config *c, const char *key, const char *value, char *err,
	       size_t errlen);
/* What the BPF side of type reads from c (all zero when the type is not sampled). */
void sampling_config_bpf(const struct sampling_config *c, enum event_type type,
			 struct sample_config *sc);
bool sampling_config_equal(const struct sampling_config *a, const struct sampling_config *b);
/* Whether any type is sampled. */
bool sampling_config_on(const struct sampling_config *c);

#endif
