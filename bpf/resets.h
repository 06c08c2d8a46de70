/* SPDX-License-Identifier: GPL-2.0-only */
/* Types shared by bpf/resets.bpf.c and exporter/collectors/resets.c. */
#ifndef NETSTACK_RESETS_H
#define NETSTACK_RESETS_H

#include "cpu_array.h"

/* A TCP reset goes out over IPv4 or IPv6 (an IPv6 socket with a v4-mapped peer: IPv4). */
enum reset_family { RS_IPV4, RS_IPV6, RS_NR_FAMILIES };

/*
 * TCP states are below 16 (TCP_MAX_STATES is 14 on 6.18); the programs clamp anything else to
 * 15. No TCP state is 0 (TCP_ESTABLISHED is 1): state 0 is a reset sent without a socket.
 */
#define RS_NR_STATES 16
#define RS_STATE_NONE 0

/*
 * enum sk_rst_reason has 25 values on 6.18; larger ones are clamped to the last slot, which
 * user space then renders as "__other__" (it knows the kernel's largest reason from BTF).
 */
#define RS_NR_REASONS 32
/* The reason of a sampled event where there is none: a received reset, or a kernel before 6.10. */
#define RS_REASON_NONE 0xffffffffu

/* Optional labels; those not set in label_mask stay zero in the key. */
#define RS_LABEL_NETNS (1u << 0)

/*
 * The slot table's slots (bpf/cpu_array.h), one u64 counter each: the overflow count, received resets by (family, state), then sent
 * resets by (family, reason, state).
 */
#define RS_OVERFLOW 0 /* events the hash had no room for */
#define RS_RECEIVED(family, state) (1 + (family)*RS_NR_STATES + (state))
#define RS_SENT_BASE RS_RECEIVED(RS_NR_FAMILIES, 0)
#define RS_SENT(family, reason, state)                                                             \
	(RS_SENT_BASE + ((family)*RS_NR_REASONS + (reason)) * RS_NR_STATES + (state))
#define RS_NR_SLOTS RS_SENT(RS_NR_FAMILIES, 0, 0)
/* Each CPU's slice of the by-CPU array tcp_resets (bpf/maps.bpf.h). */
#define RS_STRIDE CPU_STRIDE(RS_NR_SLOTS)

/* Direction of a sampled reset. */
enum reset_dir { RS_DIR_SENT, RS_DIR_RECEIVED };

#endif
