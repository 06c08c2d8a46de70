// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sampled events: configuration, shared ring buffer, consumer thread, store, JSON, counters.
 * Every type alike: what differs between them is in its descriptor (analyzers/).
 */
#define _GNU_SOURCE /* memrchr */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sampling/analyzers/analyzer.h"
#include "kernel/bpfmap.h"
#include "sampling/events.h"
#include "base/log.h"
#include "base/parse.h"

#define HTML_EVENTS 20 /* latest events on the landing page */
/* JSON lines waiting for stdout: more is lost (counted), not buffered, when nobody reads. */
#define STDOUT_PENDING_MAX ((size_t)256 * 1024)

/* The layout is shared with the BPF side; a change of size is a new version. */
_Static_assert(sizeof(struct event) == 96, "struct event changed: update the fuzz corpus");

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

void events_defaults(struct sampling_config *c)
{
	memset(c, 0, sizeof(*c));
	for (int t = 1; t < EV_NR_TYPES; t++) {
		c->max_per_second[t] = 100;
		c->burst[t] = 100;
	}
	c->min_rtt_us = 10000;
	c->ring_bytes = 256 * 1024;
	c->max_events = 1000;
	c->stdout_per_second = 100;
}

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

const char *event_type_name(unsigned type)
{
	return type < EV_NR_TYPES && event_descs[type] ? event_descs[type]->name : "unknown";
}

int events_set(struct sampling_config *c, const char *key, const char *value, char *err,
	       size_t errlen)
{
	for (int t = 1; t < EV_NR_TYPES; t++) {
		const char *name = event_descs[t] ? event_descs[t]->name : "";
		size_t n = strlen(name);

		if (!n || strncmp(key, name, n) || key[n] != '_')
			continue;
		if (!strcmp(key + n + 1, "sample_rate"))
			return parse_uint(value, 0, 1000000000, &c->rate[t], err, errlen);
		if (!strcmp(key + n + 1, "max_events_per_second"))
			return parse_uint(value, 0, 1000000, &c->max_per_second[t], err, errlen);
		if (!strcmp(key + n + 1, "burst"))
			return parse_uint(value, 0, 1000000, &c->burst[t], err, errlen);
	}
	if (!strcmp(key, "min_rtt_us"))
		return parse_uint(value, 0, 60000000, &c->min_rtt_us, err, errlen);
	if (!strcmp(key, "max_events"))
		return parse_uint(value, 1, EVENTS_MAX, &c->max_events, err, errlen);
	if (!strcmp(key, "stdout"))
		return parse_bool(value, &c->to_stdout, err, errlen);
	if (!strcmp(key, "stdout_max_per_second"))
		return parse_uint(value, 1, 1000000, &c->stdout_per_second, err, errlen);
	if (!strcmp(key, "ring_buffer_bytes")) {
		unsigned v;

		if (parse_uint(value, 4096, 1u << 30, &v, err, errlen))
			return -1;
		/* The kernel wants a power of two and a multiple of the page size. */
		if (v & (v - 1) || v % (unsigned)sysconf(_SC_PAGESIZE)) {
			snprintf(err, errlen, "expected a power of two from 4096, got '%s'", value);
			return -1;
		}
		c->ring_bytes = v;
		return 0;
	}
	snprintf(err, errlen, "unknown key '%s' in [sampling]", key);
	return -1;
}

/* What the BPF side of type reads from c (all zero when the type is not sampled). */
static void sample_config_of(const struct sampling_config *c, enum event_type type,
			     struct sample_config *sc)
{
	unsigned rate = c->rate[type];

	memset(sc, 0, sizeof(*sc));
	if (!rate)
		return;
	sc->rate = rate;
	sc->gap_mod = 2 * rate - 1;
	if (c->max_per_second[type]) {
		sc->interval_ns = 1000000000ull / c->max_per_second[type];
		sc->burst_ns = sc->interval_ns * c->burst[type];
	}
	sc->min_rtt_us = c->min_rtt_us;
	sc->wakeup_bytes = c->ring_bytes / 4;
}

int events_prepare(struct events *evs, struct bpf_object *obj, enum event_type type,
		   struct sample_config *sc)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "events");
	struct bpf_map *state = bpf_object__find_map_by_name(obj, "events_state");

	memset(sc, 0, sizeof(*sc));
	if (state)
		bpf_map__set_max_entries(state, cpu_array_entries(1)); /* by-CPU: one per CPU */
	if (!evs->cfg.rate[type] || !map)
		return 0;
	sample_config_of(&evs->cfg, type, sc);
	if (evs->ring_fd < 0) {
		evs->ring_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "events", 0, 0,
					      evs->cfg.ring_bytes, NULL);
		if (evs->ring_fd < 0) {
			log_error("sampling: cannot create a %u-byte ring buffer: %s",
				  evs->cfg.ring_bytes, strerror(errno));
			return -errno;
		}
	}
	return bpf_map__reuse_fd(map, evs->ring_fd);
}

/* Stop the consumer thread; the ring buffer, the store and the analyzers stay. */
static void consumer_stop(struct events *evs)
{
	if (__atomic_exchange_n(&evs->running, false, __ATOMIC_ACQ_REL))
		pthread_join(evs->thread, NULL);
}

/* The newest events of the store, as many as max fits, in a store of that size. Lock held. */
static void store_resize(struct events *evs, unsigned max)
{
	size_t n = evs->store_n < max ? evs->store_n : max;
	struct event_rec *v;

	if (!evs->store)
		return;
	v = calloc(max, sizeof(*v));
	if (!v) {
		free(evs->store); /* keep nothing rather than index past a smaller store */
		evs->store = NULL;
		evs->store_n = evs->store_head = 0;
		return;
	}
	for (size_t k = 0; k < n; k++)
		v[k] = evs->store[(evs->store_head + evs->cfg.max_events - n + k) %
				  evs->cfg.max_events];
	free(evs->store);
	evs->store = v;
	evs->store_n = n;
	evs->store_head = n % max;
}

static bool same_sampling(const struct sampling_config *a, const struct sampling_config *b)
{
	return !memcmp(a->rate, b->rate, sizeof(a->rate)) &&
	       !memcmp(a->max_per_second, b->max_per_second, sizeof(a->max_per_second)) &&
	       !memcmp(a->burst, b->burst, sizeof(a->burst)) && a->min_rtt_us == b->min_rtt_us &&
	       a->ring_bytes == b->ring_bytes && a->max_events == b->max_events &&
	       a->to_stdout == b->to_stdout && a->stdout_per_second == b->stdout_per_second;
}

static bool sampling_on(const struct sampling_config *c)
{
	for (int t = 1; t < EV_NR_TYPES; t++)
		if (c->rate[t])
			return true;
	return false;
}

unsigned events_reconfigure(struct events *evs, const struct sampling_config *c)
{
	struct sample_config a, b;
	unsigned restart = 0;

	if (same_sampling(c, &evs->cfg))
		return 0;
	/* The consumer reads cfg without the lock: it waits while cfg changes. */
	consumer_stop(evs);
	for (int t = 1; t < EV_NR_TYPES; t++) {
		sample_config_of(&evs->cfg, t, &a);
		sample_config_of(c, t, &b);
		if (memcmp(&a, &b, sizeof(a)))
			restart |= 1u << t;
	}
	/*
	 * Another size is another ring, and sampling turned off needs none (it would keep up to
	 * ring_bytes): every program writing into the old one restarts.
	 */
	if ((c->ring_bytes != evs->cfg.ring_bytes || !sampling_on(c)) && evs->ring_fd >= 0) {
		ring_buffer__free(evs->rb);
		evs->rb = NULL;
		close(evs->ring_fd);
		evs->ring_fd = -1;
	}
	pthread_mutex_lock(&evs->lock);
	if (c->max_events != evs->cfg.max_events)
		store_resize(evs, c->max_events);
	evs->cfg = *c;
	pthread_mutex_unlock(&evs->lock);
	return restart;
}

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

static void check_losses(struct events *evs)
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

int event_decode(const void *data, size_t len, struct event *out)
{
	struct event ev;

	if (!data || len != sizeof(ev))
		return -EINVAL;
	memcpy(&ev, data, sizeof(ev));
	if (ev.size != sizeof(ev) || ev.type >= EV_NR_TYPES || !event_descs[ev.type])
		return -EINVAL;
	if (ev.flow.family != 0 && ev.flow.family != 4 && ev.flow.family != 6)
		return -EINVAL;
	if (event_descs[ev.type]->valid && !event_descs[ev.type]->valid(&ev))
		return -EINVAL;
	*out = ev;
	return 0;
}

/* At most stdout_max_per_second lines (GCRA with a one-second burst), the rest counted. */
static void log_stdout(struct events *evs, const struct event_rec *r)
{
	double interval = 1.0 / evs->cfg.stdout_per_second;

	if (evs->stdout_tat < r->time)
		evs->stdout_tat = r->time;
	if (evs->stdout_tat - r->time > 1.0) {
		evs->stdout_suppressed++;
		log_once(evs->logged_stdout, LOG_WARN,
			 "sampling: more than stdout_max_per_second=%u events; the rest are not "
			 "logged to stdout",
			 evs->cfg.stdout_per_second);
		return;
	}
	evs->stdout_tat += interval;
	if (evs->line.len >= STDOUT_PENDING_MAX) {
		__atomic_fetch_add(&evs->stdout_lost[r->ev.type], 1, __ATOMIC_RELAXED);
		log_once(evs->logged_slow, LOG_WARN,
			 "sampling: stdout does not take the events as fast as they come; those "
			 "it cannot take are counted in netstack_events_lost_total");
		return;
	}
	event_json(&evs->line, r);
	mbuf_puts(&evs->line, "\n");
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

/*
 * Free every type's state. Lock held (or no other thread left), and no scrape running or
 * starting (their exemplars).
 */
static void analyzers_fini(struct events *evs)
{
	for (int t = 1; t < EV_NR_TYPES; t++) {
		void *s = __atomic_exchange_n(&evs->states[t], NULL, __ATOMIC_ACQ_REL);

		if (s)
			event_descs[t]->fini(s);
	}
	evs->analyzers_ready = false;
}

/* Each type's state, made once; k NULL: without the kernel's names (the fuzzer). Lock held. */
static int analyzers_init(struct events *evs, const struct kernel *k)
{
	for (int t = 1; t < EV_NR_TYPES && !evs->analyzers_ready; t++) {
		void *s = NULL;

		if (event_descs[t] && !event_descs[t]->init(k, &s)) {
			__atomic_store_n(&evs->states[t], s, __ATOMIC_RELEASE);
		} else if (event_descs[t]) {
			log_error("sampling: cannot set up the %s analyzer", event_type_name(t));
			analyzers_fini(evs);
			return -1;
		}
	}
	evs->analyzers_ready = true;
	return 0;
}

void events_add(struct events *evs, const struct event *ev, double unix_time)
{
	struct event_rec *r;

	pthread_mutex_lock(&evs->lock);
	if (!evs->analyzers_ready && analyzers_init(evs, NULL)) {
		pthread_mutex_unlock(&evs->lock);
		return;
	}
	if (!evs->store) {
		evs->store = calloc(evs->cfg.max_events, sizeof(*evs->store));
		if (!evs->store) {
			pthread_mutex_unlock(&evs->lock);
			return;
		}
	}
	r = &evs->store[evs->store_head];
	evs->store_head = (evs->store_head + 1) % evs->cfg.max_events;
	if (evs->store_n < evs->cfg.max_events)
		evs->store_n++;
	memset(r, 0, sizeof(*r));
	r->ev = *ev;
	r->seq = ++evs->seq;
	r->time = unix_time;
	event_descs[ev->type]->entry(evs->states[ev->type], r);
	if (evs->cfg.to_stdout)
		log_stdout(evs, r);
	pthread_mutex_unlock(&evs->lock);
}

bool events_exemplar(struct events *evs, enum event_type type, const void *series, struct labels *l,
		     char *buf, size_t len, double *time)
{
	void *s = type < EV_NR_TYPES ? __atomic_load_n(&evs->states[type], __ATOMIC_ACQUIRE) : NULL;

	return s && event_descs[type]->exemplar &&
	       event_descs[type]->exemplar(s, series, l, buf, len, time);
}

static double clock_seconds(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
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
			check_losses(evs);
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
	err = analyzers_init(evs, k);
	pthread_mutex_unlock(&evs->lock);
	if (err)
		return -1;
	if (!evs->rb)
		evs->rb = ring_buffer__new(evs->ring_fd, handle_event, evs, NULL);
	if (!evs->rb) {
		log_error("sampling: cannot read the ring buffer: %s", strerror(errno));
		return -errno;
	}
	__atomic_store_n(&evs->running, true, __ATOMIC_RELEASE);
	err = pthread_create(&evs->thread, NULL, consume, evs);
	if (err) {
		__atomic_store_n(&evs->running, false, __ATOMIC_RELEASE);
		ring_buffer__free(evs->rb);
		evs->rb = NULL;
		return -err;
	}
	log_info("sampling: reading events (ring buffer %u bytes, keeping the last %u)",
		 evs->cfg.ring_bytes, evs->cfg.max_events);
	return 0;
}

void events_free(struct events *evs)
{
	if (!evs)
		return;
	consumer_stop(evs);
	ring_buffer__free(evs->rb);
	if (evs->ring_fd >= 0)
		close(evs->ring_fd);
	for (int t = 0; t < EV_NR_TYPES; t++)
		if (evs->stats_fd[t] >= 0)
			close(evs->stats_fd[t]);
	analyzers_fini(evs);
	free(evs->store);
	mbuf_free(&evs->line);
	pthread_mutex_destroy(&evs->lock);
	pthread_mutex_destroy(&evs->stats_lock);
	free(evs);
}

/* ---- output ---- */

void event_json(struct mbuf *m, const struct event_rec *r)
{
	const struct event *ev = &r->ev;

	mbuf_printf(m, "{\"seq\":%" PRIu64 ",\"time\":%.6f,\"type\":\"%s\",\"cpu\":%u", r->seq,
		    r->time, event_type_name(ev->type), ev->cpu);
	mbuf_printf(m, ",\"netns\":%u,\"ifindex\":%u", ev->netns, ev->ifindex);
	flow_json(m, ev);
	event_descs[ev->type]->json(m, r);
	mbuf_puts(m, "}");
}

static bool matches(const struct event_rec *r, const struct event_filter *f)
{
	if (f->type && r->ev.type != f->type)
		return false;
	if (f->reason && (!r->reason || strcmp(f->reason, r->reason)))
		return false;
	if (f->netns && r->ev.netns != f->netns)
		return false;
	return r->time >= f->since;
}

/* The i-th stored event, oldest first. Lock held. */
static const struct event_rec *stored(const struct events *evs, size_t i)
{
	return &evs->store[(evs->store_head + evs->cfg.max_events - evs->store_n + i) %
			   evs->cfg.max_events];
}

/*
 * Stored events hold consecutive seq numbers, the newest being seq (also across a restart of
 * the store, which empties it): the one with seq s is stored(evs, s - oldest_seq(evs)). Lock
 * held.
 */
static uint64_t oldest_seq(const struct events *evs)
{
	return evs->seq - evs->store_n + 1;
}

void events_cursor_open(struct events *evs, struct events_cursor *c, const struct event_filter *f,
			unsigned limit)
{
	uint64_t oldest;

	memset(c, 0, sizeof(*c));
	c->evs = evs;
	c->f = *f;
	if (f->reason) {
		snprintf(c->reason, sizeof(c->reason), "%s", f->reason);
		c->f.reason = c->reason;
	}
	pthread_mutex_lock(&evs->lock);
	oldest = oldest_seq(evs);
	c->next = oldest;
	c->end = evs->seq;
	/* Back from the newest to the oldest of the last `limit` matching events. */
	for (size_t i = evs->store_n; i-- > 0 && c->left < limit;) {
		if (matches(stored(evs, i), &c->f)) {
			c->left++;
			c->next = oldest + i;
		}
	}
	pthread_mutex_unlock(&evs->lock);
}

long events_cursor_read(struct events_cursor *c, char *buf, size_t max)
{
	struct events *evs = c->evs;
	size_t n;

	if (c->off == c->pending.len) {
		uint64_t oldest;

		mbuf_reset(&c->pending);
		c->off = 0;
		pthread_mutex_lock(&evs->lock);
		oldest = oldest_seq(evs);
		if (c->next < oldest)
			c->next = oldest;
		/* About max bytes per piece: the lock is held for a few dozen events at most. */
		while (c->left && c->next <= c->end && c->pending.len < max) {
			const struct event_rec *r = stored(evs, c->next++ - oldest);

			if (!matches(r, &c->f))
				continue;
			event_json(&c->pending, r);
			mbuf_puts(&c->pending, "\n");
			c->left--;
		}
		pthread_mutex_unlock(&evs->lock);
		if (c->pending.oom)
			return -1;
	}
	n = c->pending.len - c->off;
	if (n > max)
		n = max;
	if (n)
		memcpy(buf, c->pending.data + c->off, n);
	c->off += n;
	return (long)n;
}

void events_cursor_close(struct events_cursor *c)
{
	mbuf_free(&c->pending);
}

void events_top_json(struct events *evs, struct mbuf *m)
{
	double now = clock_seconds(CLOCK_REALTIME);
	bool first = true;

	mbuf_puts(m, "{");
	pthread_mutex_lock(&evs->lock);
	for (int t = 1; t < EV_NR_TYPES; t++) {
		if (!event_descs[t])
			continue;
		mbuf_printf(m, "%s\"%s\":", first ? "" : ",", event_descs[t]->name);
		event_descs[t]->top_json(evs->states[t], m, now);
		first = false;
	}
	pthread_mutex_unlock(&evs->lock);
	mbuf_puts(m, "}\n");
}

void events_status_html(struct events *evs, struct mbuf *m)
{
	double now = clock_seconds(CLOCK_REALTIME);
	char when[32];

	pthread_mutex_lock(&evs->lock);
	for (int t = 1; t < EV_NR_TYPES; t++)
		if (event_descs[t])
			event_descs[t]->top_html(evs->states[t], m, now);
	mbuf_puts(m, "<h2>Latest sampled events</h2>\n");
	if (!evs->store_n)
		mbuf_puts(m, "<p class=\"empty\">No sampled events yet (sampling is off by "
			     "default: [sampling] *_sample_rate).</p>\n");
	else
		mbuf_puts(m, "<table class=\"events\">\n<tr><th>time</th><th>type</th>"
			     "<th>protocol</th><th>netns</th><th>source</th><th>destination</th>"
			     "<th>detail</th></tr>\n");
	/* Newest first. */
	for (size_t k = 0; k < evs->store_n && k < HTML_EVENTS; k++) {
		const struct event_rec *r = stored(evs, evs->store_n - 1 - k);
		time_t t = (time_t)r->time;
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		mbuf_printf(m, "<tr><td>%s</td><td>%s</td>", when, event_type_name(r->ev.type));
		flow_html(m, &r->ev);
		mbuf_puts(m, "<td>");
		event_descs[r->ev.type]->html(m, r);
		mbuf_puts(m, "</td></tr>\n");
	}
	if (evs->store_n)
		mbuf_puts(m, "</table>\n");
	pthread_mutex_unlock(&evs->lock);
}
