// SPDX-License-Identifier: GPL-2.0-only
/* The consumer thread: reads the ring buffer, decodes and stores each event, writes stdout. */
#define _GNU_SOURCE /* memrchr */
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "sampling/events_impl.h"

void events_consumer_stop(struct events *evs)
{
	if (__atomic_exchange_n(&evs->running, false, __ATOMIC_ACQ_REL))
		pthread_join(evs->thread, NULL);
}

/*
 * What stdout takes without blocking, in whole lines of at most PIPE_BUF bytes: a pipe with room
 * (POLLOUT) takes such a write at once and whole, never interleaved with the log on stderr. The
 * rest waits for the next flush. Consumer thread, no lock held: a reader that stalls stalls
 * nobody, neither scrapes nor a reload waiting for this thread.
 */
static void flush_stdout(struct events *evs)
{
	struct mbuf *m = &evs->line;
	size_t off = 0;

	while (off < m->len) {
		struct pollfd p = { .fd = STDOUT_FILENO, .events = POLLOUT };
		size_t n = m->len - off < PIPE_BUF ? m->len - off : PIPE_BUF;
		const char *nl = memrchr(m->data + off, '\n', n);
		ssize_t w;

		if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
			break;
		w = write(STDOUT_FILENO, m->data + off,
			  nl ? (size_t)(nl + 1 - (m->data + off)) : n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			log_once(evs->logged_write, LOG_WARN,
				 "sampling: cannot write events to stdout: %s", strerror(errno));
			break;
		}
		off += (size_t)w;
	}
	if (m->oom) {
		mbuf_reset(m);
	} else if (off) {
		memmove(m->data, m->data + off, m->len - off + 1); /* with its NUL */
		m->len -= off;
	}
}

static int handle_event(void *ctx, void *data, size_t len)
{
	struct events *evs = ctx;
	struct event ev;

	if (event_decode(data, len, &ev)) {
		log_once(evs->logged_bad, LOG_WARN, "sampling: ignoring a malformed %zu-byte event",
			 len);
		return 0;
	}
	/* Monotonic to wall clock, at the time of reading (events are at most a poll old). */
	events_add(evs, &ev,
		   clock_seconds(CLOCK_REALTIME) - clock_seconds(CLOCK_MONOTONIC) + ev.ts_ns / 1e9);
	if (evs->line.len >= STDOUT_PENDING_MAX / 4) /* a long backlog: write as it comes */
		flush_stdout(evs);
	return 0;
}

static void *consume(void *arg)
{
	struct events *evs = arg;
	time_t last = 0;

	while (__atomic_load_n(&evs->running, __ATOMIC_ACQUIRE)) {
		/* Woken for a backlog, else every 100 ms: the kernel spares per-event wakeups. */
		int n = ring_buffer__poll(evs->rb, 100);

		if (n >= 0)
			n = ring_buffer__consume(evs->rb);

		if (n < 0 && n != -EINTR) {
			log_error("sampling: reading the ring buffer failed: %s", strerror(-n));
			break;
		}
		flush_stdout(evs); /* nothing to write unless [sampling] stdout is on */
		if (time(NULL) != last) {
			last = time(NULL);
			events_check_losses(evs);
		}
	}
	return NULL;
}

int events_start(struct events *evs, const struct kernel *k)
{
	int err;

	if (evs->ring_fd < 0 || __atomic_load_n(&evs->running, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&evs->lock);
	err = events_analyzers_init(evs, k);
	pthread_mutex_unlock(&evs->lock);
	if (err)
		return err;
	if (!evs->rb)
		evs->rb = ring_buffer__new(evs->ring_fd, handle_event, evs, NULL);
	if (!evs->rb) {
		err = -errno;
		log_error("sampling: cannot read the ring buffer: %s", strerror(-err));
		return err;
	}
	__atomic_store_n(&evs->running, true, __ATOMIC_RELEASE);
	err = pthread_create(&evs->thread, NULL, consume, evs);
	if (err) {
		__atomic_store_n(&evs->running, false, __ATOMIC_RELEASE);
		ring_buffer__free(evs->rb);
		evs->rb = NULL;
		log_error("sampling: cannot start the consumer thread: %s", strerror(err));
		return -err;
	}
	log_info("sampling: reading events (ring buffer %u bytes, keeping the last %u)",
		 evs->cfg.ring_bytes, evs->cfg.max_events);
	return 0;
}
