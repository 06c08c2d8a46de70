// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sampled resets: the reason's name (from the running kernel), the socket's state, the local
 * endpoints resetting or reset most often, and the latest event of each sent-reset series as
 * the exemplar of its counter.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "analyzer.h"
#include "kernel.h"
#include "resets.h"

#define EXEMPLAR_SERIES 128 /* reset series remembered for exemplars */

/* Owned by main, built before the consumer starts. */
static const struct tcp_states *states;
static const struct reason_table *reasons; /* NULL: the kernel gives none */
static struct topk endpoints;

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

/* Read by scrapes, which do not take the store's lock: a lock of its own, taken inside it. */
static pthread_mutex_t exemplar_lock = PTHREAD_MUTEX_INITIALIZER;
static struct event_rec exemplars[EXEMPLAR_SERIES];

static int reset_init(const struct kernel *k)
{
	states = &k->states;
	reasons = k->features.tcp_send_reset_args >= 3 && !k->rst_reasons_err ? &k->rst_reasons
									      : NULL;
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

static void remember_exemplar(const struct event_rec *r)
{
	struct event_rec *slot = &exemplars[0];

	pthread_mutex_lock(&exemplar_lock);
	for (size_t i = 0; i < EXEMPLAR_SERIES; i++) {
		struct event_rec *x = &exemplars[i];

		if (!x->seq || same_series(x, r)) {
			slot = x;
			break;
		}
		if (x->seq < slot->seq)
			slot = x;
	}
	*slot = *r;
	pthread_mutex_unlock(&exemplar_lock);
}

static void reset_entry(struct event_rec *r)
{
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
			 tcp_state_name(states, ev->reset.state, num, sizeof(num)));
	/* Only names with a lifetime: a number is rendered from the event itself. */
	if (reasons && ev->reset.reason != RS_REASON_NONE) {
		const char *name = reason_name(reasons, ev->reset.reason, num, sizeof(num));

		r->reason = name == num ? NULL : name;
	}
	topk_add(&endpoints, &key, sizeof(key), r, 1);
	if (ev->reset.dir == RS_DIR_SENT)
		remember_exemplar(r);
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

static void reset_json(struct mbuf *m, double now)
{
	struct topk_item top[TOPK_K];
	size_t n = topk_top(&endpoints, now, false, top);
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

static void reset_html(struct mbuf *m, double now)
{
	struct topk_item top[TOPK_K];
	size_t n = topk_top(&endpoints, now, false, top);
	char buf[16];

	mbuf_puts(m, "<h2>Top reset endpoints</h2>\n<table class=\"top-resets\">\n<tr>"
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

static void reset_reset(void)
{
	topk_free(&endpoints);
	pthread_mutex_lock(&exemplar_lock);
	memset(exemplars, 0, sizeof(exemplars));
	pthread_mutex_unlock(&exemplar_lock);
	states = NULL;
	reasons = NULL;
}

bool events_reset_exemplar(uint32_t reason, uint8_t family, uint8_t state, uint32_t netns,
			   struct labels *l, char *buf, size_t len, double *time)
{
	const struct event_rec *best = NULL;
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	int n;

	pthread_mutex_lock(&exemplar_lock);
	for (size_t i = 0; i < EXEMPLAR_SERIES; i++) {
		const struct event_rec *x = &exemplars[i];

		if (!x->seq || x->ev.reset.reason != reason || x->ev.reset.family != family ||
		    x->ev.reset.state != state || (netns && x->ev.netns != netns))
			continue;
		if (!best || x->seq > best->seq)
			best = x;
	}
	if (best) {
		flow_addr(&best->ev.flow, true, s, sizeof(s));
		flow_addr(&best->ev.flow, false, d, sizeof(d));
		*time = best->time;
		n = snprintf(buf, len, "%s%c%s%c%u%c%u", s, 0, d, 0, best->ev.flow.sport, 0,
			     best->ev.flow.dport);
		if (n > 0 && (size_t)n < len) {
			labels_add(l, "saddr", buf);
			buf += strlen(buf) + 1;
			labels_add(l, "daddr", buf);
			buf += strlen(buf) + 1;
			labels_add(l, "sport", buf);
			buf += strlen(buf) + 1;
			labels_add(l, "dport", buf);
		} else {
			best = NULL;
		}
	}
	pthread_mutex_unlock(&exemplar_lock);
	return best != NULL;
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
	.reset = reset_reset,
};
