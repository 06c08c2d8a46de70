// SPDX-License-Identifier: GPL-2.0-only
/* Sampled retransmits: the flows with the most of them in the window. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sampling/analyzers/analyzer.h"
#include "kernel/kernel.h"
#include "retrans.h"

struct retrans_state {
	struct topk flows;
	const struct tcp_states *states; /* main's, read-only; NULL: numbers only */
};

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
static int retrans_init(const struct kernel *k, void **state)
{
	struct retrans_state *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->states = k ? &k->states : NULL;
	*state = s;
	return 0;
}

static bool retrans_valid(const struct event *ev)
{
	return ev->retrans.kind < RT_NR_KINDS;
}

static void retrans_entry(void *state, struct event_rec *r)
{
	struct retrans_state *s = state;
	unsigned char key[TOPK_KEY];
	char num[16];

	/* The number goes to a buffer of its own: snprintf's source must not be its target. */
	snprintf(rd(r)->state, sizeof(rd(r)->state), "%s",
		 tcp_state_name(s->states, r->ev.retrans.state, num, sizeof(num)));
	flow_key(&r->ev, key);
	topk_add(&s->flows, key, sizeof(key), r, 1);
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

static void retrans_json(void *state, struct mbuf *m, double now)
{
	const struct retrans_state *s = state;
	struct topk_item top[TOPK_K];
	size_t n = topk_top(s ? &s->flows : NULL, now, false, top);

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

static void retrans_html(void *state, struct mbuf *m, double now)
{
	const struct retrans_state *s = state;
	struct topk_item top[TOPK_K];
	size_t n = topk_top(s ? &s->flows : NULL, now, false, top);

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

static void retrans_fini(void *state)
{
	struct retrans_state *s = state;

	topk_free(&s->flows);
	free(s);
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
	.fini = retrans_fini,
};
