/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The part of a collector's start that every collector shares, in libbpf-bootstrap's order:
 * open the skeleton, make its own choices (programs, map sizes, read-only data, sampling),
 * then collector_load, attach (collector_attach, or by hand what libbpf cannot attach on its
 * own), stop with the skeleton's destroy.
 */
#ifndef NETSTACK_BPFLOAD_H
#define NETSTACK_BPFLOAD_H

#include <bpf/libbpf.h>
#include <stdbool.h>

#include "collectors/collector.h"
#include "kernel/bpfobj.h"
#include "sampling/events.h"

/*
 * Reuse or replace the collector's pins ([bpf] pin_path), load, and give back the pages of the
 * object embedded in the binary. 0 or -errno; logged unless quiet (the caller tries another
 * way), with perm_hint (or NULL) appended to an EPERM or EACCES that RLIMIT_MEMLOCK does not
 * explain.
 */
int collector_load(const struct collector_env *env, const struct bpf_object_skeleton *s,
		   const char *collector, const char *perm_hint, bool quiet);
/*
 * Attach every program loaded to target (a phrase for the log; NULL: the caller attached them
 * itself), pin the links, and read the object's sampled-event counters from now on (see
 * events_loaded). 0 or -errno, logged.
 */
int collector_attach(const struct collector_env *env, const struct bpf_object_skeleton *s,
		     const char *collector, const char *target, enum event_type type);

#endif
