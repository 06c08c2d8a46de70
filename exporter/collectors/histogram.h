/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Histograms counted in cells in the kernel (bpf/hist.h): what a family's histograms share (their
 * classic bounds, their native schema and where each cell goes), the configuration key of the
 * schema, and the rendering of one histogram's counters, every bucket and the count derived
 * from the same cells.
 */
#ifndef NETSTACK_HISTOGRAM_H
#define NETSTACK_HISTOGRAM_H

#include <linux/types.h>
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
/* "off" or a schema from HIST_SCHEMA_MIN to HIST_SCHEMA; 0, or -EINVAL with err set. */
int hist_parse_schema(const char *value, int *schema, char *err, size_t errlen);

#endif
