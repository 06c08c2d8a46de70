// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the native histogram edges and table (exporter/collectors/nativehist.c): exact
 * edges, the table's invariants the kernel's search relies on, and the configuration key.
 * tests/integration/native.sh runs the kernel's own search (bpf/native.bpf.h) against these.
 */
#include "check.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/nativehist.h"

static struct native_table tables[NATIVE_SCHEMA_MAX + 1];

/* Known edges, and the integer ones a floating-point floor gets wrong when it rounds down. */
static void test_edges_known(void)
{
	CHECK(native_edge_us(0, 0) == 1000000);
	CHECK(native_edge_us(0, 1) == 2000000);
	CHECK(native_edge_us(0, -1) == 500000);
	CHECK(native_edge_us(0, -19) == 1);
	CHECK(native_edge_us(0, -20) == 0);
	CHECK(native_edge_us(3, 1) == 1090507); /* 2^(1/8) = 1.09050773... */
	CHECK(native_edge_us(3, -1) == 917004); /* 2^(-1/8) = 0.91700404... */
	CHECK(native_edge_us(5, 1) == 1021897); /* 2^(1/32) = 1.02189714... */
	for (int s = NATIVE_SCHEMA_MIN; s <= NATIVE_SCHEMA_MAX; s++)
		for (int k = -6; k <= 12; k++) {
			uint64_t want = k >= 0 ? 1000000ull << k : 1000000ull >> -k;

			CHECK(native_edge_us(s, k * (1 << s)) == want);
		}
	CHECK(native_edge_us(-1, 0) == UINT64_MAX && native_edge_us(6, 0) == UINT64_MAX);
}

/* One octave up doubles the real edge: the floor is 2T or 2T + 1; edges never decrease. */
static void test_edges_relations(void)
{
	for (int s = NATIVE_SCHEMA_MIN; s <= NATIVE_SCHEMA_MAX; s++) {
		int per = 1 << s;

		for (int i = -21 * per; i < 13 * per; i++) {
			uint64_t t = native_edge_us(s, i), up = native_edge_us(s, i + per);

			CHECK(up == 2 * t || up == 2 * t + 1);
			CHECK(t <= native_edge_us(s, i + 1));
		}
	}
}

static void test_table(void)
{
	CHECK(native_table_init(&tables[0], -1) == -EINVAL);
	CHECK(native_table_init(&tables[0], NATIVE_SCHEMA_MAX + 1) == -EINVAL);
	for (int s = NATIVE_SCHEMA_MIN; s <= NATIVE_SCHEMA_MAX; s++) {
		struct native_table *t = &tables[s];
		unsigned per = 1u << s;

		CHECK(native_table_init(t, s) == 0);
		CHECK(t->schema == (unsigned)s);
		/* The first bucket holds 1 us, the last UINT32_MAX us. */
		CHECK(native_edge_us(s, t->offset - 1) == 0 && native_edge_us(s, t->offset) == 1);
		CHECK(native_edge_us(s, t->offset + (int)t->slots - 2) >= UINT32_MAX);
		CHECK(native_edge_us(s, t->offset + (int)t->slots - 3) < UINT32_MAX);
		CHECK(t->thr[0] == 0 && t->thr[1] == 1 && t->first[0] == 0);
		for (unsigned d = 1; d < NATIVE_TABLE_SIZE; d++)
			CHECK(t->thr[d - 1] <= t->thr[d]);
		CHECK(t->slots + per <= NATIVE_TABLE_SIZE);
		/* Each octave's row: its first slot, then the next 2^s edges, within the rows. */
		CHECK((1u + per) <= 1u << t->row_shift);
		CHECK((NATIVE_OCTAVES << t->row_shift) <= NATIVE_ROWS_SIZE);
		for (unsigned o = 0; o < NATIVE_OCTAVES; o++) {
			const uint32_t *row = t->rows + (o << t->row_shift);

			CHECK(row[0] == t->first[o]);
			for (unsigned j = 0; j < per; j++)
				CHECK(row[1 + j] == t->thr[t->first[o] + j]);
		}
		/* What the search relies on: the octave's first edge, and <= 2^s edges below it. */
		for (unsigned o = 1; o < NATIVE_OCTAVES; o++) {
			uint32_t lo = 1u << o, hi = (uint32_t)((2ull << o) - 1);

			CHECK(t->thr[t->first[o]] >= lo && t->thr[t->first[o] - 1] < lo);
			CHECK(t->thr[t->first[o] + per] >= hi);
		}
	}
	CHECK(tables[3].slots == 258 && tables[3].offset == -159);
	/* A row of schema 3 is one line where an array's values start 56 bytes past one. */
	CHECK((56 + offsetof(struct native_table, rows)) % 64 == 0);
	CHECK(tables[3].row_shift == 4);
	CHECK(tables[0].slots == 34 && tables[0].offset == -19);
}

/* The reference slot of a value lies between its bucket's edges. */
static void test_slot_ref(void)
{
	static const uint32_t us[] = {
		0,	 1,	  2,	   3,	      999,	1000,		1001,	   1090507,
		1090508, 2000000, 2000001, 123456789, 1u << 31, UINT32_MAX - 1, UINT32_MAX
	};

	for (int s = NATIVE_SCHEMA_MIN; s <= NATIVE_SCHEMA_MAX; s++) {
		const struct native_table *t = &tables[s];

		for (unsigned k = 0; k < sizeof(us) / sizeof(us[0]); k++) {
			unsigned d = native_slot_ref(t, us[k]);
			int i = t->offset + (int)d - 1;

			CHECK(d < t->slots);
			if (!us[k]) {
				CHECK(d == 0);
				continue;
			}
			CHECK(d >= 1 && native_edge_us(s, i - 1) < us[k] &&
			      us[k] <= native_edge_us(s, i));
		}
	}
}

static void test_parse(void)
{
	char err[128];
	int s = 0;

	CHECK(native_parse_schema("off", &s, err, sizeof(err)) == 0 && s == NATIVE_OFF);
	CHECK(native_parse_schema("0", &s, err, sizeof(err)) == 0 && s == 0);
	CHECK(native_parse_schema("5", &s, err, sizeof(err)) == 0 && s == 5);
	CHECK(native_parse_schema("6", &s, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "expected off or a schema from 0 to 5, got '6'");
	CHECK(native_parse_schema("-1", &s, err, sizeof(err)) == -EINVAL);
	CHECK(native_parse_schema("3x", &s, err, sizeof(err)) == -EINVAL);
	CHECK(native_parse_schema("", &s, err, sizeof(err)) == -EINVAL);
}

static void test_hist_of(void)
{
	uint64_t slots[NATIVE_TABLE_SIZE] = { 7, 1, 2 };
	struct native_hist nh;

	native_hist_of(&nh, &tables[3], slots);
	CHECK(nh.schema == 3 && nh.zero_count == 7);
	CHECK(nh.offset == -159 && nh.n == 257 && nh.counts == slots + 1);
	/* The zero bucket ends where the first bucket starts: 2^(-160/8) s, under 1 us. */
	CHECK(nh.zero_threshold == exp2(-20) && nh.zero_threshold < 1e-6);
}

int main(void)
{
	RUN(test_edges_known);
	RUN(test_edges_relations);
	RUN(test_table);
	RUN(test_slot_ref);
	RUN(test_parse);
	RUN(test_hist_of);
	CHECK_EXIT();
}
