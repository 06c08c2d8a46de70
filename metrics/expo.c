/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The exposition: families and their samples in Prometheus text 0.0.4 or OpenMetrics 1.0.0
 * (protobuf: proto.c), and the filters that capture families on their way.
 */
#include <inttypes.h>
#include <string.h>

#include "metrics.h"
#include "metrics_internal.h"

void labels_add(struct labels *l, const char *name, const char *value)
{
	if (l->n < 0 || l->n >= LABELS_MAX)
		return;
	l->name[l->n] = name;
	l->value[l->n] = value ? value : "";
	l->n++;
}

static const char *type_name(enum metric_type t)
{
	switch (t) {
	case METRIC_COUNTER:
		return "counter";
	case METRIC_GAUGE:
		return "gauge";
	case METRIC_HISTOGRAM:
		return "histogram";
	}
	return "unknown";
}

static bool has_total_suffix(const char *name, size_t len)
{
	return len >= 6 && !memcmp(name + len - 6, "_total", 6);
}

void expo_init(struct expo *e, struct mbuf *out, enum metric_format format)
{
	e->out = out;
	e->format = format;
	e->family = NULL;
	e->type = METRIC_GAUGE;
	e->constant = NULL;
	e->filter = NULL;
	e->capturing = false;
	e->n_overflows = 0;
	e->bad_samples = 0;
	e->pb_start = 0;
	e->pb_open = false;
}

static void flush_filter(struct expo *e, bool keep)
{
	if (e->capturing) {
		e->capturing = false;
		e->filter->flush(e->filter, e, keep);
	}
}

void expo_set_filter(struct expo *e, struct expo_filter *f, bool keep)
{
	flush_filter(e, keep);
	e->filter = f;
}

static void write_help(struct expo *e, const char *name, size_t len, const char *help)
{
	mbuf_puts(e->out, "# HELP ");
	mbuf_write(e->out, name, len);
	mbuf_puts(e->out, " ");
	/* OpenMetrics HELP is an escaped-string like label values, so quotes are escaped too. */
	if (e->format == FORMAT_OPENMETRICS)
		escape_label_value(e->out, help);
	else
		escape_help(e->out, help);
	mbuf_puts(e->out, "\n");
}

static void write_type(struct expo *e, const char *name, size_t len, enum metric_type type)
{
	mbuf_puts(e->out, "# TYPE ");
	mbuf_write(e->out, name, len);
	mbuf_printf(e->out, " %s\n", type_name(type));
}

void expo_family(struct expo *e, const char *name, enum metric_type type, const char *help)
{
	size_t len = strlen(name);

	flush_filter(e, true);
	e->family = name;
	e->type = type;
	e->capturing = e->filter && e->filter->capture(e->filter, name, type);
	/* An empty HELP means "no HELP" in OpenMetrics; skip it in every format for symmetry. */
	if (help && !*help)
		help = NULL;
	if (e->format == FORMAT_PROTOBUF) {
		proto_family_end(e);
		proto_family_begin(e, name, type, help);
	} else if (e->format == FORMAT_OPENMETRICS) {
		if (type == METRIC_COUNTER && has_total_suffix(name, len))
			len -= 6;
		/* OpenMetrics recommends TYPE, UNIT, HELP in that order. */
		write_type(e, name, len, type);
		if (help)
			write_help(e, name, len, help);
	} else {
		if (help)
			write_help(e, name, len, help);
		write_type(e, name, len, type);
	}
}

static void write_name(struct expo *e, const char *suffix)
{
	mbuf_puts(e->out, e->family);
	/* OpenMetrics counter samples must end in _total even if the caller forgot it. */
	if (e->format == FORMAT_OPENMETRICS && e->type == METRIC_COUNTER &&
	    !has_total_suffix(e->family, strlen(e->family)))
		mbuf_puts(e->out, "_total");
	if (suffix)
		mbuf_puts(e->out, suffix);
}

static void write_pairs(struct mbuf *out, const struct labels *l, bool *first)
{
	int n = l ? l->n : 0;

	if (n > LABELS_MAX)
		n = LABELS_MAX;
	for (int i = 0; i < n; i++) {
		label_pair(out, *first ? '{' : ',', l->name[i], l->value[i]);
		*first = false;
	}
}

/* [a-zA-Z_][a-zA-Z0-9_]*: anything else would let a name end the label set. */
static bool label_name_ok(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

static bool names_ok(const struct labels *l)
{
	for (int i = 0; l && i < l->n && i < LABELS_MAX; i++)
		if (!label_name_ok(l->name[i]))
			return false;
	return true;
}

/* A sample whose labels (or the constant ones) have a name no format allows is left out. */
static bool sample_ok(struct expo *e, const struct labels *l)
{
	if (names_ok(l) && names_ok(e->constant))
		return true;
	e->bad_samples++;
	return false;
}

/*
 * The sample's labels, then the exposition's constant labels, then le when given (already
 * formatted, needs no escaping).
 */
static void write_labels(struct expo *e, const struct labels *l, const char *le)
{
	bool first = true;

	write_pairs(e->out, l, &first);
	write_pairs(e->out, e->constant, &first);
	if (le) {
		mbuf_puts(e->out, first ? "{" : ",");
		first = false;
		mbuf_puts(e->out, "le=\"");
		mbuf_puts(e->out, le);
		mbuf_puts(e->out, "\"");
	}
	if (!first)
		mbuf_puts(e->out, "}");
}
void expo_u64(struct expo *e, const struct labels *l, uint64_t v)
{
	if (e->capturing) {
		e->filter->sample(e->filter, l, NULL, &v, 0, 0, NULL, NULL);
		return;
	}
	if (!sample_ok(e, l))
		return;
	if (e->format == FORMAT_PROTOBUF) {
		proto_scalar(e, l, (double)v, NULL);
		return;
	}
	/* Digits written backwards from the end: printf costs (docs/cost.md, the scrape). */
	char num[24], *p = num + sizeof(num);

	*--p = '\n';
	do
		*--p = '0' + v % 10;
	while (v /= 10);
	*--p = ' ';
	write_name(e, NULL);
	write_labels(e, l, NULL);
	mbuf_write(e->out, p, num + sizeof(num) - p);
}

void expo_u64_exemplar(struct expo *e, const struct labels *l, uint64_t v, const struct labels *ex,
		       double ex_value, double ex_time)
{
	char num[NUM_MAX];
	size_t len = 0;
	bool first = true;

	if (e->capturing) {
		const struct exemplar x = { ex, ex_value, ex_time };

		e->filter->sample(e->filter, l, NULL, &v, 0, 0, NULL, ex ? &x : NULL);
		return;
	}
	if (e->format == FORMAT_PROMETHEUS || !ex || !names_ok(ex)) {
		expo_u64(e, l, v);
		return;
	}
	for (int i = 0; i < ex->n && i < LABELS_MAX; i++)
		len += utf8_runes(ex->name[i]) + utf8_runes(ex->value[i]);
	if (len > EXEMPLAR_MAX_RUNES || !sample_ok(e, l)) {
		expo_u64(e, l, v);
		return;
	}
	if (e->format == FORMAT_PROTOBUF) {
		const struct exemplar x = { ex, ex_value, ex_time };

		proto_scalar(e, l, (double)v, &x);
		return;
	}
	write_name(e, NULL);
	write_labels(e, l, NULL);
	mbuf_printf(e->out, " %" PRIu64 " # ", v);
	write_pairs(e->out, ex, &first);
	mbuf_puts(e->out, first ? "{}" : "}");
	fmt_double(num, ex_value, true);
	mbuf_printf(e->out, " %s %.3f\n", num, ex_time);
}

void expo_double(struct expo *e, const struct labels *l, double v)
{
	char num[NUM_MAX];

	if (!sample_ok(e, l))
		return;
	if (e->format == FORMAT_PROTOBUF) {
		proto_scalar(e, l, v, NULL);
		return;
	}
	fmt_double(num, v, e->format == FORMAT_OPENMETRICS);
	write_name(e, NULL);
	write_labels(e, l, NULL);
	mbuf_printf(e->out, " %s\n", num);
}

void expo_histogram(struct expo *e, const struct labels *l, const double *bounds,
		    const uint64_t *counts, int nbounds, double sum)
{
	expo_histogram_native(e, l, bounds, counts, nbounds, sum, NULL);
}

void expo_histogram_native(struct expo *e, const struct labels *l, const double *bounds,
			   const uint64_t *counts, int nbounds, double sum,
			   const struct native_hist *nh)
{
	bool om = e->format == FORMAT_OPENMETRICS;
	char num[NUM_MAX];
	uint64_t cum = 0;
	int i;

	if (e->capturing) {
		e->filter->sample(e->filter, l, bounds, counts, nbounds, sum, nh, NULL);
		return;
	}
	if (!sample_ok(e, l))
		return;
	if (e->format == FORMAT_PROTOBUF) {
		proto_histogram(e, l, bounds, counts, nbounds, sum, nh);
		return;
	}
	for (i = 0; i < nbounds; i++) {
		cum += counts[i];
		fmt_double(num, bounds[i], om);
		write_name(e, "_bucket");
		write_labels(e, l, num);
		mbuf_printf(e->out, " %" PRIu64 "\n", cum);
	}
	cum += counts[nbounds > 0 ? nbounds : 0];
	write_name(e, "_bucket");
	write_labels(e, l, "+Inf");
	mbuf_printf(e->out, " %" PRIu64 "\n", cum);

	fmt_double(num, sum, om);
	write_name(e, "_sum");
	write_labels(e, l, NULL);
	mbuf_printf(e->out, " %s\n", num);

	write_name(e, "_count");
	write_labels(e, l, NULL);
	mbuf_printf(e->out, " %" PRIu64 "\n", cum);
}

void expo_map_overflow(struct expo *e, const char *map, uint64_t count)
{
	if (e->n_overflows < EXPO_MAX_OVERFLOWS)
		e->overflows[e->n_overflows++] = (struct expo_overflow){ map, count };
}

void expo_finish(struct expo *e)
{
	flush_filter(e, true);
	if (e->format == FORMAT_OPENMETRICS)
		mbuf_puts(e->out, "# EOF\n");
	proto_family_end(e);
}
