// SPDX-License-Identifier: GPL-2.0-only
/*
 * rtt_native CONFIG: runs the rtt collector in this process (its own sockops program beside the
 * exporter's, no start-up pass: set existing_sockets = false) and checks, through a capture
 * filter, the native buckets that the text formats do not show. /metrics stays as it is.
 *
 * Prints "ready" once attached; then for each line read from stdin, a label text such as
 * netns="4026532000" (or * for all), prints for each histogram whose labels hold it and that has
 * samples: "ok"/"not ok" lines for (1) native buckets (zero bucket included) add up to the
 * classic count, and (2) the native bucket holding the median overlaps the classic bucket holding
 * it (their edges, 2^(i/2^schema) s and 2^k us, do not align; the same median sample lies in
 * both). Before those, READS reads in a row, taken while samples arrive, each of which must agree
 * everywhere: the count and both kinds of buckets come from the same cells. A line "done N" ends
 * the answer to the N-th request.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/collector.h"
#include "config.h"
#include "kernel/kernel.h"
#include "metrics.h"
#include "sampling/events.h"

#define MAX_HISTS 256
#define READS 50u

struct seen {
	char labels[256];
	uint64_t count, native, zero;
	double lo, hi;	 /* classic bucket holding the median */
	double nlo, nhi; /* native bucket holding it ([0, 0]: the zero bucket) */
	bool has_native;
};

struct grab {
	struct expo_filter f;
	struct seen *h;
	unsigned n;
};

static bool capture(struct expo_filter *f, const char *family, enum metric_type type)
{
	(void)f;
	return type == METRIC_HISTOGRAM && !strcmp(family, "netstack_tcp_rtt_seconds");
}

static void sample(struct expo_filter *ef, const struct labels *l, const double *bounds,
		   const uint64_t *counts, int nbounds, double sum, const struct native_hist *nh,
		   const struct exemplar *ex)
{
	struct grab *g = (struct grab *)ef;
	struct seen *s;
	uint64_t rank, c = 0;
	size_t len = 0;

	(void)sum;
	(void)ex;
	if (g->n == MAX_HISTS)
		return;
	s = &g->h[g->n++];
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < l->n; i++)
		len += snprintf(s->labels + len, sizeof(s->labels) - len, "%s%s=\"%s\"",
				i ? "," : "", l->name[i], l->value[i]);
	for (int b = 0; b <= nbounds; b++)
		s->count += counts[b];
	rank = (s->count + 1) / 2;
	for (int b = 0; b <= nbounds; b++) {
		c += counts[b];
		if (c >= rank && rank) {
			s->lo = b ? bounds[b - 1] : 0;
			s->hi = b < nbounds ? bounds[b] : INFINITY;
			break;
		}
	}
	if (!nh)
		return;
	s->has_native = true;
	s->zero = nh->zero_count;
	s->native = nh->zero_count;
	for (unsigned j = 0; j < nh->n; j++)
		s->native += nh->counts[j];
	c = nh->zero_count;
	if (c >= rank)
		return; /* the zero bucket: [0, 0] */
	for (unsigned j = 0; j < nh->n; j++) {
		int i = nh->offset + (int)j;

		c += nh->counts[j];
		if (c >= rank) {
			s->nlo = exp2((double)(i - 1) / (1 << nh->schema));
			s->nhi = exp2((double)i / (1 << nh->schema));
			break;
		}
	}
}

static void flush(struct expo_filter *f, struct expo *e, bool keep)
{
	(void)f;
	(void)e;
	(void)keep;
}

/* One collect into g; 0 or -errno. */
static int grab(const struct collector_ops *ops, void *state, struct grab *g)
{
	struct mbuf scratch = { 0 };
	struct expo e;
	int err;

	g->n = 0;
	expo_init(&e, &scratch, FORMAT_PROMETHEUS);
	expo_set_filter(&e, &g->f, true);
	err = ops->collect(state, &e);
	expo_finish(&e);
	mbuf_free(&scratch);
	return err;
}

static bool consistent(const struct grab *g)
{
	for (unsigned i = 0; i < g->n; i++)
		if (!g->h[i].has_native || g->h[i].native != g->h[i].count)
			return false;
	return true;
}

static void answer(const struct collector_ops *ops, void *state, struct grab *g, const char *want,
		   unsigned req)
{
	unsigned bad = 0, matched = 0;

	/* Every read, taken while samples arrive, must agree: count and buckets are one read. */
	for (unsigned r = 0; r < READS; r++) {
		if (grab(ops, state, g)) {
			printf("not ok - collect failed\n");
			break;
		}
		bad += !consistent(g);
	}
	printf("%s - %u reads: native buckets add up to the count in each (%u did not)\n",
	       bad ? "not ok" : "ok", READS, bad);
	for (unsigned i = 0; i < g->n; i++) {
		const struct seen *s = &g->h[i];

		if ((strcmp(want, "*") && !strstr(s->labels, want)) || !s->count)
			continue;
		matched++;
		printf("%s - {%s}: native buckets add up to the count (%" PRIu64 " = %" PRIu64
		       ", zero bucket %" PRIu64 ")\n",
		       s->has_native && s->native == s->count ? "ok" : "not ok", s->labels,
		       s->native, s->count, s->zero);
		printf("%s - {%s}: median in native bucket (%.9g, %.9g] and classic (%.9g, %.9g]\n",
		       s->has_native && s->nlo < s->hi && s->nhi > s->lo ? "ok" : "not ok",
		       s->labels, s->nlo, s->nhi, s->lo, s->hi);
	}
	if (!matched)
		printf("not ok - no histogram with samples holds %s\n", want);
	printf("done %u\n", req);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const struct collector_ops *ops = collectors[collector_index("rtt")];
	struct config *cfg = calloc(1, sizeof(*cfg));
	struct grab g = { { capture, sample, flush }, calloc(MAX_HISTS, sizeof(struct seen)), 0 };
	struct kernel k;
	struct events *ev;
	struct collector_env env = { .pin_root = "" };
	void *state = NULL;
	char err[512], line[256];
	unsigned req = 0;

	if (argc != 2 || !cfg || !g.h) {
		fprintf(stderr, "usage: rtt_native CONFIG\n");
		goto fail;
	}
	config_defaults(cfg);
	if (config_load(cfg, argv[1], err, sizeof(err))) {
		fprintf(stderr, "rtt_native: %s\n", err);
		goto fail;
	}
	kernel_init(&k);
	ev = events_new(&cfg->sampling);
	env.kernel = &k;
	env.events = ev;
	if (!ev || ops->start(&env, cfg->collectors[collector_index("rtt")].v, &state)) {
		fprintf(stderr, "rtt_native: the rtt collector does not start\n");
		events_free(ev);
		kernel_free(&k);
		goto fail;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		answer(ops, state, &g, line, ++req);
	}
	ops->stop(state);
	events_free(ev);
	kernel_free(&k);
	free(g.h);
	free(cfg);
	return 0;
fail:
	free(g.h);
	free(cfg);
	return 2;
}
