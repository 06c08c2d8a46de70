/* SPDX-License-Identifier: GPL-2.0-only */
/* The exporter's own system call allow-list, and why a BPF call the capabilities allow fails. */
#ifndef NETSTACK_CONFINE_H
#define NETSTACK_CONFINE_H

#include <stddef.h>

/*
 * Confine every thread of the process to the calls the exporter makes once started (serving,
 * scrapes, reloads that restart collectors, the pod source, exit). Anything else fails with
 * EPERM and is logged by the kernel; a call of another ABI (x32, i386 on x86_64) kills the
 * process. Sets no_new_privs. 0 or -errno (logged).
 */
int confine_self(void);

/* The Seccomp: line of /proc/self/status: 0 none, 1 strict, 2 filter; -1 unknown. */
int confine_mode(void);

/*
 * For an EPERM from bpf() or perf_event_open() while the capabilities that allow them are
 * held: why (a seccomp filter or an LSM) and what to change, in buf. "" otherwise.
 */
const char *confine_denied_hint(int err, char *buf, size_t len);

#endif
