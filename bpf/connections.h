/* SPDX-License-Identifier: GPL-2.0-only */
/* Types shared by bpf/connections.bpf.c and exporter/collectors/connections.c. */
#ifndef NETSTACK_CONNECTIONS_H
#define NETSTACK_CONNECTIONS_H

#include "cpu_array.h"

enum conn_family { CN_IPV4, CN_IPV6, CN_OTHER, CN_NR_FAMILIES };
enum conn_direction { CN_ACTIVE, CN_PASSIVE, CN_NR_DIRECTIONS };
enum conn_outcome {
	CN_ESTABLISHED, /* the handshake completed */
	CN_FAILED,	/* closed before it did */
	CN_RESET,	/* an established connection ended by a reset, received or sent */
	CN_TIMEOUT,	/* ... by a timeout (retransmissions, keepalive, user timeout) */
	CN_CLOSED,	/* ... normally, after FINs both ways */
	CN_NR_OUTCOMES
};

/* Optional labels; those not set in label_mask stay zero in the key. */
#define CN_LABEL_NETNS (1u << 0)

/*
 * The slot table's slots (bpf/cpu_array.h): one per (family, direction, outcome), then the
 * overflow count.
 */
#define CN_SLOT(family, direction, outcome)                                                        \
	(((family)*CN_NR_DIRECTIONS + (direction)) * CN_NR_OUTCOMES + (outcome))
#define CN_OVERFLOW CN_SLOT(CN_NR_FAMILIES, 0, 0) /* events the hash had no room for */
#define CN_NR_SLOTS (CN_OVERFLOW + 1)
/* Each CPU's slice of the by-CPU array tcp_connections (bpf/maps.bpf.h). */
#define CN_STRIDE CPU_STRIDE(CN_NR_SLOTS)

#endif
