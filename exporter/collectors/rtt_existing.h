/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_RTT_EXISTING_H
#define NETSTACK_RTT_EXISTING_H

#include <stdbool.h>

struct rtt_bpf;

/*
 * Turn RTT callbacks on for the connections open before the sockops program was attached, in
 * every network namespace we can enter (skel loaded with its iterators, attached), then unload
 * the iterators. Whether every such connection is now measured; logged. *covered_once (kept by
 * the caller across restarts, or NULL) becomes true once a pass covered every connection: from
 * then on they are measured for good, their callbacks outliving the program.
 */
bool rtt_cover_existing(struct rtt_bpf *skel, bool *covered_once);

#endif
