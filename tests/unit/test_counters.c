// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the counter tables' layouts (bpf/cpu_array.h, drops.h, retrans.h, rtt.h): what
 * their comments promise about cache lines and slots, for every base the kernel may give.
 */
#include "check.h"

#include <linux/types.h>
#include <stdint.h>

#include "cpu_array.h"
#include "drops.h"
#include "retrans.h"
#include "rtt.h"

static unsigned line(uint64_t byte)
{
	return byte / CPU_LINE;
}

/* Bases an array's values may start at: any multiple of 8 bytes within a line. */
#define FOR_EACH_BASE(b) for (unsigned b = 0; b < CPU_LINE; b += 8)

/* The last line a CPU's slice writes comes before the first line the next CPU's writes. */
static void test_cpu_stride(void)
{
	for (unsigned slots = 1; slots <= 5000; slots++) {
		uint64_t s = CPU_STRIDE(slots);

		CHECK(s % 8 == 0 && s >= slots + 8);
		FOR_EACH_BASE(b)
		for (unsigned c = 0; c < 3; c++)
			if (line(b + (c * s + slots) * 8 - 1) >= line(b + (c + 1) * s * 8))
				CHECK(!"two CPUs' slices share a line");
	}
}

/* Elements of CPU_ELEM_SIZE of which a CPU writes at most CPU_LINE bytes share no line. */
static void test_cpu_elem(void)
{
	FOR_EACH_BASE(b)
	for (unsigned w = 1; w <= CPU_LINE; w++)
		for (unsigned c = 0; c < 3; c++)
			CHECK(line(b + c * CPU_ELEM_SIZE + w - 1) <
			      line(b + (c + 1) * CPU_ELEM_SIZE));
}

/*
 * A retransmission's pair of slots is in one group of 8 (one cache line where the array's values
 * start on one); the singles come before the pairs.
 */
static void test_retrans_slots(void)
{
	CHECK(RT_PAIR_BASE % 2 == 0);
	CHECK(RT_OVERFLOW < RT_PAIR_BASE && RT_FAILURES(RT_NR_FAMILIES - 1) < RT_OVERFLOW);
	for (unsigned r = 0; r < RT_NR_ROWS; r++)
		for (unsigned f = 0; f < RT_NR_FAMILIES; f++)
			for (unsigned s = 0; s < RT_NR_STATES; s++) {
				unsigned p = RT_PACKETS(r, f, s);

				CHECK(p / 8 == RT_SEGMENTS(r, f, s) / 8);
				CHECK(p >= RT_PAIR_BASE && RT_SEGMENTS(r, f, s) < RT_NR_SLOTS);
			}
	/* Every cause has a row of kind retransmit; the SYN-ACK row comes after them. */
	CHECK(RT_ROW_SYNACK == RT_NR_CAUSES && RT_NR_ROWS == RT_ROW_SYNACK + 1);
	CHECK(RT_NR_SLOTS + 8 <= RT_STRIDE);
}

/*
 * Histograms in use: RTT_HIST numbers each once, the overflow ones after the others (whose
 * counts exporter/collectors/rtt.c reads as the overflow count), and the slice of any number of
 * them has a line of padding that keeps CPUs apart.
 */
static void test_rtt_slots(void)
{
	unsigned seen[RTT_NR_HISTS] = { 0 };

	for (unsigned o = 0; o < 2; o++)
		for (unsigned k = 0; k < NR_RTT_KINDS; k++)
			for (unsigned f = 0; f < NR_RTT_FAMILIES; f++) {
				unsigned h = RTT_HIST(o, k, f);

				CHECK(o ? h >= RTT_HIST(1, 0, 0) : h < RTT_HIST(1, 0, 0));
				CHECK(h < RTT_NR_HISTS);
				seen[h]++;
			}
	for (unsigned i = 0; i < RTT_NR_HISTS; i++)
		CHECK(seen[i] == 1);
	for (unsigned nh = 1; nh <= RTT_NR_HISTS; nh++)
		CHECK(nh * HIST_SIZE + 8 <= RTT_STRIDE(nh) && RTT_STRIDE(nh) % 8 == 0);
}

/*
 * Reason 0 (never a drop) is the first NR_FAMILIES * NR_PROTOS slots: the overflow that
 * exporter/collectors/drops.c sums without optional labels.
 */
static void test_drop_slots(void)
{
	for (unsigned f = 0; f < NR_FAMILIES; f++)
		for (unsigned p = 0; p < NR_PROTOS; p++) {
			CHECK(DROP_INDEX(0, f, p) < NR_FAMILIES * NR_PROTOS);
			CHECK(DROP_INDEX(1, f, p) >= NR_FAMILIES * NR_PROTOS);
		}
	CHECK(DROP_STRIDE(1) >= DROP_INDEX(1, 0, 0) + 8);
}

int main(void)
{
	RUN(test_cpu_stride);
	RUN(test_cpu_elem);
	RUN(test_retrans_slots);
	RUN(test_rtt_slots);
	RUN(test_drop_slots);
	CHECK_EXIT();
}
