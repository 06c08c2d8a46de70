// SPDX-License-Identifier: GPL-2.0-only
/*
 * The event types' counters (sampled, lost, rate-limited), read from our own copies of the
 * collectors' maps: netstack_events_*_total and the log lines of a first loss.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "sampling/events_impl.h"

void events_loaded(struct events *evs, struct bpf_object *obj, enum event_type type)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "events_stats");
	int fd = map ? fcntl(bpf_map__fd(map), F_DUPFD_CLOEXEC, 0) : -1;

	if (map && fd < 0)
		log_warn("sampling: cannot keep the %s counters: %s", event_type_name(type),
			 strerror(errno));
	pthread_mutex_lock(&evs->stats_lock);
	if (evs->stats_fd[type] >= 0)
		close(evs->stats_fd[type]);
	evs->stats_fd[type] = fd;
	pthread_mutex_unlock(&evs->stats_lock);
}

void events_unloaded(struct events *evs, enum event_type type)
{
	pthread_mutex_lock(&evs->stats_lock);
	if (evs->stats_fd[type] >= 0)
		close(evs->stats_fd[type]);
	evs->stats_fd[type] = -1;
	pthread_mutex_unlock(&evs->stats_lock);
}

static bool stats_loaded(struct events *evs, int type)
{
	bool loaded;

	pthread_mutex_lock(&evs->stats_lock);
	loaded = evs->stats_fd[type] >= 0;
	pthread_mutex_unlock(&evs->stats_lock);
	return loaded;
}

/* One counter of a type summed over CPUs (0 when unreadable). */
static uint64_t read_stat(struct events *evs, int type, uint32_t stat)
{
	int ncpus = libbpf_num_possible_cpus(), err = -1;
	uint64_t sum = 0;

	if (ncpus <= 0)
		return 0;
	uint64_t v[ncpus];

	pthread_mutex_lock(&evs->stats_lock);
	if (evs->stats_fd[type] >= 0)
		err = bpf_map_lookup_elem(evs->stats_fd[type], &stat, v);
	pthread_mutex_unlock(&evs->stats_lock);
	if (err)
		return 0;
	for (int i = 0; i < ncpus; i++)
		sum += v[i];
	return sum;
}

void events_check_losses(struct events *evs)
{
	for (int t = 1; t < EV_NR_TYPES; t++) {
		if (read_stat(evs, t, EV_STAT_LOST))
			log_once(evs->logged_lost[t], LOG_WARN,
				 "sampling: %s events lost, the ring buffer was full "
				 "(ring_buffer_bytes=%u); see netstack_events_lost_total",
				 event_type_name(t), evs->cfg.ring_bytes);
		if (read_stat(evs, t, EV_STAT_RATELIMITED))
			log_once(evs->logged_limited[t], LOG_WARN,
				 "sampling: %s events over %s_max_events_per_second=%u per CPU are "
				 "dropped; see netstack_events_ratelimited_total",
				 event_type_name(t), event_type_name(t),
				 evs->cfg.max_per_second[t]);
	}
}

void events_collect(struct events *evs, struct expo *e)
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

	for (uint32_t s = 0; s < EV_NR_STATS; s++) {
		expo_family(e, fams[s].name, METRIC_COUNTER, fams[s].help);
		for (int t = 1; t < EV_NR_TYPES; t++) {
			struct labels l = { 0 };

			if (!stats_loaded(evs, t))
				continue;
			labels_add(&l, "type", event_type_name(t));
			expo_u64(e, &l,
				 read_stat(evs, t, s) +
					 (s == EV_STAT_LOST ? __atomic_load_n(&evs->stdout_lost[t],
									      __ATOMIC_RELAXED)
							    : 0));
		}
	}
}
