// SPDX-License-Identifier: GPL-2.0-only
/* Retransmits: the flows with the most sampled retransmissions in the window. */
#include <stdio.h>

#include "analyzer.h"
#include "kernel.h"

static struct topk flows;
static struct tcp_states states;
static bool have_states;

static void retrans_entry(struct event_rec *r)
{
	unsigned char key[TOPK_KEY];

	if (!have_states)
		have_states = !tcp_states_load(&states);
	snprintf(r->state, sizeof(r->state), "%s",
		 tcp_state_name(&states, r->ev.retrans.state, r->state, sizeof(r->state)));
	flow_key(&r->ev, key);
	topk_add(&flows, key, sizeof(key), r, 1);
}

static void retrans_json(struct mbuf *m, double now)
{
	struct topk_item top[TOPK_K];
	size_t n = topk_top(&flows, now, false, top);

	mbuf_puts(m, "[");
	for (size_t i = 0; i < n; i++) {
		const struct event_rec *r = &top[i].e->last;

		mbuf_printf(m, "%s{\"retransmits\":%llu,\"netns\":%u", i ? "," : "",
			    (unsigned long long)top[i].count, r->ev.netns);
		flow_json(m, &r->ev);
		mbuf_puts(m, ",\"state\":\"");
		escape_json(m, r->state);
		mbuf_printf(m, "\",\"srtt_us\":%u,\"cwnd\":%u}", r->ev.retrans.srtt_us,
			    r->ev.retrans.cwnd);
	}
	mbuf_puts(m, "]");
}

static void retrans_html(struct mbuf *m, double now)
{
	struct topk_item top[TOPK_K];
	size_t n = topk_top(&flows, now, false, top);

	mbuf_puts(m, "<h2>Top retransmitting flows</h2>\n<table class=\"top-retrans\">\n<tr>"
		     "<th>protocol</th><th>netns</th><th>source</th><th>destination</th>"
		     "<th>retransmits</th><th>state</th><th>srtt</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct event_rec *r = &top[i].e->last;

		mbuf_puts(m, "<tr>");
		flow_html(m, &r->ev);
		mbuf_printf(m, "<td>%llu</td><td>", (unsigned long long)top[i].count);
		escape_html(m, r->state);
		mbuf_printf(m, "</td><td>%u us</td></tr>\n", r->ev.retrans.srtt_us);
	}
	mbuf_puts(m, "</table>\n");
}

static void retrans_reset(void)
{
	topk_free(&flows);
	if (have_states)
		tcp_states_free(&states);
	have_states = false;
}

const struct analyzer retrans_analyzer = {
	.name = "retrans",
	.entry = { [EV_RETRANS] = retrans_entry },
	.top_json = retrans_json,
	.top_html = retrans_html,
	.reset = retrans_reset,
};
