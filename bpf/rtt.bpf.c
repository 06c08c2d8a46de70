// SPDX-License-Identifier: GPL-2.0-only
/*
 * TCP round-trip times as cell histograms (bpf/hist.h) in per-CPU maps, one sample per RTT callback of
 * the kernel: a sockops program on the cgroup2 root turns the callback on for each new
 * connection, and iter/task and iter/tcp programs, run once at start, for connections
 * already open.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "rtt.h"
#include "hist.bpf.h"
#include "sample.bpf.h"

#define AF_INET6 10
#define SOL_TCP 6
/* UAPI (Linux 6.12), spelled out so that this file builds against an older vmlinux.h. */
#define SOCK_OPS_CB_FLAGS 1008

/* Set by user space before load. */
const volatile __u32 label_mask;
/* The stride of a CPU's slice of tcp_rtt_by_family, RTT_STRIDE (rtt.h) of the histograms in use. */
const volatile __u32 hist_stride;

/*
 * Default labels: the histograms by family (and the netns overflow), cells at a plain index into
 * this CPU's slice of a by-CPU array (maps.bpf.h): per sample, the cell's line and the sum's, and
 * no pointer to load first. No BTF value type: its size is the histograms' in use.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to possible CPUs */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u64)); /* resized to hist_stride u64 */
} tcp_rtt_by_family SEC(".maps");

/* netns label: sum per histogram; an entry here is a histogram, bounded by max_series. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* resized to max_series */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rtt_key);
	__type(value, __u64);
} tcp_rtt SEC(".maps");

/* netns label: cell counters, room for RTT_NETNS_CELLS cells of each of max_series histograms. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* resized to max_series * RTT_NETNS_CELLS */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rtt_key);
	__type(value, __u64);
} tcp_rtt_cells SEC(".maps");

struct rtt_existing existing;

static __always_inline __u8 rtt_family(struct bpf_sock_ops *skops)
{
	if (skops->family != AF_INET6)
		return RTT_IPV4;
	/* A dual-stack socket talking to an IPv4 peer (::ffff:a.b.c.d) sends IPv4 packets. */
	if (!skops->remote_ip6[0] && !skops->remote_ip6[1] &&
	    skops->remote_ip6[2] == bpf_htonl(0xffff))
		return RTT_IPV4;
	return RTT_IPV6;
}

/* One sample into the histogram of (netns, kind, family); netns is 0 without the label. */
static __always_inline void record(const __u32 labels, __u32 netns, __u8 family, __u8 kind,
				   __u32 us)
{
	__u64 *slice = cpu_slice_of(&tcp_rtt_by_family), *sum, *count;

	if (!(labels & RTT_LABEL_NETNS)) {
		hist_add(slice, RTT_HIST(0, kind, family) * HIST_SIZE, us, hist_stride);
		return;
	}

	struct rtt_key key = { .netns = netns, .family = family, .kind = kind };

	sum = hash_lookup_or_init(&tcp_rtt, &key);
	if (sum) {
		key.cell = hist_cell(us);
		/* The sample goes whole where its cell has room: the sum only with the count. */
		count = hash_lookup_or_init(&tcp_rtt_cells, &key);
		if (count) {
			*count += 1;
			*sum += us;
			return;
		}
	}
	/* The hashes are full: the overflow histograms' counts are the overflow count. */
	hist_add(slice, RTT_HIST(1, kind, family) * HIST_SIZE, us, hist_stride);
}

/* labels is a constant in each program, so the default one has no label code at all. */
static __always_inline int handle(struct bpf_sock_ops *skops, const __u32 labels)
{
	__u32 netns = 0, mrtt, srtt;
	__u8 family;

	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		/* Keep the callbacks other sockops programs turned on. */
		bpf_sock_ops_cb_flags_set(skops,
					  skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG);
		return 1;
	case BPF_SOCK_OPS_RTT_CB:
		break;
	default:
		return 1;
	}
	/*
	 * Linux 6.10+ passes the measured RTT in us and the updated srtt in us << 3 (0 only
	 * when the first measurement is 0 us). Before, both are 0: the srtt before this
	 * update is the closest there is, and there is no sample.
	 */
	mrtt = skops->args[0];
	srtt = skops->args[1];
	family = rtt_family(skops);
	if (labels & RTT_LABEL_NETNS)
		netns = skops_netns(skops);
	record(labels, netns, family, RTT_KIND_SRTT, (srtt ? srtt : skops->srtt_us) >> 3);
	sample_rtt(skops);
	if ((labels & RTT_LABEL_KIND) && srtt)
		record(labels, netns, family, RTT_KIND_SAMPLE, mrtt);
	return 1;
}

/* User space loads exactly one of these two: without optional labels, or with them. */
SEC("sockops")
int tcp_rtt_sockops(struct bpf_sock_ops *skops)
{
	return handle(skops, 0);
}

SEC("sockops")
int tcp_rtt_sockops_labels(struct bpf_sock_ops *skops)
{
	return handle(skops, label_mask);
}

/*
 * Run once at start: sockets established before tcp_rtt_sockops was attached never see an
 * ESTABLISHED callback, so turn the RTT callback on here (Linux 6.12+ for the option).
 */
SEC("iter/tcp")
int tcp_rtt_existing(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct tcp_sock *tp;
	int flags;

	if (!skc)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc); /* NULL for request and time-wait sockets */
	if (!tp)
		return 0;
	/* No RTT in these states; a connecting socket gets ACTIVE_ESTABLISHED later. */
	if (skc->skc_state == TCP_LISTEN || skc->skc_state == TCP_SYN_SENT ||
	    skc->skc_state == TCP_CLOSE)
		return 0;
	flags = tp->bpf_sock_ops_cb_flags;
	if (flags & BPF_SOCK_OPS_RTT_CB_FLAG) {
		existing.already++;
		return 0;
	}
	flags |= BPF_SOCK_OPS_RTT_CB_FLAG;
	if (bpf_setsockopt(tp, SOL_TCP, SOCK_OPS_CB_FLAGS, &flags, sizeof(flags)))
		existing.failed++;
	else
		existing.enabled++;
	return 0;
}

/*
 * Run once at start, before tcp_rtt_existing: the network namespace of every task, so user
 * space knows which namespaces it could not enter (/proc it may not read, for one).
 */
SEC("iter/task")
int tcp_rtt_netns(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct nsproxy *ns;
	__u32 inum;

	if (!task)
		return 0;
	ns = task->nsproxy; /* NULL once the task is exiting */
	if (!ns)
		return 0;
	inum = ns->net_ns->ns.inum;
	bpf_seq_write(ctx->meta->seq, &inum, sizeof(inum));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
