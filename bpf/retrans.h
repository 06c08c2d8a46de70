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
 * overflow count, then a pair per (row, family, state), packets then segments, side by side:
 * one retransmission touches one cache line where the array's values start on a line, two at
 * most where they do not (Linux 6.18 starts them 56 bytes past one).
 */
#define RT_FAILURES(family) (family)
#define RT_OVERFLOW RT_NR_FAMILIES /* events the hash had no room for */
/* Even: a pair never straddles a group of 8 slots (tests/unit/test_counters.c). */
#define RT_PAIR_BASE 4
#define RT_PACKETS(row, family, state)                                                             \
	(RT_PAIR_BASE + 2 * (((row)*RT_NR_FAMILIES + (family)) * RT_NR_STATES + (state)))
#define RT_SEGMENTS(row, family, state) (RT_PACKETS(row, family, state) + 1)
#define RT_NR_SLOTS RT_PACKETS(RT_NR_ROWS, 0, 0)
/* Each CPU's slice of the by-CPU array tcp_retransmits (bpf/maps.bpf.h). */
#define RT_STRIDE CPU_STRIDE(RT_NR_SLOTS)

#endif
