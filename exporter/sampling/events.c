// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sampled events: the facade that composes the ring buffer and its thread (ring.c), the store
 * (store.c), the stdout writer (stdout.c) and the counters (stats.c), and a reload.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "kernel/bpfmap.h"
#include "sampling/events.h"
#include "sampling/ring.h"
#include "sampling/stats.h"
#include "sampling/stdout.h"
#include "sampling/store.h"

struct events {
	/* Written by a reload (main thread) while the consumer thread is stopped, which reads it. */
	struct sampling_config cfg;
	struct event_ring *ring;
	struct event_store *store;
	struct stdout_writer *out;
	struct event_stats *stats;
};

struct events *events_new(const struct sampling_config *c)
{
	struct events *evs = calloc(1, sizeof(*evs));

	if (!evs)
		return NULL;
	evs->cfg = *c;
	evs->ring = ring_new();
	evs->store = store_new(c->max_events);
	evs->out = stdout_writer_new(c->stdout_per_second);
	evs->stats = stats_new();
	if (!evs->ring || !evs->store || !evs->out || !evs->stats) {
		events_free(evs);
		errno = ENOMEM;
		return NULL;
	}
	return evs;
}

void events_free(struct events *evs)
{
	if (!evs)
		return;
	ring_free(evs->ring); /* first: its thread writes into the others */
	stats_free(evs->stats);
	store_free(evs->store);
	stdout_writer_free(evs->out);
	free(evs);
}

int events_prepare(struct events *evs, struct bpf_object *obj, enum event_type type,
		   struct sample_config *sc)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "events");
	struct bpf_map *state = bpf_object__find_map_by_name(obj, "events_state");
	int fd, err;

	memset(sc, 0, sizeof(*sc));
	if (state)
		bpf_map__set_max_entries(state, cpu_array_entries(1)); /* by-CPU: one per CPU */
	if (!evs->cfg.rate[type] || !map)
		return 0;
	sampling_config_bpf(&evs->cfg, type, sc);
	fd = ring_fd(evs->ring, evs->cfg.ring_bytes);
	if (fd < 0)
		return fd;
	err = bpf_map__reuse_fd(map, fd);
	if (err)
		log_error("sampling: cannot share the ring buffer with the %s programs: %s",
			  event_type_name(type), strerror(-err));
	return err;
}

void events_loaded(struct events *evs, struct bpf_object *obj, enum event_type type)
{
	stats_loaded(evs->stats, obj, type);
}

void events_unloaded(struct events *evs, enum event_type type)
{
	stats_unloaded(evs->stats, type);
}

unsigned events_reconfigure(struct events *evs, const struct sampling_config *c)
{
	struct sample_config a, b;
	unsigned restart = 0;

	if (sampling_config_equal(c, &evs->cfg))
		return 0;
	/* The consumer reads cfg and the writer without a lock: it waits while they change. */
	ring_stop(evs->ring);
	for (int t = 1; t < EV_NR_TYPES; t++) {
		sampling_config_bpf(&evs->cfg, t, &a);
		sampling_config_bpf(c, t, &b);
		if (memcmp(&a, &b, sizeof(a)))
			restart |= 1u << t;
	}
	/*
	 * Another size is another ring, and sampling turned off needs none (it would keep up to
	 * ring_bytes): every program writing into the old one restarts.
	 */
	if (c->ring_bytes != evs->cfg.ring_bytes || !sampling_config_on(c))
		ring_close(evs->ring);
	store_resize(evs->store, c->max_events);
	stdout_writer_set_rate(evs->out, c->stdout_per_second);
	evs->cfg = *c;
	return restart;
}

void events_add(struct events *evs, const struct event *ev, double unix_time)
{
	struct event_rec r;

	if (!evs->cfg.to_stdout) {
		store_add(evs->store, ev, unix_time, NULL);
	} else if (store_add(evs->store, ev, unix_time, &r)) {
		stdout_writer_add(evs->out, &r);
	}
}

/* The consumer thread's handlers. */
static void on_event(void *ctx, const struct event *ev, double unix_time)
{
	events_add(ctx, ev, unix_time);
}

static void on_poll(void *ctx)
{
	struct events *evs = ctx;

	stdout_writer_flush(evs->out); /* nothing to write unless [sampling] stdout is on */
	stats_check_losses(evs->stats, &evs->cfg);
}

int events_start(struct events *evs, const struct kernel *k)
{
	const struct ring_handler h = { on_event, on_poll, evs };
	int err;

	if (!ring_made(evs->ring) || ring_running(evs->ring))
		return 0;
	err = store_start(evs->store, k);
	if (!err)
		err = ring_start(evs->ring, &h);
	if (err)
		return err;
	log_info("sampling: reading events (ring buffer %u bytes, keeping the last %u)",
		 evs->cfg.ring_bytes, evs->cfg.max_events);
	return 0;
}

void events_collect(struct events *evs, struct expo *e)
{
	uint64_t lost[EV_NR_TYPES];

	for (int t = 0; t < EV_NR_TYPES; t++)
		lost[t] = stdout_writer_lost(evs->out, t);
	stats_collect(evs->stats, e, lost);
}

bool events_exemplar(struct events *evs, enum event_type type, const void *series, struct labels *l,
		     char *buf, size_t len, double *time)
{
	return store_exemplar(evs->store, type, series, l, buf, len, time);
}

struct event_store *events_store(struct events *evs)
{
	return evs->store;
}
