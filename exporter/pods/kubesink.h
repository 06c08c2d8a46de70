/* SPDX-License-Identifier: GPL-2.0-only */
/* Where the API client's pods go: the calls back into the pod store (podsink.c). */
#ifndef NETSTACK_KUBESINK_H
#define NETSTACK_KUBESINK_H

#include <stdbool.h>

#include "pods/kubedecode.h"

/* What the client calls back into the pod store (podsink.c); arg is the sink's. */
struct kube_sink {
	void *arg;
	void (*pod)(void *arg, const struct pod *p); /* listed, or changed (p->deleted set) */
	void (*listed)(void *arg, unsigned gen);     /* a list completed: others are gone */
	void (*changed)(void *arg);		     /* a watch event changed a pod */
	void (*nap)(void *arg, double seconds);	     /* sleep, cut short by stopping */
	bool (*stopping)(void *arg);
};

#endif
