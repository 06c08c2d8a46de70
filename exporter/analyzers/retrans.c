// SPDX-License-Identifier: GPL-2.0-only
/* Sampled retransmits: the flows with the most of them in the window. */
#include <stdio.h>

#include "analyzer.h"
#include "kernel.h"
#include "retrans.h"

static struct topk flows;

/* A sampled retransmit's own fields, in its record's detail. */
struct retrans_detail {
	char state[24]; /* TCP state name */
};
_Static_assert(sizeof(struct retrans_detail) <= EVENT_DETAIL_SIZE, "raise EVENT_DETAIL_SIZE");

static struct retrans_detail *rd(struct event_rec *r)
{
	return (struct retrans_detail *)r->detail;
}

static const struct retrans_detail *crd(const struct event_rec *r)
{
	return (const struct retrans_detail *)r->detail;
}
static const struct tcp_states *states; /* owned by main, built before the consumer starts */

static int retrans_init(const struct kernel *k)
{
	states = &k->states;
	return 0;
}

static bool retrans_valid(const struct event *ev)
{
	return ev->retrans.kind < RT_NR_KINDS;
}

static void retrans_entry(struct event_rec *r)
{
	unsigned char key[TOPK_KEY];
	char num[16];

	/* The number goes to a buffer of its own: snprintf's source must not be its target. */
	snprintf(rd(r)->state, sizeof(rd(r)->state), "%s",
		 tcp_state_name(states, r->ev.retrans.state, num, sizeof(num)));
	flow_key(&r->ev, key);
	topk_add(&flows, key, sizeof(key), r, 1);
}

static void retrans_event_json(struct mbuf *m, const struct event_rec *r)
{
	json_str(m, "state", crd(r)->state);
	mbuf_printf(m, ",\"kind\":\"%s\",\"srtt_us\":%u,\"cwnd\":%u",
		    r->ev.retrans.kind == RT_KIND_SYNACK ? "synack" : "retransmit",
		    r->ev.retrans.srtt_us, r->ev.retrans.cwnd);
}

static void retrans_event_html(struct mbuf *m, const struct event_rec *r)
{
	escape_html(m, crd(r)->state);
	mbuf_printf(m, " srtt %u us", r->ev.retrans.srtt_us);
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
		escape_json(m, crd(r)->state);
		mbuf_printf(m, "\",\"srtt_us\":%u,\"cwnd\":%u}", r->ev.retrans.srtt_us,
			    r->ev.retrans.cwnd);
	}
	mbuf_puts(m, "]");
}

static void retrans_html(struct mbuf *m, double now)
{
	struct topk_item top[TOPK_K];
	size_t n = topk_top(&flows, now, false, top);

	mbuf_puts(m, "<h2>Top retransmitting flows</h2>\n");
	if (!n) {
		mbuf_puts(m, "<p class=\"empty\">No retransmits sampled in the last minute.</p>\n");
		return;
	}
	mbuf_puts(m, "<table class=\"top-retrans\">\n<tr>"
		     "<th>protocol</th><th>netns</th><th>source</th><th>destination</th>"
		     "<th>retransmits</th><th>state</th><th>srtt</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct event_rec *r = &top[i].e->last;

		mbuf_puts(m, "<tr>");
		flow_html(m, &r->ev);
		mbuf_printf(m, "<td>%llu</td><td>", (unsigned long long)top[i].count);
		escape_html(m, crd(r)->state);
		mbuf_printf(m, "</td><td>%u us</td></tr>\n", r->ev.retrans.srtt_us);
	}
	mbuf_puts(m, "</table>\n");
}

static void retrans_reset(void)
{
	topk_free(&flows);
	states = NULL;
}

const struct event_desc retrans_events = {
	.name = "retrans",
	.valid = retrans_valid,
	.init = retrans_init,
	.entry = retrans_entry,
	.json = retrans_event_json,
	.html = retrans_event_html,
	.top_json = retrans_json,
	.top_html = retrans_html,
	.reset = retrans_reset,
};
