// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the cell histograms (bpf/hist.h, exporter/collectors/histogram.c): each value's
 * cell against the exact native bucket edges, the layouts of the RTT and handshake histograms,
 * buckets and count resolved from one set of cells, a family's histograms gathered from rows
 * and rendered in order, and the configuration key.
 * tests/tools/hist_check.c holds the kernel's own hist_cell to hist_cell_of.
 */
#include "check.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "collectors/collector.h"
#include "collectors/histogram.h"
#include "kernel/bpfmap.h"
#include "metrics/prometheus.pb-c.h"

/* Exact integers to 2^640: u^32 (schema 5's power would be more, schema 3's is u^8). */
#define BN_WORDS 20
struct bn {
	uint32_t w[BN_WORDS];
};

static void bn_set(struct bn *a, uint64_t v)
{
	memset(a, 0, sizeof(*a));
	a->w[0] = (uint32_t)v;
	a->w[1] = (uint32_t)(v >> 32);
}

static void bn_mul(struct bn *a, const struct bn *b)
{
	uint32_t r[BN_WORDS] = { 0 };

	for (int i = 0; i < BN_WORDS; i++) {
		uint64_t carry = 0;

		for (int j = 0; i + j < BN_WORDS; j++) {
			uint64_t t = (uint64_t)a->w[i] * b->w[j] + r[i + j] + carry;

			r[i + j] = (uint32_t)t;
			carry = t >> 32;
		}
	}
	memcpy(a->w, r, sizeof(r));
}

static void bn_shl(struct bn *a, unsigned bits)
{
	for (; bits; bits--) {
		uint32_t carry = 0;

		for (int i = 0; i < BN_WORDS; i++) {
			uint32_t next = a->w[i] >> 31;

			a->w[i] = a->w[i] << 1 | carry;
			carry = next;
		}
	}
}

static int bn_cmp(const struct bn *a, const struct bn *b)
{
	for (int i = BN_WORDS - 1; i >= 0; i--)
		if (a->w[i] != b->w[i])
			return a->w[i] < b->w[i] ? -1 : 1;
	return 0;
}

/* v^(2^schema) << shift */
static void bn_pow(struct bn *a, uint64_t v, int schema, unsigned shift)
{
	bn_set(a, v);
	for (int k = 0; k < schema; k++) {
		struct bn b = *a;

		bn_mul(a, &b);
	}
	bn_shl(a, shift);
}

/* Whether u <= 2^(i/2^schema) * 1e6 exactly: u^(2^s) * 2^-i <= 10^(6 * 2^s). */
static bool at_most_edge(uint64_t u, int schema, int i)
{
	struct bn l, r;

	bn_pow(&l, u, schema, i < 0 ? -i : 0);
	bn_pow(&r, 1000000, schema, i > 0 ? i : 0);
	return bn_cmp(&l, &r) <= 0;
}

/* The native bucket holding u >= 1 at schema: the smallest i with u <= 2^(i/2^s) s. */
static int native_ref(uint32_t u, int schema)
{
	int i = (int)ceill((1 << schema) * log2l(u / 1e6L));

	while (!at_most_edge(u, schema, i))
		i++;
	while (at_most_edge(u, schema, i - 1))
		i--;
	return i;
}

/* Cell of u against the exact edges: octave, position, and the native bucket it implies. */
static int check_cell(uint32_t u)
{
	unsigned c = hist_cell_of(u), e = c / HIST_PER_OCTAVE, p = c % HIST_PER_OCTAVE;

	if (!u)
		return c == HIST_ZERO_CELL;
	if (e != 31u - __builtin_clz(u) || (p == 0) != !(u & (u - 1)))
		return 0;
	return HIST_OFFSET + 8 * (int)e + (int)(p ? p - 1 : 0) == native_ref(u, HIST_SCHEMA);
}

static uint32_t xorshift(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static void test_cells_exact(void)
{
	uint32_t x = 2463534242u;
	unsigned bad = 0;

	for (uint32_t u = 0; u < 1u << 17; u++)
		bad += !check_cell(u);
	/* Each edge of schema 3 in range, and its neighbours. */
	for (int i = HIST_OFFSET; i <= HIST_OFFSET + 8 * HIST_OCTAVES; i++) {
		long double t = floorl(exp2l(i / 8.0L) * 1e6L);

		for (int d = -2; d <= 2; d++)
			if (t + d >= 0 && t + d <= UINT32_MAX)
				bad += !check_cell((uint32_t)(t + d));
	}
	for (int k = 0; k < 200000; k++)
		bad += !check_cell(xorshift(&x) >> (x & 31));
	bad += !check_cell(UINT32_MAX) + !check_cell(1u << 31);
	CHECK(bad == 0);
	CHECK(hist_cell_of(0) == HIST_ZERO_CELL && hist_cell_of(1) == HIST_CELL(0, 0));
	CHECK(hist_cell_of(UINT32_MAX) < HIST_CELLS);
}

/* The RTT histogram's classic bounds (4 us to 2^25 us) and the handshake's (2^k s, no 1 s). */
static uint32_t rtt_bounds[24], hs_bounds[21];

static void make_bounds(void)
{
	for (int b = 0; b < 24; b++)
		rtt_bounds[b] = 1u << (2 + b);
	for (int b = 0; b < 21; b++)
		hs_bounds[b] = (uint32_t)((1000000ull << (b + (b >= 16))) >> 16);
}

static void test_layout(void)
{
	static struct hist_layout l;
	static const uint32_t inside[] = { 4, 1000 }; /* 1000 us splits the cell (977, 1024) */

	make_bounds();
	for (int s = HIST_NATIVE_OFF; s <= HIST_SCHEMA; s++) {
		CHECK(hist_layout_init(&l, rtt_bounds, 24, s) == 0);
		CHECK(hist_layout_init(&l, hs_bounds, 21, s) == 0);
	}
	CHECK(hist_layout_init(&l, rtt_bounds, 24, 3) == 0);
	CHECK(l.offset == -159 && l.nnative == 257 && l.nnative <= HIST_MAX_NATIVE);
	CHECK(hist_layout_init(&l, rtt_bounds, 24, 0) == 0);
	CHECK(l.offset == -19 && l.nnative == 33);
	CHECK(hist_layout_init(&l, inside, 2, 3) == -EINVAL);
	CHECK(hist_layout_init(&l, rtt_bounds, 24, 4) == -EINVAL);
	CHECK(hist_layout_init(&l, rtt_bounds, 24, -2) == -EINVAL);
}

/* One value alone in a histogram: its classic and native buckets against the exact edges. */
static int check_resolve(const struct hist_layout *l, const uint32_t *bounds, uint32_t u)
{
	uint64_t h[HIST_SIZE] = { 0 }, classic[HIST_MAX_BOUNDS + 1], native[HIST_MAX_NATIVE], zero;
	uint64_t sum = 0;
	int want_b = 0, got_n = -1;

	h[hist_cell_of(u)] = 3;
	if (hist_resolve(l, h, classic, native, &zero) != 3)
		return 0;
	while (want_b < l->nbounds && u > bounds[want_b])
		want_b++;
	if (classic[want_b] != 3)
		return 0;
	for (unsigned j = 0; j < l->nnative; j++) {
		sum += native[j];
		if (native[j])
			got_n = l->offset + (int)j;
	}
	if (sum + zero != 3)
		return 0;
	if (!u)
		return zero == 3;
	return got_n == native_ref(u, l->schema);
}

static void test_resolve(void)
{
	static struct hist_layout l;
	uint32_t x = 88172645u;
	unsigned bad = 0;

	make_bounds();
	for (int s = HIST_SCHEMA_MIN; s <= HIST_SCHEMA; s++) {
		for (int which = 0; which < 2; which++) {
			const uint32_t *b = which ? hs_bounds : rtt_bounds;

			CHECK(hist_layout_init(&l, b, which ? 21 : 24, s) == 0);
			for (uint32_t u = 0; u < 4096; u++)
				bad += !check_resolve(&l, b, u);
			for (int k = 0; k < (which ? 21 : 24); k++)
				for (int d = -1; d <= 1; d++)
					bad += !check_resolve(&l, b, b[k] + d);
			for (int k = 0; k < 5000; k++)
				bad += !check_resolve(&l, b, xorshift(&x) >> (x & 31));
		}
	}
	CHECK(bad == 0);
}

/* Every cell at once: the count, the classic buckets and zero + native buckets agree. */
static void test_counts_agree(void)
{
	static struct hist_layout l;
	uint64_t h[HIST_SIZE], classic[HIST_MAX_BOUNDS + 1], native[HIST_MAX_NATIVE], zero,
		total = 0;
	uint64_t sc = 0, sn = 0;

	make_bounds();
	for (unsigned c = 0; c < HIST_CELLS; c++)
		total += h[c] = c * 7 + 1;
	CHECK(hist_layout_init(&l, rtt_bounds, 24, 2) == 0);
	CHECK(hist_resolve(&l, h, classic, native, &zero) == total);
	for (int b = 0; b <= l.nbounds; b++)
		sc += classic[b];
	for (unsigned j = 0; j < l.nnative; j++)
		sn += native[j];
	CHECK(sc == total && sn + zero == total);
}

/* A text exposition's value of the first line that starts with prefix; -1 if none. */
static double text_value(const struct mbuf *b, const char *prefix)
{
	const char *p = b->data, *end = b->data + b->len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *sp = nl;

		if (!nl)
			break;
		while (sp > p && sp[-1] != ' ')
			sp--;
		if (!strncmp(p, prefix, strlen(prefix)))
			return strtod(sp, NULL);
		p = nl + 1;
	}
	return -1;
}

static void render(const struct hist_layout *l, const uint64_t *h, enum metric_format f,
		   struct mbuf *b)
{
	struct labels lab = { 0 };
	struct expo e;

	mbuf_reset(b);
	labels_add(&lab, "family", "ipv4");
	expo_init(&e, b, f);
	expo_family(&e, "t_seconds", METRIC_HISTOGRAM, "t");
	hist_render(&e, &lab, l, h);
	expo_finish(&e);
}

/*
 * Every format, every schema, cells of all sizes: text and OpenMetrics say _count = +Inf bucket,
 * protobuf sample_count = the last classic bucket = zero bucket + native buckets.
 */
static void test_formats(void)
{
	static struct hist_layout l;
	uint64_t h[HIST_SIZE] = { 0 }, total = 0;
	struct mbuf b = { 0 };
	uint32_t x = 362436069u;
	unsigned bad = 0;

	make_bounds();
	for (int k = 0; k < 4000; k++) {
		unsigned c = hist_cell_of(xorshift(&x) >> (x & 31));

		h[c] += x & 0xffff;
		total += x & 0xffff;
	}
	h[HIST_ZERO_CELL] += 5;
	total += 5;
	for (int s = HIST_NATIVE_OFF; s <= HIST_SCHEMA; s++) {
		Io__Prometheus__Client__MetricFamily *f;
		const uint8_t *p;
		uint64_t len = 0, native = 0;
		int shift = 0;

		CHECK(hist_layout_init(&l, rtt_bounds, 24, s) == 0);
		for (int fmt = FORMAT_PROMETHEUS; fmt <= FORMAT_OPENMETRICS; fmt++) {
			render(&l, h, fmt, &b);
			bad += text_value(&b, "t_seconds_count") != (double)total ||
			       text_value(&b, "t_seconds_bucket{family=\"ipv4\",le=\"+Inf\"}") !=
				       (double)total;
		}
		render(&l, h, FORMAT_PROTOBUF, &b);
		p = (const uint8_t *)b.data;
		do {
			len |= (uint64_t)(*p & 0x7f) << shift;
			shift += 7;
		} while (*p++ & 0x80);
		f = io__prometheus__client__metric_family__unpack(NULL, len, p);
		CHECK(f && f->n_metric == 1 && f->metric[0]->histogram);
		if (!f || f->n_metric != 1 || !f->metric[0]->histogram)
			continue;
		{
			const Io__Prometheus__Client__Histogram *hg = f->metric[0]->histogram;
			int64_t run = 0;

			for (size_t i = 0; i < hg->n_positive_delta; i++)
				native += (uint64_t)(run += hg->positive_delta[i]);
			if (hg->sample_count != total || hg->n_bucket != 24 ||
			    hg->bucket[23]->cumulative_count > total)
				fprintf(stderr, "  schema %d: count %llu of %llu, %zu buckets\n", s,
					(unsigned long long)hg->sample_count,
					(unsigned long long)total, hg->n_bucket);
			bad += hg->sample_count != total || hg->n_bucket != 24 ||
			       hg->bucket[23]->cumulative_count > total;
			if (s != HIST_NATIVE_OFF && hg->zero_count + native != total)
				fprintf(stderr, "  schema %d: zero %llu + native %llu\n", s,
					(unsigned long long)hg->zero_count,
					(unsigned long long)native);
			if (s != HIST_NATIVE_OFF)
				bad += hg->zero_count + native != total;
		}
		io__prometheus__client__metric_family__free_unpacked(f, NULL);
	}
	mbuf_free(&b);
	CHECK(bad == 0);
}

static void family_labels(const void *collector, struct labels *l, uint32_t hist)
{
	static const char *const names[] = { "a", "b", "c", "d" };

	CHECK(!collector);
	labels_add(l, "h", names[hist & 3]);
	labels_add(l, "z", "1");
}

/* The rows' test slots: histogram slot / HIST_SIZE, counter slot % HIST_SIZE; slot 9999 none. */
static bool family_slot(uint32_t slot, uint32_t *hist, unsigned *counter)
{
	*hist = slot / HIST_SIZE;
	*counter = slot % HIST_SIZE;
	return slot != 9999;
}

/* Where the line that starts with prefix is in b, or -1. */
static long text_at(const struct mbuf *b, const char *prefix)
{
	for (size_t i = 0; i + strlen(prefix) <= b->len; i++)
		if ((!i || b->data[i - 1] == '\n') && !strncmp(b->data + i, prefix, strlen(prefix)))
			return (long)i;
	return -1;
}

/*
 * Rows in any order, as a slot table reads them: each histogram gathered once per (overflow,
 * netns, hist) with its cells and sum, rendered by overflow, netns, hist; found by its key;
 * added again within its netns, the same one.
 */
static void test_family(void)
{
	static struct hist_family f;
	struct slot_row rows[] = {
		{ .slot = 1 * HIST_SIZE + 5, .netns = 7, .value = 2 },
		{ .slot = 0 * HIST_SIZE + HIST_SUM, .netns = 3, .value = 10 },
		{ .slot = 9999, .netns = 3, .value = 100 },
		{ .slot = 1 * HIST_SIZE + HIST_SUM, .netns = 7, .value = 4 },
		{ .slot = 0 * HIST_SIZE + 3, .overflow = true, .value = 1 },
		{ .slot = 0 * HIST_SIZE + 20, .netns = 3, .value = 1 },
		{ .slot = 0 * HIST_SIZE + 1, .netns = 7, .value = 6 },
		{ .slot = 1 * HIST_SIZE + 5, .netns = 7, .value = 3 },
		{ .slot = 0 * HIST_SIZE + 21, .netns = 3, .value = 2 },
	};
	const char *order[] = { "t_seconds_count{h=\"a\",netns=\"3\",z=\"1\"} 3",
				"t_seconds_count{h=\"a\",netns=\"7\",z=\"1\"} 6",
				"t_seconds_count{h=\"b\",netns=\"7\",z=\"1\"} 5",
				"t_seconds_count{h=\"a\",netns=\"" OVERFLOW_LABEL "\",z=\"1\"} 1" };
	struct mbuf b = { 0 };
	struct expo e;
	uint64_t *c;
	long at = -1;

	make_bounds();
	CHECK(hist_family_init(&f, rtt_bounds, 24, 3, family_labels, 1) == 0);
	for (int round = 0; round < 2; round++) {
		hist_family_clear(&f);
		CHECK(hist_family_add_rows(&f, rows, sizeof(rows) / sizeof(rows[0]), family_slot) ==
		      0);
		CHECK(f.n == 4);
		c = hist_family_find(&f, false, 7, 1);
		CHECK(c && c[5] == 5 && c[HIST_SUM] == 4 && hist_count(c) == 5);
		CHECK(hist_family_find(&f, false, 3, 1) == NULL);
		CHECK(hist_family_find(&f, true, 0, 0) && !hist_family_find(&f, true, 3, 0));
		mbuf_reset(&b);
		expo_init(&e, &b, FORMAT_PROMETHEUS);
		expo_family(&e, "t_seconds", METRIC_HISTOGRAM, "t");
		hist_family_render(&f, &e, NULL);
		expo_finish(&e);
		for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
			long next = text_at(&b, order[i]);

			if (next <= at)
				fprintf(stderr, "  %s: at %ld, after %ld\n", order[i], next, at);
			CHECK(next > at);
			at = next;
		}
		CHECK(text_value(&b, "t_seconds_sum{h=\"a\",netns=\"3\",z=\"1\"}") == 10e-6);
		at = -1;
	}
	/* Added again since the last of another netns: the same counters, no new histogram. */
	hist_family_clear(&f);
	for (uint32_t i = 0; i < 4; i++)
		hist_family_add(&f, false, 0, i)[HIST_SUM] = i;
	CHECK(hist_family_add(&f, false, 0, 2)[HIST_SUM] == 2 && f.n == 4);
	CHECK(hist_family_add(&f, false, 1, 2)[HIST_SUM] == 0 && f.n == 5);
	hist_family_free(&f);
	mbuf_free(&b);
}

static void test_parse(void)
{
	char err[160];
	int s = 0;

	CHECK(hist_parse_schema("off", &s, err, sizeof(err)) == 0 && s == HIST_NATIVE_OFF);
	CHECK(hist_parse_schema("0", &s, err, sizeof(err)) == 0 && s == 0);
	CHECK(hist_parse_schema("3", &s, err, sizeof(err)) == 0 && s == 3);
	CHECK(hist_parse_schema("4", &s, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "expected off or a schema from 0 to 3 (the kernel counts at schema 3), "
		       "got '4'");
	CHECK(hist_parse_schema("-1", &s, err, sizeof(err)) == -EINVAL);
	CHECK(hist_parse_schema("3x", &s, err, sizeof(err)) == -EINVAL);
	CHECK(hist_parse_schema("", &s, err, sizeof(err)) == -EINVAL);
}

int main(void)
{
	RUN(test_cells_exact);
	RUN(test_layout);
	RUN(test_resolve);
	RUN(test_counts_agree);
	RUN(test_formats);
	RUN(test_family);
	RUN(test_parse);
	CHECK_EXIT();
}
