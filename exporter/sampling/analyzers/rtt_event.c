// SPDX-License-Identifier: GPL-2.0-only
/* Sampled RTTs: the slowest flows in the window (samples above min_rtt_us only reach here). */
#include <errno.h>
#include <stdlib.h>

#include "sampling/analyzers/analyzer.h"

static int rtt_init(const struct kernel *k, void **state)
{
	(void)k;
	*state = calloc(1, sizeof(struct topk)); /* the flows */
	return *state ? 0 : -ENOMEM;
}

static void rtt_entry(void *flows, struct event_rec *r)
{
	unsigned char key[TOPK_KEY];

	flow_key(&r->ev, key);
	topk_add(flows, key, sizeof(key), r, r->ev.rtt.rtt_us);
}

static void rtt_event_json(struct mbuf *m, const struct event_rec *r)
{
	mbuf_printf(m, ",\"rtt_us\":%u,\"srtt_us\":%u", r->ev.rtt.rtt_us, r->ev.rtt.srtt_us);
}

static void rtt_event_html(struct mbuf *m, const struct event_rec *r)
{
	mbuf_printf(m, "rtt %u us", r->ev.rtt.rtt_us);
}

static void rtt_json(void *flows, struct mbuf *m, double now)
{
	struct topk_item top[TOPK_K];
	size_t n = topk_top(flows, now, true, top);

	mbuf_puts(m, "[");
	for (size_t i = 0; i < n; i++) {
		const struct event_rec *r = &top[i].e->last;

		mbuf_printf(m, "%s{\"max_rtt_us\":%u,\"samples\":%llu,\"netns\":%u", i ? "," : "",
			    top[i].max, (unsigned long long)top[i].count, r->ev.netns);
		flow_json(m, &r->ev);
		mbuf_printf(m, ",\"last_rtt_us\":%u,\"srtt_us\":%u}", r->ev.rtt.rtt_us,
			    r->ev.rtt.srtt_us);
	}
	mbuf_puts(m, "]");
}

static void rtt_html(void *flows, struct mbuf *m, double now)
{
	struct topk_item top[TOPK_K];
	size_t n = topk_top(flows, now, true, top);

	mbuf_puts(m, "<h2>Slowest flows (RTT)</h2>\n");
	if (!n) {
		mbuf_puts(m, "<p class=\"empty\">No RTT samples in the last minute.</p>\n");
		return;
	}
	mbuf_puts(m, "<table class=\"top-rtt\">\n<tr>"
		     "<th>protocol</th><th>netns</th><th>source</th><th>destination</th>"
		     "<th>max RTT</th><th>samples</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		mbuf_puts(m, "<tr>");
		flow_html(m, &top[i].e->last.ev);
		mbuf_printf(m, "<td>%.1f ms</td><td>%llu</td></tr>\n", top[i].max / 1000.0,
			    (unsigned long long)top[i].count);
	}
	mbuf_puts(m, "</table>\n");
}

static void rtt_fini(void *flows)
{
	topk_free(flows);
	free(flows);
}

const struct event_desc rtt_events = {
	.name = "rtt",
	.init = rtt_init,
	.entry = rtt_entry,
	.json = rtt_event_json,
	.html = rtt_event_html,
	.top_json = rtt_json,
	.top_html = rtt_html,
	.fini = rtt_fini,
};
