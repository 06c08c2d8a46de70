// SPDX-License-Identifier: GPL-2.0-only
/*
 * Which processes share which network namespace and cgroup v2, for pod attribution, read from
 * the kernel instead of /proc: no CAP_SYS_PTRACE, no host PID namespace.
 *
 * An iter/task program only visits the tasks of the reader's PID namespace (in a pod: the
 * exporter's own), so its first run walks the kernel's global process list itself, the list
 * for_each_process() follows from init_task, under the RCU read lock the iterator holds. The
 * result goes to a hash map, one entry per (netns, cgroup) pair: a node's thousands of processes
 * fold into as many entries as it has containers and services, and a single run could not write
 * them to the iterator's seq buffer anyway (one object's output is capped at 32 KiB).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "tasks.h"

#define PF_KTHREAD 0x00200000
#define MAX_ANCESTORS 128	 /* real_parent hops from any task up to init_task */
#define MAX_PROCESSES (1u << 22) /* PID_MAX_LIMIT */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* used entries only, emptied after every read */
	__uint(max_entries, TASKS_MAX);
	__type(key, struct tasks_key);
	__type(value, struct tasks_val);
} tasks SEC(".maps");

static const struct tasks_val empty;

/* Before Linux 6.15 a kernfs node's parent was "parent" (then RCU-managed "__parent"). */
struct kernfs_node___old {
	struct kernfs_node *parent;
} __attribute__((preserve_access_index));

static __always_inline struct kernfs_node *kn_parent(struct kernfs_node *kn)
{
	if (bpf_core_field_exists(kn->__parent))
		return BPF_CORE_READ(kn, __parent);
	return BPF_CORE_READ((struct kernfs_node___old *)kn, parent);
}

/* The cgroup's path from the cgroup2 root, its deepest TASKS_DEPTH components. */
static __always_inline void cgroup_path(struct kernfs_node *kn, struct tasks_val *v)
{
	struct kernfs_node *nodes[TASKS_DEPTH], *parent;
	__u32 off = 0;
	int depth = 0;

	for (int i = 0; i < TASKS_DEPTH; i++) {
		parent = kn_parent(kn);
		if (!parent)
			break;
		nodes[depth++] = kn;
		kn = parent;
	}
	if (depth == TASKS_DEPTH && kn_parent(kn))
		v->flags |= TASKS_F_TRUNCATED;
	v->path[0] = '/';
	for (int i = depth - 1; i >= 0 && i < TASKS_DEPTH; i--) {
		long n;

		if (off > TASKS_PATH_LEN - TASKS_NAME_LEN - 1) {
			v->flags |= TASKS_F_TRUNCATED;
			break;
		}
		v->path[off] = '/';
		n = bpf_probe_read_kernel_str(&v->path[off + 1], TASKS_NAME_LEN,
					      BPF_CORE_READ(nodes[i], name));
		if (n <= 0)
			break;
		off += n; /* the next '/' overwrites this name's NUL */
	}
}

struct walk {
	struct list_head *head; /* &init_task.tasks */
	struct list_head *pos;
	struct tasks_summary sum;
};

/* The next process of the walk: 1 when the list is done. */
static __always_inline long visit_one(struct walk *w)
{
	struct list_head *pos = w->pos;
	struct tasks_key key = {};
	struct task_struct *t;
	struct nsproxy *nsp;
	struct kernfs_node *kn;
	struct tasks_val *v;
	__u32 tgid;

	pos = BPF_CORE_READ(pos, next);
	if (!pos || pos == w->head) {
		w->sum.complete = 1;
		return 1;
	}
	w->pos = pos;
	t = (void *)pos - bpf_core_field_offset(struct task_struct, tasks);
	w->sum.processes++;
	nsp = BPF_CORE_READ(t, nsproxy);
	if (!nsp || BPF_CORE_READ(t, flags) & PF_KTHREAD)
		return 0; /* exiting (namespaces released), or a kernel thread: the host's */
	key.netns = BPF_CORE_READ(nsp, net_ns, ns.inum);
	kn = BPF_CORE_READ(t, cgroups, dfl_cgrp, kn);
	key.cgroup = BPF_CORE_READ(kn, id);
	tgid = BPF_CORE_READ(t, tgid);
	v = bpf_map_lookup_elem(&tasks, &key);
	if (v) {
		if (tgid < v->tgid) {
			v->tgid = tgid;
			BPF_CORE_READ_STR_INTO(&v->comm, t, comm);
		}
		return 0;
	}
	if (bpf_map_update_elem(&tasks, &key, &empty, BPF_NOEXIST)) {
		w->sum.dropped++;
		return 0;
	}
	v = bpf_map_lookup_elem(&tasks, &key);
	if (!v)
		return 0;
	v->tgid = tgid;
	BPF_CORE_READ_STR_INTO(&v->comm, t, comm);
	/* Processes in the host's namespace are not attributed to a pod: no path needed. */
	if (key.netns != w->sum.host_netns)
		cgroup_path(kn, v);
	return 0;
}

static long visit(__u32 index, void *ctx)
{
	return visit_one(ctx);
}

/* init_task, every task's ancestor (its own parent), from the first task the iterator shows. */
static __always_inline bool walk_start(struct task_struct *p, struct walk *w)
{
	struct task_struct *parent = NULL;

	for (int i = 0; i < MAX_ANCESTORS; i++) {
		parent = BPF_CORE_READ(p, real_parent);
		if (!parent || parent == p)
			break;
		p = parent;
	}
	if (parent != p)
		return false;
	w->head = &p->tasks;
	w->pos = w->head;
	w->sum.host_netns = BPF_CORE_READ(p, nsproxy, net_ns, ns.inum);
	return true;
}

SEC("iter/task")
int walk_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *p = ctx->task;
	struct walk w = {};

	if (!p || ctx->meta->seq_num)
		return 0;
	if (walk_start(p, &w))
		bpf_loop(MAX_PROCESSES, visit, &w, 0);
	bpf_seq_write(ctx->meta->seq, &w.sum, sizeof(w.sum));
	return 0;
}

/*
 * Kernels without bpf_loop (before 5.17): the same walk in chunks of TASKS_CHUNK processes, a
 * bounded loop each, the program tail-calling itself for the next chunk (up to 33 runs: the
 * kernel's limit of 32 tail calls). All of it within one run of the iterator's program, so under
 * the RCU read lock that keeps the list valid. The walk's state is this CPU's (tail calls stay
 * on it). A list longer than TASKS_CHUNKED_MAX processes ends the walk incomplete.
 */

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} walk_next SEC(".maps"); /* [0]: walk_tasks_chunked itself, set by user space */

struct walk_state {
	struct walk w;
	__u32 started; /* a walk is under way: the next run continues it */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk_state);
} walk_states SEC(".maps");

/*
 * One process of the chunked walk. A global function: the verifier checks it once on its own,
 * where the loop below would have it check the body once per iteration (10 s for 256).
 */
__attribute__((noinline)) int walk_step(void)
{
	__u32 zero = 0;
	struct walk_state *st = bpf_map_lookup_elem(&walk_states, &zero);

	return st ? visit_one(&st->w) : 1;
}

SEC("iter/task")
int walk_tasks_chunked(struct bpf_iter__task *ctx)
{
	struct task_struct *p = ctx->task;
	struct walk_state *st;
	__u32 zero = 0;

	if (!p || ctx->meta->seq_num)
		return 0;
	st = bpf_map_lookup_elem(&walk_states, &zero);
	if (!st)
		return 0;
	if (!st->started) {
		__builtin_memset(&st->w, 0, sizeof(st->w));
		st->started = 1;
		if (!walk_start(p, &st->w))
			goto done;
	}
	for (int i = 0; i < TASKS_CHUNK; i++)
		if (walk_step())
			goto done;
	bpf_tail_call(ctx, &walk_next, 0);
	/* Past the tail call limit: the walk stops short (complete stays 0). */
done:
	st->started = 0;
	bpf_seq_write(ctx->meta->seq, &st->w.sum, sizeof(st->w.sum));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
