/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_PRIVS_H
#define NETSTACK_PRIVS_H

#include <stdbool.h>
#include <stdint.h>

/* What re-attaching programs needs (SIGHUP): BPF, PERFMON, NET_ADMIN (sockops), SYSLOG. */
uint64_t privs_runtime_caps(void);
/* Every capability in caps (bit n = capability n) is in the effective set. */
bool privs_held(uint64_t caps);
/*
 * After start-up: keep only the capabilities in keep (bit n = capability n) in the
 * effective, permitted and bounding sets, none inheritable or ambient, switch to user if
 * non-empty (keeping those capabilities), and set no_new_privs. 0 or -errno (logged).
 */
int privs_drop(uint64_t keep, const char *user);

#endif
