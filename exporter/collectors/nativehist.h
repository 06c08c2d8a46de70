/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Native histogram buckets counted in the kernel (bpf/native.h): the exact bucket edges, the
 * table a BPF program reads, the configuration key, and the rendering of a histogram's slots.
 */
#ifndef NETSTACK_NATIVEHIST_H
#define NETSTACK_NATIVEHIST_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "native.h"

/* native_schema = off. */
#define NATIVE_OFF (-1)

/* floor(2^(i/2^schema) * 1e6), exactly (checked in integers); UINT64_MAX when out of reach. */
uint64_t native_edge_us(int schema, int i);
/* Fill t for a schema from NATIVE_SCHEMA_MIN to NATIVE_SCHEMA_MAX; 0 or -EINVAL. */
int native_table_init(struct native_table *t, int schema);
/* The slot of us found from the exact edges alone: the reference the kernel's must match. */
unsigned native_slot_ref(const struct native_table *t, uint32_t us);
/* "off" or a schema; 0, or -EINVAL with err set. */
int native_parse_schema(const char *value, int *schema, char *err, size_t errlen);
/* nh for the t->slots counters of one histogram (slot 0 the zero bucket). */
void native_hist_of(struct native_hist *nh, const struct native_table *t, const uint64_t *slots);

#endif
