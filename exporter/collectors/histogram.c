// SPDX-License-Identifier: GPL-2.0-only
/*
 * Histograms from the kernel's cells (bpf/hist.h): the layout of a family, the histograms a scrape
 * gathers, and rendering.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/collector.h"
#include "collectors/histogram.h"
#include "kernel/bpfmap.h"

static const uint32_t edges[8] = HIST_EDGES;

unsigned hist_cell_of(uint32_t us)
{
	unsigned e, n = 0;
	uint64_t x;

	if (!us)
		return HIST_ZERO_CELL;
	e = 31 - (unsigned)__builtin_clz(us);
	x = (uint64_t)us << (31 - e);
	while (n < 8 && edges[n] < x)
		n++;
	return HIST_CELL(e, x == 1ull << 31 ? 0 : n + 1);
}

/* ceil(i / 2^shift) for any sign: native bucket i of schema 3 within the coarser schema. */
static int32_t coarser(int32_t i, int shift)
{
	int32_t m = 1 << shift;

	return i >= 0 ? (i + m - 1) / m : -(-i / m);
}

static int classic_of(const uint32_t *bounds_us, int nbounds, uint64_t v)
{
	int b = 0;

	while (b < nbounds && v > bounds_us[b])
		b++;
	return b;
}

int hist_layout_init(struct hist_layout *l, const uint32_t *bounds_us, int nbounds, int schema)
{
	int shift = HIST_SCHEMA - schema;

	if (nbounds < 0 || nbounds > HIST_MAX_BOUNDS ||
	    (schema != HIST_NATIVE_OFF && (schema < HIST_SCHEMA_MIN || schema > HIST_SCHEMA)))
		return -EINVAL;
	memset(l, 0, sizeof(*l));
	l->nbounds = nbounds;
	l->schema = schema;
	for (int b = 0; b < nbounds; b++) {
		if (b && bounds_us[b] <= bounds_us[b - 1])
			return -EINVAL;
		l->bounds[b] = bounds_us[b] / 1e6;
	}
	if (schema != HIST_NATIVE_OFF) {
		l->offset = coarser(HIST_OFFSET, shift);
		l->nnative = coarser(HIST_OFFSET + 8 * HIST_OCTAVES, shift) - l->offset + 1;
	}
	for (unsigned c = 0; c < HIST_CELLS; c++) {
		unsigned e = c / HIST_PER_OCTAVE, p = c % HIST_PER_OCTAVE, n = p ? p - 1 : 0;
		uint64_t lo = 1ull << e, hi = lo;

		l->native[c] = -1;
		if (c == HIST_ZERO_CELL || (!e && p))
			continue; /* 0, and cells no value reaches: the zero bucket, classic 0 */
		if (p) {
			/* The values with n edges below them: (edge n - 1, edge n] within the octave. */
			lo = n ? (edges[n - 1] >> (31 - e)) + 1 : lo + 1;
			hi = n < 8 ? edges[n] >> (31 - e) : (2ull << e) - 1;
			if (lo <= 1ull << e)
				lo = (1ull << e) + 1;
			if (hi >= 2ull << e)
				hi = (2ull << e) - 1;
		}
		l->classic[c] = classic_of(bounds_us, nbounds, hi);
		/* A classic bound inside a cell could not be told from its counts. */
		if (lo <= hi && classic_of(bounds_us, nbounds, lo) != l->classic[c])
			return -EINVAL;
		if (schema != HIST_NATIVE_OFF)
			l->native[c] = coarser(HIST_OFFSET + 8 * (int32_t)e + (int32_t)n, shift) -
				       l->offset;
	}
	return 0;
}

uint64_t hist_resolve(const struct hist_layout *l, const uint64_t *h, uint64_t *classic,
		      uint64_t *native, uint64_t *zero)
{
	uint64_t count = 0;

	memset(classic, 0, (l->nbounds + 1) * sizeof(*classic));
	if (native) {
		memset(native, 0, l->nnative * sizeof(*native));
		*zero = 0;
	}
	for (unsigned c = 0; c < HIST_CELLS; c++) {
		uint64_t v = h[c];

		if (!v)
			continue;
		count += v;
		classic[l->classic[c]] += v;
		if (!native)
			continue;
		if (l->native[c] < 0)
			*zero += v;
		else
			native[l->native[c]] += v;
	}
	return count;
}

void hist_render(struct expo *e, const struct labels *lab, const struct hist_layout *l,
		 const uint64_t *h)
{
	uint64_t classic[HIST_MAX_BOUNDS + 1], native[HIST_MAX_NATIVE];
	struct native_hist nh = { 0 };
	double sum = h[HIST_SUM] / 1e6;

	if (l->schema == HIST_NATIVE_OFF) {
		hist_resolve(l, h, classic, NULL, NULL);
		expo_histogram(e, lab, l->bounds, classic, l->nbounds, sum);
		return;
	}
	hist_resolve(l, h, classic, native, &nh.zero_count);
	nh.schema = l->schema;
	/*
	 * The zero bucket holds 0 us only: its threshold is the first bucket's lower edge, just
	 * under 1 us. Above 0, so that Prometheus 2.42 takes an empty histogram for a native one.
	 */
	nh.zero_threshold = exp2((double)(l->offset - 1) / (1 << l->schema));
	nh.offset = l->offset;
	nh.counts = native;
	nh.n = l->nnative;
	expo_histogram_native(e, lab, l->bounds, classic, l->nbounds, sum, &nh);
}

int hist_family_init(struct hist_family *f, const uint32_t *bounds_us, int nbounds, int schema,
		     hist_labels_fn labels, int netns_at)
{
	memset(f, 0, sizeof(*f));
	f->labels = labels;
	f->netns_at = netns_at;
	return hist_layout_init(&f->layout, bounds_us, nbounds, schema);
}

void hist_family_clear(struct hist_family *f)
{
	f->n = 0;
	f->sorted = true;
}

/* Render order: by overflow, netns, then hist. */
static int cmp_key(bool overflow, uint32_t netns, uint32_t hist, const struct hist_series *y)
{
	if (overflow != y->overflow)
		return overflow - y->overflow;
	if (netns != y->netns)
		return netns < y->netns ? -1 : 1;
	return hist < y->hist ? -1 : hist > y->hist;
}

static int cmp_series(const void *a, const void *b)
{
	const struct hist_series *x = a;

	return cmp_key(x->overflow, x->netns, x->hist, b);
}

uint64_t *hist_family_add(struct hist_family *f, bool overflow, uint32_t netns, uint32_t hist)
{
	struct hist_series *h;

	/* The histograms added since the last of another (overflow, netns). */
	for (size_t i = f->n; i-- > 0 && f->v[i].overflow == overflow && f->v[i].netns == netns;)
		if (f->v[i].hist == hist)
			return f->v[i].c;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;

		h = realloc(f->v, cap * sizeof(*h));
		if (!h)
			return NULL;
		f->v = h;
		f->cap = cap;
	}
	h = &f->v[f->n++];
	memset(h, 0, sizeof(*h));
	h->overflow = overflow;
	h->netns = netns;
	h->hist = hist;
	if (f->n > 1 && cmp_series(h - 1, h) > 0)
		f->sorted = false;
	return h->c;
}

/* Rows by overflow, netns, then slot: a histogram's rows are together. */
static int cmp_row(const void *a, const void *b)
{
	const struct slot_row *x = a, *y = b;

	if (x->overflow != y->overflow)
		return x->overflow - y->overflow;
	if (x->netns != y->netns)
		return x->netns < y->netns ? -1 : 1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

int hist_family_add_rows(struct hist_family *f, struct slot_row *rows, size_t n, hist_slot_fn where)
{
	qsort(rows, n, sizeof(*rows), cmp_row);
	for (size_t i = 0; i < n; i++) {
		uint32_t hist;
		unsigned at;
		uint64_t *c;

		if (!where(rows[i].slot, &hist, &at))
			continue;
		c = hist_family_add(f, rows[i].overflow, rows[i].netns, hist);
		if (!c)
			return -ENOMEM;
		c[at] += rows[i].value;
	}
	return 0;
}

static void sort_series(struct hist_family *f)
{
	if (!f->sorted)
		qsort(f->v, f->n, sizeof(*f->v), cmp_series);
	f->sorted = true;
}

uint64_t *hist_family_find(struct hist_family *f, bool overflow, uint32_t netns, uint32_t hist)
{
	size_t lo = 0, hi;

	sort_series(f);
	for (hi = f->n; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_key(overflow, netns, hist, &f->v[mid]);

		if (!c)
			return f->v[mid].c;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

void hist_family_render(struct hist_family *f, struct expo *e, const void *collector)
{
	sort_series(f);
	for (size_t i = 0; i < f->n; i++) {
		const struct hist_series *h = &f->v[i];
		struct labels l = { 0 };
		char netns_buf[21];

		f->labels(collector, &l, h->hist);
		if (f->netns_at >= 0) {
			labels_add_netns(&l, netns_buf, h->overflow, h->netns);
			/* From the end to its place. */
			for (int j = l.n - 1; j > f->netns_at; j--) {
				const char *name = l.name[j], *value = l.value[j];

				l.name[j] = l.name[j - 1];
				l.value[j] = l.value[j - 1];
				l.name[j - 1] = name;
				l.value[j - 1] = value;
			}
		}
		hist_render(e, &l, &f->layout, h->c);
	}
}

void hist_family_free(struct hist_family *f)
{
	free(f->v);
	f->v = NULL;
	f->n = f->cap = 0;
}

uint64_t hist_count(const uint64_t *h)
{
	uint64_t count = 0;

	for (unsigned c = 0; c < HIST_CELLS; c++)
		count += h[c];
	return count;
}

int hist_parse_schema(const char *value, int *schema, char *err, size_t errlen)
{
	char *end;
	long v;

	if (!strcmp(value, "off")) {
		*schema = HIST_NATIVE_OFF;
		return 0;
	}
	errno = 0;
	v = strtol(value, &end, 10);
	if (errno || end == value || *end || v < HIST_SCHEMA_MIN || v > HIST_SCHEMA) {
		snprintf(err, errlen,
			 "expected off or a schema from %d to %d (the kernel counts at schema %d), "
			 "got '%s'",
			 HIST_SCHEMA_MIN, HIST_SCHEMA, HIST_SCHEMA, value);
		return -EINVAL;
	}
	*schema = (int)v;
	return 0;
}
