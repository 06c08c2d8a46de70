/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Unit tests for the protobuf exposition (metrics/proto.c): what expo_* writes, read back with
 * protobuf-c's generated unpacker; and the negotiation that picks it.
 */
#include "check.h"
#include "metrics.h"
#include "metrics/prometheus.pb-c.h"

#include <math.h>
#include <stdlib.h>

typedef Io__Prometheus__Client__MetricFamily pb_family;
typedef Io__Prometheus__Client__Metric pb_metric;
typedef Io__Prometheus__Client__Histogram pb_histogram;

#define FAMILIES_MAX 16

/* The delimited messages of an exposition, unpacked. */
struct decoded {
	pb_family *f[FAMILIES_MAX];
	int n;
	bool bad; /* a prefix or message that did not decode */
};

static struct decoded decode(const struct mbuf *b)
{
	const uint8_t *p = (const uint8_t *)b->data, *end = p + b->len;
	struct decoded d = { 0 };

	while (p < end && d.n < FAMILIES_MAX) {
		uint64_t len = 0;
		int shift = 0;

		do {
			if (p == end || shift > 63) {
				d.bad = true;
				return d;
			}
			len |= (uint64_t)(*p & 0x7f) << shift;
			shift += 7;
		} while (*p++ & 0x80);
		if (len > (uint64_t)(end - p)) {
			d.bad = true;
			return d;
		}
		d.f[d.n] = io__prometheus__client__metric_family__unpack(NULL, len, p);
		if (!d.f[d.n]) {
			d.bad = true;
			return d;
		}
		d.n++;
		p += len;
	}
	d.bad |= p != end;
	return d;
}

static void decoded_free(struct decoded *d)
{
	for (int i = 0; i < d->n; i++)
		io__prometheus__client__metric_family__free_unpacked(d->f[i], NULL);
	d->n = 0;
}

static struct decoded render(void (*fn)(struct expo *), const struct labels *constant)
{
	struct mbuf b = { 0 };
	struct decoded d;
	struct expo e;

	expo_init(&e, &b, FORMAT_PROTOBUF);
	e.constant = constant;
	fn(&e);
	expo_finish(&e);
	CHECK(!b.oom);
	d = decode(&b);
	CHECK(!d.bad);
	mbuf_free(&b);
	return d;
}

/* Label i of m is name="value". */
static bool has_label(const pb_metric *m, size_t i, const char *name, const char *value)
{
	return i < m->n_label && !strcmp(m->label[i]->name, name) &&
	       !strcmp(m->label[i]->value, value);
}

static void scalars(struct expo *e)
{
	struct labels l = { 0 };
	struct labels ex = { 0 };

	labels_add(&l, "reason", "NO_SOCKET");
	labels_add(&ex, "comm", "curl");
	expo_family(e, "netstack_skb_drops_total", METRIC_COUNTER, "Drops.\nSecond \\ line.");
	expo_u64(e, &l, 42);
	expo_u64_exemplar(e, NULL, 7, &ex, 1, 1700000000.25);
	expo_family(e, "process_cpu_seconds_total", METRIC_COUNTER, "");
	expo_double(e, NULL, 1.5);
	expo_family(e, "netstack_collector_up", METRIC_GAUGE, NULL);
	expo_u64(e, NULL, 1);
	/* A family without samples is still one: its HELP and TYPE, as in text. */
	expo_family(e, "netstack_empty", METRIC_GAUGE, "Nothing yet.");
}

/* Counters and gauges: names (with _total), types, HELP, labels, values, the exemplar. */
static void test_scalars(void)
{
	struct labels node = { 0 };
	struct decoded d;
	const pb_metric *m;

	labels_add(&node, "node", "n1");
	d = render(scalars, &node);
	CHECK(d.n == 4);
	if (d.n != 4)
		goto out;
	CHECK_STR(d.f[0]->name, "netstack_skb_drops_total");
	CHECK_STR(d.f[0]->help, "Drops.\nSecond \\ line.");
	CHECK(d.f[0]->has_type && d.f[0]->type == IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER);
	CHECK(d.f[0]->n_metric == 2);
	m = d.f[0]->metric[0];
	CHECK(m->n_label == 2 && has_label(m, 0, "reason", "NO_SOCKET") &&
	      has_label(m, 1, "node", "n1"));
	CHECK(m->counter && m->counter->has_value && m->counter->value == 42);
	CHECK(!m->counter->exemplar && !m->gauge && !m->histogram && !m->has_timestamp_ms);
	m = d.f[0]->metric[1];
	CHECK(m->n_label == 1 && has_label(m, 0, "node", "n1"));
	CHECK(m->counter && m->counter->value == 7 && m->counter->exemplar);
	if (m->counter && m->counter->exemplar) {
		const Io__Prometheus__Client__Exemplar *x = m->counter->exemplar;

		CHECK(x->n_label == 1 && !strcmp(x->label[0]->name, "comm") &&
		      !strcmp(x->label[0]->value, "curl"));
		CHECK(x->has_value && x->value == 1);
		CHECK(x->timestamp && x->timestamp->seconds == 1700000000 &&
		      x->timestamp->nanos == 250000000);
	}
	/* An empty HELP is no HELP. */
	CHECK_STR(d.f[1]->name, "process_cpu_seconds_total");
	CHECK(!d.f[1]->help && d.f[1]->n_metric == 1);
	CHECK(d.f[1]->metric[0]->counter && d.f[1]->metric[0]->counter->value == 1.5);
	CHECK(d.f[2]->type == IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE && !d.f[2]->help);
	CHECK(d.f[2]->n_metric == 1 && d.f[2]->metric[0]->gauge &&
	      d.f[2]->metric[0]->gauge->value == 1 && !d.f[2]->metric[0]->counter);
	CHECK_STR(d.f[3]->name, "netstack_empty");
	CHECK(d.f[3]->n_metric == 0 && d.f[3]->type == IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE);
out:
	decoded_free(&d);
}

static void strings(struct expo *e)
{
	struct labels l = { 0 };

	labels_add(&l, "a", "bad \xff byte, tab\there");
	labels_add(&l, "b", "new\nline \"quoted\" back\\slash");
	labels_add(&l, "c", "caf\xc3\xa9");
	expo_family(e, "x", METRIC_GAUGE, "bad \xc0\x80 and tab\tkept");
	expo_u64(e, &l, 1);
	/* A label name no format allows: left out and counted, as in text. */
	expo_u64(e, &(struct labels){ 1, { "0bad" }, { "v" } }, 2);
}

/* Strings are raw but valid UTF-8, label values as text's read back (controls as U+FFFD). */
static void test_strings(void)
{
	struct decoded d = render(strings, NULL);
	const pb_metric *m;

	CHECK(d.n == 1);
	if (d.n != 1)
		goto out;
	CHECK_STR(d.f[0]->help, "bad " UTF8_REPLACEMENT UTF8_REPLACEMENT " and tab\tkept");
	CHECK(d.f[0]->n_metric == 1);
	m = d.f[0]->metric[0];
	CHECK(has_label(m, 0, "a", "bad " UTF8_REPLACEMENT " byte, tab" UTF8_REPLACEMENT "here"));
	CHECK(has_label(m, 1, "b", "new\nline \"quoted\" back\\slash"));
	CHECK(has_label(m, 2, "c", "caf\xc3\xa9"));
out:
	decoded_free(&d);
}

static const double bounds[] = { 0.001, 0.01, 0.1 };
static const uint64_t classic[] = { 1, 0, 2, 3 }; /* the last: over 0.1 */

/* Native buckets at 10..19 with two gaps: one of 2 (stays in the span), one of 3 (a new span). */
static const uint64_t native_counts[] = { 0, 2, 1, 0, 0, 4, 0, 0, 0, 1, 0 };

static void histograms(struct expo *e)
{
	const struct native_hist nh = { 3, 1e-6, 5, 10, native_counts, 11 };
	const struct native_hist empty = { 3, 1e-6, 0, 10, NULL, 0 };
	const uint64_t zero[4] = { 0 };

	expo_family(e, "netstack_tcp_rtt_seconds", METRIC_HISTOGRAM, "RTT.");
	expo_histogram(e, NULL, bounds, classic, 3, 1.25);
	expo_histogram_native(e, &(struct labels){ 1, { "family" }, { "ipv4" } }, bounds, classic,
			      3, 1.25, &nh);
	expo_histogram_native(e, NULL, bounds, zero, 3, 0, &empty);
}

static void check_classic(const pb_histogram *h)
{
	CHECK(h->has_sample_count && h->sample_count == 6);
	CHECK(h->has_sample_sum && h->sample_sum == 1.25);
	/* Cumulative, the +Inf bucket left to sample_count, as client_golang writes them. */
	CHECK(h->n_bucket == 3);
	for (size_t i = 0; i < h->n_bucket && i < 3; i++)
		CHECK(h->bucket[i]->upper_bound == bounds[i]);
	if (h->n_bucket == 3)
		CHECK(h->bucket[0]->cumulative_count == 1 && h->bucket[1]->cumulative_count == 1 &&
		      h->bucket[2]->cumulative_count == 3);
}

static void test_histograms(void)
{
	static const int64_t want_delta[] = { 2, -1, -1, 0, 4, -4 + 1 };
	struct decoded d = render(histograms, NULL);
	const pb_histogram *h;

	CHECK(d.n == 1 && d.f[0]->type == IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM);
	if (d.n != 1 || d.f[0]->n_metric != 3)
		goto out;
	/* Classic only: no native field at all. */
	h = d.f[0]->metric[0]->histogram;
	CHECK(h);
	if (!h)
		goto out;
	check_classic(h);
	CHECK(!h->has_schema && !h->has_zero_threshold && !h->n_positive_span);

	h = d.f[0]->metric[1]->histogram;
	CHECK(h && has_label(d.f[0]->metric[1], 0, "family", "ipv4"));
	if (!h)
		goto out;
	check_classic(h);
	CHECK(h->has_schema && h->schema == 3);
	CHECK(h->has_zero_threshold && h->zero_threshold == 1e-6);
	CHECK(h->has_zero_count && h->zero_count == 5);
	/* Buckets 11, 12, (13, 14 empty), 15 in one span; 19 after a gap of 3. */
	CHECK(h->n_positive_span == 2);
	if (h->n_positive_span == 2) {
		CHECK(h->positive_span[0]->offset == 11 && h->positive_span[0]->length == 5);
		CHECK(h->positive_span[1]->offset == 3 && h->positive_span[1]->length == 1);
	}
	CHECK(h->n_positive_delta == 6);
	for (size_t i = 0; i < h->n_positive_delta && i < 6; i++)
		CHECK(h->positive_delta[i] == want_delta[i]);
	CHECK(!h->n_negative_span && !h->n_negative_delta && !h->n_positive_count);

	/* Empty native: schema and zero bucket still there, and a no-op span. */
	h = d.f[0]->metric[2]->histogram;
	CHECK(h);
	if (!h)
		goto out;
	CHECK(h->sample_count == 0 && h->n_bucket == 3 && h->bucket[2]->cumulative_count == 0);
	CHECK(h->has_schema && h->schema == 3 && h->has_zero_threshold && h->has_zero_count &&
	      h->zero_count == 0);
	CHECK(h->n_positive_span == 1 && h->positive_span[0]->offset == 0 &&
	      h->positive_span[0]->length == 0 && !h->n_positive_delta);
out:
	decoded_free(&d);
}

/* A native histogram whose buckets start below index 0 and sit in one bucket each. */
static void test_native_negative_index(void)
{
	static const uint64_t c[] = { 3, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	const struct native_hist nh = { 0, 0, 0, -20, c, 10 };
	const uint64_t cl[1] = { 4 };
	struct mbuf b = { 0 };
	struct decoded d;
	struct expo e;

	expo_init(&e, &b, FORMAT_PROTOBUF);
	expo_family(&e, "h", METRIC_HISTOGRAM, "h");
	expo_histogram_native(&e, NULL, NULL, cl, 0, 1, &nh);
	expo_finish(&e);
	d = decode(&b);
	CHECK(!d.bad && d.n == 1 && d.f[0]->n_metric == 1);
	if (!d.bad && d.n == 1 && d.f[0]->n_metric == 1) {
		const pb_histogram *h = d.f[0]->metric[0]->histogram;

		CHECK(h->sample_count == 4 && h->n_bucket == 0 && h->n_positive_span == 2);
		CHECK(h->positive_span[0]->offset == -20 && h->positive_span[0]->length == 1);
		CHECK(h->positive_span[1]->offset == 8 && h->positive_span[1]->length == 1);
		CHECK(h->n_positive_delta == 2 && h->positive_delta[0] == 3 &&
		      h->positive_delta[1] == -2);
	}
	decoded_free(&d);
	mbuf_free(&b);
}

/*
 * The output only grows: a caller that takes back what it wrote since a length noted between
 * families (scrape.c, for a failed collector) leaves a stream that decodes, without the
 * families it took back, even one still open.
 */
static void test_take_back(void)
{
	struct mbuf b = { 0 };
	struct decoded d;
	struct expo e;
	size_t mark;

	expo_init(&e, &b, FORMAT_PROTOBUF);
	expo_family(&e, "kept_total", METRIC_COUNTER, "kept");
	expo_u64(&e, NULL, 1);
	mark = b.len;
	expo_family(&e, "gone_total", METRIC_COUNTER, "gone");
	expo_u64(&e, NULL, 2);
	expo_family(&e, "open_gone", METRIC_GAUGE, "gone too");
	expo_u64(&e, NULL, 3);
	b.len = mark;
	expo_family(&e, "after", METRIC_GAUGE, "after");
	expo_u64(&e, NULL, 4);
	expo_finish(&e);
	d = decode(&b);
	CHECK(!d.bad && d.n == 2);
	if (d.n == 2) {
		CHECK_STR(d.f[0]->name, "kept_total");
		CHECK(d.f[0]->n_metric == 1 && d.f[0]->metric[0]->counter->value == 1);
		CHECK_STR(d.f[1]->name, "after");
		CHECK(d.f[1]->n_metric == 1 && d.f[1]->metric[0]->gauge->value == 4);
	}
	/* Every prefix is 5 bytes: the first family's length in its low groups. */
	CHECK(b.len > 5 && (uint8_t)b.data[0] & 0x80 && (uint8_t)b.data[4] == 0);
	decoded_free(&d);
	mbuf_free(&b);
}

/* A filter that captures counters and writes their sum, as the pod fold writes its series. */
struct summer {
	struct expo_filter f;
	uint64_t sum;
	bool any;
};

static bool sum_capture(struct expo_filter *f, const char *family, enum metric_type type)
{
	(void)f;
	(void)family;
	return type == METRIC_COUNTER;
}

static void sum_sample(struct expo_filter *f, const struct labels *l, const double *bounds,
		       const uint64_t *counts, int nbounds, double sum,
		       const struct native_hist *nh, const struct exemplar *ex)
{
	struct summer *s = (struct summer *)f;

	(void)l, (void)bounds, (void)nbounds, (void)sum, (void)nh, (void)ex;
	s->sum += counts[0];
	s->any = true;
}

static void sum_flush(struct expo_filter *f, struct expo *e, bool keep)
{
	struct summer *s = (struct summer *)f;

	if (keep && s->any)
		expo_u64(e, &(struct labels){ 1, { "pod" }, { "p" } }, s->sum);
	s->sum = 0;
	s->any = false;
}

static void test_filter(void)
{
	struct summer s = { { sum_capture, sum_sample, sum_flush }, 0, false };
	struct mbuf b = { 0 };
	struct decoded d;
	struct expo e;

	expo_init(&e, &b, FORMAT_PROTOBUF);
	expo_set_filter(&e, &s.f, true);
	expo_family(&e, "a_total", METRIC_COUNTER, "a");
	expo_u64(&e, NULL, 2);
	expo_u64(&e, NULL, 3);
	expo_family(&e, "g", METRIC_GAUGE, "g");
	expo_double(&e, NULL, 0.5);
	expo_family(&e, "b_total", METRIC_COUNTER, "b");
	expo_u64(&e, NULL, 10);
	expo_set_filter(&e, NULL, true);
	expo_finish(&e);
	d = decode(&b);
	CHECK(!d.bad && d.n == 3);
	if (d.n == 3) {
		CHECK(d.f[0]->n_metric == 1 && d.f[0]->metric[0]->counter->value == 5 &&
		      has_label(d.f[0]->metric[0], 0, "pod", "p"));
		CHECK(d.f[1]->n_metric == 1 && d.f[1]->metric[0]->gauge->value == 0.5);
		CHECK(d.f[2]->n_metric == 1 && d.f[2]->metric[0]->counter->value == 10);
	}
	decoded_free(&d);
	mbuf_free(&b);
}

#define PB_ACCEPT "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
#define OM_REST                                                                                    \
	"application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/"      \
	"*;q=0.1"

/* The format negotiate_format picks, or -1 when it refuses the request (406). */
static int nf(const char *accept)
{
	enum metric_format f;

	return negotiate_format(accept, &f) ? (int)f : -1;
}

static void test_negotiate(void)
{
	/* Prometheus 2.42 with --enable-feature=native-histograms, and without. */
	CHECK(nf(PB_ACCEPT "encoding=delimited,application/openmetrics-text;"
			   "version=1.0.0;q=0.8," OM_REST) == FORMAT_PROTOBUF);
	CHECK(nf("application/openmetrics-text;version=1.0.0," OM_REST) == FORMAT_OPENMETRICS);
	/* Parameters in any order, spaced, quoted, the type in any case. */
	CHECK(nf("Application/Vnd.Google.Protobuf ; encoding = delimited ; "
		 "proto=\"io.prometheus.client.MetricFamily\"") == FORMAT_PROTOBUF);
	CHECK(nf("application/vnd.google.protobuf;encoding=delimited;q=0.5;"
		 "proto=io.prometheus.client.MetricFamily") == FORMAT_PROTOBUF);
	/* Without both parameters, or with others' values, it is not ours. */
	CHECK(nf("application/vnd.google.protobuf") == FORMAT_PROMETHEUS);
	CHECK(nf(PB_ACCEPT) == FORMAT_PROMETHEUS);
	CHECK(nf(PB_ACCEPT "encoding=text") == FORMAT_PROMETHEUS);
	CHECK(nf(PB_ACCEPT "encoding=compact-text,text/plain;q=0.2") == FORMAT_PROMETHEUS);
	CHECK(nf("application/vnd.google.protobuf;encoding=delimited;"
		 "proto=io.prometheus.client.metricfamily") == FORMAT_PROMETHEUS);
	CHECK(nf("application/vnd.google.protobuf;encoding=delimited;"
		 "proto=other.Message") == FORMAT_PROMETHEUS);
	/* q-values: the highest wins, a tie goes to protobuf, q=0 refuses. */
	CHECK(nf(PB_ACCEPT "encoding=delimited;q=0.5,application/openmetrics-text") ==
	      FORMAT_OPENMETRICS);
	CHECK(nf(PB_ACCEPT "encoding=delimited;q=0.5,text/plain;q=0.6") == FORMAT_PROMETHEUS);
	CHECK(nf(PB_ACCEPT "encoding=delimited;q=0.5,*/*;q=0.9") == FORMAT_PROMETHEUS);
	CHECK(nf("application/openmetrics-text;q=0.7," PB_ACCEPT "encoding=delimited;q=0.7") ==
	      FORMAT_PROTOBUF);
	CHECK(nf(PB_ACCEPT "encoding=delimited;q=0,text/plain;q=0.1") == FORMAT_PROMETHEUS);
	CHECK(nf(PB_ACCEPT "encoding=delimited;q=0") == FORMAT_PROMETHEUS);
	CHECK(nf(PB_ACCEPT "encoding=delimited junk") == FORMAT_PROMETHEUS);
	CHECK_STR(format_content_type(FORMAT_PROTOBUF),
		  "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
		  "encoding=delimited");
}

int main(void)
{
	RUN(test_scalars);
	RUN(test_strings);
	RUN(test_histograms);
	RUN(test_native_negative_index);
	RUN(test_take_back);
	RUN(test_filter);
	RUN(test_negotiate);
	CHECK_EXIT();
}
