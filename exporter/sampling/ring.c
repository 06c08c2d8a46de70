// SPDX-License-Identifier: GPL-2.0-only
/* The ring buffer and its consumer thread (see ring.h). */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "sampling/decode.h"
#include "sampling/ring.h"

struct event_ring {
	int fd;
	struct ring_buffer *rb;
	pthread_t thread;
	bool running; /* atomic: the consumer polls it */
	struct ring_handler h;
	bool logged_bad;
};

static double clock_seconds(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct event_ring *ring_new(void)
{
	struct event_ring *r = calloc(1, sizeof(*r));

	if (r)
		r->fd = -1;
	return r;
}

int ring_fd(struct event_ring *r, unsigned bytes)
{
	if (r->fd >= 0)
		return r->fd;
	r->fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "events", 0, 0, bytes, NULL);
	if (r->fd < 0) {
		int err = -errno;

		log_error("sampling: cannot create a %u-byte ring buffer: %s", bytes,
			  strerror(-err));
		return err;
	}
	return r->fd;
}

bool ring_made(const struct event_ring *r)
{
	return r->fd >= 0;
}

void ring_close(struct event_ring *r)
{
	ring_buffer__free(r->rb);
	r->rb = NULL;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

void ring_free(struct event_ring *r)
{
	if (!r)
		return;
	ring_stop(r);
	ring_close(r);
	free(r);
}

bool ring_running(const struct event_ring *r)
{
	return __atomic_load_n(&r->running, __ATOMIC_ACQUIRE);
}

void ring_stop(struct event_ring *r)
{
	if (__atomic_exchange_n(&r->running, false, __ATOMIC_ACQ_REL))
		pthread_join(r->thread, NULL);
}

static int handle_event(void *ctx, void *data, size_t len)
{
	struct event_ring *r = ctx;
	struct event ev;

	if (event_decode(data, len, &ev)) {
		log_once(r->logged_bad, LOG_WARN, "sampling: ignoring a malformed %zu-byte event",
			 len);
		return 0;
	}
	/* Monotonic to wall clock, at the time of reading (events are at most a poll old). */
	r->h.on_event(r->h.ctx, &ev,
		      clock_seconds(CLOCK_REALTIME) - clock_seconds(CLOCK_MONOTONIC) +
			      ev.ts_ns / 1e9);
	return 0;
}

static void *consume(void *arg)
{
	struct event_ring *r = arg;

	while (__atomic_load_n(&r->running, __ATOMIC_ACQUIRE)) {
		/* Woken for a backlog, else every 100 ms: the kernel spares per-event wakeups. */
		int n = ring_buffer__poll(r->rb, 100);

		if (n >= 0)
			n = ring_buffer__consume(r->rb);

		if (n < 0 && n != -EINTR) {
			log_error("sampling: reading the ring buffer failed: %s", strerror(-n));
			break;
		}
		r->h.on_poll(r->h.ctx);
	}
	return NULL;
}

int ring_start(struct event_ring *r, const struct ring_handler *h)
{
	int err;

	if (r->fd < 0 || ring_running(r))
		return 0;
	r->h = *h;
	if (!r->rb)
		r->rb = ring_buffer__new(r->fd, handle_event, r, NULL);
	if (!r->rb) {
		err = -errno;
		log_error("sampling: cannot read the ring buffer: %s", strerror(-err));
		return err;
	}
	__atomic_store_n(&r->running, true, __ATOMIC_RELEASE);
	err = pthread_create(&r->thread, NULL, consume, r);
	if (err) {
		__atomic_store_n(&r->running, false, __ATOMIC_RELEASE);
		ring_buffer__free(r->rb);
		r->rb = NULL;
		log_error("sampling: cannot start the consumer thread: %s", strerror(err));
		return -err;
	}
	return 0;
}
