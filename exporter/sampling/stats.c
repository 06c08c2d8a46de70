// SPDX-License-Identifier: GPL-2.0-only
/* The event types' counters (see stats.h). */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "metrics.h"
#include "sampling/decode.h"
#include "sampling/stats.h"

struct event_stats {
	/*
	 * Our own duplicates of the collectors' counter maps: a reload closes a collector's fds
	 * while the consumer may be reading, and their numbers may be reused meanwhile. lock
	 * guards them against the swap (scrapes, the consumer, a reload on the main thread).
	 */
	pthread_mutex_t lock;
	int fd[EV_NR_TYPES];
	/* The consumer thread's: */
	time_t checked;
	bool logged_lost[EV_NR_TYPES], logged_limited[EV_NR_TYPES];
};

struct event_stats *stats_new(void)
{
	struct event_stats *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	for (int t = 0; t < EV_NR_TYPES; t++)
		s->fd[t] = -1;
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void stats_free(struct event_stats *s)
{
	if (!s)
		return;
	for (int t = 0; t < EV_NR_TYPES; t++)
		if (s->fd[t] >= 0)
			close(s->fd[t]);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void stats_loaded(struct event_stats *s, struct bpf_object *obj, enum event_type type)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "events_stats");
	int fd = map ? fcntl(bpf_map__fd(map), F_DUPFD_CLOEXEC, 0) : -1;

	if (map && fd < 0)
		log_warn("sampling: cannot keep the %s counters: %s", event_type_name(type),
			 strerror(errno));
	pthread_mutex_lock(&s->lock);
	if (s->fd[type] >= 0)
		close(s->fd[type]);
	s->fd[type] = fd;
	pthread_mutex_unlock(&s->lock);
}

void stats_unloaded(struct event_stats *s, enum event_type type)
{
	pthread_mutex_lock(&s->lock);
	if (s->fd[type] >= 0)
		close(s->fd[type]);
	s->fd[type] = -1;
	pthread_mutex_unlock(&s->lock);
}

static bool has_fd(struct event_stats *s, int type)
{
	bool loaded;

	pthread_mutex_lock(&s->lock);
	loaded = s->fd[type] >= 0;
	pthread_mutex_unlock(&s->lock);
	return loaded;
}

/* One counter of a type summed over CPUs (0 when unreadable). */
static uint64_t read_stat(struct event_stats *s, int type, uint32_t stat)
{
	int ncpus = libbpf_num_possible_cpus(), err = -1;
	uint64_t sum = 0;

	if (ncpus <= 0)
		return 0;
	uint64_t v[ncpus];

	pthread_mutex_lock(&s->lock);
	if (s->fd[type] >= 0)
		err = bpf_map_lookup_elem(s->fd[type], &stat, v);
	pthread_mutex_unlock(&s->lock);
	if (err)
		return 0;
	for (int i = 0; i < ncpus; i++)
		sum += v[i];
	return sum;
}

void stats_check_losses(struct event_stats *s, const struct sampling_config *c)
{
	if (time(NULL) == s->checked)
		return;
	s->checked = time(NULL);
	for (int t = 1; t < EV_NR_TYPES; t++) {
		if (read_stat(s, t, EV_STAT_LOST))
			log_once(s->logged_lost[t], LOG_WARN,
				 "sampling: %s events lost, the ring buffer was full "
				 "(ring_buffer_bytes=%u); see netstack_events_lost_total",
				 event_type_name(t), c->ring_bytes);
		if (read_stat(s, t, EV_STAT_RATELIMITED))
			log_once(s->logged_limited[t], LOG_WARN,
				 "sampling: %s events over %s_max_events_per_second=%u per CPU are "
				 "dropped; see netstack_events_ratelimited_total",
				 event_type_name(t), event_type_name(t), c->max_per_second[t]);
	}
}

void stats_collect(struct event_stats *s, struct expo *e, const uint64_t lost[EV_NR_TYPES])
{
	static const struct {
		const char *name, *help;
	} fams[EV_NR_STATS] = {
		{ "netstack_events_sampled_total", "Events sampled into the ring buffer." },
		{ "netstack_events_lost_total", "Sampled events lost because the ring buffer was "
						"full or stdout did not take them." },
		{ "netstack_events_ratelimited_total",
		  "Sampled events refused by the per-CPU max_events_per_second cap." },
	};

	for (uint32_t k = 0; k < EV_NR_STATS; k++) {
		expo_family(e, fams[k].name, METRIC_COUNTER, fams[k].help);
		for (int t = 1; t < EV_NR_TYPES; t++) {
			struct labels l = { 0 };

			if (!has_fd(s, t))
				continue;
			labels_add(&l, "type", event_type_name(t));
			expo_u64(e, &l, read_stat(s, t, k) + (k == EV_STAT_LOST ? lost[t] : 0));
		}
	}
}
