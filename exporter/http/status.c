// SPDX-License-Identifier: GPL-2.0-only
/*
 * The status page's samples (status_page.c renders them). The main thread samples every
 * STATUS_STEP seconds: it reads each source's counters through its collector (as a scrape
 * does, the family captured by an exposition filter and summed over every label but reason)
 * and keeps, per reason, the increase since the previous sample. Page views only render what
 * the samples hold, so a page costs no map read and two views see the same history. A rate
 * needs two readings: until the second one the page says it is collecting.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/collector.h"
#include "http/status_internal.h"
#include "scrape.h"

const struct source status_sources[NR_SOURCES] = {
	{ "Drops by reason", "drops", "netstack_skb_drops_total", "drops", "#c0392b" },
	{ "TCP resets sent by reason", "resets", "netstack_tcp_resets_sent_total", "resets sent",
	  "#8e44ad" },
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
		       const uint64_t *counts, int nbounds, double sum,
		       const struct native_hist *nh, const struct exemplar *ex)
{
	struct reading *r = ((struct summer *)f)->r;
	const char *reason = NULL;
	struct tally *t;

	(void)bounds;
	(void)nh;
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
		se->state = read_source(s, &status_sources[k], &cur);
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
