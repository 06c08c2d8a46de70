// SPDX-License-Identifier: GPL-2.0-only
/*
 * The landing page: a status view for an operator behind `kubectl port-forward`. Drops and TCP
 * resets sent, by reason, over the last 15 minutes as inline SVG sparklines, then the
 * analyzers' top lists and the latest sampled events. Server-rendered polyglot HTML (it parses
 * as XML too), no scripts, no external assets.
 *
 * The main thread samples every STATUS_STEP seconds: it reads each source's counters through
 * its collector (as a scrape does, the family captured by an exposition filter and summed over
 * every label but reason) and keeps, per reason, the increase since the previous sample. Page
 * views only render what the samples hold, so a page costs no map read and two views see the
 * same history. A rate needs two readings: until the second one the page says it is collecting.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/collector.h"
#include "sampling/events.h"
#include "scrape.h"
#include "http/status.h"
#include "version.h"

#define SPARK_W 120
#define SPARK_H 20
#define OTHER_NAMES 8 /* the reasons named in the other row's label */

/* What a table shows: a counter family with a reason label, from the collector that has it. */
static const struct source {
	const char *title, *collector, *family, *what, *color;
} sources[] = {
	{ "Drops by reason", "drops", "netstack_skb_drops_total", "drops", "#c0392b" },
	{ "TCP resets sent by reason", "resets", "netstack_tcp_resets_sent_total", "resets sent",
	  "#8e44ad" },
};
#define NR_SOURCES (sizeof(sources) / sizeof(sources[0]))

enum source_state {
	SOURCE_OK,
	SOURCE_NOT_BUILT, /* no collector of that name in this build */
	SOURCE_DISABLED,
	SOURCE_DOWN,	  /* enabled, but it did not start */
	SOURCE_FAILED,	  /* its collect failed at the last sample */
	SOURCE_NO_FAMILY, /* running, without that family */
};

/* A counter by reason at one sample. */
struct tally {
	char *name;
	uint64_t count;
	double in_other; /* when its increase last went to the other row (0: never) */
};

struct reading {
	size_t n;
	struct tally *e;  /* STATUS_NAMES of them at most */
	uint64_t rest;	  /* reasons past STATUS_NAMES, summed */
	bool seen_family; /* the collector wrote the family (with or without samples) */
};

/* A reason's increase per point; rows[STATUS_ROWS] is other, for every reason without a row. */
struct row {
	char *name; /* NULL: free */
	uint32_t inc[STATUS_POINTS];
};

struct series {
	enum source_state state;
	bool have_last;
	struct reading last;
	unsigned n; /* points it holds: the newest n of the ring */
	struct row rows[STATUS_ROWS + 1];
};

struct status {
	struct scrape *scrape;	  /* main's: its collectors are sampled */
	struct events *events;	  /* main's: the latest sampled events; NULL: none */
	unsigned head;		  /* the ring's slot for the next point */
	double t[STATUS_POINTS];  /* when each point's sample was taken */
	double dt[STATUS_POINTS]; /* since the sample before it */
	double t_prev, next;	  /* the last sample's time; when the next is due */
	unsigned samples;	  /* taken so far */
	struct series series[NR_SOURCES];
};

static void reading_clear(struct reading *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->e[i].name);
	free(r->e);
	*r = (struct reading){ 0 };
}

static struct tally *reading_find(const struct reading *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->e[i].name, name))
			return &r->e[i];
	return NULL;
}

/* Sums a family over every label but reason into a reading. */
struct summer {
	struct expo_filter f;
	const char *family;
	struct reading *r;
};

static bool capture(struct expo_filter *f, const char *family, enum metric_type type)
{
	struct summer *s = (struct summer *)f;

	if (type != METRIC_COUNTER || strcmp(family, s->family))
		return false;
	s->r->seen_family = true;
	return true;
}

static void add_sample(struct expo_filter *f, const struct labels *l, const double *bounds,
		       const uint64_t *counts, int nbounds, double sum, const struct exemplar *ex)
{
	struct reading *r = ((struct summer *)f)->r;
	const char *reason = NULL;
	struct tally *t;

	(void)bounds;
	(void)nbounds;
	(void)sum;
	(void)ex;
	for (int k = 0; l && k < l->n && !reason; k++)
		if (!strcmp(l->name[k], "reason"))
			reason = l->value[k];
	if (!reason)
		return;
	t = reading_find(r, reason);
	if (!t && r->n < STATUS_NAMES) {
		if (!r->e && !(r->e = calloc(STATUS_NAMES, sizeof(*r->e))))
			return;
		t = &r->e[r->n];
		*t = (struct tally){ strdup(reason), 0, 0 };
		if (!t->name)
			return;
		r->n++;
	}
	if (t)
		t->count += counts[0];
	else
		r->rest += counts[0];
}

static void flush_nothing(struct expo_filter *f, struct expo *e, bool keep)
{
	(void)f;
	(void)e;
	(void)keep;
}

/* Read src's family from its collector into r (empty before). Under the scrape lock. */
static enum source_state read_source(const struct status *s, const struct source *src,
				     struct reading *r)
{
	const struct collector *c = scrape_collectors(s->scrape);
	struct summer summer = { { capture, add_sample, flush_nothing }, src->family, r };
	struct mbuf scratch = { 0 };
	struct expo e;
	int err;

	while (c->ops && strcmp(c->ops->name, src->collector))
		c++;
	if (!c->ops)
		return SOURCE_NOT_BUILT;
	if (!c->enabled)
		return SOURCE_DISABLED;
	if (!c->state)
		return SOURCE_DOWN;
	/* The collector writes its other families here: thrown away. */
	expo_init(&e, &scratch, FORMAT_PROMETHEUS);
	expo_set_filter(&e, &summer.f, true);
	err = c->ops->collect(c->state, &e);
	expo_finish(&e);
	mbuf_free(&scratch);
	if (err)
		return SOURCE_FAILED;
	return r->seen_family ? SOURCE_OK : SOURCE_NO_FAMILY;
}

/* The ring slot of a series' point of age k (0: the newest). */
static unsigned slot(const struct status *s, unsigned k)
{
	return (s->head + 2 * STATUS_POINTS - 1 - k) % STATUS_POINTS;
}

static uint64_t window_sum(const struct status *s, const struct series *se, const struct row *r)
{
	uint64_t sum = 0;

	for (unsigned k = 0; k < se->n; k++)
		sum += r->inc[slot(s, k)];
	return sum;
}

static void add_inc(uint32_t *v, uint64_t d)
{
	*v = *v + d > UINT32_MAX ? UINT32_MAX : (uint32_t)(*v + d);
}

static void row_free(struct row *r)
{
	free(r->name);
	*r = (struct row){ 0 };
}

static void series_clear(struct series *se)
{
	reading_clear(&se->last);
	for (unsigned i = 0; i <= STATUS_ROWS; i++)
		row_free(&se->rows[i]);
	se->have_last = false;
	se->n = 0;
}

/*
 * The row for t's increase d: its own, a free one, or the one with the least in the window when
 * d is more (its points move to other, so nothing is lost), else other.
 */
static struct row *row_for(const struct status *s, struct series *se, struct tally *t, uint64_t d,
			   double now)
{
	struct row *weakest = NULL, *other = &se->rows[STATUS_ROWS];
	uint64_t least = UINT64_MAX;

	for (unsigned i = 0; i < STATUS_ROWS; i++)
		if (se->rows[i].name && !strcmp(se->rows[i].name, t->name))
			return &se->rows[i];
	for (unsigned i = 0; i < STATUS_ROWS; i++) {
		uint64_t sum = se->rows[i].name ? window_sum(s, se, &se->rows[i]) : 0;

		if (sum < least) {
			least = sum;
			weakest = &se->rows[i];
		}
	}
	if (weakest->name && least >= d) {
		t->in_other = now;
		return other;
	}
	if (weakest->name)
		for (unsigned k = 0; k < STATUS_POINTS; k++)
			add_inc(&other->inc[k], weakest->inc[k]);
	row_free(weakest);
	weakest->name = strdup(t->name);
	if (!weakest->name) {
		t->in_other = now;
		return other;
	}
	return weakest;
}

/*
 * A counter below its last reading was reset (its collector restarted with new maps): it
 * counted from zero, so its increase is its value, as Prometheus' rate() takes it.
 */
static uint64_t increase(uint64_t now, uint64_t before)
{
	return now >= before ? now - before : now;
}

/* Take cur (emptied) as se's reading at sample slot i, time now. */
static void series_add(struct status *s, struct series *se, struct reading *cur, unsigned i,
		       double now)
{
	struct row *other = &se->rows[STATUS_ROWS];

	if (se->have_last) {
		if (se->n < STATUS_POINTS)
			se->n++;
		for (size_t k = 0; k < cur->n; k++) {
			struct tally *t = &cur->e[k], *old = reading_find(&se->last, t->name);
			uint64_t d = increase(t->count, old ? old->count : 0);

			if (old)
				t->in_other = old->in_other;
			if (d)
				add_inc(&row_for(s, se, t, d, now)->inc[i], d);
		}
		add_inc(&other->inc[i], increase(cur->rest, se->last.rest));
		/* A row quiet for the whole window makes room. */
		for (unsigned r = 0; r < STATUS_ROWS; r++)
			if (se->rows[r].name && !window_sum(s, se, &se->rows[r]))
				row_free(&se->rows[r]);
	}
	reading_clear(&se->last);
	se->last = *cur;
	se->have_last = true;
	*cur = (struct reading){ 0 };
}

struct status *status_new(struct scrape *sc, struct events *evs)
{
	struct status *s = calloc(1, sizeof(struct status));

	if (s) {
		s->scrape = sc;
		s->events = evs;
	}
	return s;
}

void status_free(struct status *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < NR_SOURCES; i++)
		series_clear(&s->series[i]);
	free(s);
}

/* One sample at time now (monotonic seconds), under the scrape lock. */
static void sample(struct status *s, double now)
{
	unsigned i = s->head;

	s->t[i] = now;
	s->dt[i] = s->samples ? now - s->t_prev : 0;
	s->t_prev = now;
	s->head = (i + 1) % STATUS_POINTS;
	s->samples++;
	for (unsigned k = 0; k < NR_SOURCES; k++) {
		struct series *se = &s->series[k];
		struct reading cur = { 0 };

		for (unsigned r = 0; r <= STATUS_ROWS; r++)
			se->rows[r].inc[i] = 0;
		se->state = read_source(s, &sources[k], &cur);
		if (se->state == SOURCE_OK) {
			series_add(s, se, &cur, i, now);
		} else {
			reading_clear(&cur);
			series_clear(se); /* a collector back later starts collecting anew */
		}
	}
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double status_tick(struct status *s)
{
	double now = now_seconds();

	if (now < s->next)
		return s->next - now;
	scrape_lock(s->scrape);
	sample(s, now);
	scrape_unlock(s->scrape);
	/* On the same beat, unless a whole step was missed. */
	s->next =
		s->next && now - s->next < STATUS_STEP ? s->next + STATUS_STEP : now + STATUS_STEP;
	return s->next - now;
}

void status_sample_at(struct status *s, double now)
{
	sample(s, now);
}

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
		empty(m, state_text(se->state), src->collector,
		      se->state == SOURCE_NO_FAMILY ? src->family : src->collector);
		return;
	}
	if (!se->n) {
		mbuf_printf(m,
			    "<p class=\"empty collecting\">Collecting: rates appear after the next "
			    "sample (one every %d s).</p>\n",
			    STATUS_STEP);
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
		    "<table class=\"spark\">\n<tr><th>reason</th><th>now (/s)</th><th>last %s"
		    "</th><th>in %s</th><th>total</th></tr>\n",
		    span, span);
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
	for (const struct collector *c = scrape_collectors(s->scrape); c->ops; c++) {
		if (!c->enabled)
			continue;
		mbuf_printf(m, "%s<li><b>%s</b> (%s): %s</li>\n", up++ ? "" : "<ul>\n",
			    c->ops->name, c->state ? "up" : "down", c->ops->description);
	}
	mbuf_puts(m, up ? "</ul>\n" : "<p class=\"empty\">No collector is enabled.</p>\n");
	for (unsigned k = 0; k < NR_SOURCES; k++)
		series_html(m, s, &s->series[k], &sources[k]);
	mbuf_printf(m,
		    "<p class=\"note\">A sample every %d s (<span class=\"samples\">%u</span> so "
		    "far), the last %d kept; rates are per second between two samples, summed over "
		    "every label but reason.</p>\n",
		    STATUS_STEP, s->samples, STATUS_POINTS);
	if (s->events)
		events_status_html(s->events, m);
	mbuf_puts(m, "</body></html>\n");
}
