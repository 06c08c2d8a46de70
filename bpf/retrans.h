/* SPDX-License-Identifier: GPL-2.0-only */
/* Types shared by bpf/retrans.bpf.c and exporter/collectors/retrans.c. */
#ifndef NETSTACK_RETRANS_H
#define NETSTACK_RETRANS_H

#include "cpu_array.h"

enum retrans_kind { RT_KIND_RETRANSMIT, RT_KIND_SYNACK, RT_NR_KINDS };
/* Why the kernel retransmitted, from its own state at the tracepoint (bpf/retrans.bpf.c). */
enum retrans_cause {
	RT_CAUSE_TIMEOUT,
	RT_CAUSE_FAST,
	RT_CAUSE_TAIL_LOSS_PROBE,
	RT_CAUSE_SYN,
	RT_NR_CAUSES
};
enum retrans_family { RT_IPV4, RT_IPV6, RT_OTHER, RT_NR_FAMILIES };

/*
 * Every TCP state is below 14 (TCP_MAX_STATES on Linux 6.18). The program clamps anything else
 * to 14 to stay inside the array (rendered by its name in that kernel's BTF, or its number).
 * 15 rather than the 32 of the TCPF_* masks keeps the array within two pages on a 2-CPU Linux
 * 5.10, which charges it to a pod's 64 KiB RLIMIT_MEMLOCK (tests/kernels/run.sh).
 */
#define RT_NR_STATES 15

/* Optional labels; those not set in label_mask stay zero in the key. */
#define RT_LABEL_NETNS (1u << 0)
#define RT_LABEL_CAUSE (1u << 1) /* on by default */

/*
 * Rows: kind and cause together, one row per cause of kind retransmit, then kind synack (whose
 * cause is always syn). Without the cause label every retransmit counts in row 0.
 */
#define RT_ROW_SYNACK RT_NR_CAUSES
#define RT_NR_ROWS (RT_NR_CAUSES + 1)

/*
 * The slot table's slots (bpf/cpu_array.h), one u64 counter each: failures by family, the
 * overflow count, then per (family, state) a group of 8 slots, the pairs (packets, segments)
 * of kind retransmit of each cause side by side, then a pair per (family, state) of kind
 * synack. A retransmission touches its connection's group whatever its cause: the cause (from
 * a line of the socket) decides only where in it, so that the counters' line is the one every
 * retransmission of that family and state keeps warm (with a row per cause, each cause's
 * counters were a line of their own, colder, and fetched only once the cause was known:
 * 10 ns more per retransmission in tests/bench/retrans.sh). A group is one line where the
 * array's values start on one; where they do not (Linux 6.18 starts them 56 bytes past one),
 * the first pair of each group straddles two, so syn, the rarest cause in bulk transfers,
 * comes first (RT_CAUSE_POS).
 */
#define RT_FAILURES(family) (family)
#define RT_OVERFLOW RT_NR_FAMILIES /* events the hash had no room for */
/* A multiple of 8: a group never straddles a group of 8 slots (tests/unit/test_counters.c). */
#define RT_PAIR_BASE 8
#define RT_GROUP(family, state)                                                                    \
	(RT_PAIR_BASE + 2 * RT_NR_CAUSES * ((family)*RT_NR_STATES + (state)))
/* A cause's pair in its group, and back: syn 0, timeout 1, fast 2, tail_loss_probe 3. */
#define RT_CAUSE_POS(cause) (((cause) + 1) & 3)
#define RT_POS_CAUSE(pos) (((pos) + 3) & 3)
#define RT_RETRANSMIT(cause, family, state) (RT_GROUP(family, state) + 2 * RT_CAUSE_POS(cause))
#define RT_SYNACK_BASE RT_GROUP(RT_NR_FAMILIES, 0)
#define RT_SYNACK(family, state) (RT_SYNACK_BASE + 2 * ((family)*RT_NR_STATES + (state)))
/* The packets of a row (a cause of kind retransmit, or RT_ROW_SYNACK), then its segments. */
#define RT_PACKETS(row, family, state)                                                             \
	((row) < RT_NR_CAUSES ? RT_RETRANSMIT(row, family, state) : RT_SYNACK(family, state))
#define RT_SEGMENTS(row, family, state) (RT_PACKETS(row, family, state) + 1)
#define RT_NR_SLOTS RT_SYNACK(RT_NR_FAMILIES, 0)
_Static_assert(RT_NR_CAUSES == 4, "a group is 8 slots, RT_CAUSE_POS takes 2 bits");
/* Each CPU's slice of the by-CPU array tcp_retransmits (bpf/maps.bpf.h). */
#define RT_STRIDE CPU_STRIDE(RT_NR_SLOTS)

#endif
