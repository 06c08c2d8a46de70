/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The node's processes by network namespace and cgroup v2, from the kernel (bpf/tasks.bpf.c):
 * what pod attribution needs without /proc, hence without CAP_SYS_PTRACE or the host's PID
 * namespace. CAP_BPF and CAP_PERFMON load it; reading needs nothing more.
 */
#ifndef NETSTACK_TASKWALK_H
#define NETSTACK_TASKWALK_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "tasks.h"

struct tasks;
/* What a walk reports: one (netns, cgroup) pair. */
typedef void tasks_fn(const struct tasks_key *k, const struct tasks_val *v, void *arg);

/*
 * Load and attach the iterator; NULL with errno set (the reason logged once by the caller).
 * chunked: the walk for kernels without bpf_loop (before 5.17), in tail-called chunks.
 */
struct tasks *tasks_open(bool chunked);
void tasks_close(struct tasks *t);

/*
 * One walk of every process on the node: *sum holds the walk's summary, then fn is called once
 * per (netns, cgroup) pair. 0, or -errno when the walk could not run (fn not called).
 */
int tasks_walk(struct tasks *t, tasks_fn *fn, void *arg, struct tasks_summary *sum);

#endif
