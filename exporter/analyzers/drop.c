// SPDX-License-Identifier: GPL-2.0-only
/*
 * Drops: where (function+0xoff from kallsyms, loaded once), why (the reason's name from the
 * running kernel, and for the common reasons a one-line explanation and a hint, looked up by
 * name: numbers differ between kernels), on which interface, and the top locations.
 */
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyzer.h"
#include "kernel.h"
#include "log.h"

static const struct {
	const char *reason, *explanation, *hint;
} notes[] = {
	{ "NOT_SPECIFIED", "the kernel freed the packet without saying why",
	  "look at the function: it names the code path" },
	{ "NO_SOCKET", "no socket was listening on the destination port",
	  "check the service is up and bound to that address and port" },
	{ "NETFILTER_DROP", "a netfilter rule (nftables, iptables) dropped it",
	  "list the rules matching this flow: nft list ruleset" },
	{ "SOCKET_FILTER", "a socket filter (SO_ATTACH_FILTER, BPF) refused it",
	  "check programs attached to the receiving socket" },
	{ "PKT_TOO_SMALL", "the packet was shorter than its headers claim",
	  "a truncated or malformed packet: check the sender or the path MTU" },
	{ "TCP_CSUM", "bad TCP checksum", "corruption on the path or broken checksum offload" },
	{ "UDP_CSUM", "bad UDP checksum", "corruption on the path or broken checksum offload" },
	{ "SOCKET_RCVBUFF", "the socket's receive buffer was full",
	  "the application reads too slowly; raise SO_RCVBUF or net.core.rmem_max" },
	{ "PROTO_MEM", "the protocol's memory limit was reached",
	  "raise net.ipv4.tcp_mem / udp_mem or find the socket hoarding memory" },
	{ "OTHERHOST", "the packet was addressed to another host (wrong MAC)",
	  "promiscuous mode or a bridge/veth misconfiguration" },
	{ "IP_NOPROTO", "no handler for the IP protocol number",
	  "a protocol not enabled on this host (e.g. SCTP module not loaded)" },
	{ "IP_RPFILTER", "reverse path filter: the source is not routed back via this interface",
	  "asymmetric routing: check net.ipv4.conf.*.rp_filter" },
	{ "IP_INADDRERRORS", "invalid destination address (martian or broadcast)",
	  "check the addressing of the sender" },
	{ "IP_NOROUTE", "no route to the destination", "check ip route in that netns" },
	{ "IP_OUTNOROUTES", "no route for an outgoing packet", "check ip route in that netns" },
	{ "NEIGH_FAILED", "the neighbour (ARP/ND) could not be resolved",
	  "the next hop does not answer ARP/ND: check the link and the address" },
	{ "NEIGH_QUEUEFULL", "too many packets waited for neighbour resolution",
	  "the next hop is slow to answer ARP/ND; check gc_thresh and unres_qlen" },
	{ "QDISC_DROP", "the queueing discipline dropped it (queue full or policing)",
	  "the link is saturated: check tc -s qdisc" },
	{ "TC_INGRESS", "a tc ingress action dropped it", "check tc filter show ... ingress" },
	{ "TC_EGRESS", "a tc egress action dropped it", "check tc filter show ... egress" },
	{ "TCP_INVALID_SEQUENCE", "the TCP segment was outside the receive window",
	  "old duplicates or a middlebox rewriting sequence numbers" },
	{ "TCP_RESET", "the segment reset the connection", "the peer sent RST" },
	{ "TCP_OLD_DATA", "the segment carried data already received",
	  "spurious retransmissions by the peer" },
	{ "TCP_ZEROWINDOW", "the receive window was zero",
	  "the receiving application does not read fast enough" },
	{ "TCP_LISTEN_OVERFLOW", "the listen queue was full",
	  "raise the listen backlog and net.core.somaxconn, or accept faster" },
	{ "SOCKET_BACKLOG", "the socket backlog was full while the socket was busy",
	  "the application holds the socket lock too long; raise the receive buffer" },
	{ "FULL_RING", "the device's ring was full", "raise the ring size (ethtool -G)" },
	{ "NOMEM", "memory allocation failed", "the host is short of memory" },
	{ "XDP", "an XDP program dropped it", "check ip link show for attached XDP programs" },
	{ "UNICAST_IN_L2_MULTICAST", "a unicast IP packet in a link-layer multicast frame",
	  "a misbehaving sender or switch" },
};

/* Owned by main, shared: set here before the consumer starts, never freed here. */
static const struct reason_table *reasons;
static const struct ksyms *ksyms;
static ino_t own_netns;
static struct topk locations;

static int drop_init(struct kernel *k)
{
	struct stat st;
	int err;

	reasons = k->reasons_err ? NULL : &k->reasons;
	if (!ksyms) {
		ksyms = kernel_ksyms(k, &err);
		if (err)
			log_warn(
				"sampling: cannot read /proc/kallsyms (%s; addresses need "
				"CAP_SYSLOG): drop functions will be \"__unknown__\"",
				strerror(-err));
	}
	if (!stat("/proc/self/ns/net", &st))
		own_netns = st.st_ino;
	return 0;
}

static void drop_entry(struct event_rec *r)
{
	const struct event *ev = &r->ev;
	const struct ksym *sym = ksyms ? ksyms_find(ksyms, ev->drop.location) : NULL;
	struct {
		uint64_t location;
		uint32_t reason;
	} key = { ev->drop.location, ev->drop.reason };
	char buf[32], ifbuf[EV_IFNAMSIZ + 1];

	if (reasons) {
		const char *name = reason_name(reasons, ev->drop.reason, buf, sizeof(buf));

		/* Only names with a lifetime: a number is rendered from the event itself. */
		r->reason = name == buf ? NULL : name;
	}
	for (size_t i = 0; r->reason && i < sizeof(notes) / sizeof(notes[0]); i++)
		if (!strcmp(notes[i].reason, r->reason)) {
			r->explanation = notes[i].explanation;
			r->hint = notes[i].hint;
		}
	/* Symbol-relative or nothing: a raw address would tell where the kernel is (KASLR). */
	if (sym)
		snprintf(r->function, sizeof(r->function), "%s+0x%" PRIx64, sym->name,
			 (uint64_t)(ev->drop.location - sym->addr));
	else
		snprintf(r->function, sizeof(r->function), "__unknown__");
	/* The kernel copies the device's name; without a device, our own netns can tell. */
	memcpy(ifbuf, ev->drop.ifname, EV_IFNAMSIZ);
	ifbuf[EV_IFNAMSIZ] = 0;
	_Static_assert(EV_IFNAMSIZ >= IF_NAMESIZE, "if_indextoname writes IF_NAMESIZE bytes");
	if (!ifbuf[0] && ev->ifindex && ev->netns == own_netns &&
	    !if_indextoname(ev->ifindex, ifbuf))
		ifbuf[0] = 0;
	utf8_copy(r->ifname, sizeof(r->ifname), ifbuf);
	topk_add(&locations, &key, sizeof(key), r, 1);
}

static void drop_json(struct mbuf *m, double now)
{
	struct topk_item top[TOPK_K];
	size_t n = topk_top(&locations, now, false, top);

	mbuf_puts(m, "[");
	for (size_t i = 0; i < n; i++) {
		const struct event_rec *r = &top[i].e->last;
		char num[16];

		snprintf(num, sizeof(num), "%u", r->ev.drop.reason);
		mbuf_printf(m, "%s{\"drops\":%llu,\"reason\":\"", i ? "," : "",
			    (unsigned long long)top[i].count);
		escape_json(m, r->reason ? r->reason : num);
		mbuf_puts(m, "\",\"function\":\"");
		escape_json(m, r->function);
		mbuf_puts(m, "\"");
		if (r->explanation) {
			mbuf_puts(m, ",\"explanation\":\"");
			escape_json(m, r->explanation);
			mbuf_puts(m, "\",\"hint\":\"");
			escape_json(m, r->hint);
			mbuf_puts(m, "\"");
		}
		mbuf_puts(m, "}");
	}
	mbuf_puts(m, "]");
}

static void drop_html(struct mbuf *m, double now)
{
	struct topk_item top[TOPK_K];
	size_t n = topk_top(&locations, now, false, top);

	mbuf_puts(m, "<h2>Top drop locations</h2>\n<table class=\"top-drops\">\n<tr><th>drops</th>"
		     "<th>reason</th><th>function</th><th>explanation</th><th>hint</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct event_rec *r = &top[i].e->last;
		char num[16];

		snprintf(num, sizeof(num), "%u", r->ev.drop.reason);
		mbuf_printf(m, "<tr><td>%llu</td><td>", (unsigned long long)top[i].count);
		escape_html(m, r->reason ? r->reason : num);
		mbuf_puts(m, "</td><td>");
		escape_html(m, r->function);
		mbuf_puts(m, "</td><td>");
		escape_html(m, r->explanation ? r->explanation : "");
		mbuf_puts(m, "</td><td>");
		escape_html(m, r->hint ? r->hint : "");
		mbuf_puts(m, "</td></tr>\n");
	}
	mbuf_puts(m, "</table>\n");
}

static void drop_reset(void)
{
	topk_free(&locations);
	reasons = NULL;
	ksyms = NULL;
}

const struct analyzer drop_analyzer = {
	.name = "drop",
	.init = drop_init,
	.entry = { [EV_DROP] = drop_entry },
	.top_json = drop_json,
	.top_html = drop_html,
	.reset = drop_reset,
};
