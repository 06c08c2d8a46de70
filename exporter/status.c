// SPDX-License-Identifier: GPL-2.0-only
/*
 * The landing page: a status view for an operator behind `kubectl port-forward`. Drops by
 * reason with totals and recent rates (inline SVG bars), then the analyzers' top lists and
 * the latest sampled events. Server-rendered HTML, no scripts, no external assets.
 *
 * Rates need two readings: each view keeps one (at most one a second, last HISTORY kept), and
 * a rate is taken against the newest reading at least RATE_WINDOW seconds old (or the oldest
 * one). The page reloads itself every RATE_WINDOW seconds, so an open page shows live rates.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "events.h"
#include "scrape.h"
#include "status.h"
#include "version.h"

#define HISTORY 8
#define RATE_WINDOW 10
#define BAR_WIDTH 200

/* Totals by drop reason at one time. */
struct reading {
	double t;
	size_t n, cap;
	struct tally {
		char *reason;
		uint64_t count;
	} * e;
};

static struct reading history[HISTORY];
static unsigned n_history;

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void reading_clear(struct reading *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->e[i].reason);
	free(r->e);
	*r = (struct reading){ 0 };
}

static uint64_t reading_get(const struct reading *r, const char *reason)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->e[i].reason, reason))
			return r->e[i].count;
	return 0;
}

/* Sums netstack_skb_drops_total over every label but reason into a reading. */
struct drop_summer {
	struct expo_filter f;
	struct reading *r;
};

static bool capture_drops(struct expo_filter *f, const char *family, enum metric_type type)
{
	(void)f;
	return type == METRIC_COUNTER && !strcmp(family, "netstack_skb_drops_total");
}

static void add_drop(struct expo_filter *f, const struct labels *l, const double *bounds,
		     const uint64_t *counts, int nbounds, double sum)
{
	struct reading *r = ((struct drop_summer *)f)->r;
	const char *reason = NULL;
	size_t i;

	(void)bounds;
	(void)nbounds;
	(void)sum;
	for (int k = 0; k < l->n && !reason; k++)
		if (!strcmp(l->name[k], "reason"))
			reason = l->value[k];
	if (!reason)
		return;
	for (i = 0; i < r->n && strcmp(r->e[i].reason, reason); i++)
		;
	if (i == r->n) {
		if (r->n == r->cap) {
			size_t cap = r->cap ? 2 * r->cap : 64;
			struct tally *grown = realloc(r->e, cap * sizeof(*grown));

			if (!grown)
				return;
			r->e = grown;
			r->cap = cap;
		}
		r->e[i] = (struct tally){ strdup(reason), 0 };
		if (!r->e[i].reason)
			return;
		r->n++;
	}
	r->e[i].count += counts[0];
}

static void flush_nothing(struct expo_filter *f, struct expo *e, bool keep)
{
	(void)f;
	(void)e;
	(void)keep;
}

/* Read the drops collector's counters into r; false when it is not running. */
static bool read_drops(struct reading *r)
{
	const struct collector *c = scrape_collectors();
	struct drop_summer summer = { { capture_drops, add_drop, flush_nothing }, r };
	struct mbuf scratch = { 0 };
	struct expo e;
	int err;

	r->t = now_seconds();
	while (c->ops && strcmp(c->ops->name, "drops"))
		c++;
	if (!c->ops || !c->enabled || !c->state)
		return false;
	expo_init(&e, &scratch, FORMAT_PROMETHEUS);
	expo_set_filter(&e, &summer.f, true);
	err = c->ops->collect(c->state, &e);
	expo_finish(&e);
	mbuf_free(&scratch);
	return !err;
}

/* The newest reading at least RATE_WINDOW old, else the oldest at least a second old. */
static const struct reading *baseline(double now)
{
	const struct reading *newest_old = NULL, *oldest = NULL;

	for (unsigned i = 0; i < n_history; i++) {
		const struct reading *h = &history[i];

		if (now - h->t >= RATE_WINDOW && (!newest_old || h->t > newest_old->t))
			newest_old = h;
		if (now - h->t >= 1 && (!oldest || h->t < oldest->t))
			oldest = h;
	}
	return newest_old ? newest_old : oldest;
}

/* Keep cur (taken over, cur is emptied) unless the newest reading is under a second old. */
static void remember(struct reading *cur)
{
	unsigned oldest = 0;

	for (unsigned i = 0; i < n_history; i++) {
		if (cur->t - history[i].t < 1)
			return;
		if (history[i].t < history[oldest].t)
			oldest = i;
	}
	if (n_history < HISTORY)
		oldest = n_history++;
	reading_clear(&history[oldest]);
	history[oldest] = *cur;
	*cur = (struct reading){ 0 };
}

static void bar(struct mbuf *m, double v, double max, const char *color)
{
	int w = max > 0 ? (int)(v / max * BAR_WIDTH + 0.5) : 0;

	if (v > 0 && w < 1)
		w = 1; /* anything above zero stays visible */

	mbuf_printf(m,
		    "<td><svg width=\"%d\" height=\"12\" role=\"img\"><rect width=\"%d\" "
		    "height=\"12\" fill=\"%s\"/></svg></td>",
		    BAR_WIDTH, w, color);
}

static int by_count_desc(const void *a, const void *b)
{
	const struct tally *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : strcmp(x->reason, y->reason);
}

/* Drops of t per second since base (a counter below its old value was reset: from zero). */
static double rate(const struct tally *t, const struct reading *base, double dt)
{
	uint64_t old = reading_get(base, t->reason);

	return (t->count - (t->count >= old ? old : 0)) / dt;
}

static void drops_table(struct mbuf *m, struct reading *cur)
{
	const struct reading *base = baseline(cur->t);
	double max_total = 0, max_rate = 0, dt = base ? cur->t - base->t : 0;

	mbuf_puts(m, "<h2>Drops by reason</h2>\n");
	if (!cur->n) {
		mbuf_puts(m, "<p>No drops counted since the exporter started.</p>\n");
		return;
	}
	qsort(cur->e, cur->n, sizeof(*cur->e), by_count_desc);
	max_total = cur->e[0].count;
	for (size_t i = 0; base && i < cur->n; i++)
		if (rate(&cur->e[i], base, dt) > max_rate)
			max_rate = rate(&cur->e[i], base, dt);
	mbuf_puts(m, "<table class=\"drops\">\n<tr><th>reason</th><th>total</th><th></th>"
		     "<th>per second</th><th></th></tr>\n");
	for (size_t i = 0; i < cur->n; i++) {
		const struct tally *t = &cur->e[i];
		double r = base ? rate(t, base, dt) : 0;

		mbuf_puts(m, "<tr><td>");
		escape_html(m, t->reason);
		mbuf_printf(m, "</td><td class=\"num\">%" PRIu64 "</td>", t->count);
		bar(m, t->count, max_total, "#888");
		if (base)
			mbuf_printf(m, "<td class=\"num\">%.1f</td>", r);
		else
			mbuf_puts(m, "<td class=\"num\">&ndash;</td>");
		bar(m, r, max_rate, "#c0392b");
		mbuf_puts(m, "</tr>\n");
	}
	mbuf_puts(m, "</table>\n");
	if (base)
		mbuf_printf(m, "<p class=\"note\">Rates over the last %.0f s.</p>\n", dt);
	else
		mbuf_printf(m,
			    "<p class=\"note\">Rates appear from the next view (the page reloads "
			    "every %d s).</p>\n",
			    RATE_WINDOW);
}

void status_page(struct mbuf *m, const char *metrics_path)
{
	struct reading cur = { 0 };

	mbuf_printf(m,
		    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
		    "<meta http-equiv=\"refresh\" content=\"%d\"><title>netstack_exporter</title>\n"
		    "<style>body{font-family:sans-serif;margin:1em 2em}table{border-collapse:"
		    "collapse}td,th{padding:2px 8px;text-align:left}.num{text-align:right;"
		    "font-variant-numeric:tabular-nums}tr:nth-child(even){background:#f4f4f4}"
		    ".note{color:#666}</style></head><body>\n"
		    "<h1>netstack_exporter</h1>\n<p>Version %s (%s). <a href=\"",
		    RATE_WINDOW, NETSTACK_VERSION, NETSTACK_COMMIT);
	escape_html(m, metrics_path);
	mbuf_puts(m, "\">Metrics</a> &middot; <a href=\"/healthz\">Health</a></p>\n"
		     "<h2>Collectors</h2>\n<ul>\n");
	for (const struct collector *c = scrape_collectors(); c->ops; c++)
		if (c->enabled)
			mbuf_printf(m, "<li><b>%s</b> (%s): %s</li>\n", c->ops->name,
				    c->state ? "up" : "down", c->ops->description);
	mbuf_puts(m, "</ul>\n");
	if (read_drops(&cur)) {
		drops_table(m, &cur);
		remember(&cur);
	}
	reading_clear(&cur);
	events_status_html(m);
	mbuf_puts(m, "</body></html>\n");
}

void status_free(void)
{
	for (unsigned i = 0; i < n_history; i++)
		reading_clear(&history[i]);
	n_history = 0;
}
