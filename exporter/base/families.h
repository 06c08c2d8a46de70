/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The names other modules read a collector's families by (the status page, through
 * scrape_read): each defined once, here, and used both by the collector that writes the family
 * and by its readers, so a rename changes them together. One header for all of them rather
 * than one per collector: collectors have no header of their own (a collector is one .c file
 * and a registry row), and the reader includes one file. The names are a contract beyond the
 * code too (docs/, deploy/, dashboards, the golden test).
 */
#ifndef NETSTACK_FAMILIES_H
#define NETSTACK_FAMILIES_H

#define DROPS_COLLECTOR "drops"
#define DROPS_FAMILY "netstack_skb_drops_total"

#define RESETS_COLLECTOR "resets"
#define RESETS_SENT_FAMILY "netstack_tcp_resets_sent_total"

#define RETRANS_COLLECTOR "retrans"
#define RETRANSMITS_FAMILY "netstack_tcp_retransmits_total"

#define RTT_COLLECTOR "rtt"
#define RTT_FAMILY "netstack_tcp_rtt_seconds"

#define CONNECTIONS_COLLECTOR "connections"
#define HANDSHAKE_FAMILY "netstack_tcp_handshake_seconds"

#endif
