/* SPDX-License-Identifier: GPL-2.0-only */
/* The pod resolver's clock: monotonic seconds (pod deletions, back-off, the watch's age). */
#ifndef NETSTACK_PODS_MONO_H
#define NETSTACK_PODS_MONO_H

#include <time.h>

static inline double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif
