/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The label sets of the pod fold (podfold.c): owned copies, their hash and order, and the output
 * labels of a sample. Pure: no I/O, no lock.
 */
#ifndef NETSTACK_FOLDLABELS_H
#define NETSTACK_FOLDLABELS_H

#include <stdbool.h>
#include <stdint.h>

#include "metrics.h"

struct pod_attr;

/*
 * A label set the fold owns: the names and values copied into one allocation. Kept as
 * structures end to end, never joined into text: a value may hold any byte but NUL.
 */
struct lset {
	struct labels l;
	char *mem;
};

/* Copy l into s (s->mem NULL or owned, replaced); 0, or -ENOMEM with s unchanged. */
int lset_set(struct lset *s, const struct labels *l);
/* FNV-1a over each name and value with its NUL. */
uint64_t labels_hash(const struct labels *l);
/* Label by label, name then value: the order series are rendered in. */
int labels_cmp(const struct labels *a, const struct labels *b);
/*
 * The output labels of a sample: its labels with netns dropped (unless mask keeps it), then the
 * attribution labels of mask (POD_LABEL_*) from a (NULL: ""). marker, when set, replaces every
 * attribution value. The result points into l, a and marker; false when over LABELS_MAX.
 */
bool fold_out_labels(struct labels *o, const struct labels *l, unsigned mask,
		     const struct pod_attr *a, const char *marker);
/* The same labels with every attribution value replaced by marker (pointing into l). */
void fold_remark(struct labels *o, const struct labels *l, const char *marker);

#endif
