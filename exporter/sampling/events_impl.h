/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the files of sampling/ share: struct events (made by events.c) and the functions each
 * lends the others. Callers outside sampling/ use events.h.
 */
#ifndef NETSTACK_EVENTS_IMPL_H
#define NETSTACK_EVENTS_IMPL_H

#include <pthread.h>
#include <time.h>

#include "sampling/events.h"

struct ring_buffer;

/* JSON lines waiting for stdout: more is lost (counted), not buffered, when nobody reads. */
#define STDOUT_PENDING_MAX ((size_t)256 * 1024)

/* Everything of the sampled events, made by events_new; main.c owns it. */
struct events {
	struct sampling_config cfg;
	int ring_fd;
	/*
	 * Our own duplicates of the collectors' counter maps: a reload closes a collector's fds
	 * while the consumer may be reading, and their numbers may be reused meanwhile. stats_lock
	 * guards them against the swap (scrapes, the consumer, a reload on the main thread).
	 */
	pthread_mutex_t stats_lock;
	int stats_fd[EV_NR_TYPES];
	struct ring_buffer *rb;
	pthread_t thread;
	bool running;	      /* atomic: the consumer polls it */
	bool analyzers_ready; /* initialised once, by the first start (or event) */
	bool logged_lost[EV_NR_TYPES], logged_limited[EV_NR_TYPES], logged_stdout, logged_write,
		logged_bad, logged_slow;
	/* Events stdout did not take; atomic: scrapes add them to netstack_events_lost_total. */
	uint64_t stdout_lost[EV_NR_TYPES];

	/* The store and the event types' state, shared with the HTTP thread. */
	pthread_mutex_t lock;
	/*
	 * Each type's, from its descriptor's init; written under lock, read atomically by scrapes
	 * (exemplars), freed only by events_free, once no scrape runs.
	 */
	void *states[EV_NR_TYPES];
	struct event_rec *store;
	size_t store_head, store_n;
	uint64_t seq;
	struct mbuf line; /* JSON lines for stdout: the consumer thread's, appended under lock */
	double stdout_tat;
	uint64_t stdout_suppressed;
};

/* settings.c: what the BPF side of type reads from c (all zero when the type is not sampled). */
void sampling_config_bpf(const struct sampling_config *c, enum event_type type,
			 struct sample_config *sc);
bool sampling_config_equal(const struct sampling_config *a, const struct sampling_config *b);
/* Whether any type is sampled. */
bool sampling_config_on(const struct sampling_config *c);

/* store.c: keep the newest events that fit in a store of max. Lock held. */
void events_store_resize(struct events *evs, unsigned max);
/*
 * Each type's state, made once; k NULL: without the kernel's names (the fuzzer). Lock held. 0 or
 * -errno, logged.
 */
int events_analyzers_init(struct events *evs, const struct kernel *k);
/*
 * Free every type's state. Lock held (or no other thread left), and no scrape running or
 * starting (their exemplars).
 */
void events_analyzers_fini(struct events *evs);

/* stats.c: log, once each, the first loss and the first refusal of each type. */
void events_check_losses(struct events *evs);

/* consumer.c: stop the consumer thread; the ring buffer, the store and the analyzers stay. */
void events_consumer_stop(struct events *evs);

static inline double clock_seconds(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif
