// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer: raw ring buffer bytes through the decoder; whatever it accepts then goes through
 * the analyzers, the store and every output (JSON lines, top-K, HTML, exemplar lookup), which
 * must never crash, leak or read out of bounds.
 */
#include <stdlib.h>
#include <string.h>

#include "../../exporter/events.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static bool ready;
	struct event_filter f = { 0 };
	struct labels l = { 0 };
	struct mbuf m = { 0 };
	struct event ev;
	char buf[128];
	double t;

	if (!ready) {
		struct sampling_config c;

		events_defaults(&c);
		/* A small store keeps every run's output short, so runs stay fast. */
		if (events_set(&c, "max_events", "8", buf, sizeof(buf)))
			abort();
		events_configure(&c);
		ready = true;
	}
	if (event_decode(data, size, &ev))
		return 0;
	if (size != sizeof(ev) || ev.size != sizeof(ev) || !ev.type || ev.type >= EV_NR_TYPES)
		abort(); /* accepted something it must refuse */
	events_add(&ev, ev.ts_ns / 1e9);
	events_json_lines(&m, &f);
	events_top_json(&m);
	events_status_html(&m);
	events_drop_exemplar(ev.drop.reason, data[0] % 4, data[1] % 5, NULL, 0, NULL, &l, buf,
			     sizeof(buf), &t);
	mbuf_free(&m);
	return 0;
}
