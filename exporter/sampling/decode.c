// SPDX-License-Identifier: GPL-2.0-only
/*
 * A raw event from the ring buffer checked and decoded, and a stored event as JSON (a line of
 * stdout and of GET /events): no I/O, no lock, no state.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "sampling/analyzers/analyzer.h"
#include "sampling/decode.h"
#include "metrics.h"

/* The layout is shared with the BPF side; a change of size is a new version. */
_Static_assert(sizeof(struct event) == 96, "struct event changed: update the fuzz corpus");

const char *event_type_name(unsigned type)
{
	return type < EV_NR_TYPES && event_descs[type] ? event_descs[type]->name : "unknown";
}

int event_decode(const void *data, size_t len, struct event *out)
{
	struct event ev;

	if (!data || len != sizeof(ev))
		return -EINVAL;
	memcpy(&ev, data, sizeof(ev));
	if (ev.size != sizeof(ev) || ev.type >= EV_NR_TYPES || !event_descs[ev.type])
		return -EINVAL;
	if (ev.flow.family != 0 && ev.flow.family != 4 && ev.flow.family != 6)
		return -EINVAL;
	if (event_descs[ev.type]->valid && !event_descs[ev.type]->valid(&ev))
		return -EINVAL;
	*out = ev;
	return 0;
}

void event_json(struct mbuf *m, const struct event_rec *r)
{
	const struct event *ev = &r->ev;

	mbuf_printf(m, "{\"seq\":%" PRIu64 ",\"time\":%.6f,\"type\":\"%s\",\"cpu\":%u", r->seq,
		    r->time, event_type_name(ev->type), ev->cpu);
	mbuf_printf(m, ",\"netns\":%u,\"ifindex\":%u", ev->netns, ev->ifindex);
	flow_json(m, ev);
	event_descs[ev->type]->json(m, r);
	mbuf_puts(m, "}");
}
