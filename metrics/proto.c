/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The protobuf exposition: each family one io.prometheus.client.MetricFamily after a varint of
 * its length, packed by protobuf-c from metrics/prometheus.proto. Samples are packed as they
 * come, each as a MetricFamily holding only that Metric: concatenated after the one holding
 * the name, HELP and type, they are the family's message byte for byte (repeated fields append
 * on the wire), so no sample is kept past its call.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/prometheus.pb-c.h"
#include "metrics.h"
#include "metrics_internal.h"

/* The generated names are long; these are the ones the file uses. */
typedef Io__Prometheus__Client__MetricFamily pb_family;
typedef Io__Prometheus__Client__Metric pb_metric;
typedef Io__Prometheus__Client__LabelPair pb_label;
typedef Io__Prometheus__Client__Counter pb_counter;
typedef Io__Prometheus__Client__Gauge pb_gauge;
typedef Io__Prometheus__Client__Untyped pb_untyped;
typedef Io__Prometheus__Client__Exemplar pb_exemplar;
typedef Io__Prometheus__Client__Timestamp pb_timestamp;
typedef Io__Prometheus__Client__Histogram pb_histogram;
typedef Io__Prometheus__Client__Bucket pb_bucket;
typedef Io__Prometheus__Client__BucketSpan pb_span;

/*
 * A varint of 5 bytes, whatever the length (a varint may carry high zero groups; Prometheus
 * reads up to 5): the prefix is written before the family's length is known and filled in
 * after, in place, so that the output never moves (struct expo's pb_start).
 */
#define PREFIX_LEN 5

static void put_prefix(uint8_t *p, uint32_t len)
{
	for (int i = 0; i < PREFIX_LEN - 1; i++, len >>= 7)
		p[i] = 0x80 | (len & 0x7f);
	p[PREFIX_LEN - 1] = len;
}

static void pack(struct mbuf *out, const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);

	if (mbuf_reserve(out, n))
		return;
	protobuf_c_message_pack(m, (uint8_t *)out->data + out->len);
	out->len += n;
	out->data[out->len] = '\0';
}

/*
 * The strings of one message that were not valid as they were: copied, made valid, into buf,
 * and pointed to once all are there (buf may move while it grows).
 */
#define FIXES_MAX (3 * LABELS_MAX + 1)

struct strs {
	struct mbuf buf;
	char **slot[FIXES_MAX];
	size_t off[FIXES_MAX];
	int n;
};

static void str_set(struct strs *s, char **slot, const char *v, bool label)
{
	if (text_clean(v, label) || s->n == FIXES_MAX) {
		*slot = (char *)v;
		return;
	}
	s->slot[s->n] = slot;
	s->off[s->n++] = s->buf.len;
	text_raw(&s->buf, v, label);
	mbuf_write(&s->buf, "", 1);
}

/* 0, or -1 when the copies could not be made (buf's oom, which the caller reports). */
static int strs_fix(struct strs *s)
{
	if (s->buf.oom)
		return -1;
	for (int i = 0; i < s->n; i++)
		*s->slot[i] = s->buf.data + s->off[i];
	return 0;
}

void proto_family_begin(struct expo *e, const char *name, enum metric_type type, const char *help)
{
	static const uint8_t zeros[PREFIX_LEN];
	pb_family f = IO__PROMETHEUS__CLIENT__METRIC_FAMILY__INIT;
	struct strs s = { 0 };

	e->pb_start = e->out->len;
	e->pb_open = true;
	mbuf_write(e->out, zeros, PREFIX_LEN);
	f.name = (char *)name;
	if (help)
		str_set(&s, &f.help, help, false);
	f.has_type = true;
	switch (type) {
	case METRIC_COUNTER:
		f.type = IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER;
		break;
	case METRIC_GAUGE:
		f.type = IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE;
		break;
	case METRIC_HISTOGRAM:
		f.type = IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM;
		break;
	}
	if (strs_fix(&s))
		e->out->oom = true;
	else
		pack(e->out, &f.base);
	mbuf_free(&s.buf);
}

void proto_family_end(struct expo *e)
{
	size_t body;

	if (!e->pb_open)
		return;
	e->pb_open = false;
	/* Taken back by the caller: the family went with it. */
	if (e->out->oom || e->pb_start + PREFIX_LEN > e->out->len)
		return;
	body = e->out->len - e->pb_start - PREFIX_LEN;
	/* Past what a reader takes (32 bits): never served, as for a failed allocation. */
	if (body > UINT32_MAX) {
		e->out->oom = true;
		return;
	}
	put_prefix((uint8_t *)e->out->data + e->pb_start, body);
}

/* A sample's label pairs: its own, then the exposition's constant ones, as in text. */
struct pairs {
	pb_label pair[2 * LABELS_MAX];
	pb_label *ptr[2 * LABELS_MAX];
	size_t n;
};

static void pairs_add(struct pairs *p, struct strs *s, const struct labels *l)
{
	for (int i = 0; l && i < l->n && i < LABELS_MAX; i++) {
		pb_label *lp = &p->pair[p->n];

		*lp = (pb_label)IO__PROMETHEUS__CLIENT__LABEL_PAIR__INIT;
		/* Names were checked (sample_ok): [a-zA-Z_][a-zA-Z0-9_]*. */
		lp->name = (char *)l->name[i];
		str_set(s, &lp->value, l->value[i], true);
		p->ptr[p->n++] = lp;
	}
}

/* Pack m as the open family's next Metric, with l and the constant labels. */
static void put_metric(struct expo *e, pb_metric *m, const struct labels *l, struct strs *s)
{
	pb_family f = IO__PROMETHEUS__CLIENT__METRIC_FAMILY__INIT;
	struct pairs p;

	p.n = 0;
	pairs_add(&p, s, l);
	pairs_add(&p, s, e->constant);
	m->n_label = p.n;
	m->label = p.ptr;
	f.n_metric = 1;
	f.metric = &m;
	if (strs_fix(s))
		e->out->oom = true;
	else
		pack(e->out, &f.base);
	mbuf_free(&s->buf);
	/* p goes with this call. */
	m->n_label = 0;
	m->label = NULL;
}

void proto_scalar(struct expo *e, const struct labels *l, double v, const struct exemplar *ex)
{
	pb_metric m = IO__PROMETHEUS__CLIENT__METRIC__INIT;
	pb_counter c = IO__PROMETHEUS__CLIENT__COUNTER__INIT;
	pb_gauge g = IO__PROMETHEUS__CLIENT__GAUGE__INIT;
	pb_untyped u = IO__PROMETHEUS__CLIENT__UNTYPED__INIT;
	pb_exemplar x = IO__PROMETHEUS__CLIENT__EXEMPLAR__INIT;
	pb_timestamp ts = IO__PROMETHEUS__CLIENT__TIMESTAMP__INIT;
	struct strs s = { 0 };
	struct pairs xp;

	switch (e->type) {
	case METRIC_COUNTER:
		c.has_value = true;
		c.value = v;
		m.counter = &c;
		break;
	case METRIC_GAUGE:
		g.has_value = true;
		g.value = v;
		m.gauge = &g;
		break;
	default:
		/* A single value in a histogram family is a caller's bug: kept, as untyped. */
		u.has_value = true;
		u.value = v;
		m.untyped = &u;
		break;
	}
	if (ex && m.counter) {
		double sec = floor(ex->time);

		xp.n = 0;
		pairs_add(&xp, &s, ex->l);
		x.n_label = xp.n;
		x.label = xp.ptr;
		x.has_value = true;
		x.value = ex->value;
		ts.has_seconds = ts.has_nanos = true;
		ts.seconds = (int64_t)sec;
		ts.nanos = (int32_t)((ex->time - sec) * 1e9);
		x.timestamp = &ts;
		c.exemplar = &x;
	}
	put_metric(e, &m, l, &s);
}

/*
 * The native buckets as spans and deltas: a gap of up to two empty buckets stays inside a span
 * as zero counts (two deltas cost less than a new span, as client_golang reckons), a longer
 * one starts a new span. No populated bucket: one span of length 0, which marks the histogram
 * native for Prometheus while it is empty. spans has room for n + 1, deltas for n.
 */
static void native_buckets(const struct native_hist *nh, pb_span *spans, pb_span **sp,
			   size_t *nspans, int64_t *deltas, size_t *ndeltas)
{
	int64_t next = 0, prev = 0;
	pb_span *cur = NULL;

	*nspans = *ndeltas = 0;
	for (unsigned j = 0; nh->counts && j < nh->n; j++) {
		int64_t idx = (int64_t)nh->offset + j;

		if (!nh->counts[j])
			continue;
		if (cur && idx - next <= 2) {
			for (; next < idx; next++, cur->length++) {
				deltas[(*ndeltas)++] = -prev;
				prev = 0;
			}
		} else {
			cur = &spans[*nspans];
			*cur = (pb_span)IO__PROMETHEUS__CLIENT__BUCKET_SPAN__INIT;
			cur->has_offset = cur->has_length = true;
			cur->offset = (int32_t)(*nspans ? idx - next : idx);
			cur->length = 0;
			sp[(*nspans)++] = cur;
		}
		deltas[(*ndeltas)++] = (int64_t)nh->counts[j] - prev;
		prev = (int64_t)nh->counts[j];
		cur->length++;
		next = idx + 1;
	}
	if (!*nspans) {
		spans[0] = (pb_span)IO__PROMETHEUS__CLIENT__BUCKET_SPAN__INIT;
		spans[0].has_offset = spans[0].has_length = true;
		sp[(*nspans)++] = &spans[0];
	}
}

void proto_histogram(struct expo *e, const struct labels *l, const double *bounds,
		     const uint64_t *counts, int nbounds, double sum, const struct native_hist *nh)
{
	pb_metric m = IO__PROMETHEUS__CLIENT__METRIC__INIT;
	pb_histogram h = IO__PROMETHEUS__CLIENT__HISTOGRAM__INIT;
	size_t nb = nbounds > 0 ? (size_t)nbounds : 0, nn = nh ? nh->n : 0;
	struct strs s = { 0 };
	pb_bucket *b, **bp;
	pb_span *sp, **spp;
	int64_t *deltas;
	uint64_t cum = 0;
	void *mem;

	/*
	 * One block: the buckets, the spans, the arrays of pointers to them (void * sized) and the
	 * deltas; every part is a multiple of 8 bytes, so each stays aligned.
	 */
	mem = malloc(nb * (sizeof(*b) + sizeof(void *)) +
		     (nn + 1) * (sizeof(*sp) + sizeof(void *)) + nn * sizeof(*deltas));
	if (!mem) {
		e->out->oom = true;
		return;
	}
	b = mem;
	bp = (pb_bucket **)(b + nb);
	sp = (pb_span *)(bp + nb);
	spp = (pb_span **)(sp + nn + 1);
	deltas = (int64_t *)(spp + nn + 1);
	for (size_t i = 0; i < nb; i++) {
		cum += counts[i];
		b[i] = (pb_bucket)IO__PROMETHEUS__CLIENT__BUCKET__INIT;
		b[i].has_cumulative_count = b[i].has_upper_bound = true;
		b[i].cumulative_count = cum;
		b[i].upper_bound = bounds[i];
		bp[i] = &b[i];
	}
	cum += counts[nb];
	h.has_sample_count = h.has_sample_sum = true;
	h.sample_count = cum;
	h.sample_sum = sum;
	h.n_bucket = nb;
	h.bucket = bp;
	if (nh) {
		h.has_schema = h.has_zero_threshold = h.has_zero_count = true;
		h.schema = nh->schema;
		h.zero_threshold = nh->zero_threshold;
		h.zero_count = nh->zero_count;
		native_buckets(nh, sp, spp, &h.n_positive_span, deltas, &h.n_positive_delta);
		h.positive_span = spp;
		h.positive_delta = deltas;
	}
	m.histogram = &h;
	put_metric(e, &m, l, &s);
	free(mem);
}
