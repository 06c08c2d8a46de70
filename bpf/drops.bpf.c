// SPDX-License-Identifier: GPL-2.0-only
/*
 * Count dropped packets by drop reason, family and protocol (plus optional labels) in per-CPU
 * maps. No per-event output: the exporter reads the maps when it is scraped.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "drops.h"
#include "maps.bpf.h"
#include "sample.bpf.h"

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_ARP 0x0806
#define AF_INET 2
#define AF_INET6 10

/*
 * Linux 6.2+: a cast the verifier turns into a plain fault-tolerant load, where
 * bpf_probe_read_kernel() is a helper call costing more than the rest of the program. Built
 * twice: this object for kernels with the kfunc, and bpf/drops_nokfunc.bpf.c, the same
 * programs with helper reads only and no kfunc extern at all, for the others. A missing weak
 * kfunc would fail the whole object under libbpf 1.1 without CAP_SYS_ADMIN (it then looks for
 * the kfunc in module BTFs, whose listing needs that capability).
 */
#ifndef DROPS_NO_KFUNC
#define DIRECT_READS true
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#else
#define DIRECT_READS false
#define bpf_rdonly_cast(obj, btf_id) ((void *)(obj)) /* compiled out: no direct reads */
#endif

/*
 * SKB_CONSUMED (Linux 6.3) through a local flavour of the enum: CO-RE matches it by name in
 * the running kernel, and this file still builds against an older kernel's vmlinux.h.
 */
enum skb_drop_reason___new {
	SKB_CONSUMED___new = 1, /* the value is the running kernel's */
};

/*
 * Set by user space before load, read only by count_drop_compat. The other programs read no
 * global data per event (max_series and slot_stride below only when a new label tuple takes a
 * slot): .rodata is a vmalloc'ed page, and one more page to reach per event is a TLB miss
 * (under a hypervisor a nested page walk; docs/cost.md, bench/results/). They take the label
 * set as a compile-time constant instead, one program per set, and SKB_CONSUMED from CO-RE.
 */
const volatile __u32 label_mask;

/*
 * Default labels: one counter per (reason, family, protocol), a plain index, so the hot path
 * is an inlined array lookup. A by-CPU array (bpf/maps.bpf.h), one slice of DROP_STRIDE
 * counters per CPU: the lookup is arithmetic, where a per-CPU array first loads the value's
 * pointer, and user space maps it (BPF_F_MMAPABLE) to read it without a system call. Each
 * slice covers reasons [0, SKB_DROP_REASON_MAX); reason 0 (SKB_NOT_DROPPED_YET) is never a
 * drop, so its slots collect what the hash below could not hold and the array does not cover.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* resized to possible CPUs * DROP_STRIDE(SKB_DROP_REASON_MAX) */
	__type(key, __u32);
	__type(value, __u64);
} skb_drops_by_reason SEC(".maps");

/*
 * Optional labels, and reasons past the array (subsystem reasons): each label tuple gets a
 * slot on first sight, bounded by max_series, and is counted in the slot's by-CPU counters.
 * Keys are never deleted, so user space learns a slot's key once (skb_drop_keys) and then
 * reads only the mapped counters: no copy of a hash per scrape.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized to max_series */
	__type(key, struct drop_key);
	__type(value, struct drop_slot);
} skb_drops SEC(".maps");

/* The key of each slot; its reason is written last (0 until then: never a drop). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* resized to max_series */
	__type(key, __u32);
	__type(value, struct drop_key);
} skb_drop_keys SEC(".maps");

/* By-CPU counters of the slots: possible CPUs * slot_stride. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} skb_drop_counts SEC(".maps");

/* [0]: slots handed out so far (at most a few past max_series: those were refused). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} skb_drop_slots SEC(".maps");

/*
 * Each CPU's last label set and its slot, in a line no other CPU writes (bpf/cpu_array.h
 * CPU_ELEM_SIZE): drops come in runs of one label set, and slots are never freed (nothing here
 * or in user space deletes from skb_drops), so a hit skips the hash lookup and is never stale.
 */
struct drop_last {
	struct drop_key key;
	struct drop_slot s;
	__u64 pad[10];
};
_Static_assert(sizeof(struct drop_last) == CPU_ELEM_SIZE &&
		       __builtin_offsetof(struct drop_last, pad) <= CPU_LINE,
	       "a CPU's drop_last shares no line with another's");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to possible CPUs */
	__type(key, __u32);
	__type(value, struct drop_last);
} skb_drop_last SEC(".maps");

/*
 * Kernels without BPF's atomic fetch and exchange (before 5.12) take a slot by claiming its
 * number here, the key as the value (count_drop_noreason): an insert with BPF_NOEXIST is the
 * only compare-and-set they offer. Resized to max_series for that program, else left at 1.
 * User space reads a slot's key from here (one lookup each, when it is new): the kernel links a
 * hash element only once it is whole, so no store order is needed on any CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct drop_key);
} skb_drop_claims SEC(".maps");

/* Set before load; read only when a new label tuple takes a slot. */
const volatile __u32 max_series = 1;
const volatile __u32 slot_stride = CPU_STRIDE(1);

/*
 * One byte of a header: a plain load through bpf_rdonly_cast where direct (a constant in each
 * program, so the other branch is compiled out), else a helper call.
 */
#define HDR_U8(nh, type, field, direct)                                                            \
	({                                                                                         \
		__u8 v_ = 0;                                                                       \
		if (direct)                                                                        \
			v_ = ((struct type *)bpf_rdonly_cast(                                      \
				      nh, bpf_core_type_id_kernel(struct type)))                   \
				     ->field;                                                      \
		else                                                                               \
			bpf_probe_read_kernel(&v_, 1, (nh) + offsetof(struct type, field));        \
		v_;                                                                                \
	})

static __always_inline void classify(struct sk_buff *skb, __u8 *family, __u8 *proto,
				     const bool direct)
{
	unsigned char *nh = skb->head + skb->network_header;

	switch (bpf_ntohs(skb->protocol)) {
	case ETH_P_IP:
		*family = FAMILY_IPV4;
		*proto = drop_proto(HDR_U8(nh, iphdr, protocol, direct));
		return;
	case ETH_P_IPV6:
		*family = FAMILY_IPV6;
		*proto = drop_proto(HDR_U8(nh, ipv6hdr, nexthdr, direct));
		return;
	case ETH_P_ARP:
		*family = FAMILY_ARP;
		*proto = PROTO_OTHER;
		return;
	}
	/* Not yet through the IP output path (skb->protocol unset): ask the socket. */
	struct sock *sk = skb->sk;

	*family = FAMILY_OTHER;
	*proto = PROTO_OTHER;
	if (!sk)
		return;
	if (sk->__sk_common.skc_family == AF_INET)
		*family = FAMILY_IPV4;
	else if (sk->__sk_common.skc_family == AF_INET6)
		*family = FAMILY_IPV6;
	else
		return;
	*proto = drop_proto(sk->sk_protocol);
}

/*
 * SKB_DROP_REASON_MAX: a constant in the program (CO-RE), the same the exporter reads from BTF.
 * A kernel without the enum (before 5.17) has the one reason below.
 */
static __always_inline __u32 reason_max(void)
{
	if (bpf_core_enum_value_exists(enum skb_drop_reason, SKB_DROP_REASON_MAX))
		return bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_MAX);
	return DROP_UNSPECIFIED + 1;
}

/*
 * What count_drop_noreason counts every packet as: the kernel's NOT_SPECIFIED, the reason a
 * plain kfree_skb() has from 5.17 on, where the enum exists; else DROP_UNSPECIFIED, which the
 * exporter names the same (exporter/kernel/kernel.c).
 */
static __always_inline __u32 reason_unspecified(void)
{
	if (bpf_core_enum_value_exists(enum skb_drop_reason, SKB_DROP_REASON_NOT_SPECIFIED))
		return bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_NOT_SPECIFIED);
	return DROP_UNSPECIFIED;
}

/* Add one to this CPU's slot of (reason, family, proto); false when reason is past the array. */
static __always_inline bool array_count(__u32 reason, __u8 family, __u8 proto)
{
	__u32 max = reason_max();
	__u32 idx = cpu_slice(DROP_STRIDE(max)) + DROP_INDEX(reason, family, proto);
	__u64 *v;

	/* Also subsystem reasons (high bits), which would wrap the index around. */
	if (reason >= max)
		return false;
	v = bpf_map_lookup_elem(&skb_drops_by_reason, &idx);
	if (!v)
		return false;
	*v += 1;
	return true;
}

/* A new label tuple's slot; NULL when all max_series slots are taken. */
static __always_inline struct drop_slot *new_slot(const struct drop_key *key)
{
	__u32 zero = 0, slot;
	__u32 *next = bpf_map_lookup_elem(&skb_drop_slots, &zero);
	struct drop_key *k;

	/* Tested first so that a full map does not wind the counter round. */
	if (!next || *next >= max_series)
		return NULL;
	slot = __sync_fetch_and_add(next, 1);
	k = bpf_map_lookup_elem(&skb_drop_keys, &slot);
	if (!k)
		return NULL;
	/*
	 * User space takes a slot whose reason is set as complete (reading it with acquire), so
	 * the reason is published last with release semantics: a sequentially consistent atomic
	 * exchange, which the compiler keeps after the stores above and every JIT emits fully
	 * ordered (a plain store after a compiler barrier may be seen first on arm64). Once per
	 * new series, not per event. tests/integration/drops.sh checks the order in the code the
	 * kernel runs.
	 */
	k->location = key->location;
	k->netns = key->netns;
	__builtin_memcpy(k->ifname, key->ifname, sizeof(k->ifname));
	k->family = key->family;
	k->proto = key->proto;
	__atomic_exchange_n(&k->reason, key->reason, __ATOMIC_SEQ_CST);

	struct drop_slot v = { .slot = slot, .stride = slot_stride };

	/* EEXIST: another CPU gave the key a slot first; ours stays at 0, its key a duplicate. */
	bpf_map_update_elem(&skb_drops, key, &v, BPF_NOEXIST);
	return bpf_map_lookup_elem(&skb_drops, key);
}

static __always_inline bool same_key(const struct drop_key *a, const struct drop_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3] && x[4] == y[4];
}

/*
 * new_slot for kernels without atomic fetch or exchange (before 5.12): the first free number
 * from the hint on, claimed in skb_drop_claims (numbers are only ever claimed in order, so the
 * claimed ones are always 0 to n - 1), then the hint counted up with a plain atomic add (BPF_XADD,
 * which every kernel has). Gives up after DROP_CLAIM_TRIES numbers others took meanwhile.
 */
static __always_inline struct drop_slot *claim_slot(const struct drop_key *key)
{
	__u32 zero = 0, slot;
	__u32 *next = bpf_map_lookup_elem(&skb_drop_slots, &zero);

	if (!next)
		return NULL;
	slot = *(volatile __u32 *)next;
	for (int i = 0; i < DROP_CLAIM_TRIES; i++, slot++) {
		if (slot >= max_series)
			return NULL;
		if (!bpf_map_update_elem(&skb_drop_claims, &slot, key, BPF_NOEXIST)) {
			struct drop_slot v = { .slot = slot, .stride = slot_stride };

			__sync_fetch_and_add(next, 1); /* result unused: BPF_XADD */
			/* EEXIST: another CPU gave the key a slot first; ours stays at 0. */
			bpf_map_update_elem(&skb_drops, key, &v, BPF_NOEXIST);
			return bpf_map_lookup_elem(&skb_drops, key);
		}
	}
	return NULL;
}

/* Add one to key's counter on this CPU; false when it has no slot and none is left. */
static __always_inline bool slot_count(const struct drop_key *key, const bool atomics)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct drop_last *last = bpf_map_lookup_elem(&skb_drop_last, &cpu);
	struct drop_slot *s;

	if (!last)
		return false;
	if (!same_key(&last->key, key)) {
		s = bpf_map_lookup_elem(&skb_drops, key);
		if (!s)
			s = atomics ? new_slot(key) : claim_slot(key);
		if (!s)
			return false;
		last->key = *key;
		last->s = *s;
	}
	array_add(&skb_drop_counts, cpu * last->s.stride + last->s.slot, 1);
	return true;
}

/*
 * labels: a constant in every program but count_drop_compat and count_drop_noreason, so unused
 * label code is gone. atomics: false in count_drop_noreason only (kernels before 5.12 have no
 * BPF_FETCH nor BPF_XCHG), whose reason is always NOT_SPECIFIED.
 */
static __always_inline int count(struct sk_buff *skb, void *location, __u32 reason,
				 const __u32 labels, const bool direct, const bool sampled,
				 const bool atomics)
{
	__u8 family, proto;

	if (atomics &&
	    (reason == SKB_NOT_DROPPED_YET ||
	     (bpf_core_enum_value_exists(enum skb_drop_reason___new, SKB_CONSUMED___new) &&
	      reason == bpf_core_enum_value(enum skb_drop_reason___new, SKB_CONSUMED___new))))
		return 0;
	if (sampled)
		sample_drop_event(skb, location, reason);
	classify(skb, &family, &proto, direct);

	if (!labels && array_count(reason, family, proto))
		return 0;

	struct drop_key key = { .reason = reason, .family = family, .proto = proto };
	struct net_device *dev = skb->dev;
	struct sock *sk;

	if (labels & DROP_LABEL_FUNCTION)
		key.location = (__u64)location;
	if (labels & DROP_LABEL_NETNS) {
		if (dev)
			key.netns = dev->nd_net.net->ns.inum;
		else if ((sk = skb->sk)) /* read once: each read may be NULL to the verifier */
			key.netns = sk->__sk_common.skc_net.net->ns.inum;
	}
	if ((labels & DROP_LABEL_INTERFACE) && dev)
		__builtin_memcpy(key.ifname, dev->name, sizeof(key.ifname));

	if (slot_count(&key, atomics))
		return 0;
	/*
	 * Map full: keep the reason in the array so sums by reason stay exact. The array then
	 * counts only such drops (with labels) or holds them in reason 0 (without): user space
	 * reads the overflow count from there.
	 */
	if (!array_count(reason, family, proto))
		array_count(0, family, proto);
	return 0;
}

/*
 * User space loads exactly one of these: count_drop_compat (from drops_nokfunc) where the
 * kernel lacks bpf_rdonly_cast (or direct_read = false), else the one for the configured labels
 * (f: function, n: netns, i: interface), sample_drop* when drop sampling is on. Labels and
 * sampling are compile-time constants here, so the counting programs read no global data: the
 * sampling rate lives in .rodata, and even a pruned test of it leaves its load behind.
 */
#define DROP_PROG(name, labels, sampled)                                                           \
	SEC("tp_btf/kfree_skb")                                                                    \
	int BPF_PROG(name, struct sk_buff *skb, void *location, enum skb_drop_reason reason)       \
	{                                                                                          \
		return count(skb, location, reason, labels, DIRECT_READS, sampled, true);          \
	}
#define DROP_PROGS(suffix, labels)                                                                 \
	DROP_PROG(count_drop##suffix, labels, false)                                               \
	DROP_PROG(sample_drop##suffix, labels, true)

DROP_PROGS(, 0)
DROP_PROGS(_f, DROP_LABEL_FUNCTION)
DROP_PROGS(_n, DROP_LABEL_NETNS)
DROP_PROGS(_fn, DROP_LABEL_FUNCTION | DROP_LABEL_NETNS)
DROP_PROGS(_i, DROP_LABEL_INTERFACE)
DROP_PROGS(_fi, DROP_LABEL_FUNCTION | DROP_LABEL_INTERFACE)
DROP_PROGS(_ni, DROP_LABEL_NETNS | DROP_LABEL_INTERFACE)
DROP_PROGS(_fni, DROP_LABEL_FUNCTION | DROP_LABEL_NETNS | DROP_LABEL_INTERFACE)

SEC("tp_btf/kfree_skb")
int BPF_PROG(count_drop_compat, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	/* Sampling off is rate 0 in .rodata: the verifier then removes the sampling code. */
	return count(skb, location, reason, label_mask, false, sample_cfg.rate, true);
}

/*
 * Kernels whose kfree_skb tracepoint has no reason (before 5.17; the exporter asks BTF how many
 * arguments it has): every packet freed through kfree_skb() counts, as NOT_SPECIFIED, by where
 * it was freed (the function label). Like count_drop_compat otherwise, but with no atomic fetch
 * or exchange (5.12+) and no CO-RE name the kernel may lack outside a test of its existence.
 */
SEC("tp_btf/kfree_skb")
int BPF_PROG(count_drop_noreason, struct sk_buff *skb, void *location)
{
	return count(skb, location, reason_unspecified(), label_mask, false, sample_cfg.rate,
		     false);
}

char LICENSE[] SEC("license") = "GPL";
