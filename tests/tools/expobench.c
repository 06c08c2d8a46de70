// SPDX-License-Identifier: GPL-2.0-only
/*
 * expobench [SERIES [NATIVE [ROUNDS]]]: what one series of netstack_tcp_rtt_seconds costs to
 * render, and weighs, in each format, through the exposition library the scrape uses (linked,
 * not a copy). SERIES histograms (default 1000) with the collector's 24 classic buckets, the
 * labels family and netns and the constant node label, rendered as Prometheus text,
 * OpenMetrics and protobuf, and protobuf with NATIVE (default 24) populated native buckets of
 * schema 3 beside them (three octaves of RTT). Prints a Markdown table: render time per
 * series (median of ROUNDS, default 21), bytes per series, gzip'd bytes per series.
 * docs/cost.md#the-exposition-formats reports it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "metrics.h"

#define NBOUNDS 24

/* Each series its own counts (as real ones differ), so that gzip finds no more repeats than real. */
struct data {
	double bounds[NBOUNDS];
	uint64_t (*counts)[NBOUNDS + 1];
	uint64_t *native;
	unsigned nnative;
	char (*netns)[24];
	unsigned series;
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void render(const struct data *d, enum metric_format f, bool native, struct mbuf *out)
{
	struct native_hist nh = { 3, 0x1p-20, 17, -110, NULL, d->nnative };
	struct labels node = { 0 };
	struct expo e;

	labels_add(&node, "node", "node-1");
	mbuf_reset(out);
	expo_init(&e, out, f);
	e.constant = &node;
	expo_family(&e, "netstack_tcp_rtt_seconds", METRIC_HISTOGRAM,
		    "TCP round-trip time: the smoothed RTT (as ss shows it) each time the kernel "
		    "measures a round trip (sockops RTT callback).");
	for (unsigned i = 0; i < d->series; i++) {
		struct labels l = { 0 };

		labels_add(&l, "family", i & 1 ? "ipv6" : "ipv4");
		labels_add(&l, "netns", d->netns[i]);
		nh.counts = d->native + (size_t)i * d->nnative;
		expo_histogram_native(&e, &l, d->bounds, d->counts[i], NBOUNDS, 312.4567891 + i,
				      native ? &nh : NULL);
	}
	expo_finish(&e);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		enum metric_format f;
		bool native;
	} rows[] = {
		{ "Prometheus text 0.0.4", FORMAT_PROMETHEUS, false },
		{ "OpenMetrics 1.0.0", FORMAT_OPENMETRICS, false },
		{ "protobuf, classic buckets", FORMAT_PROTOBUF, false },
		{ "protobuf, classic and native buckets", FORMAT_PROTOBUF, true },
	};
	struct data d = { .series = argc > 1 ? atoi(argv[1]) : 1000 };
	unsigned rounds = argc > 3 ? atoi(argv[3]) : 21;
	struct mbuf out = { 0 }, gz = { 0 };
	int rc = 2;
	double *t;

	d.nnative = argc > 2 ? atoi(argv[2]) : 24;
	d.native = calloc((size_t)d.series * d.nnative + 1, sizeof(*d.native));
	d.counts = calloc(d.series ? d.series : 1, sizeof(*d.counts));
	d.netns = calloc(d.series ? d.series : 1, sizeof(*d.netns));
	t = calloc(rounds ? rounds : 1, sizeof(*t));
	if (!d.series || !rounds || !d.native || !d.counts || !d.netns || !t) {
		fprintf(stderr, "usage: expobench [SERIES [NATIVE [ROUNDS]]] (positive)\n");
		goto out;
	}
	/* 4 us to 33.5 s, as the collector's; a spread of a few buckets, large counts. */
	for (int i = 0; i < NBOUNDS; i++)
		d.bounds[i] = 4e-6 * (double)(1u << i);
	for (unsigned i = 0; i < d.series; i++) {
		uint64_t k = 1 + (i * 7919u) % 997;

		d.counts[i][3] = 123 * k;
		d.counts[i][4] = 6543 * k;
		d.counts[i][5] = 987 * k;
		d.counts[i][6] = 43 * k;
		for (unsigned j = 0; j < d.nnative; j++)
			d.native[(size_t)i * d.nnative + j] = 1 + (k * (j + 1) * 104729u) % 50000;
		snprintf(d.netns[i], sizeof(d.netns[i]), "%u", 4026531840u + i);
	}

	printf("| format (%u series, %u native buckets) | render ns/series | bytes/series | "
	       "gzip bytes/series |\n|---|---|---|---|\n",
	       d.series, d.nnative);
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		for (unsigned k = 0; k < rounds; k++) {
			double t0 = now_ns();

			render(&d, rows[r].f, rows[r].native, &out);
			t[k] = (now_ns() - t0) / d.series;
		}
		qsort(t, rounds, sizeof(*t), cmp_double);
		if (out.oom || gzip_buffer(out.data, out.len, &gz) || gz.oom) {
			fprintf(stderr, "expobench: out of memory\n");
			rc = 1;
			goto out;
		}
		printf("| %s | %.0f | %.0f | %.1f |\n", rows[r].name, t[rounds / 2],
		       (double)out.len / d.series, (double)gz.len / d.series);
	}
	rc = 0;
out:
	mbuf_free(&out);
	mbuf_free(&gz);
	free(d.native);
	free(d.counts);
	free(d.netns);
	free(t);
	return rc;
}
