/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A collector is one BPF program file plus one file here plus one row in the registry table
 * (exporter/collectors/registry.c).
 */
#ifndef NETSTACK_COLLECTOR_H
#define NETSTACK_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "metrics.h"

struct bpf_object;
struct kernel;

struct collector {
	const char *name;
	const char *description; /* one line, for the landing page */
	bool default_enabled;
	/* The event type (enum event_type) its BPF programs sample, whose settings they hold. */
	unsigned sampled;
	/* Restore built-in defaults of the collector's own keys. */
	void (*reset)(void);
	/* Apply one config key of [collector.NAME] other than `enabled`; 0 or -1 with err set. */
	int (*set)(const char *key, const char *value, char *err, size_t errlen);
	/*
	 * Probe, open, load and attach; 0 or -1 (the collector logs why). Main thread; k outlives
	 * every collector and its names may be kept until stop.
	 */
	int (*start)(struct kernel *k);
	/* Append this collector's families; 0 or -1. Never called unless start succeeded. */
	int (*collect)(struct expo *e);
	void (*stop)(void);
	/* Loaded BPF object, for per-program stats; NULL when not started. */
	struct bpf_object *(*object)(void);

	/* Run-time state, owned by main.c. */
	bool enabled;
	bool up;
	bool last_success;
	double last_duration;
};

/* NULL-terminated table of every collector. */
extern struct collector *const collectors[];

struct collector *collector_find(const char *name);

#endif
