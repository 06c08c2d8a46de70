/* SPDX-License-Identifier: GPL-2.0-only */
/* By-CPU arrays, shared by the BPF programs (bpf/maps.bpf.h) and their reader (exporter/bpfmap.c). */
#ifndef NETSTACK_CPU_ARRAY_H
#define NETSTACK_CPU_ARRAY_H

/*
 * Entries per CPU in a by-CPU array holding slots u64 counters: rounded up to a cache line,
 * plus one, so that two CPUs never write to the same line.
 */
#define CPU_STRIDE(slots) ((((slots) + 7) & ~7) + 8)

#endif
