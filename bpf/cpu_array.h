/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * By-CPU arrays and slot tables, shared by the BPF programs (bpf/maps.bpf.h) and their reader
 * (exporter/kernel/bpfmap.c).
 */
#ifndef NETSTACK_CPU_ARRAY_H
#define NETSTACK_CPU_ARRAY_H

/*
 * Entries per CPU in a by-CPU array holding slots u64 counters: rounded up to a cache line,
 * plus one, so that two CPUs never write to the same line wherever the array's values start
 * (the kernel's struct bpf_array puts them 56 bytes past a line on Linux 6.18, a page when
 * BPF_F_MMAPABLE). tests/unit/test_counters.c checks it.
 */
#define CPU_STRIDE(slots) ((((slots) + 7) & ~7) + 8)

/*
 * The size of an element of a by-CPU array of structs, one per CPU, of which its CPU writes
 * only the first CPU_LINE bytes: two lines, so that no two CPUs write to one line, for the same
 * reason (bpf/sample.bpf.h struct sample_state, bpf/drops.bpf.c struct drop_last).
 */
#define CPU_LINE 64
#define CPU_ELEM_SIZE (2 * CPU_LINE)

/*
 * A slot table: a collector's counters, numbered by the collector (its own header), in a by-CPU
 * array without optional labels, and with the netns label in a bounded per-CPU hash under this
 * key (bpf/maps.bpf.h slot_add, exporter/kernel/bpfmap.h struct slot_table).
 */
struct slot_key {
	__u32 netns;
	__u32 slot;
};

#endif
