// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sampled resets: the reason's name (from the running kernel), the socket's state, the local
 * endpoints resetting or reset most often, and the latest event of each sent-reset series as
 * the exemplar of its counter.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/analyzers/analyzer.h"
#include "kernel/kernel.h"
#include "resets.h"

struct reset_state {
	/* main's, read-only, outliving the state; NULL: numbers */
	const struct tcp_states *states;
	const struct reason_table *reasons; /* NULL too where the kernel gives none */
	struct topk endpoints;
	struct exemplars exemplars; /* of sent resets */
};

/* A sampled reset's own fields, in its record's detail. */
struct reset_detail {
	char state[24]; /* TCP state name, or "__none__" */
};
_Static_assert(sizeof(struct reset_detail) <= EVENT_DETAIL_SIZE, "raise EVENT_DETAIL_SIZE");

static struct reset_detail *rd(struct event_rec *r)
{
	return (struct reset_detail *)r->detail;
}

static const struct reset_detail *crd(const struct event_rec *r)
{
	return (const struct reset_detail *)r->detail;
}

static int reset_init(const struct kernel *k, void **state)
{
	struct reset_state *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	exemplars_init(&s->exemplars);
	if (k) {
		s->states = &k->states;
		if (k->features.tcp_send_reset_args >= 3 && !k->rst_reasons_err)
			s->reasons = &k->rst_reasons;
	}
	*state = s;
	return 0;
}

static bool reset_valid(const struct event *ev)
{
	return ev->reset.dir <= RS_DIR_RECEIVED && ev->reset.family < RS_NR_FAMILIES;
}

static bool same_series(const struct event_rec *a, const struct event_rec *b)
{
	return a->ev.reset.dir == b->ev.reset.dir && a->ev.reset.reason == b->ev.reset.reason &&
	       a->ev.reset.family == b->ev.reset.family && a->ev.reset.state == b->ev.reset.state &&
	       a->ev.netns == b->ev.netns;
}

static void reset_entry(void *state, struct event_rec *r)
{
	struct reset_state *s = state;
	const struct event *ev = &r->ev;
	/*
	 * Both addresses and the port of the service: the local one for resets sent (a scan, a
	 * dead listener, a crashing server is one key), the peer's for resets received.
	 */
	struct {
		uint32_t netns, reason;
		uint8_t dir, family;
		uint16_t port;
		uint8_t saddr[16], daddr[16];
	} key;
	char num[16];

	_Static_assert(sizeof(key) <= TOPK_KEY, "raise TOPK_KEY");
	memset(&key, 0, sizeof(key));
	key.netns = ev->netns;
	key.reason = ev->reset.reason;
	key.dir = ev->reset.dir;
	key.family = ev->flow.family;
	key.port = ev->reset.dir == RS_DIR_SENT ? ev->flow.sport : ev->flow.dport;
	memcpy(key.saddr, ev->flow.saddr, 16);
	memcpy(key.daddr, ev->flow.daddr, 16);
	if (ev->reset.state == RS_STATE_NONE)
		snprintf(rd(r)->state, sizeof(rd(r)->state), "__none__");
	else
		snprintf(rd(r)->state, sizeof(rd(r)->state), "%s",
			 tcp_state_name(s->states, ev->reset.state, num, sizeof(num)));
	/* Only names with a lifetime: a number is rendered from the event itself. */
	if (s->reasons && ev->reset.reason != RS_REASON_NONE) {
		const char *name = reason_name(s->reasons, ev->reset.reason, num, sizeof(num));

		r->reason = name == num ? NULL : name;
	}
	topk_add(&s->endpoints, &key, sizeof(key), r, 1);
	if (ev->reset.dir == RS_DIR_SENT)
		exemplars_remember(&s->exemplars, r, same_series);
}

/* The reason as the counters render it. */
static const char *reason_of(const struct event_rec *r, char *buf, size_t len)
{
	if (r->ev.reset.reason == RS_REASON_NONE)
		return r->ev.reset.dir == RS_DIR_SENT ? "__unknown__" : "";
	if (r->reason)
		return r->reason;
	snprintf(buf, len, "%u", r->ev.reset.reason);
	return buf;
}

static const char *dir_name(const struct event_rec *r)
{
	return r->ev.reset.dir == RS_DIR_SENT ? "sent" : "received";
}

static void reset_event_json(struct mbuf *m, const struct event_rec *r)
{
	char buf[16], flags[40];

	json_str(m, "direction", dir_name(r));
	json_str(m, "reason", reason_of(r, buf, sizeof(buf)));
	json_str(m, "state", crd(r)->state);
	/* The segment the reset answered (passive resets), or "". */
	tcp_flag_names(flags, r->ev.flow.tcp_flags);
	json_str(m, "tcp_flags", flags);
}

static void reset_event_html(struct mbuf *m, const struct event_rec *r)
{
	char buf[16];

	mbuf_printf(m, "%s ", dir_name(r));
	escape_html(m, reason_of(r, buf, sizeof(buf)));
	mbuf_puts(m, " in ");
	escape_html(m, crd(r)->state);
}

static void reset_json(void *state, struct mbuf *m, double now)
{
	const struct reset_state *s = state;
	struct topk_item top[TOPK_K];
	size_t n = topk_top(s ? &s->endpoints : NULL, now, false, top);
	char buf[16];

	mbuf_puts(m, "[");
	for (size_t i = 0; i < n; i++) {
		const struct event_rec *r = &top[i].e->last;

		mbuf_printf(m, "%s{\"resets\":%llu,\"netns\":%u", i ? "," : "",
			    (unsigned long long)top[i].count, r->ev.netns);
		flow_json(m, &r->ev);
		json_str(m, "direction", dir_name(r));
		json_str(m, "reason", reason_of(r, buf, sizeof(buf)));
		json_str(m, "state", crd(r)->state);
		mbuf_puts(m, "}");
	}
	mbuf_puts(m, "]");
}

static void reset_html(void *state, struct mbuf *m, double now)
{
	const struct reset_state *s = state;
	struct topk_item top[TOPK_K];
	size_t n = topk_top(s ? &s->endpoints : NULL, now, false, top);
	char buf[16];

	mbuf_puts(m, "<h2>Top reset endpoints</h2>\n");
	if (!n) {
		mbuf_puts(m, "<p class=\"empty\">No resets sampled in the last minute.</p>\n");
		return;
	}
	mbuf_puts(m, "<table class=\"top-resets\">\n<tr>"
		     "<th>protocol</th><th>netns</th><th>local</th><th>peer</th>"
		     "<th>resets</th><th>direction</th><th>reason</th><th>state</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct event_rec *r = &top[i].e->last;

		mbuf_puts(m, "<tr>");
		flow_html(m, &r->ev);
		mbuf_printf(m, "<td>%llu</td><td>%s</td><td>", (unsigned long long)top[i].count,
			    dir_name(r));
		escape_html(m, reason_of(r, buf, sizeof(buf)));
		mbuf_puts(m, "</td><td>");
		escape_html(m, crd(r)->state);
		mbuf_puts(m, "</td></tr>\n");
	}
	mbuf_puts(m, "</table>\n");
}

static void reset_fini(void *state)
{
	struct reset_state *s = state;

	topk_free(&s->endpoints);
	exemplars_free(&s->exemplars);
	free(s);
}

/* Whether a sampled reset sent is of the series q (struct reset_series) the collector renders. */
static bool reset_matches(const struct event_rec *x, const void *series)
{
	const struct reset_series *q = series;

	return x->ev.reset.reason == q->reason && x->ev.reset.family == q->family &&
	       x->ev.reset.state == q->state && !(q->netns && x->ev.netns != q->netns);
}

static bool reset_exemplar(void *state, const void *series, struct labels *l, char *buf, size_t len,
			   double *time)
{
	return exemplars_find(&((struct reset_state *)state)->exemplars, reset_matches, series, l,
			      buf, len, time);
}

const struct event_desc reset_events = {
	.name = "reset",
	.valid = reset_valid,
	.init = reset_init,
	.entry = reset_entry,
	.json = reset_event_json,
	.html = reset_event_html,
	.top_json = reset_json,
	.top_html = reset_html,
	.exemplar = reset_exemplar,
	.fini = reset_fini,
};
