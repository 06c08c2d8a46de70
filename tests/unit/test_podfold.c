// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the pod fold's native buckets (exporter/pods/podfold.c): histograms folded into
 * one pod's series keep their native buckets, added bucket by bucket as the classic ones, across
 * scrapes and when an input leaves. The fold writes through expo_histogram_native, which this
 * test wraps (-Wl,--wrap, see the Makefile) to see what the text formats leave out.
 */
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pods/podfold.h"
#include "pods/pods.h"

#define NN 4 /* native buckets per histogram in these tests */

/* What the fold rendered last through expo_histogram_native. */
static struct {
	unsigned calls;
	char labels[256];
	uint64_t classic[3], zero, native[NN];
	double sum;
	int schema;
	int32_t offset;
	unsigned n;
} got;

void __real_expo_histogram_native(struct expo *e, const struct labels *l, const double *bounds,
				  const uint64_t *counts, int nbounds, double sum,
				  const struct native_hist *nh);

void __wrap_expo_histogram_native(struct expo *e, const struct labels *l, const double *bounds,
				  const uint64_t *counts, int nbounds, double sum,
				  const struct native_hist *nh)
{
	size_t len = 0;

	/* This file's own calls (the inputs, by netns) reach the fold's filter: not its output. */
	if (l->n && !strcmp(l->name[0], "netns")) {
		__real_expo_histogram_native(e, l, bounds, counts, nbounds, sum, nh);
		return;
	}
	got.calls++;
	got.labels[0] = 0;
	for (int i = 0; i < l->n; i++)
		len += snprintf(got.labels + len, sizeof(got.labels) - len, "%s=%s;", l->name[i],
				l->value[i]);
	memcpy(got.classic, counts, (nbounds + 1) * sizeof(*counts));
	got.sum = sum;
	got.schema = nh->schema;
	got.offset = nh->offset;
	got.n = nh->n;
	got.zero = nh->zero_count;
	memcpy(got.native, nh->counts, nh->n * sizeof(*nh->counts));
	__real_expo_histogram_native(e, l, bounds, counts, nbounds, sum, nh);
}

static const double bounds[2] = { 0.001, 0.01 };

/* One histogram of netns ns: classic counts c, native zero bucket z and buckets v. */
struct input {
	const char *ns;
	uint64_t c[3], z, v[NN];
	double sum;
	int schema;
};

/* One scrape of the family through the fold's filter; returns the text. */
static char *scrape(struct expo_filter *f, const struct input *in, int n)
{
	struct mbuf m = { 0 };
	struct expo e;

	expo_init(&e, &m, FORMAT_PROMETHEUS);
	expo_set_filter(&e, f, true);
	expo_family(&e, "h_seconds", METRIC_HISTOGRAM, "h");
	for (int i = 0; i < n; i++) {
		struct labels l = { 0 };
		struct native_hist nh = { .schema = in[i].schema,
					  .zero_count = in[i].z,
					  .offset = -3,
					  .counts = in[i].v,
					  .n = NN };

		labels_add(&l, "netns", in[i].ns);
		expo_histogram_native(&e, &l, bounds, in[i].c, 2, in[i].sum, &nh);
	}
	expo_finish(&e);
	return m.data; /* the caller frees it */
}

static struct podfold *fold_of(struct podsnap *slot)
{
	struct pods_snapshot *snap = calloc(1, sizeof(*snap));

	podsnap_init(slot);
	if (!snap || !(snap->v = calloc(2, sizeof(*snap->v))))
		abort();
	snap->n = 2;
	snap->refs = 1;
	/* Two namespaces of one pod: their histograms fold into one series. */
	for (uint32_t i = 0; i < 2; i++) {
		snap->v[i].netns = i + 1;
		snap->v[i].namespace = strdup("team");
		snap->v[i].pod = strdup("web");
		snap->v[i].container = strdup("");
		snap->v[i].process = strdup("");
	}
	podsnap_publish(slot, snap);
	return podfold_new(slot);
}

static void check_got(const uint64_t c[3], uint64_t z, const uint64_t v[NN], double sum)
{
	CHECK_STR(got.labels, "namespace=team;pod=web;");
	CHECK(!memcmp(got.classic, c, sizeof(got.classic)));
	CHECK(got.zero == z && !memcmp(got.native, v, sizeof(got.native)));
	CHECK(got.sum == sum && got.schema == 3 && got.offset == -3 && got.n == NN);
}

static void test_fold_native(void)
{
	struct podsnap slot;
	struct podfold *fold = fold_of(&slot);
	struct expo_filter *f = podfold_filter_new(fold, POD_LABEL_NAMESPACE | POD_LABEL_POD);
	struct input in[2] = {
		{ "1", { 1, 2, 0 }, 0, { 0, 1, 2, 0 }, 0.5, 3 },
		{ "2", { 0, 1, 1 }, 1, { 0, 0, 0, 1 }, 2.0, 3 },
	};
	char *text;

	if (!fold || !f)
		abort();
	podfold_max_series(fold, 10);
	text = scrape(f, in, 2);
	CHECK(got.calls == 1);
	check_got((uint64_t[]){ 1, 3, 1 }, 1, (uint64_t[]){ 0, 1, 2, 1 }, 2.5);
	/* Text shows the classic buckets, cumulative, and nothing native. */
	CHECK(strstr(text, "h_seconds_bucket{namespace=\"team\",pod=\"web\",le=\"+Inf\"} 5\n"));
	CHECK(strstr(text, "h_seconds_count{namespace=\"team\",pod=\"web\"} 5\n"));
	free(text);

	/* Both grow: the series is their sum again, bucket by bucket. */
	in[0].c[0] += 2;
	in[0].v[1] += 2;
	in[1].z += 3;
	in[1].c[0] += 3;
	free(scrape(f, in, 2));
	CHECK(got.calls == 2);
	check_got((uint64_t[]){ 6, 3, 1 }, 4, (uint64_t[]){ 0, 3, 2, 1 }, 2.5);

	/* netns 2 is no longer reported: what it had stays in the series. */
	in[0].v[3] += 1;
	in[0].c[2] += 1;
	free(scrape(f, in, 1));
	check_got((uint64_t[]){ 6, 3, 2 }, 4, (uint64_t[]){ 0, 3, 2, 2 }, 2.5);

	/* Another schema cannot add up bucket by bucket: the sample is dropped (logged). */
	in[0].schema = 2;
	in[0].c[2] += 1;
	free(scrape(f, in, 1));
	check_got((uint64_t[]){ 6, 3, 2 }, 4, (uint64_t[]){ 0, 3, 2, 2 }, 2.5);

	free(f);
	podfold_free(fold);
	podsnap_publish(&slot, NULL);
	pthread_mutex_destroy(&slot.mu);
}

int main(void)
{
	RUN(test_fold_native);
	CHECK_EXIT();
}
