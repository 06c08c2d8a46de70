// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer: raw ring buffer bytes through the decoder; whatever it accepts then goes through
 * the analyzers, the store and every output the pages render from it (http/events_http.c: JSON
 * lines, top-K, HTML) and the exemplar lookup, which must never crash, leak or read out of bounds.
 */
#include <stdlib.h>
#include <string.h>

#include "http/events_http.h"
#include "sampling/events.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static struct events *evs; /* one for the whole run, as the exporter's */
	struct event_filter f = { 0 };
	struct labels l = { 0 };
	struct mbuf m = { 0 };
	struct events_stream c;
	char piece[300];
	struct event ev;
	long n;
	char buf[128];
	double t;

	if (!evs) {
		struct sampling_config c;

		events_defaults(&c);
		/* A small store keeps every run's output short, so runs stay fast. */
		if (events_set(&c, "max_events", "8", buf, sizeof(buf)))
			abort();
		evs = events_new(&c);
		if (!evs)
			abort();
	}
	if (event_decode(data, size, &ev))
		return 0;
	if (size != sizeof(ev) || ev.size != sizeof(ev) || !ev.type || ev.type >= EV_NR_TYPES)
		abort(); /* accepted something it must refuse */
	events_add(evs, &ev, ev.ts_ns / 1e9);
	/* /events as the HTTP thread reads it, in small pieces that split lines. */
	events_stream_open(evs, &c, &f, 1 + data[0] % 8);
	while ((n = events_stream_read(&c, piece, 1 + data[1] % sizeof(piece))) > 0)
		mbuf_write(&m, piece, n);
	events_stream_close(&c);
	if (n < 0)
		abort();
	events_top_json(evs, &m);
	events_status_html(evs, &m);
	/*
	 * Every byte the event carries (the interface name) comes out as valid UTF-8, and no
	 * control byte but the newlines that end lines.
	 */
	for (size_t i = 0; i < m.len;) {
		unsigned char b = m.data[i];
		int k = b < 0x80 ? 1 : utf8_char(m.data + i);

		if (k < 0 || (b < 0x20 && b != '\n') || b == 0x7f)
			abort();
		i += k;
	}
	events_exemplar(evs, EV_DROP,
			&(struct drop_series){ .reason = ev.drop.reason,
					       .family = data[0] % 4,
					       .proto = data[1] % 5 },
			&l, buf, sizeof(buf), &t);
	mbuf_free(&m);
	return 0;
}
