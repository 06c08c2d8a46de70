/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The ring buffer every sampling collector's programs write into, and the consumer thread that
 * reads it: each event it decodes goes to on_event, and after each poll (at least every
 * 100 ms) on_poll runs, both on that thread. It knows nothing of what the events become.
 */
#ifndef NETSTACK_SAMPLING_RING_H
#define NETSTACK_SAMPLING_RING_H

#include <stdbool.h>

#include "sampling/record.h"

struct event_ring;

struct ring_handler {
	void (*on_event)(void *ctx, const struct event *ev, double unix_time);
	void (*on_poll)(void *ctx);
	void *ctx;
};

/* NULL with errno set: out of memory. */
struct event_ring *ring_new(void);
/* Stops the thread and closes the ring buffer. */
void ring_free(struct event_ring *r);
/* The ring buffer's fd, made on first use with bytes: fd, or -errno (logged). */
int ring_fd(struct event_ring *r, unsigned bytes);
/* Whether the ring buffer is made (some type is sampled). */
bool ring_made(const struct event_ring *r);
/* The thread stopped: close the ring buffer (the next ring_fd makes a new one). */
void ring_close(struct event_ring *r);
/*
 * Start the consumer thread (a no-op when the ring buffer is not made or the thread runs). 0 or
 * -errno, logged.
 */
int ring_start(struct event_ring *r, const struct ring_handler *h);
bool ring_running(const struct event_ring *r);
/* Stop the consumer thread; the ring buffer stays. */
void ring_stop(struct event_ring *r);

#endif
