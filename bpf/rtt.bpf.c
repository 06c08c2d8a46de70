// SPDX-License-Identifier: GPL-2.0-only
/*
 * TCP round-trip times as log2 histograms in per-CPU maps, one sample per RTT callback of
 * the kernel: a sockops program on the cgroup2 root turns the callback on for each new
 * connection, and iter/task and iter/tcp programs, run once at start, for connections
 * already open.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "rtt.h"
#include "bits.bpf.h"
#include "maps.bpf.h"
#include "native.bpf.h"
#include "sample.bpf.h"

#define AF_INET6 10
#define SOL_TCP 6
/* UAPI (Linux 6.12), spelled out so that this file builds against an older vmlinux.h. */
#define SOCK_OPS_CB_FLAGS 1008

/* Set by user space before load. */
const volatile __u32 label_mask;
/* The stride of a CPU's slice of tcp_rtt_native, RTT_NATIVE_STRIDE (rtt.h); 0: native off. */
const volatile __u32 native_stride;
/* The table's schema, a constant here so that the search has only the steps it takes. */
const volatile __u32 native_schema;

/*
 * Default labels: the histograms by family (and the netns overflow), a plain index into this
 * CPU's slice of a by-CPU array (maps.bpf.h): per sample, one cache line of the kernel's direct
 * map and no pointer to load first.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to possible CPUs */
	__type(key, __u32);
	__type(value, __u64[RTT_STRIDE]);
} tcp_rtt_by_family SEC(".maps");

/* netns label: sum per histogram; an entry here is a histogram, bounded by max_series. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* resized to max_series */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rtt_key);
	__type(value, __u64);
} tcp_rtt SEC(".maps");

/* netns label: bucket counters, room for every bucket of max_series histograms. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* resized to max_series * RTT_NR_BUCKETS */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rtt_key);
	__type(value, __u64);
} tcp_rtt_buckets SEC(".maps");

/*
 * Native buckets with default labels (and the netns overflow): a by-CPU array as
 * tcp_rtt_by_family, whose slice (native_stride u64, set before load with max_entries) holds
 * each histogram's slots, RTT_NATIVE_SLOT (rtt.h). No BTF value type: its size is the schema's.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to possible CPUs */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u64)); /* resized to native_stride u64 */
} tcp_rtt_native SEC(".maps");

/* netns label: native slot counters, room for every slot of max_series histograms. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* resized to max_series * slots */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rtt_native_key);
	__type(value, __u64);
} tcp_rtt_nslots SEC(".maps");

/*
 * The native buckets' edges for the configured schema (bpf/native.h), written by user space
 * after load and before attach. A plain array of one element is one kmalloc in the kernel's
 * huge-page direct map, where read-only data (memory-mapped, vmalloc) would cost TLB misses on
 * this rarely run path (docs/cost.md).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_RDONLY_PROG);
	__type(key, __u32);
	__type(value, struct native_table);
} rtt_native_edges SEC(".maps");

struct rtt_existing existing;

/* Bucket i holds samples in (2^(RTT_MIN_SHIFT + i - 1), 2^(RTT_MIN_SHIFT + i)] us. */
static __always_inline __u32 rtt_bucket(__u32 us)
{
	__u32 b;

	if (us <= 1u << RTT_MIN_SHIFT)
		return 0;
	b = log2_u32(us - 1) + 1 - RTT_MIN_SHIFT;
	return b < RTT_NR_BUCKETS - 1 ? b : RTT_NR_BUCKETS - 1;
}

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

/* The native slot of us and the slots per histogram (0, 0 without the table). */
static __always_inline __u32 native_of(__u32 us, __u32 *slots)
{
	__u32 zero = 0;
	const struct native_table *t = bpf_map_lookup_elem(&rtt_native_edges, &zero);

	if (!t) {
		*slots = 0;
		return 0;
	}
	*slots = t->slots;
	return native_slot(t, native_schema, us);
}

/* Count a native slot in this CPU's slice of tcp_rtt_native. */
static __always_inline void native_add(__u32 hist, __u32 slots, __u32 slot)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 *slice = bpf_map_lookup_elem(&tcp_rtt_native, &cpu);

	slice_add(slice, RTT_NATIVE_SLOT(hist, slots, slot), 1, native_stride);
}

/* One sample into the histogram of (netns, kind, family); netns is 0 without the label. */
static __always_inline void record(const __u32 labels, __u32 netns, __u8 family, __u8 kind,
				   __u32 us)
{
	__u64 *slice = cpu_slice_of(&tcp_rtt_by_family);
	__u32 bucket = rtt_bucket(us), slot = 0, slots = 0;
	__u64 *sum, *count, *native = NULL;

	/* native_stride is a constant to the verifier: without native buckets, no code here. */
	if (native_stride)
		slot = native_of(us, &slots);
	if (!(labels & RTT_LABEL_NETNS)) {
		slice_add(slice, RTT_COUNT(RTT_HIST(0, kind, family), bucket), 1, RTT_STRIDE);
		slice_add(slice, RTT_SUM(RTT_HIST(0, kind, family), bucket), us, RTT_STRIDE);
		if (native_stride)
			native_add(RTT_HIST(0, kind, family), slots, slot);
		return;
	}

	struct rtt_key key = { .netns = netns, .family = family, .kind = kind };
	struct rtt_native_key nkey = {
		.netns = netns, .family = family, .kind = kind, .slot = slot
	};

	sum = hash_lookup_or_init(&tcp_rtt, &key);
	if (sum) {
		key.bucket = bucket;
		/*
		 * Count only once every counter of the sample is in (classic bucket, native slot,
		 * sum): a histogram stays consistent, and what has no room is overflow whole.
		 */
		count = hash_lookup_or_init(&tcp_rtt_buckets, &key);
		if (native_stride)
			native = hash_lookup_or_init(&tcp_rtt_nslots, &nkey);
		if (count && (native || !native_stride)) {
			*count += 1;
			if (native)
				*native += 1;
			*sum += us;
			return;
		}
	}
	/* The hash is full: the overflow histograms' counts are the overflow count. */
	slice_add(slice, RTT_COUNT(RTT_HIST(1, kind, family), bucket), 1, RTT_STRIDE);
	slice_add(slice, RTT_SUM(RTT_HIST(1, kind, family), bucket), us, RTT_STRIDE);
	if (native_stride)
		native_add(RTT_HIST(1, kind, family), slots, slot);
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
