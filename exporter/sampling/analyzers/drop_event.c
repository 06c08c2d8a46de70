// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sampled drops: where (function+0xoff from kallsyms, loaded once), why (the reason's name from
 * the running kernel, and for the common reasons a one-line explanation and a hint, looked up
 * by name: numbers differ between kernels), on which interface, the top locations, and the
 * latest event of each drop series as the exemplar of its counter.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sampling/analyzers/analyzer.h"
#include "drops.h"
#include "kernel/kernel.h"
#include "base/log.h"

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

/* A sampled drop's own fields, in its record's detail. */
struct drop_detail {
	const char *explanation; /* the reason, one line, or NULL */
	const char *hint;
	char function[96];		  /* function+0xoff, or KSYM_UNKNOWN */
	char ifname[3 * EV_IFNAMSIZ + 1]; /* valid UTF-8, as the drops collector's label */
};
_Static_assert(sizeof(struct drop_detail) <= EVENT_DETAIL_SIZE, "raise EVENT_DETAIL_SIZE");

static struct drop_detail *dd(struct event_rec *r)
{
	return (struct drop_detail *)r->detail;
}

static const struct drop_detail *cdd(const struct event_rec *r)
{
	return (const struct drop_detail *)r->detail;
}
struct drop_state {
	/* main's, read-only, outliving the state; NULL: numbers and KSYM_UNKNOWN */
	const struct reason_table *reasons;
	const struct ksyms *ksyms;
	ino_t own_netns;
	struct topk locations;
	struct exemplars exemplars;
};

static int drop_init(const struct kernel *k, void **state)
{
	struct drop_state *s = calloc(1, sizeof(*s));
	struct stat st;
	int err;

	if (!s)
		return -ENOMEM;
	exemplars_init(&s->exemplars);
	if (k) {
		s->reasons = k->reasons_err ? NULL : &k->reasons;
		s->ksyms = kernel_ksyms(k, &err);
		if (err)
			log_warn("sampling: cannot read /proc/kallsyms (%s; addresses need "
				 "CAP_SYSLOG): drop functions will be \"" KSYM_UNKNOWN "\"",
				 strerror(-err));
	}
	if (!stat("/proc/self/ns/net", &st))
		s->own_netns = st.st_ino;
	*state = s;
	return 0;
}

static bool same_series(const struct event_rec *a, const struct event_rec *b)
{
	const struct drop_detail *da = cdd(a), *db = cdd(b);
	size_t fa = strcspn(da->function, "+"), fb = strcspn(db->function, "+");

	return a->ev.drop.reason == b->ev.drop.reason && a->ev.flow.family == b->ev.flow.family &&
	       a->ev.flow.proto == b->ev.flow.proto && a->ev.netns == b->ev.netns &&
	       !strcmp(da->ifname, db->ifname) && fa == fb &&
	       !memcmp(da->function, db->function, fa);
}

static void drop_entry(void *state, struct event_rec *r)
{
	struct drop_state *s = state;
	const struct event *ev = &r->ev;
	struct drop_detail *d = dd(r);
	const struct ksym *sym = s->ksyms ? ksyms_find(s->ksyms, ev->drop.location) : NULL;
	struct {
		uint64_t location;
		uint32_t reason;
	} key = { ev->drop.location, ev->drop.reason };
	char buf[32], ifbuf[EV_IFNAMSIZ + 1];

	if (s->reasons) {
		const char *name = reason_name(s->reasons, ev->drop.reason, buf, sizeof(buf));

		/* Only names with a lifetime: a number is rendered from the event itself. */
		r->reason = name == buf ? NULL : name;
	}
	for (size_t i = 0; r->reason && i < sizeof(notes) / sizeof(notes[0]); i++)
		if (!strcmp(notes[i].reason, r->reason)) {
			d->explanation = notes[i].explanation;
			d->hint = notes[i].hint;
		}
	/* Symbol-relative or nothing: a raw address would tell where the kernel is (KASLR). */
	if (sym)
		snprintf(d->function, sizeof(d->function), "%s+0x%" PRIx64, sym->name,
			 (uint64_t)(ev->drop.location - sym->addr));
	else
		snprintf(d->function, sizeof(d->function), KSYM_UNKNOWN);
	/* The kernel copies the device's name; without a device, our own netns can tell. */
	memcpy(ifbuf, ev->drop.ifname, EV_IFNAMSIZ);
	ifbuf[EV_IFNAMSIZ] = 0;
	_Static_assert(EV_IFNAMSIZ >= IF_NAMESIZE, "if_indextoname writes IF_NAMESIZE bytes");
	if (!ifbuf[0] && ev->ifindex && ev->netns == s->own_netns &&
	    !if_indextoname(ev->ifindex, ifbuf))
		ifbuf[0] = 0;
	label_text(d->ifname, sizeof(d->ifname), ifbuf);
	topk_add(&s->locations, &key, sizeof(key), r, 1);
	exemplars_remember(&s->exemplars, r, same_series);
}

static void drop_event_json(struct mbuf *m, const struct event_rec *r)
{
	const struct drop_detail *d = cdd(r);
	char flags[40], buf[32];

	tcp_flag_names(flags, r->ev.flow.tcp_flags);
	mbuf_printf(m, ",\"tcp_flags\":\"%s\",\"len\":%u", flags, r->ev.drop.len);
	json_str(m, "interface", d->ifname);
	if (r->reason) {
		json_str(m, "reason", r->reason);
	} else {
		snprintf(buf, sizeof(buf), "%u", r->ev.drop.reason);
		json_str(m, "reason", buf);
	}
	json_str(m, "function", d->function);
	if (d->explanation) {
		json_str(m, "explanation", d->explanation);
		json_str(m, "hint", d->hint);
	}
}

static void drop_event_html(struct mbuf *m, const struct event_rec *r)
{
	const struct drop_detail *d = cdd(r);
	if (r->reason)
		escape_html(m, r->reason);
	else
		mbuf_printf(m, "%u", r->ev.drop.reason);
	mbuf_puts(m, " at ");
	escape_html(m, d->function);
	if (d->ifname[0]) {
		mbuf_puts(m, " on ");
		escape_html(m, d->ifname);
	}
}

static void drop_json(void *state, struct mbuf *m, double now)
{
	const struct drop_state *s = state;
	struct topk_item top[TOPK_K];
	size_t n = topk_top(s ? &s->locations : NULL, now, false, top);

	mbuf_puts(m, "[");
	for (size_t i = 0; i < n; i++) {
		const struct event_rec *r = &top[i].e->last;
		const struct drop_detail *d = cdd(r);
		char num[16];

		snprintf(num, sizeof(num), "%u", r->ev.drop.reason);
		mbuf_printf(m, "%s{\"drops\":%llu,\"reason\":\"", i ? "," : "",
			    (unsigned long long)top[i].count);
		escape_json(m, r->reason ? r->reason : num);
		mbuf_puts(m, "\",\"function\":\"");
		escape_json(m, d->function);
		mbuf_puts(m, "\"");
		if (d->explanation) {
			mbuf_puts(m, ",\"explanation\":\"");
			escape_json(m, d->explanation);
			mbuf_puts(m, "\",\"hint\":\"");
			escape_json(m, d->hint);
			mbuf_puts(m, "\"");
		}
		mbuf_puts(m, "}");
	}
	mbuf_puts(m, "]");
}

static void drop_html(void *state, struct mbuf *m, double now)
{
	const struct drop_state *s = state;
	struct topk_item top[TOPK_K];
	size_t n = topk_top(s ? &s->locations : NULL, now, false, top);

	mbuf_puts(m, "<h2>Top drop locations</h2>\n");
	if (!n) {
		mbuf_puts(m, "<p class=\"empty\">No drops sampled in the last minute.</p>\n");
		return;
	}
	mbuf_puts(m, "<table class=\"top-drops\">\n<tr><th>drops</th><th>reason</th>"
		     "<th>function</th><th>explanation</th><th>hint</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct event_rec *r = &top[i].e->last;
		const struct drop_detail *d = cdd(r);
		char num[16];

		snprintf(num, sizeof(num), "%u", r->ev.drop.reason);
		mbuf_printf(m, "<tr><td>%llu</td><td>", (unsigned long long)top[i].count);
		escape_html(m, r->reason ? r->reason : num);
		mbuf_puts(m, "</td><td>");
		escape_html(m, d->function);
		mbuf_puts(m, "</td><td>");
		escape_html(m, d->explanation ? d->explanation : "");
		mbuf_puts(m, "</td><td>");
		escape_html(m, d->hint ? d->hint : "");
		mbuf_puts(m, "</td></tr>\n");
	}
	mbuf_puts(m, "</table>\n");
}

static void drop_fini(void *state)
{
	struct drop_state *s = state;

	topk_free(&s->locations);
	exemplars_free(&s->exemplars);
	free(s);
}

/* Whether a sampled drop is of the series q (struct drop_series) the collector renders. */
static bool drop_matches(const struct event_rec *x, const void *series)
{
	/* The event's flow family (bpf/events.h) of each family: 0 for what is not IP. */
	static const uint8_t fam[NR_FAMILIES] = { 4, 6, 0, 0 };
	const struct drop_series *q = series;
	const struct drop_detail *dx = cdd(x);
	size_t fl = strcspn(dx->function, "+");

	if (x->ev.drop.reason != q->reason || x->ev.flow.family != fam[q->family] ||
	    drop_proto(x->ev.flow.proto) != q->proto)
		return false;
	return !(q->netns && x->ev.netns != q->netns) &&
	       !(q->ifname && strcmp(q->ifname, dx->ifname)) &&
	       !(q->function &&
		 (strlen(q->function) != fl || memcmp(q->function, dx->function, fl)));
}

static bool drop_exemplar(void *state, const void *series, struct labels *l, char *buf, size_t len,
			  double *time)
{
	const struct drop_series *q = series;

	if (q->family >= NR_FAMILIES || q->proto >= NR_PROTOS)
		return false;
	return exemplars_find(&((struct drop_state *)state)->exemplars, drop_matches, q, l, buf,
			      len, time);
}

const struct event_desc drop_events = {
	.name = "drop",
	.init = drop_init,
	.entry = drop_entry,
	.json = drop_event_json,
	.html = drop_event_html,
	.top_json = drop_json,
	.top_html = drop_html,
	.exemplar = drop_exemplar,
	.fini = drop_fini,
};
