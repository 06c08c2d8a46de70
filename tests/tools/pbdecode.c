// SPDX-License-Identifier: GPL-2.0-only
/*
 * pbdecode: a protobuf exposition (delimited io.prometheus.client.MetricFamily messages, as
 * /metrics serves them to Prometheus) on stdin, as Prometheus text 0.0.4 on stdout: classic
 * buckets as _bucket/_sum/_count, the +Inf bucket from sample_count, as Prometheus reads them.
 * A native histogram adds one line, "# NATIVE name{labels} schema=.. zero_threshold=..
 * zero_count=.. count=.. buckets=index:count,...", and a counter's exemplar "# EXEMPLAR
 * name{labels} {labels} value seconds". Values print in the shortest form that reads back
 * the same double, so a reader compares them as numbers.
 *
 * Input that is not a well-formed exposition (a length past the end, a varint over 5 bytes,
 * a message protobuf-c cannot unpack, a family without a name or type, a sample without the
 * member its type needs, a histogram whose buckets go down or whose native spans and deltas
 * do not agree) is refused: a message naming the byte offset on stderr, exit status 1.
 * Usage: pbdecode < body
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/prometheus.pb-c.h"

typedef Io__Prometheus__Client__MetricFamily pb_family;
typedef Io__Prometheus__Client__Metric pb_metric;
typedef Io__Prometheus__Client__Histogram pb_histogram;
typedef Io__Prometheus__Client__LabelPair pb_label;

#define INPUT_MAX (256u << 20)

static size_t at; /* offset of the message being read, for errors */

__attribute__((noreturn, format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "pbdecode: byte %zu: ", at);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* v as the shortest "%.*g" that reads back as v; Inf and NaN as the text format has them. */
static const char *short_double(char buf[static 40], double v)
{
	if (isnan(v))
		return "NaN";
	if (isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	for (int p = 1; p <= 17; p++) {
		snprintf(buf, 40, "%.*g", p, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return buf;
}

static void put_double(double v)
{
	char buf[40];

	fputs(short_double(buf, v), stdout);
}

static void put_escaped(const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", stdout);
		else if (*s == '\n')
			fputs("\\n", stdout);
		else if (quote && *s == '"')
			fputs("\\\"", stdout);
		else
			putchar(*s);
	}
}

static bool name_ok(const char *s, bool metric)
{
	if (!s || !*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!(*s == '_' || (metric && *s == ':') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

/* name{labels[,le="le"]}, the labels in the order the message holds them. */
static void put_series(const char *name, const char *suffix, pb_label **l, size_t n, const char *le)
{
	bool first = true;

	printf("%s%s", name, suffix);
	for (size_t i = 0; i < n; i++) {
		if (!name_ok(l[i]->name, false) || !l[i]->value)
			fail("label %zu of a %s sample: no valid name or no value", i, name);
		printf("%c%s=\"", first ? '{' : ',', l[i]->name);
		put_escaped(l[i]->value, true);
		putchar('"');
		first = false;
	}
	if (le)
		printf("%cle=\"%s\"", first ? '{' : ',', le);
	if (n || le)
		putchar('}');
}

/* The native buckets, checked: as many deltas as the spans hold, no count below zero. */
static void put_native(const char *name, const pb_metric *m, const pb_histogram *h)
{
	uint64_t total = h->zero_count;
	int64_t count = 0, idx = 0;
	bool any = false;
	size_t d = 0;

	if (h->n_negative_span || h->n_negative_delta || h->n_positive_count ||
	    h->n_negative_count || h->has_sample_count_float || h->has_zero_count_float)
		fail("%s: negative or float native buckets, never written here", name);
	printf("# NATIVE ");
	put_series(name, "", m->label, m->n_label, NULL);
	printf(" schema=%" PRId32 " zero_threshold=", h->schema);
	put_double(h->zero_threshold);
	printf(" zero_count=%" PRIu64 " count=%" PRIu64 " buckets=", h->zero_count,
	       h->sample_count);
	for (size_t s = 0; s < h->n_positive_span; s++) {
		const Io__Prometheus__Client__BucketSpan *sp = h->positive_span[s];

		/* The first span's offset is an index, the others' a gap after the previous. */
		idx += sp->offset;
		if (s && sp->offset < 0)
			fail("%s: span %zu goes backwards", name, s);
		for (uint32_t i = 0; i < sp->length; i++, idx++) {
			if (d == h->n_positive_delta)
				fail("%s: spans hold more buckets than the %zu deltas", name,
				     h->n_positive_delta);
			count += h->positive_delta[d++];
			if (count < 0)
				fail("%s: bucket %" PRId64 " counts below zero", name, idx);
			if (count)
				printf("%s%" PRId64 ":%" PRId64, any ? "," : "", idx, count);
			any |= count != 0;
			total += count;
		}
	}
	if (d != h->n_positive_delta)
		fail("%s: %zu deltas for %zu buckets in spans", name, h->n_positive_delta, d);
	printf(" total=%" PRIu64 "\n", total);
}

static void put_histogram(const char *name, const pb_metric *m)
{
	const pb_histogram *h = m->histogram;
	uint64_t prev = 0;
	char le[40];

	if (!h)
		fail("%s: a sample of a histogram family without a histogram", name);
	for (size_t i = 0; i < h->n_bucket; i++) {
		const Io__Prometheus__Client__Bucket *b = h->bucket[i];

		if (b->cumulative_count < prev || b->cumulative_count > h->sample_count ||
		    (i && !(b->upper_bound > h->bucket[i - 1]->upper_bound)))
			fail("%s: bucket %zu out of order", name, i);
		prev = b->cumulative_count;
		/* An explicit +Inf bucket is optional; the one from sample_count is written. */
		if (isinf(b->upper_bound) && b->upper_bound > 0)
			continue;
		put_series(name, "_bucket", m->label, m->n_label, short_double(le, b->upper_bound));
		printf(" %" PRIu64 "\n", b->cumulative_count);
	}
	put_series(name, "_bucket", m->label, m->n_label, "+Inf");
	printf(" %" PRIu64 "\n", h->sample_count);
	put_series(name, "_sum", m->label, m->n_label, NULL);
	putchar(' ');
	put_double(h->sample_sum);
	putchar('\n');
	put_series(name, "_count", m->label, m->n_label, NULL);
	printf(" %" PRIu64 "\n", h->sample_count);
	/* Prometheus 2.42 takes a histogram as native by its zero bucket or buckets; later ones
	 * by its spans too, so the schema is what says it here. */
	if (h->has_schema)
		put_native(name, m, h);
}

static void put_exemplar(const char *name, const pb_metric *m)
{
	const Io__Prometheus__Client__Exemplar *x = m->counter->exemplar;

	printf("# EXEMPLAR ");
	put_series(name, "", m->label, m->n_label, NULL);
	putchar(' ');
	put_series("", "", x->label, x->n_label, NULL);
	if (!x->n_label)
		fputs("{}", stdout);
	putchar(' ');
	put_double(x->value);
	if (x->timestamp)
		printf(" %" PRId64 ".%09" PRId32, x->timestamp->seconds, x->timestamp->nanos);
	putchar('\n');
}

static void put_family(const pb_family *f)
{
	static const char *const types[] = { "counter", "gauge",     "summary",
					     "untyped", "histogram", "gaugehistogram" };

	if (!name_ok(f->name, true))
		fail("a family without a valid name");
	if (!f->has_type || f->type < 0 || f->type >= 5 || f->type == 2)
		fail("%s: no type, or one never written here", f->name);
	if (f->help) {
		printf("# HELP %s ", f->name);
		put_escaped(f->help, false);
		putchar('\n');
	}
	printf("# TYPE %s %s\n", f->name, types[f->type]);
	for (size_t i = 0; i < f->n_metric; i++) {
		const pb_metric *m = f->metric[i];
		double v;

		if (m->has_timestamp_ms)
			fail("%s: a sample with a timestamp, never written here", f->name);
		switch (f->type) {
		case IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM:
			put_histogram(f->name, m);
			continue;
		case IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER:
			if (!m->counter || !m->counter->has_value)
				fail("%s: a counter sample without a value", f->name);
			v = m->counter->value;
			break;
		case IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE:
			if (!m->gauge || !m->gauge->has_value)
				fail("%s: a gauge sample without a value", f->name);
			v = m->gauge->value;
			break;
		default:
			if (!m->untyped || !m->untyped->has_value)
				fail("%s: an untyped sample without a value", f->name);
			v = m->untyped->value;
			break;
		}
		put_series(f->name, "", m->label, m->n_label, NULL);
		putchar(' ');
		put_double(v);
		putchar('\n');
		if (m->counter && m->counter->exemplar)
			put_exemplar(f->name, m);
	}
}

int main(void)
{
	size_t len = 0, cap = 1 << 16, n;
	uint8_t *in = malloc(cap);

	if (!in)
		return 2;
	while ((n = fread(in + len, 1, cap - len, stdin)) > 0) {
		len += n;
		if (len == cap) {
			uint8_t *p = cap < INPUT_MAX ? realloc(in, cap *= 2) : NULL;

			if (!p)
				fail("input over %u bytes", INPUT_MAX);
			in = p;
		}
	}
	while (at < len) {
		uint64_t size = 0;
		size_t i = 0;
		pb_family *f;

		/* Prometheus reads a length of at most 5 varint bytes. */
		do {
			if (at + i == len)
				fail("the length prefix runs past the end");
			if (i == 5)
				fail("a length prefix over 5 bytes");
			size |= (uint64_t)(in[at + i] & 0x7f) << (7 * i);
		} while (in[at + i++] & 0x80);
		if (size > len - at - i)
			fail("a message of %" PRIu64 " bytes, %zu left", size, len - at - i);
		f = io__prometheus__client__metric_family__unpack(NULL, size, in + at + i);
		if (!f)
			fail("protobuf-c cannot unpack a MetricFamily of %" PRIu64 " bytes", size);
		put_family(f);
		io__prometheus__client__metric_family__free_unpacked(f, NULL);
		at += i + size;
	}
	free(in);
	return fflush(stdout) ? 1 : 0;
}
