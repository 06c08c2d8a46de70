/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The table the pod resolver (pods.c) publishes and the render-time fold (podfold.c) reads: who
 * owns each network namespace (podsnap.c).
 */
#ifndef NETSTACK_PODSNAP_H
#define NETSTACK_PODSNAP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Who owns one network namespace; strings are never NULL ("" when unknown). */
struct pod_attr {
	uint32_t netns;
	bool expired; /* gone longer than the grace period */
	const char *namespace, *pod, *container, *process;
};

/* An immutable table the resolver publishes; scrapes hold a reference while they render. */
struct pods_snapshot {
	int refs; /* under its slot's mu */
	size_t n;
	struct pod_attr *v; /* sorted by netns; strings owned */
};

/* Where the latest snapshot is published. */
struct podsnap {
	pthread_mutex_t mu;
	struct pods_snapshot *current;
};

void podsnap_init(struct podsnap *p);
/* A reference to the latest snapshot (NULL: none yet), to give back with podsnap_put. */
struct pods_snapshot *podsnap_get(struct podsnap *p);
void podsnap_put(struct podsnap *p, struct pods_snapshot *s);
/* Publish s (one reference, the slot's) in place of the latest; NULL forgets it. */
void podsnap_publish(struct podsnap *p, struct pods_snapshot *s);
/* Free a snapshot never published. */
void podsnap_free(struct pods_snapshot *s);
/* NULL when the namespace is unknown (not seen by the resolver, or s is NULL). */
const struct pod_attr *podsnap_find(const struct pods_snapshot *s, uint32_t netns);

#endif
