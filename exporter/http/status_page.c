// SPDX-License-Identifier: GPL-2.0-only
/*
 * The landing page: a status view for an operator behind `kubectl port-forward`. Drops, TCP
 * resets sent and TCP retransmits, by reason (cause), over the last 15 minutes as inline SVG
 * sparklines; TCP round-trip and handshake times (p50, p99) over the last minute; then the
 * analyzers' top lists and the latest sampled events. Server-rendered polyglot HTML (it parses
 * as XML too), no scripts, no external assets. It renders what status.c sampled: no map read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/status_internal.h"
#include "http/events_http.h"
#include "scrape.h"
#include "version.h"

#define SPARK_W 120
#define SPARK_H 20
#define OTHER_NAMES 8 /* the reasons named in the other row's label */

/* "15 minutes", "2 minutes", "45 s": how long t seconds are, for a sentence. */
static void span_text(char *buf, size_t len, double t)
{
	if (t >= 90)
		snprintf(buf, len, "%.0f minutes", t / 60);
	else
		snprintf(buf, len, "%.0f s", t);
}

static void rate_text(char *buf, size_t len, double v)
{
	snprintf(buf, len, v == 0 ? "0" : v < 10 ? "%.2f" : v < 100 ? "%.1f" : "%.0f", v);
}

/* A row's figures over the series' window. */
struct row_view {
	const struct row *row;
	const char *name;
	uint64_t sum, total;
	double now, peak;
};

/* Busiest first, other last. */
static int by_sum_desc(const void *a, const void *b)
{
	const struct row_view *x = a, *y = b;

	if (!x->row->name || !y->row->name)
		return !x->row->name - !y->row->name;
	return x->sum < y->sum ? 1 : x->sum > y->sum ? -1 : strcmp(x->name, y->name);
}

/* "NAME: 2.00/s now, peak 5.00/s, 300 in 15 minutes", escaped. */
static void row_label(struct mbuf *m, const struct row_view *v, const char *span)
{
	char now[32], peak[32];

	rate_text(now, sizeof(now), v->now);
	rate_text(peak, sizeof(peak), v->peak);
	escape_html(m, v->name);
	mbuf_printf(m, ": %s/s now, peak %s/s, %" PRIu64 " in %s", now, peak, v->sum, span);
}

/* x by time over the window (since: its start), so the line spans what the header says. */
static void sparkline(struct mbuf *m, const struct status *s, const struct series *se,
		      const struct row_view *v, double since, const char *span, const char *color)
{
	double newest = s->t[slot(s, 0)], width = newest > since ? newest - since : 1;

	mbuf_printf(m,
		    "<td><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		    "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
		    SPARK_W, SPARK_H, SPARK_W, SPARK_H);
	row_label(m, v, span);
	mbuf_puts(m, "\"><title>");
	row_label(m, v, span);
	mbuf_printf(m, "</title><polyline fill=\"none\" stroke=\"%s\" points=\"", color);
	/* Oldest first, and the first interval's start too, so one point is a line. */
	for (int k = (int)se->n - 1; k >= 0; k--) {
		unsigned i = slot(s, (unsigned)k);
		double r = s->dt[i] > 0 ? v->row->inc[i] / s->dt[i] : 0;
		int y = SPARK_H - 1 - (v->peak > 0 ? (int)(r / v->peak * (SPARK_H - 2) + 0.5) : 0);
		double x = SPARK_W - (newest - s->t[i]) / width * SPARK_W;

		if (k == (int)se->n - 1) {
			double x0 = x - s->dt[i] / width * SPARK_W;

			mbuf_printf(m, "%.0f,%d ", x0 < 0 ? 0 : x0, y);
		}
		mbuf_printf(m, "%.0f,%d%s", x, y, k ? " " : "");
	}
	mbuf_puts(m, "\"/></svg></td>");
}

/* The other row's label: "other: A, B and 3 more" (reasons that went there in the window). */
static void other_label(struct mbuf *m, const struct series *se, double since)
{
	unsigned named = 0, more = 0;

	mbuf_puts(m, "other");
	for (size_t k = 0; k < se->last.n; k++) {
		if (se->last.e[k].in_other < since)
			continue;
		if (named++ >= OTHER_NAMES) {
			more++;
			continue;
		}
		mbuf_puts(m, named > 1 ? ", " : ": ");
		escape_html(m, se->last.e[k].name);
	}
	if (more)
		mbuf_printf(m, " and %u more", more);
	if (se->last.rest)
		mbuf_printf(m, "%sreasons past the first %d", named ? "; " : ": ", STATUS_NAMES);
}

static const char *state_text(enum source_state st)
{
	switch (st) {
	case SOURCE_NOT_BUILT:
		return "The %s collector is not in this build.";
	case SOURCE_DISABLED:
		return "The %s collector is not enabled ([collector.%s] enabled = true).";
	case SOURCE_DOWN:
		return "The %s collector is not running: it failed to start (see the log).";
	case SOURCE_FAILED:
		return "Reading the %s collector failed at the last sample (see the log).";
	case SOURCE_NO_FAMILY:
		return "The %s collector exports no %s here.";
	case SOURCE_NO_LABEL:
		return "The %s collector exports no %s label here (its labels key).";
	case SOURCE_OK:
		break;
	}
	return "";
}

static void empty(struct mbuf *m, const char *fmt, const char *a, const char *b)
{
	mbuf_puts(m, "<p class=\"empty\">");
	mbuf_printf(m, fmt, a, b);
	mbuf_puts(m, "</p>\n");
}

static void source_empty(struct mbuf *m, enum source_state st, const struct source *src)
{
	empty(m, state_text(st), src->collector,
	      st == SOURCE_NO_FAMILY  ? src->family
	      : st == SOURCE_NO_LABEL ? src->label
				      : src->collector);
}

static void collecting(struct mbuf *m, const char *what)
{
	mbuf_printf(m,
		    "<p class=\"empty collecting\">Collecting: %s appear after the next sample "
		    "(one every %d s).</p>\n",
		    what, STATUS_STEP);
}

/* "850 µs", "20.4 ms", "1.02 s", with the value in seconds for machines. */
static void duration_cell(struct mbuf *m, double t)
{
	mbuf_printf(m, "<td class=\"num\"><data value=\"%.9g\">", t);
	/* The thresholds round: never "1000 µs" or "1e+03 ms". */
	if (t < 0.9995e-3)
		mbuf_printf(m, "%.0f &#181;s", t * 1e6);
	else if (t < 0.9995)
		mbuf_printf(m, "%.3g ms", t * 1e3);
	else
		mbuf_printf(m, "%.3g s", t);
	mbuf_puts(m, "</data></td>");
}

static void qseries_html(struct mbuf *m, const struct qseries *q, const struct source *src)
{
	unsigned n = 0;
	char span[32];

	mbuf_printf(m, "<h2>%s</h2>\n", src->title);
	if (q->state != SOURCE_OK) {
		source_empty(m, q->state, src);
		return;
	}
	if (q->readings < 2) {
		collecting(m, "quantiles");
		return;
	}
	span_text(span, sizeof(span), q->span);
	for (unsigned i = 0; i < q->n_rows; i++) {
		const struct qrow *r = &q->rows[i];

		if (!r->n)
			continue;
		if (!n++)
			mbuf_printf(m,
				    "<table class=\"quantiles\">\n<tr><th>%s%s%s</th><th>p50</th>"
				    "<th>p99</th><th>in %s</th></tr>\n",
				    src->label, q->label2 ? ", " : "", q->label2 ? src->label2 : "",
				    span);
		mbuf_puts(m, "<tr><td>");
		escape_html(m, r->name);
		mbuf_puts(m, "</td>");
		duration_cell(m, r->p50);
		duration_cell(m, r->p99);
		mbuf_printf(m, "<td class=\"num\">%" PRIu64 "</td></tr>\n", r->n);
	}
	if (!n) {
		mbuf_printf(m, "<p class=\"empty\">No %s in the last %s.</p>\n", src->what, span);
		return;
	}
	mbuf_printf(
		m,
		"</table>\n<p class=\"note\">Over the last %s: the increase of each bucket of "
		"%s, interpolated within its bucket as Prometheus' histogram_quantile does; the "
		"last column counts the %s.</p>\n",
		span, src->family, src->what);
}

static void series_html(struct mbuf *m, const struct status *s, const struct series *se,
			const struct source *src)
{
	struct row_view v[STATUS_ROWS + 1];
	unsigned first = slot(s, se->n ? se->n - 1 : 0);
	/* The window: from the start of the oldest point's interval to the newest sample. */
	double since = s->t[first] - s->dt[first];
	uint64_t all = se->last.rest;
	char span[32], now[32];
	size_t n = 0;

	mbuf_printf(m, "<h2>%s</h2>\n", src->title);
	if (se->state != SOURCE_OK) {
		source_empty(m, se->state, src);
		return;
	}
	if (!se->n) {
		collecting(m, "rates");
		return;
	}
	for (size_t k = 0; k < se->last.n; k++)
		all += se->last.e[k].count;
	for (unsigned r = 0; r <= STATUS_ROWS; r++) {
		const struct row *row = &se->rows[r];
		struct row_view *x = &v[n];
		const struct tally *t;

		if (r < STATUS_ROWS && !row->name)
			continue;
		*x = (struct row_view){ row, row->name ? row->name : "other", 0, 0, 0, 0 };
		for (unsigned k = 0; k < se->n; k++) {
			unsigned i = slot(s, k);
			double rate = s->dt[i] > 0 ? row->inc[i] / s->dt[i] : 0;

			x->sum += row->inc[i];
			if (rate > x->peak)
				x->peak = rate;
			if (!k)
				x->now = rate;
		}
		if (!x->sum)
			continue;
		t = row->name ? reading_find(&se->last, row->name) : NULL;
		x->total = t ? t->count : 0;
		n++;
	}
	span_text(span, sizeof(span), s->t[slot(s, 0)] - since);
	if (!n) {
		mbuf_printf(m, "<p class=\"empty\">No %s in the last %s", src->what, span);
		if (all)
			mbuf_printf(m, " (%" PRIu64 " since the collector started)", all);
		mbuf_puts(m, ".</p>\n");
		return;
	}
	/* Other's total: every reason without a row of its own. */
	if (!v[n - 1].row->name) {
		v[n - 1].total = all;
		for (size_t k = 0; k + 1 < n; k++)
			v[n - 1].total -= v[k].total;
	}
	qsort(v, n, sizeof(*v), by_sum_desc);
	mbuf_printf(m,
		    "<table class=\"spark\">\n<tr><th>%s</th><th>now (/s)</th><th>last %s"
		    "</th><th>in %s</th><th>total</th></tr>\n",
		    src->label, span, span);
	for (size_t k = 0; k < n; k++) {
		rate_text(now, sizeof(now), v[k].now);
		mbuf_puts(m, "<tr><td>");
		if (v[k].row->name)
			escape_html(m, v[k].name);
		else
			other_label(m, se, since);
		mbuf_printf(m, "</td><td class=\"num\">%s</td>", now);
		sparkline(m, s, se, &v[k], since, span, src->color);
		mbuf_printf(m,
			    "<td class=\"num\">%" PRIu64 "</td><td class=\"num\">%" PRIu64
			    "</td></tr>\n",
			    v[k].sum, v[k].total);
	}
	mbuf_puts(m, "</table>\n");
}

void status_page(const struct status *s, struct mbuf *m, const char *metrics_path)
{
	struct collector_status c;
	unsigned up = 0;

	mbuf_printf(m,
		    "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">"
		    "<head><meta charset=\"utf-8\"/><meta http-equiv=\"refresh\" content=\"%d\"/>"
		    "<title>netstack_exporter</title>\n"
		    "<style>body{font-family:sans-serif;margin:1em 2em}table{border-collapse:"
		    "collapse}td,th{padding:2px 8px;text-align:left}.num{text-align:right;"
		    "font-variant-numeric:tabular-nums}tr:nth-child(even){background:#f4f4f4}"
		    "svg{vertical-align:middle}.note,.empty{color:#666}</style></head><body>\n"
		    "<h1>netstack_exporter</h1>\n<p>Version %s (%s). <a href=\"",
		    STATUS_STEP, NETSTACK_VERSION, NETSTACK_COMMIT);
	escape_html(m, metrics_path);
	mbuf_puts(m, "\">Metrics</a> &#183; <a href=\"/healthz\">Health</a></p>\n"
		     "<h2>Collectors</h2>\n");
	for (size_t i = 0; scrape_collector_at(s->scrape, i, &c); i++) {
		if (!c.enabled)
			continue;
		mbuf_printf(m, "%s<li><b>%s</b> (%s): %s</li>\n", up++ ? "" : "<ul>\n", c.name,
			    c.up ? "up" : "down", c.description);
	}
	mbuf_puts(m, up ? "</ul>\n" : "<p class=\"empty\">No collector is enabled.</p>\n");
	for (unsigned k = 0; k < NR_SOURCES; k++)
		series_html(m, s, &s->series[k], &status_sources[k]);
	mbuf_printf(m,
		    "<p class=\"note\">A sample every %d s (<span class=\"samples\">%u</span> so "
		    "far), the last %d kept; rates are per second between two samples, summed over "
		    "every label but reason (cause).</p>\n",
		    STATUS_STEP, s->samples, STATUS_POINTS);
	for (unsigned k = 0; k < NR_QSOURCES; k++)
		qseries_html(m, &s->qseries[k], &status_qsources[k]);
	if (s->events)
		events_status_html(s->events, m);
	mbuf_puts(m, "</body></html>\n");
}
