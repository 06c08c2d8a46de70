/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sampled events: the record bpf/sample.bpf.h writes into the shared ring buffer and
 * exporter/sampling/decode.c checks and decodes. Fixed size; type and size lead every record so
 * that a reader can reject what it does not know (a newer layout gets a new size).
 */
#ifndef NETSTACK_SAMPLE_H
#define NETSTACK_SAMPLE_H

enum event_type { EV_NONE, EV_DROP, EV_RETRANS, EV_RTT, EV_RESET, EV_NR_TYPES };

/* Per type, in the events_stats per-CPU array of each program object. */
enum event_stat { EV_STAT_SAMPLED, EV_STAT_LOST, EV_STAT_RATELIMITED, EV_NR_STATS };

#define EV_IFNAMSIZ 16

/* Addresses in network byte order (IPv4 in the first 4 bytes), ports in host byte order. */
struct event_flow {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u8 family; /* 4, 6, or 0 when the packet was neither */
	__u8 proto;  /* IPPROTO_* */
	__u8 tcp_flags;
	__u8 pad;
};

struct event {
	__u16 type; /* enum event_type */
	__u16 size; /* sizeof(struct event): the layout's version */
	__u32 cpu;
	__u64 ts_ns; /* CLOCK_MONOTONIC */
	__u32 netns; /* inode of the network namespace, 0 unknown */
	__u32 ifindex;
	struct event_flow flow;
	union {
		struct {
			__u64 location;
			__u32 reason;
			__u32 len; /* skb->len */
			char ifname[EV_IFNAMSIZ];
		} drop;
		struct {
			__u32 srtt_us;
			__u32 cwnd;
			__u8 state;
			__u8 kind; /* enum retrans_kind */
			__u8 pad[6];
		} retrans;
		struct {
			__u32 rtt_us;
			__u32 srtt_us;
		} rtt;
		struct {
			__u32 reason; /* enum sk_rst_reason, RS_REASON_NONE without one */
			__u8 state;   /* TCP state, RS_STATE_NONE without a socket */
			__u8 dir;     /* enum reset_dir */
			__u8 family;  /* enum reset_family, as the counters have it */
			__u8 pad[9];
		} reset;
	};
};

/*
 * Per program object, set by user space before load (read-only data: with rate 0 the verifier
 * removes the sampling code). gap_mod: the events skipped after a sample are uniform in
 * [0, gap_mod) = [0, 2 * rate - 2], rate - 1 on average; interval_ns: 1 s / max_events_per_second, 0 for no cap; burst_ns: the
 * per-CPU bucket's depth as time (burst * interval_ns); wakeup_bytes: wake the reader only
 * once this much is waiting (it also reads every 100 ms), sparing a wakeup per event.
 */
struct sample_config {
	__u32 rate;
	__u32 gap_mod;
	__u64 interval_ns;
	__u64 burst_ns;
	__u32 min_rtt_us;
	__u32 wakeup_bytes;
};

#endif
