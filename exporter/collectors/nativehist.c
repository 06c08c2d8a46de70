// SPDX-License-Identifier: GPL-2.0-only
/*
 * Native histogram edges for the kernel: T(i) = floor(2^(i/2^schema) * 1e6) from long double,
 * then checked and corrected in integers (T^(2^schema) against 2^i * 10^(6 * 2^schema)), so that
 * an edge is never off by one where the real value lies within rounding of an integer.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/nativehist.h"

/* Big enough for (2^33)^32 << 640 and 10^192 << 400, the largest products at schema 5. */
#define BN_WORDS 48

struct bn {
	uint32_t w[BN_WORDS];
};

static void bn_set(struct bn *a, uint64_t v)
{
	memset(a, 0, sizeof(*a));
	a->w[0] = (uint32_t)v;
	a->w[1] = (uint32_t)(v >> 32);
}

/* a *= b; the operands are sized so that no product overflows. */
static void bn_mul(struct bn *a, const struct bn *b)
{
	uint32_t r[BN_WORDS] = { 0 };

	for (int i = 0; i < BN_WORDS; i++) {
		uint64_t carry = 0;

		if (!a->w[i])
			continue;
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
	unsigned words = bits / 32, sh = bits % 32;

	for (int i = BN_WORDS - 1; i >= 0; i--) {
		uint64_t hi = i - (int)words >= 0 ? a->w[i - words] : 0;
		uint64_t lo = i - (int)words - 1 >= 0 ? a->w[i - words - 1] : 0;

		a->w[i] = (uint32_t)(((hi << 32 | lo) << sh) >> 32);
	}
}

static int bn_cmp(const struct bn *a, const struct bn *b)
{
	for (int i = BN_WORDS - 1; i >= 0; i--)
		if (a->w[i] != b->w[i])
			return a->w[i] < b->w[i] ? -1 : 1;
	return 0;
}

/* v^(2^schema) << lshift */
static void bn_pow_shl(struct bn *a, uint64_t v, int schema, unsigned lshift)
{
	bn_set(a, v);
	for (int k = 0; k < schema; k++) {
		struct bn b = *a;

		bn_mul(a, &b);
	}
	bn_shl(a, lshift);
}

/* Whether v <= 2^(i/2^schema) * 1e6, in integers: v^(2^s) * 2^-i <= 10^(6 * 2^s). */
static bool at_most_edge(uint64_t v, int schema, int i)
{
	struct bn lhs, rhs;

	bn_pow_shl(&lhs, v, schema, i < 0 ? -i : 0);
	bn_pow_shl(&rhs, 1000000, schema, i > 0 ? i : 0);
	return bn_cmp(&lhs, &rhs) <= 0;
}

uint64_t native_edge_us(int schema, int i)
{
	long double x;
	uint64_t t;

	if (schema < NATIVE_SCHEMA_MIN || schema > NATIVE_SCHEMA_MAX)
		return UINT64_MAX;
	x = exp2l((long double)i / (1 << schema)) * 1e6L;
	if (x >= 0x1p40L)
		return UINT64_MAX;
	t = (uint64_t)floorl(x);
	/* The largest t with t <= x. */
	while (t && !at_most_edge(t, schema, i))
		t--;
	while (at_most_edge(t + 1, schema, i))
		t++;
	return t;
}

int native_table_init(struct native_table *t, int schema)
{
	int imin, imax, per;

	if (schema < NATIVE_SCHEMA_MIN || schema > NATIVE_SCHEMA_MAX)
		return -EINVAL;
	per = 1 << schema;
	memset(t, 0, sizeof(*t));
	/* The first bucket holding 1 us, and the one holding UINT32_MAX us. */
	imin = (int)floorl(per * log2l(1e-6L)) - 1;
	while (native_edge_us(schema, imin) < 1)
		imin++;
	imax = imin;
	while (native_edge_us(schema, imax) < UINT32_MAX)
		imax++;
	t->schema = schema;
	t->offset = imin;
	t->slots = imax - imin + 2;
	if (t->slots + per > NATIVE_TABLE_SIZE)
		return -EINVAL;
	for (unsigned d = 1; d < NATIVE_TABLE_SIZE; d++) {
		uint64_t e = d < t->slots ? native_edge_us(schema, imin + (int)d - 1) : UINT32_MAX;

		t->thr[d] = e < UINT32_MAX ? (uint32_t)e : UINT32_MAX;
	}
	for (unsigned o = 1, d = 0; o < NATIVE_OCTAVES; o++) {
		while (t->thr[d] < 1u << o)
			d++;
		t->first[o] = d;
	}
	/* Rows of a cache line (16 words) up to schema 3, then 32 and 64 words. */
	t->row_shift = schema <= 3 ? 4 : schema + 1;
	for (unsigned o = 0; o < NATIVE_OCTAVES; o++) {
		uint32_t *row = t->rows + (o << t->row_shift);

		row[0] = t->first[o];
		for (int j = 0; j < per; j++)
			row[1 + j] = t->thr[t->first[o] + j];
	}
	return 0;
}

unsigned native_slot_ref(const struct native_table *t, uint32_t us)
{
	int s = t->schema, i;

	if (!us)
		return 0;
	/* An estimate, then the smallest i with T(i) >= us from the exact edges. */
	i = (int)ceill((1 << s) * log2l(us / 1e6L));
	while (native_edge_us(s, i) < us)
		i++;
	while (native_edge_us(s, i - 1) >= us)
		i--;
	return i - t->offset + 1;
}

int native_parse_schema(const char *value, int *schema, char *err, size_t errlen)
{
	char *end;
	long v;

	if (!strcmp(value, "off")) {
		*schema = NATIVE_OFF;
		return 0;
	}
	errno = 0;
	v = strtol(value, &end, 10);
	if (errno || end == value || *end || v < NATIVE_SCHEMA_MIN || v > NATIVE_SCHEMA_MAX) {
		snprintf(err, errlen, "expected off or a schema from %d to %d, got '%s'",
			 NATIVE_SCHEMA_MIN, NATIVE_SCHEMA_MAX, value);
		return -EINVAL;
	}
	*schema = (int)v;
	return 0;
}

void native_hist_of(struct native_hist *nh, const struct native_table *t, const uint64_t *slots)
{
	nh->schema = (int)t->schema;
	/*
	 * The zero bucket holds 0 us only: its threshold is the first bucket's lower edge, just
	 * under 1 us. Above 0, so that Prometheus 2.42 takes an empty histogram for a native one.
	 */
	nh->zero_threshold = exp2((double)(t->offset - 1) / (1 << t->schema));
	nh->zero_count = slots[0];
	nh->offset = t->offset;
	nh->counts = slots + 1;
	nh->n = t->slots - 1;
}
