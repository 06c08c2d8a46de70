/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * By-CPU arrays and slot tables, shared by the BPF programs (bpf/maps.bpf.h) and their reader
 * (exporter/kernel/bpfmap.c).
 */
#ifndef NETSTACK_CPU_ARRAY_H
#define NETSTACK_CPU_ARRAY_H

/*
 * Entries per CPU in a by-CPU array holding slots u64 counters: rounded up to a cache line,
 * plus one, so that two CPUs never write to the same line.
 */
#define CPU_STRIDE(slots) ((((slots) + 7) & ~7) + 8)

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
