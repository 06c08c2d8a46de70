// SPDX-License-Identifier: GPL-2.0-only
/*
 * The status page's samples (status_page.c renders them). The main thread samples every
 * STATUS_STEP seconds: it reads each source's collector through the scrape path (scrape_read:
 * its pod labels folded as in a scrape, the family captured by an exposition filter) and keeps,
 * for a counter, the increase of each reason (cause) since the previous sample, summed over
 * every other label; for a histogram, its buckets at the last minute's readings, from which it
 * works out p50 and p99 then and there. Page views only render what the samples hold, so a page
 * costs no map read and two views see the same history. A rate needs two readings: until the
 * second one the page says it is collecting.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/families.h"
#include "http/status_internal.h"
#include "scrape.h"

const struct source status_sources[NR_SOURCES] = {
	{ "Drops by reason", DROPS_COLLECTOR, DROPS_FAMILY, "reason", NULL, "drops", "#c0392b" },
	{ "TCP resets sent by reason", RESETS_COLLECTOR, RESETS_SENT_FAMILY, "reason", NULL,
	  "resets sent", "#8e44ad" },
	{ "TCP retransmits by cause", RETRANS_COLLECTOR, RETRANSMITS_FAMILY, "cause", NULL,
	  "retransmits", "#d35400" },
};

const struct source status_qsources[NR_QSOURCES] = {
	{ "TCP round-trip time", RTT_COLLECTOR, RTT_FAMILY, "family", "rtt_kind",
	  "round trips measured", NULL },
	{ "TCP handshake time", CONNECTIONS_COLLECTOR, HANDSHAKE_FAMILY, "direction", "family",
	  "handshakes timed", NULL },
};

static void reading_clear(struct reading *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->e[i].name);
	free(r->e);
	*r = (struct reading){ 0 };
}

struct tally *reading_find(const struct reading *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->e[i].name, name))
			return &r->e[i];
	return NULL;
}

/* Sums a counter family over every label but one into a reading. */
struct summer {
	struct expo_filter f;
	const struct source *src;
	struct reading *r;
};

/* The value of label name in l, or NULL. */
static const char *label_value(const struct labels *l, const char *name)
{
	for (int k = 0; l && name && k < l->n; k++)
		if (!strcmp(l->name[k], name))
			return l->value[k];
	return NULL;
}

static bool capture(struct expo_filter *f, const char *family, enum metric_type type)
{
	struct summer *s = (struct summer *)f;

	if (type != METRIC_COUNTER || strcmp(family, s->src->family))
		return false;
	s->r->seen_family = true;
	return true;
}

static void add_sample(struct expo_filter *f, const struct labels *l, const double *bounds,
		       const uint64_t *counts, int nbounds, double sum,
		       const struct native_hist *nh, const struct exemplar *ex)
{
	struct summer *s = (struct summer *)f;
	struct reading *r = s->r;
	const char *reason = label_value(l, s->src->label);
	struct tally *t;

	(void)bounds;
	(void)nh;
	(void)nbounds;
	(void)sum;
	(void)ex;
	if (!reason) {
		r->no_label = true;
		return;
	}
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

static enum source_state state_of(enum collector_reading rd)
{
	switch (rd) {
	case READING_NOT_BUILT:
		return SOURCE_NOT_BUILT;
	case READING_DISABLED:
		return SOURCE_DISABLED;
	case READING_DOWN:
		return SOURCE_DOWN;
	case READING_FAILED:
		return SOURCE_FAILED;
	case READING_OK:
		break;
	}
	return SOURCE_OK;
}

/* Read src's family from its collector into r (empty before). Under the scrape lock. */
static enum source_state read_source(const struct status *s, const struct source *src,
				     struct reading *r)
{
	struct summer summer = { { capture, add_sample, flush_nothing }, src, r };
	enum source_state st = state_of(scrape_read(s->scrape, src->collector, &summer.f));

	if (st != SOURCE_OK)
		return st;
	if (!r->seen_family)
		return SOURCE_NO_FAMILY;
	return r->no_label && !r->n && !r->rest ? SOURCE_NO_LABEL : SOURCE_OK;
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

/* Histograms: a quantile table's readings. */

static void qseries_clear(struct qseries *q)
{
	for (unsigned i = 0; i < q->n_rows; i++) {
		free(q->rows[i].name);
		free(q->rows[i].c);
	}
	free(q->edge);
	*q = (struct qseries){ .state = q->state };
}

/* Sums a histogram family's buckets into the rows of a qseries, at the ring's slot head. */
struct qsummer {
	struct expo_filter f;
	const struct source *src;
	struct qseries *q;
	bool seen_family, no_label;
	/* The sample being added, as edges from 0 up and counts. */
	double edge[STATUS_BUCKETS + 1];
	uint64_t c[STATUS_BUCKETS];
};

static bool qcapture(struct expo_filter *f, const char *family, enum metric_type type)
{
	struct qsummer *s = (struct qsummer *)f;

	if (type != METRIC_HISTOGRAM || strcmp(family, s->src->family))
		return false;
	s->seen_family = true;
	return true;
}

/*
 * A sample's buckets into s->edge and s->c: the native ones when it has them (9% wide at the
 * default schema 3, where the classic ones double), else the classic ones. Their number, or 0
 * when they do not fit.
 */
static unsigned buckets_of(struct qsummer *s, const double *bounds, const uint64_t *counts,
			   int nbounds, const struct native_hist *nh)
{
	unsigned nb = 0;

	s->edge[0] = 0;
	if (nh && nh->n) {
		double step = exp2(-nh->schema), low = exp2((nh->offset - 1) * step);

		if (nh->n + 2 > STATUS_BUCKETS)
			return 0;
		s->edge[++nb] = nh->zero_threshold;
		s->c[0] = nh->zero_count;
		/* An empty bucket between the zero bucket and the first native one, if any. */
		if (low > nh->zero_threshold * (1 + 1e-9)) {
			s->edge[++nb] = low;
			s->c[nb - 1] = 0;
		}
		for (unsigned j = 0; j < nh->n; j++) {
			s->edge[++nb] = exp2((nh->offset + (int32_t)j) * step);
			s->c[nb - 1] = nh->counts[j];
		}
		return nb;
	}
	if (nbounds < 0 || nbounds + 1 > STATUS_BUCKETS)
		return 0;
	for (int i = 0; i < nbounds; i++) {
		s->edge[++nb] = bounds[i];
		s->c[nb - 1] = counts[i];
	}
	s->edge[++nb] = INFINITY;
	s->c[nb - 1] = counts[nbounds];
	return nb;
}

static struct qrow *qrow_for(struct qseries *q, const char *name)
{
	struct qrow *r;

	for (unsigned i = 0; i < q->n_rows; i++)
		if (!strcmp(q->rows[i].name, name))
			return &q->rows[i];
	if (q->n_rows == STATUS_QROWS)
		return NULL;
	r = &q->rows[q->n_rows];
	*r = (struct qrow){ .name = strdup(name),
			    .c = calloc((size_t)(STATUS_QPOINTS + 1) * q->nb, sizeof(uint64_t)) };
	if (!r->name || !r->c) {
		free(r->name);
		free(r->c);
		return NULL;
	}
	q->n_rows++;
	return r;
}

static void add_qsample(struct expo_filter *f, const struct labels *l, const double *bounds,
			const uint64_t *counts, int nbounds, double sum,
			const struct native_hist *nh, const struct exemplar *ex)
{
	struct qsummer *s = (struct qsummer *)f;
	struct qseries *q = s->q;
	const char *v = label_value(l, s->src->label), *v2 = label_value(l, s->src->label2);
	unsigned nb = buckets_of(s, bounds, counts, nbounds, nh);
	char name[160];
	struct qrow *r;

	(void)sum;
	(void)ex;
	if (!v) {
		s->no_label = true;
		return;
	}
	if (!nb)
		return;
	/* New buckets (a reload changed them): the readings start again. */
	if (nb != q->nb || memcmp(q->edge, s->edge, (nb + 1) * sizeof(double))) {
		qseries_clear(q);
		q->edge = malloc((nb + 1) * sizeof(double));
		if (!q->edge)
			return;
		memcpy(q->edge, s->edge, (nb + 1) * sizeof(double));
		q->nb = nb;
	}
	q->label2 |= v2 != NULL;
	snprintf(name, sizeof(name), "%s%s%s", v, v2 ? " " : "", v2 ? v2 : "");
	r = qrow_for(q, name);
	for (unsigned b = 0; r && b < nb; b++)
		r->c[q->head * nb + b] += s->c[b];
}

/* The q-quantile of n observations in buckets inc, as Prometheus' histogram_quantile. */
static double quantile(const struct qseries *q, const uint64_t *inc, uint64_t n, double p)
{
	double rank = p * n, below = 0;

	for (unsigned b = 0; b < q->nb; b++) {
		if (inc[b] && below + inc[b] >= rank) {
			/* In the +Inf bucket: the highest finite bound. */
			if (isinf(q->edge[b + 1]))
				return q->edge[b];
			return q->edge[b] + (q->edge[b + 1] - q->edge[b]) * (rank - below) / inc[b];
		}
		below += inc[b];
	}
	return q->edge[q->nb];
}

/* p50 and p99 of each row over the window's intervals, at most STATUS_QPOINTS of them. */
static void qseries_quantiles(struct qseries *q)
{
	unsigned ring = STATUS_QPOINTS + 1, w = q->readings - 1;
	unsigned now = (q->head + ring - 1) % ring;
	uint64_t inc[STATUS_BUCKETS];

	q->span = q->t[now] - q->t[(now + ring - w) % ring];
	for (unsigned i = 0; i < q->n_rows; i++) {
		struct qrow *r = &q->rows[i];

		r->n = 0;
		for (unsigned b = 0; b < q->nb; b++) {
			inc[b] = 0;
			for (unsigned a = 0; a < w; a++) {
				unsigned k = (now + ring - a) % ring, j = (k + ring - 1) % ring;

				inc[b] += increase(r->c[k * q->nb + b], r->c[j * q->nb + b]);
			}
			r->n += inc[b];
		}
		if (r->n) {
			r->p50 = quantile(q, inc, r->n, 0.5);
			r->p99 = quantile(q, inc, r->n, 0.99);
		}
	}
}

/* One reading of a histogram source at time now. Under the scrape lock. */
static void qsample(struct status *s, struct qseries *q, const struct source *src, double now)
{
	struct qsummer *sum = malloc(sizeof(*sum));
	unsigned ring = STATUS_QPOINTS + 1;

	if (!sum) {
		q->state = SOURCE_FAILED;
		qseries_clear(q);
		return;
	}
	*sum = (struct qsummer){ .f = { qcapture, add_qsample, flush_nothing },
				 .src = src,
				 .q = q };
	for (unsigned i = 0; i < q->n_rows; i++)
		memset(q->rows[i].c + (size_t)q->head * q->nb, 0, q->nb * sizeof(uint64_t));
	q->state = state_of(scrape_read(s->scrape, src->collector, &sum->f));
	if (q->state == SOURCE_OK && !sum->seen_family)
		q->state = SOURCE_NO_FAMILY;
	if (q->state == SOURCE_OK && sum->no_label && !q->n_rows)
		q->state = SOURCE_NO_LABEL;
	free(sum);
	if (q->state != SOURCE_OK) {
		qseries_clear(q); /* a collector back later starts collecting anew */
		return;
	}
	q->t[q->head] = now;
	q->head = (q->head + 1) % ring;
	if (q->readings < ring)
		q->readings++;
	if (q->readings > 1)
		qseries_quantiles(q);
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
	for (unsigned i = 0; i < NR_QSOURCES; i++)
		qseries_clear(&s->qseries[i]);
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
		se->state = read_source(s, &status_sources[k], &cur);
		if (se->state == SOURCE_OK) {
			series_add(s, se, &cur, i, now);
		} else {
			reading_clear(&cur);
			series_clear(se); /* a collector back later starts collecting anew */
		}
	}
	for (unsigned k = 0; k < NR_QSOURCES; k++)
		qsample(s, &s->qseries[k], &status_qsources[k], now);
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
