/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A collector is one BPF program file plus one file here plus one row in the registry table
 * (exporter/collectors/registry.c). Its file holds only constants: the options it parses live
 * in the configuration (a value), what it loads and reads lives in a state it allocates in start
 * and frees in stop.
 */
#ifndef NETSTACK_COLLECTOR_H
#define NETSTACK_COLLECTOR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "base/parse.h"
#include "base/families.h" /* the names others read families by */

struct bpf_object;
struct kernel;

/* What every collector's start is handed: read-only, shared, outliving every state. */
struct collector_env {
	const struct kernel *kernel; /* names and features of the running kernel */
	const char *pin_root;	     /* [bpf] pin_path (pin.h); "": no pinning */
	struct events *events;	     /* sampled events (events.h): settings, ring buffer, store */
	/*
	 * main's, outliving every restart (NULL: this start only): whether an rtt start-up pass
	 * ever covered every open connection (rtt_existing.c).
	 */
	bool *rtt_covered_once;
};

/* Room for any collector's options (rtt's cgroup path is the largest). */
#define COLLECTOR_OPTS_SIZE (PATH_MAX + 64)
/* The registry's room: each takes COLLECTOR_OPTS_SIZE in a configuration. */
#define MAX_COLLECTORS 8

/*
 * A collector's section of a configuration. A reload compares them byte for byte to tell which
 * collectors to restart: v starts zeroed, and set leaves no stale bytes behind.
 */
struct collector_opts {
	bool enabled;
	_Alignas(max_align_t) unsigned char v[COLLECTOR_OPTS_SIZE]; /* the collector's own */
};

/*
 * The keys every collector has, parsed by collector_set (collectors/registry.c): labels (the
 * required ones always there, each optional one setting its bit in label_mask) and
 * max_series. A collector's options value starts with this.
 */
struct series_opts {
	unsigned label_mask;
	unsigned max_series;
};

struct collector_ops {
	const char *name;
	const char *description; /* one line, for the landing page */
	bool default_enabled;
	/* The event type (enum event_type) its BPF programs sample, whose settings they hold. */
	unsigned sampled;
	/* Labels: NULL-terminated required ones, then n_optional optional ones (bits). */
	const char *const *required_labels;
	const struct label_option *optional_labels;
	size_t n_optional;
	unsigned max_series, max_series_limit; /* default, and largest allowed */
	/* Built-in defaults of the collector's own keys into opts (zeroed before); optional. */
	void (*reset)(void *opts);
	/*
	 * Apply one of the collector's own keys of [collector.NAME] (not enabled, pod_labels,
	 * labels, max_series); 0, -errno with err set, or 1: no such key. Optional.
	 */
	int (*set)(void *opts, const char *key, const char *value, char *err, size_t errlen);
	/*
	 * Probe, open, load and attach with opts (copied, they need not outlive the call): 0 and
	 * *state, or -errno (the collector logs why). Main thread; env (read-only, shared)
	 * outlives every state, which may keep its kernel names until stop.
	 */
	int (*start)(const struct collector_env *env, const void *opts, void **state);
	/*
	 * Append this collector's families; 0 or -errno (the collector logs a failure to read its
	 * maps). Under the scrape lock, on any thread.
	 */
	int (*collect)(void *state, struct expo *e);
	/* Detach and free everything start made. */
	void (*stop)(void *state);
	/* The loaded BPF object, for per-program stats. */
	struct bpf_object *(*object)(void *state);
};

/* NULL-terminated table of every collector (registry order: configurations index it). */
extern const struct collector_ops *const collectors[];

const struct collector_ops *collector_find(const char *name);
/* Its index in collectors[], or -ENOENT. */
int collector_index(const char *name);
/* A collector's built-in configuration into o (zeroed before). */
void collector_defaults(const struct collector_ops *c, struct collector_opts *o);
/*
 * One key of [collector.NAME] but enabled and pod_labels into opts: 0, or -EINVAL with err set
 * (an unknown key too).
 */
int collector_set(const struct collector_ops *c, void *opts, const char *key, const char *value,
		  char *err, size_t errlen);
/* Whether a reload keeps a collector as it runs: same enabled flag and options. */
bool collector_opts_equal(const struct collector_opts *a, const struct collector_opts *b);

/*
 * A collector as the exporter runs it, one per registered collector and a last one with ops
 * NULL. main.c owns the table and changes it under the scrape lock; scrapes read it there.
 */
struct collector {
	const struct collector_ops *ops;
	bool enabled;
	void *state; /* from start to stop; NULL: not running */
	bool last_success;
	double last_duration;
};

/*
 * A collector counting into a slot table (bpfmap.h): its families are rendered in order, family
 * m from the rows whose series (slot_series_fn) >> 16 is m.
 */
struct slot_table;
struct slot_row;
struct slot_family {
	const char *name, *help;
};
struct slot_collector {
	const char *name;  /* the collector's, for log lines */
	const char *map;   /* its netns hash, for netstack_map_overflow_total */
	uint32_t overflow; /* the slot counting what the hash had no room for */
	const struct slot_family *families;
	/* One row, with its labels (state: the collector's). */
	void (*render)(void *state, struct expo *e, const struct slot_row *r);
};

/*
 * The family label: every collector's family enum (bpf/X.h) starts with IPv4 and IPv6; past them,
 * "other" (the drops collector names its ARP itself).
 */
const char *family_label(unsigned family);
/*
 * The netns label: the namespace's inode in buf, or OVERFLOW_LABEL when the map was full. Inline:
 * histogram.c, which tools link alone, calls it too.
 */
static inline void labels_add_netns(struct labels *l, char buf[static 21], bool overflow,
				    uint32_t netns)
{
	labels_add(l, "netns", overflow ? OVERFLOW_LABEL : u64_str(buf, netns));
}

/*
 * Read t (always: as slot_table_read) and render the first n_families families; the hash's
 * overflow is exported and logged once. 0, or -errno (logged).
 */
int slot_collect(const struct slot_collector *c, unsigned n_families, struct slot_table *t,
		 const uint32_t *always, size_t n_always, void *state, struct expo *e);

#endif
