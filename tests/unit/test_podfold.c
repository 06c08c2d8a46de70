// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the pod fold's native buckets (exporter/pods/podfold.c): histograms folded into
 * one pod's series keep their native buckets, added bucket by bucket as the classic ones, across
 * scrapes and when an input leaves; a new bucket shape restarts the family's fold; a collector's
 * new generation (its counts start again) keeps what the old counts had. The fold writes through expo_histogram_native, which this
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

/* The same with classic buckets only (native_schema = off). */
static char *scrape_classic(struct expo_filter *f, const struct input *in, int n)
{
	struct mbuf m = { 0 };
	struct expo e;

	expo_init(&e, &m, FORMAT_PROMETHEUS);
	expo_set_filter(&e, f, true);
	expo_family(&e, "h_seconds", METRIC_HISTOGRAM, "h");
	for (int i = 0; i < n; i++) {
		struct labels l = { 0 };

		labels_add(&l, "netns", in[i].ns);
		expo_histogram(&e, &l, bounds, in[i].c, 2, in[i].sum);
	}
	expo_finish(&e);
	return m.data;
}

/* A snapshot of namespaces 1 to n, all of pod team/web, published in slot. */
static void publish_pods(struct podsnap *slot, uint32_t n)
{
	struct pods_snapshot *snap = calloc(1, sizeof(*snap));

	if (!snap || !(snap->v = calloc(n, sizeof(*snap->v))))
		abort();
	snap->n = n;
	snap->refs = 1;
	for (uint32_t i = 0; i < n; i++) {
		snap->v[i].netns = i + 1;
		snap->v[i].namespace = strdup("team");
		snap->v[i].pod = strdup("web");
		snap->v[i].container = strdup("");
		snap->v[i].process = strdup("");
	}
	podsnap_publish(slot, snap);
}

static struct podfold *fold_of(struct podsnap *slot)
{
	podsnap_init(slot);
	/* Two namespaces of one pod: their histograms fold into one series. */
	publish_pods(slot, 2);
	return podfold_new(slot);
}

static void check_schema(const uint64_t c[3], uint64_t z, const uint64_t v[NN], double sum,
			 int schema)
{
	CHECK_STR(got.labels, "namespace=team;pod=web;");
	CHECK(!memcmp(got.classic, c, sizeof(got.classic)));
	CHECK(got.zero == z && !memcmp(got.native, v, sizeof(got.native)));
	CHECK(got.sum == sum && got.schema == schema && got.offset == -3 && got.n == NN);
}

static void check_got(const uint64_t c[3], uint64_t z, const uint64_t v[NN], double sum)
{
	check_schema(c, z, v, sum, 3);
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

	/*
	 * Another schema (a reload restarted the collector with it) cannot add up bucket by
	 * bucket: the family's fold starts again in the new shape, from this sample alone.
	 */
	in[0].schema = 2;
	memcpy(in[0].c, (uint64_t[]){ 1, 0, 1 }, sizeof(in[0].c));
	memcpy(in[0].v, (uint64_t[]){ 1, 0, 0, 1 }, sizeof(in[0].v));
	in[0].z = 0;
	in[0].sum = 0.25;
	text = scrape(f, in, 1);
	CHECK(got.calls == 4);
	check_schema((uint64_t[]){ 1, 0, 1 }, 0, (uint64_t[]){ 1, 0, 0, 1 }, 0.25, 2);
	free(text);
	/* ... and goes on in it. */
	in[0].c[1] += 2;
	in[0].v[1] += 2;
	free(scrape(f, in, 1));
	check_schema((uint64_t[]){ 1, 2, 1 }, 0, (uint64_t[]){ 1, 2, 0, 1 }, 0.25, 2);
	/* Native buckets off: classic only, the fold starts again once more. */
	text = scrape_classic(f, in, 1);
	CHECK(got.calls == 5); /* no native histogram rendered */
	CHECK(strstr(text, "h_seconds_bucket{namespace=\"team\",pod=\"web\",le=\"+Inf\"} 4\n"));
	free(text);
	{
		struct mbuf m = { 0 };
		struct expo e;

		expo_init(&e, &m, FORMAT_PROMETHEUS);
		podfold_render_metrics(fold, &e);
		expo_finish(&e);
		CHECK(strstr(m.data,
			     "netstack_pods_fold_restarts_total{metric=\"h_seconds\"} 2\n"));
		free(m.data);
	}

	free(f);
	podfold_free(fold);
	podsnap_publish(&slot, NULL);
	pthread_mutex_destroy(&slot.mu);
}

/*
 * A collector restarted (new generation) whose new counts passed the old ones before the next
 * scrape: the old counts stay in the series and the new ones add to them, in every bucket. The
 * input moved between series first (namespace 3 resolved late), so it has a base: the counts it
 * had when it joined the pod's series.
 */
static void test_fold_generation(void)
{
	struct podsnap slot;
	struct podfold *fold = fold_of(&slot);
	struct expo_filter *f = podfold_filter_new(fold, POD_LABEL_NAMESPACE | POD_LABEL_POD);
	struct input in[1] = { { "3", { 2, 1, 0 }, 1, { 0, 2, 1, 0 }, 1.0, 3 } };

	if (!fold || !f)
		abort();
	podfold_max_series(fold, 10);
	podfold_filter_generation(f, 100);
	free(scrape(f, in, 1)); /* namespace 3 unknown: its own series, no pod */
	CHECK_STR(got.labels, "namespace=;pod=;");
	publish_pods(&slot, 3);
	in[0].c[0] += 1;
	free(scrape(f, in, 1)); /* resolved: it moves to team/web, from the counts it had */
	check_got((uint64_t[]){ 1, 0, 0 }, 0, (uint64_t[]){ 0, 0, 0, 0 }, 0);

	/* Restarted: fewer in some buckets, more in total (a total check sees no reset). */
	podfold_filter_generation(f, 200);
	memcpy(in[0].c, (uint64_t[]){ 0, 0, 9 }, sizeof(in[0].c));
	memcpy(in[0].v, (uint64_t[]){ 0, 0, 0, 9 }, sizeof(in[0].v));
	in[0].z = 0;
	in[0].sum = 4.5;
	free(scrape(f, in, 1));
	check_got((uint64_t[]){ 1, 0, 9 }, 0, (uint64_t[]){ 0, 0, 0, 9 }, 4.5);

	/* Restarted again, every new count at or above the old: only the generation tells. */
	podfold_filter_generation(f, 300);
	memcpy(in[0].c, (uint64_t[]){ 0, 1, 9 }, sizeof(in[0].c));
	in[0].sum = 5.0;
	free(scrape(f, in, 1));
	check_got((uint64_t[]){ 1, 1, 18 }, 0, (uint64_t[]){ 0, 0, 0, 18 }, 9.5);

	/* The same generation: counts go on, nothing is added twice. */
	in[0].c[1] += 1;
	free(scrape(f, in, 1));
	check_got((uint64_t[]){ 1, 2, 18 }, 0, (uint64_t[]){ 0, 0, 0, 18 }, 9.5);

	free(f);
	podfold_free(fold);
	podsnap_publish(&slot, NULL);
	pthread_mutex_destroy(&slot.mu);
}

/*
 * A restart and a move before one scrape (the namespace resolved meanwhile): the old series
 * keeps the old counts, once; the new one gets the new counts.
 */
static void test_fold_restart_and_move(void)
{
	struct podsnap slot;
	struct podfold *fold = fold_of(&slot);
	struct expo_filter *f = podfold_filter_new(fold, POD_LABEL_NAMESPACE | POD_LABEL_POD);
	struct input in[1] = { { "3", { 2, 1, 0 }, 1, { 0, 2, 1, 0 }, 1.0, 3 } };
	char *text;

	if (!fold || !f)
		abort();
	podfold_max_series(fold, 10);
	podfold_filter_generation(f, 100);
	free(scrape(f, in, 1)); /* namespace 3 unknown: the series without a pod */
	CHECK_STR(got.labels, "namespace=;pod=;");
	podfold_filter_generation(f, 200);
	publish_pods(&slot, 3);
	memcpy(in[0].c, (uint64_t[]){ 1, 0, 0 }, sizeof(in[0].c));
	memcpy(in[0].v, (uint64_t[]){ 0, 1, 0, 0 }, sizeof(in[0].v));
	in[0].z = 0;
	in[0].sum = 0.5;
	text = scrape(f, in, 1);
	check_got((uint64_t[]){ 1, 0, 0 }, 0, (uint64_t[]){ 0, 1, 0, 0 }, 0.5);
	/* The series without a pod: its 3 observations from before the restart, not 6. */
	CHECK(strstr(text, "h_seconds_count{namespace=\"\",pod=\"\"} 3\n"));
	free(text);

	free(f);
	podfold_free(fold);
	podsnap_publish(&slot, NULL);
	pthread_mutex_destroy(&slot.mu);
}

/*
 * A reload that changes one collector's pod_labels forgets that collector's families only: the
 * others keep what they folded, the counts of a namespace no longer reported included.
 */
static void test_fold_forget_owner(void)
{
	struct podsnap slot;
	struct podfold *fold = fold_of(&slot);
	struct expo_filter *f = podfold_filter_new(fold, POD_LABEL_NAMESPACE | POD_LABEL_POD);
	struct input in[2] = {
		{ "1", { 1, 0, 0 }, 0, { 0, 1, 0, 0 }, 0.5, 3 },
		{ "2", { 0, 2, 0 }, 0, { 0, 0, 2, 0 }, 1.0, 3 },
	};

	if (!fold || !f)
		abort();
	podfold_max_series(fold, 10);
	podfold_filter_owner(f, "rtt");
	free(scrape(f, in, 2));
	free(scrape(f, in, 1)); /* namespace 2 is gone: what it had stays in the series */
	check_got((uint64_t[]){ 1, 2, 0 }, 0, (uint64_t[]){ 0, 1, 2, 0 }, 1.5);
	podfold_forget(fold, "drops"); /* another collector's labels changed */
	free(scrape(f, in, 1));
	check_got((uint64_t[]){ 1, 2, 0 }, 0, (uint64_t[]){ 0, 1, 2, 0 }, 1.5);
	podfold_forget(fold, "rtt"); /* its own: it starts afresh, from what is reported */
	free(scrape(f, in, 1));
	check_got((uint64_t[]){ 1, 0, 0 }, 0, (uint64_t[]){ 0, 1, 0, 0 }, 0.5);

	free(f);
	podfold_free(fold);
	podsnap_publish(&slot, NULL);
	pthread_mutex_destroy(&slot.mu);
}

int main(void)
{
	RUN(test_fold_native);
	RUN(test_fold_generation);
	RUN(test_fold_restart_and_move);
	RUN(test_fold_forget_owner);
	CHECK_EXIT();
}
