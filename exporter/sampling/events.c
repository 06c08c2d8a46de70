// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sampled events: the object main.c owns, its ring buffer shared by the collectors, and a
 * reload. The rest is in settings.c, decode.c, store.c, consumer.c and stats.c.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "kernel/bpfmap.h"
#include "sampling/events_impl.h"

struct events *events_new(const struct sampling_config *c)
{
	struct events *evs = calloc(1, sizeof(*evs));

	if (!evs)
		return NULL;
	evs->cfg = *c;
	evs->ring_fd = -1;
	for (int t = 0; t < EV_NR_TYPES; t++)
		evs->stats_fd[t] = -1;
	pthread_mutex_init(&evs->stats_lock, NULL);
	pthread_mutex_init(&evs->lock, NULL);
	return evs;
}

int events_prepare(struct events *evs, struct bpf_object *obj, enum event_type type,
		   struct sample_config *sc)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "events");
	struct bpf_map *state = bpf_object__find_map_by_name(obj, "events_state");
	int err;

	memset(sc, 0, sizeof(*sc));
	if (state)
		bpf_map__set_max_entries(state, cpu_array_entries(1)); /* by-CPU: one per CPU */
	if (!evs->cfg.rate[type] || !map)
		return 0;
	sampling_config_bpf(&evs->cfg, type, sc);
	if (evs->ring_fd < 0) {
		evs->ring_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "events", 0, 0,
					      evs->cfg.ring_bytes, NULL);
		if (evs->ring_fd < 0) {
			err = -errno;

			log_error("sampling: cannot create a %u-byte ring buffer: %s",
				  evs->cfg.ring_bytes, strerror(-err));
			return err;
		}
	}
	err = bpf_map__reuse_fd(map, evs->ring_fd);
	if (err)
		log_error("sampling: cannot share the ring buffer with the %s programs: %s",
			  event_type_name(type), strerror(-err));
	return err;
}

unsigned events_reconfigure(struct events *evs, const struct sampling_config *c)
{
	struct sample_config a, b;
	unsigned restart = 0;

	if (sampling_config_equal(c, &evs->cfg))
		return 0;
	/* The consumer reads cfg without the lock: it waits while cfg changes. */
	events_consumer_stop(evs);
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
	if ((c->ring_bytes != evs->cfg.ring_bytes || !sampling_config_on(c)) && evs->ring_fd >= 0) {
		ring_buffer__free(evs->rb);
		evs->rb = NULL;
		close(evs->ring_fd);
		evs->ring_fd = -1;
	}
	pthread_mutex_lock(&evs->lock);
	if (c->max_events != evs->cfg.max_events)
		events_store_resize(evs, c->max_events);
	evs->cfg = *c;
	pthread_mutex_unlock(&evs->lock);
	return restart;
}

void events_free(struct events *evs)
{
	if (!evs)
		return;
	events_consumer_stop(evs);
	ring_buffer__free(evs->rb);
	if (evs->ring_fd >= 0)
		close(evs->ring_fd);
	for (int t = 0; t < EV_NR_TYPES; t++)
		if (evs->stats_fd[t] >= 0)
			close(evs->stats_fd[t]);
	events_analyzers_fini(evs);
	free(evs->store);
	mbuf_free(&evs->line);
	pthread_mutex_destroy(&evs->lock);
	pthread_mutex_destroy(&evs->stats_lock);
	free(evs);
}
