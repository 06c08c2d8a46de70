// SPDX-License-Identifier: GPL-2.0-only
/*
 * The store of recent events, filled through each type's analyzer, and what reads it: GET
 * /events, /events/top, the landing page, exemplars; also the lines queued for stdout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "sampling/analyzers/analyzer.h"
#include "sampling/events_impl.h"

#define HTML_EVENTS 20 /* latest events on the landing page */

void events_store_resize(struct events *evs, unsigned max)
{
	size_t n = evs->store_n < max ? evs->store_n : max;
	struct event_rec *v;

	if (!evs->store)
		return;
	v = calloc(max, sizeof(*v));
	if (!v) {
		free(evs->store); /* keep nothing rather than index past a smaller store */
		evs->store = NULL;
		evs->store_n = evs->store_head = 0;
		return;
	}
	for (size_t k = 0; k < n; k++)
		v[k] = evs->store[(evs->store_head + evs->cfg.max_events - n + k) %
				  evs->cfg.max_events];
	free(evs->store);
	evs->store = v;
	evs->store_n = n;
	evs->store_head = n % max;
}

/* At most stdout_max_per_second lines (GCRA with a one-second burst), the rest counted. */
static void log_stdout(struct events *evs, const struct event_rec *r)
{
	double interval = 1.0 / evs->cfg.stdout_per_second;

	if (evs->stdout_tat < r->time)
		evs->stdout_tat = r->time;
	if (evs->stdout_tat - r->time > 1.0) {
		evs->stdout_suppressed++;
		log_once(evs->logged_stdout, LOG_WARN,
			 "sampling: more than stdout_max_per_second=%u events; the rest are not "
			 "logged to stdout",
			 evs->cfg.stdout_per_second);
		return;
	}
	evs->stdout_tat += interval;
	if (evs->line.len >= STDOUT_PENDING_MAX) {
		__atomic_fetch_add(&evs->stdout_lost[r->ev.type], 1, __ATOMIC_RELAXED);
		log_once(evs->logged_slow, LOG_WARN,
			 "sampling: stdout does not take the events as fast as they come; those "
			 "it cannot take are counted in netstack_events_lost_total");
		return;
	}
	event_json(&evs->line, r);
	mbuf_puts(&evs->line, "\n");
}

void events_analyzers_fini(struct events *evs)
{
	for (int t = 1; t < EV_NR_TYPES; t++) {
		void *s = __atomic_exchange_n(&evs->states[t], NULL, __ATOMIC_ACQ_REL);

		if (s)
			event_descs[t]->fini(s);
	}
	evs->analyzers_ready = false;
}

int events_analyzers_init(struct events *evs, const struct kernel *k)
{
	for (int t = 1; t < EV_NR_TYPES && !evs->analyzers_ready; t++) {
		void *s = NULL;
		int err = event_descs[t] ? event_descs[t]->init(k, &s) : 0;

		if (err) {
			log_error("sampling: cannot set up the %s analyzer", event_type_name(t));
			events_analyzers_fini(evs);
			return err;
		}
		if (s)
			__atomic_store_n(&evs->states[t], s, __ATOMIC_RELEASE);
	}
	evs->analyzers_ready = true;
	return 0;
}

void events_add(struct events *evs, const struct event *ev, double unix_time)
{
	struct event_rec *r;

	pthread_mutex_lock(&evs->lock);
	if (!evs->analyzers_ready && events_analyzers_init(evs, NULL)) {
		pthread_mutex_unlock(&evs->lock);
		return;
	}
	if (!evs->store) {
		evs->store = calloc(evs->cfg.max_events, sizeof(*evs->store));
		if (!evs->store) {
			pthread_mutex_unlock(&evs->lock);
			return;
		}
	}
	r = &evs->store[evs->store_head];
	evs->store_head = (evs->store_head + 1) % evs->cfg.max_events;
	if (evs->store_n < evs->cfg.max_events)
		evs->store_n++;
	memset(r, 0, sizeof(*r));
	r->ev = *ev;
	r->seq = ++evs->seq;
	r->time = unix_time;
	event_descs[ev->type]->entry(evs->states[ev->type], r);
	if (evs->cfg.to_stdout)
		log_stdout(evs, r);
	pthread_mutex_unlock(&evs->lock);
}

bool events_exemplar(struct events *evs, enum event_type type, const void *series, struct labels *l,
		     char *buf, size_t len, double *time)
{
	void *s = type < EV_NR_TYPES ? __atomic_load_n(&evs->states[type], __ATOMIC_ACQUIRE) : NULL;

	return s && event_descs[type]->exemplar &&
	       event_descs[type]->exemplar(s, series, l, buf, len, time);
}

static bool matches(const struct event_rec *r, const struct event_filter *f)
{
	if (f->type && r->ev.type != f->type)
		return false;
	if (f->reason && (!r->reason || strcmp(f->reason, r->reason)))
		return false;
	if (f->netns && r->ev.netns != f->netns)
		return false;
	return r->time >= f->since;
}

/* The i-th stored event, oldest first. Lock held. */
static const struct event_rec *stored(const struct events *evs, size_t i)
{
	return &evs->store[(evs->store_head + evs->cfg.max_events - evs->store_n + i) %
			   evs->cfg.max_events];
}

/*
 * Stored events hold consecutive seq numbers, the newest being seq (also across a restart of
 * the store, which empties it): the one with seq s is stored(evs, s - oldest_seq(evs)). Lock
 * held.
 */
static uint64_t oldest_seq(const struct events *evs)
{
	return evs->seq - evs->store_n + 1;
}

void events_cursor_open(struct events *evs, struct events_cursor *c, const struct event_filter *f,
			unsigned limit)
{
	uint64_t oldest;

	memset(c, 0, sizeof(*c));
	c->evs = evs;
	c->f = *f;
	if (f->reason) {
		snprintf(c->reason, sizeof(c->reason), "%s", f->reason);
		c->f.reason = c->reason;
	}
	pthread_mutex_lock(&evs->lock);
	oldest = oldest_seq(evs);
	c->next = oldest;
	c->end = evs->seq;
	/* Back from the newest to the oldest of the last `limit` matching events. */
	for (size_t i = evs->store_n; i-- > 0 && c->left < limit;) {
		if (matches(stored(evs, i), &c->f)) {
			c->left++;
			c->next = oldest + i;
		}
	}
	pthread_mutex_unlock(&evs->lock);
}

long events_cursor_read(struct events_cursor *c, char *buf, size_t max)
{
	struct events *evs = c->evs;
	size_t n;

	if (c->off == c->pending.len) {
		uint64_t oldest;

		mbuf_reset(&c->pending);
		c->off = 0;
		pthread_mutex_lock(&evs->lock);
		oldest = oldest_seq(evs);
		if (c->next < oldest)
			c->next = oldest;
		/* About max bytes per piece: the lock is held for a few dozen events at most. */
		while (c->left && c->next <= c->end && c->pending.len < max) {
			const struct event_rec *r = stored(evs, c->next++ - oldest);

			if (!matches(r, &c->f))
				continue;
			event_json(&c->pending, r);
			mbuf_puts(&c->pending, "\n");
			c->left--;
		}
		pthread_mutex_unlock(&evs->lock);
		if (c->pending.oom)
			return -ENOMEM;
	}
	n = c->pending.len - c->off;
	if (n > max)
		n = max;
	if (n)
		memcpy(buf, c->pending.data + c->off, n);
	c->off += n;
	return (long)n;
}

void events_cursor_close(struct events_cursor *c)
{
	mbuf_free(&c->pending);
}

void events_top_json(struct events *evs, struct mbuf *m)
{
	double now = clock_seconds(CLOCK_REALTIME);
	bool first = true;

	mbuf_puts(m, "{");
	pthread_mutex_lock(&evs->lock);
	for (int t = 1; t < EV_NR_TYPES; t++) {
		if (!event_descs[t])
			continue;
		mbuf_printf(m, "%s\"%s\":", first ? "" : ",", event_descs[t]->name);
		event_descs[t]->top_json(evs->states[t], m, now);
		first = false;
	}
	pthread_mutex_unlock(&evs->lock);
	mbuf_puts(m, "}\n");
}

void events_status_html(struct events *evs, struct mbuf *m)
{
	double now = clock_seconds(CLOCK_REALTIME);
	char when[32];

	pthread_mutex_lock(&evs->lock);
	for (int t = 1; t < EV_NR_TYPES; t++)
		if (event_descs[t])
			event_descs[t]->top_html(evs->states[t], m, now);
	mbuf_puts(m, "<h2>Latest sampled events</h2>\n");
	if (!evs->store_n)
		mbuf_puts(m, "<p class=\"empty\">No sampled events yet (sampling is off by "
			     "default: [sampling] *_sample_rate).</p>\n");
	else
		mbuf_puts(m, "<table class=\"events\">\n<tr><th>time</th><th>type</th>"
			     "<th>protocol</th><th>netns</th><th>source</th><th>destination</th>"
			     "<th>detail</th></tr>\n");
	/* Newest first. */
	for (size_t k = 0; k < evs->store_n && k < HTML_EVENTS; k++) {
		const struct event_rec *r = stored(evs, evs->store_n - 1 - k);
		time_t t = (time_t)r->time;
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		mbuf_printf(m, "<tr><td>%s</td><td>%s</td>", when, event_type_name(r->ev.type));
		flow_html(m, &r->ev);
		mbuf_puts(m, "<td>");
		event_descs[r->ev.type]->html(m, r);
		mbuf_puts(m, "</td></tr>\n");
	}
	if (evs->store_n)
		mbuf_puts(m, "</table>\n");
	pthread_mutex_unlock(&evs->lock);
}
