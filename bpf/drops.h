/* SPDX-License-Identifier: GPL-2.0-only */
/* Types shared by bpf/drops.bpf.c and exporter/collectors/drops.c. */
#ifndef NETSTACK_DROPS_H
#define NETSTACK_DROPS_H

#include "cpu_array.h"

enum drop_family { FAMILY_IPV4, FAMILY_IPV6, FAMILY_ARP, FAMILY_OTHER, NR_FAMILIES };
enum drop_proto { PROTO_TCP, PROTO_UDP, PROTO_ICMP, PROTO_ICMPV6, PROTO_OTHER, NR_PROTOS };

/*
 * The protocol label of an IP protocol number: what the counters count (bpf/drops.bpf.c) and how
 * a sampled drop is matched to its counter (exporter/sampling/analyzers/drop_event.c). Numbers: the two
 * sides spell IPPROTO_* from different headers.
 */
static __always_inline __u8 drop_proto(__u8 ipproto)
{
	switch (ipproto) {
	case 6: /* IPPROTO_TCP */
		return PROTO_TCP;
	case 17: /* IPPROTO_UDP */
		return PROTO_UDP;
	case 1: /* IPPROTO_ICMP */
		return PROTO_ICMP;
	case 58: /* IPPROTO_ICMPV6 */
		return PROTO_ICMPV6;
	}
	return PROTO_OTHER;
}

/* Optional labels; those not set in label_mask stay zero in the key. */
#define DROP_LABEL_FUNCTION (1u << 0)
#define DROP_LABEL_NETNS (1u << 1)
#define DROP_LABEL_INTERFACE (1u << 2)

#define DROP_IFNAMSIZ 16

/* Key of the skb_drops hash: the label tuple, fixed width, explicitly padded. */
struct drop_key {
	__u64 location;
	__u32 reason;
	__u32 netns;
	char ifname[DROP_IFNAMSIZ];
	__u8 family;
	__u8 proto;
	__u8 pad[6];
};

/*
 * Value of the skb_drops hash: the key's slot in skb_drop_counts and that map's stride per CPU
 * (kept here so the counting path reads no global data).
 */
struct drop_slot {
	__u32 slot;
	__u32 stride;
};

/*
 * The reason count_drop_noreason gives every packet on a kernel without enum skb_drop_reason
 * (before 5.17): the exporter names it NOT_SPECIFIED. 0 is never a drop (the overflow slots).
 */
#define DROP_UNSPECIFIED 1
/* Numbers count_drop_noreason tries to claim before it counts a new label set as overflow. */
#define DROP_CLAIM_TRIES 32

/* Reasons from subsystems (mac80211, openvswitch, ...) carry the subsystem in these high bits. */
#define DROP_REASON_SUBSYS_SHIFT 16

/*
 * Index into the skb_drops_by_reason array (reason, family, protocol). Reason 0 (never a drop)
 * holds the overflow: drops the hash had no room for, whose reason the array does not cover.
 */
#define DROP_INDEX(reason, family, proto) (((reason)*NR_FAMILIES + (family)) * NR_PROTOS + (proto))
/* A CPU's slice of the by-CPU array for reasons below max (bpf/cpu_array.h). */
#define DROP_STRIDE(max) CPU_STRIDE(DROP_INDEX(max, 0, 0))

#endif
