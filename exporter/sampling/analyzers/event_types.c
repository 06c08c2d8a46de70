// SPDX-License-Identifier: GPL-2.0-only
#include "sampling/analyzers/analyzer.h"

extern const struct event_desc drop_events;
extern const struct event_desc retrans_events;
extern const struct event_desc rtt_events;
extern const struct event_desc reset_events;

const struct event_desc *const event_descs[EV_NR_TYPES] = {
	[EV_DROP] = &drop_events,
	[EV_RETRANS] = &retrans_events,
	[EV_RTT] = &rtt_events,
	[EV_RESET] = &reset_events,
};
