// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's native bucket search (bpf/native.bpf.h) under BPF_PROG_TEST_RUN, for
 * tests/tools/native_check.c: the same header the collectors' programs include, the table in
 * read-only data as theirs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "native.bpf.h"

const volatile struct native_table table;

struct args {
	__u32 us;
	__u32 slot;
};

SEC("syscall")
int native_slot_of(struct args *a)
{
	a->slot = native_slot(&table, a->us);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
