/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A sampled event as the store keeps it, and the series keys exemplars are looked up by: the
 * types every part of sampling/ and its analyzers share (no functions, so it sits below all).
 */
#ifndef NETSTACK_SAMPLING_RECORD_H
#define NETSTACK_SAMPLING_RECORD_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "sample.h"

/* Room for any event type's own fields in its record (a drop's are the largest). */
#define EVENT_DETAIL_SIZE 168

/* One decoded event plus what its type's analyzer found out about it. */
struct event_rec {
	struct event ev;
	uint64_t seq;	    /* 1, 2, ... in arrival order */
	double time;	    /* Unix time in seconds */
	const char *reason; /* what GET /events?reason= matches: a drop's reason name, or NULL */
	/* The type's own fields, written and read by its descriptor (analyzers/<type>.c) only. */
	_Alignas(max_align_t) unsigned char detail[EVENT_DETAIL_SIZE];
};

/*
 * The drop type's series (analyzers/drop_event.c): reason, family and protocol (drops.h enums) and,
 * when non-NULL/non-zero, function, netns and interface.
 */
struct drop_series {
	uint32_t reason;
	uint8_t family, proto;
	const char *function;
	uint32_t netns;
	const char *ifname;
};

/*
 * The reset type's series (analyzers/reset_event.c), of resets sent: reason (RS_REASON_NONE on kernels
 * without one), family and state (resets.h) and, when non-zero, netns.
 */
struct reset_series {
	uint32_t reason;
	uint8_t family, state;
	uint32_t netns;
};

#endif
