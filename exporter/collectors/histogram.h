/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Histograms counted in cells in the kernel (bpf/hist.h): what a family's histograms share (their
 * classic bounds, their native schema and where each cell goes), the configuration key of the
 * schema, the histograms a scrape gathers by (overflow, netns, histogram) from a collector's
 * maps, and their rendering, every bucket and the count derived from the same cells.
 */
#ifndef NETSTACK_HISTOGRAM_H
#define NETSTACK_HISTOGRAM_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "metrics.h"

/* native_schema = off: classic buckets only. */
#define HIST_NATIVE_OFF (-1)
#define HIST_SCHEMA_MIN 0
#define HIST_SCHEMA_DEFAULT 3
#define HIST_MAX_BOUNDS 32
/* Native buckets at schema 3 between the first cell's and the last's: 8 an octave and one. */
#define HIST_MAX_NATIVE (HIST_OCTAVES * 8 + 1)

struct hist_layout {
	int nbounds;			/* classic bounds, +Inf apart */
	double bounds[HIST_MAX_BOUNDS]; /* in seconds */
	int schema;			/* native buckets' schema, or HIST_NATIVE_OFF */
	int32_t offset;			/* index of the first native bucket at schema */
	unsigned nnative;		/* native buckets, the zero bucket apart */
	uint8_t classic[HIST_CELLS];	/* each cell's classic bucket (nbounds: +Inf) */
	int16_t native[HIST_CELLS];	/* each cell's native bucket - offset; -1: zero bucket */
};

/*
 * bounds_us: the classic upper bounds in microseconds, ascending, each at a cell boundary (a
 * power of two or a native edge); schema from HIST_SCHEMA_MIN to HIST_SCHEMA or off. 0 or
 * -EINVAL.
 */
int hist_layout_init(struct hist_layout *l, const uint32_t *bounds_us, int nbounds, int schema);
/* The cell of us: what bpf/hist.bpf.h computes, in plain C (the tests hold the kernel to it). */
unsigned hist_cell_of(uint32_t us);
/*
 * The buckets of the HIST_SIZE counters at h: classic[nbounds + 1] (not cumulative), and with
 * native buckets native[nnative] and *zero. Returns the count, which each of them adds up to.
 */
uint64_t hist_resolve(const struct hist_layout *l, const uint64_t *h, uint64_t *classic,
		      uint64_t *native, uint64_t *zero);
/* One histogram from its HIST_SIZE counters, classic and (when on) native buckets. */
void hist_render(struct expo *e, const struct labels *lab, const struct hist_layout *l,
		 const uint64_t *h);
/*
 * One histogram as a scrape gathers it: hist, the collector's index of its labels but netns; its
 * HIST_SIZE counters (bpf/hist.h), which the collector adds its maps' values into.
 */
struct hist_series {
	uint32_t hist;
	uint32_t netns;
	bool overflow; /* netns unknown: the collector's netns map was full */
	uint64_t c[HIST_SIZE];
};

/* The labels of the collector's histogram hist, netns apart; collector: hist_family_render's. */
typedef void (*hist_labels_fn)(const void *collector, struct labels *l, uint32_t hist);

/*
 * A family's histograms: their layout, and the histograms of the last scrape (reused, grown as
 * needed). A collector fills them from its maps and renders them, sorted by (overflow, netns,
 * hist).
 */
struct hist_family {
	struct hist_layout layout;
	hist_labels_fn labels;
	int netns_at; /* the netns label's place among the labels; -1: no netns label */
	struct hist_series *v;
	size_t n, cap;
	bool sorted; /* v[0, n) is in render order: hist_family_find may search it */
};

/* The layout (as hist_layout_init) and the labels of a family: 0 or -EINVAL. */
int hist_family_init(struct hist_family *f, const uint32_t *bounds_us, int nbounds, int schema,
		     hist_labels_fn labels, int netns_at);
/* Forget the last scrape's histograms. */
void hist_family_clear(struct hist_family *f);
/*
 * The counters of histogram (overflow, netns, hist): one added since the last of another
 * (overflow, netns) when it is that one (what comes grouped by netns adds up), else a new one at
 * zero. NULL: no memory.
 */
uint64_t *hist_family_add(struct hist_family *f, bool overflow, uint32_t netns, uint32_t hist);
/*
 * Where a slot table's slot counts in a family: its histogram and counter (a cell, or HIST_SUM);
 * false: the slot is none of the family's.
 */
typedef bool (*hist_slot_fn)(uint32_t slot, uint32_t *hist, unsigned *counter);
/* A slot table's rows (kernel/bpfmap.h; reordered here) into their histograms: 0 or -ENOMEM. */
struct slot_row;
int hist_family_add_rows(struct hist_family *f, struct slot_row *rows, size_t n,
			 hist_slot_fn where);
/* The counters of histogram (overflow, netns, hist) if added since the clear, else NULL. */
uint64_t *hist_family_find(struct hist_family *f, bool overflow, uint32_t netns, uint32_t hist);
/* Every histogram added since the clear, in order of (overflow, netns, hist). */
void hist_family_render(struct hist_family *f, struct expo *e, const void *collector);
void hist_family_free(struct hist_family *f);
/* The observations in a histogram's HIST_SIZE counters: its cells' sum. */
uint64_t hist_count(const uint64_t *h);

/* "off" or a schema from HIST_SCHEMA_MIN to HIST_SCHEMA; 0, or -EINVAL with err set. */
int hist_parse_schema(const char *value, int *schema, char *err, size_t errlen);

#endif
