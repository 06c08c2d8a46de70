// SPDX-License-Identifier: GPL-2.0-only
/* What every event type renders alike: its flow (as JSON, HTML and a top-K key), string members. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "sampling/analyzers/analyzer.h"

void flow_addr(const struct event_flow *f, bool src, char *buf, size_t len)
{
	const void *a = src ? f->saddr : f->daddr;

	buf[0] = 0;
	if (f->family == 4)
		inet_ntop(AF_INET, a, buf, len);
	else if (f->family == 6)
		inet_ntop(AF_INET6, a, buf, len);
}

static const char *proto_name(unsigned p)
{
	switch (p) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmpv6";
	}
	return "other";
}

void flow_json(struct mbuf *m, const struct event *ev)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

	flow_addr(&ev->flow, true, s, sizeof(s));
	flow_addr(&ev->flow, false, d, sizeof(d));
	mbuf_printf(m,
		    ",\"family\":\"%s\",\"protocol\":\"%s\",\"saddr\":\"%s\",\"sport\":%u,"
		    "\"daddr\":\"%s\",\"dport\":%u",
		    ev->flow.family == 4   ? "ipv4"
		    : ev->flow.family == 6 ? "ipv6"
					   : "other",
		    proto_name(ev->flow.proto), s, ev->flow.sport, d, ev->flow.dport);
}

void flow_html(struct mbuf *m, const struct event *ev)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

	flow_addr(&ev->flow, true, s, sizeof(s));
	flow_addr(&ev->flow, false, d, sizeof(d));
	/* Addresses and numbers only: nothing here needs escaping. */
	mbuf_printf(m, "<td>%s</td><td>%u</td><td>%s%s%s:%u</td><td>%s%s%s:%u</td>",
		    proto_name(ev->flow.proto), ev->netns, ev->flow.family == 6 ? "[" : "", s,
		    ev->flow.family == 6 ? "]" : "", ev->flow.sport,
		    ev->flow.family == 6 ? "[" : "", d, ev->flow.family == 6 ? "]" : "",
		    ev->flow.dport);
}

void flow_key(const struct event *ev, unsigned char key[TOPK_KEY])
{
	const struct event_flow *f = &ev->flow;

	memset(key, 0, TOPK_KEY);
	memcpy(key, &ev->netns, 4);
	key[4] = f->family;
	key[5] = f->proto;
	memcpy(key + 6, &f->sport, 2);
	memcpy(key + 8, &f->dport, 2);
	memcpy(key + 10, f->saddr, 16);
	memcpy(key + 26, f->daddr, 16);
}

void tcp_flag_names(char buf[static 40], unsigned f)
{
	static const char *const names[8] = {
		"FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"
	};

	buf[0] = 0;
	for (int i = 0; i < 8; i++)
		if (f & 1u << i) {
			if (buf[0])
				strcat(buf, "|");
			strcat(buf, names[i]);
		}
}

void json_str(struct mbuf *m, const char *name, const char *v)
{
	mbuf_printf(m, ",\"%s\":\"", name);
	escape_json(m, v);
	mbuf_puts(m, "\"");
}
