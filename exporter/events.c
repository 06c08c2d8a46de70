// SPDX-License-Identifier: GPL-2.0-only
/* Sampled events: configuration, shared ring buffer, consumer thread, store, JSON, counters. */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyzers/analyzer.h"
#include "bpfmap.h"
#include "config.h"
#include "drops.h"
#include "events.h"
#include "log.h"
#include "retrans.h"

#define HTML_EVENTS 20	    /* latest events on the landing page */
#define EXEMPLAR_SERIES 256 /* drop series remembered for exemplars */

/* The layout is shared with the BPF side; a change of size is a new version. */
_Static_assert(sizeof(struct event) == 96, "struct event changed: update the fuzz corpus");

static const char *const type_names[EV_NR_TYPES] = { "none", "drop", "retrans", "rtt" };

static struct sampling_config cfg;

static int ring_fd = -1;
/*
 * Our own duplicates of the collectors' counter maps: a reload closes a collector's fds while
 * the consumer may be reading, and their numbers may be reused meanwhile. stats_lock guards
 * them against the swap (scrapes, the consumer, a reload on the main thread).
 */
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static int stats_fd[EV_NR_TYPES] = { -1, -1, -1, -1 };
static struct ring_buffer *rb;
static pthread_t thread;
static bool running;	     /* atomic: the consumer polls it */
static bool analyzers_ready; /* initialised once, by the first start */
static bool logged_lost[EV_NR_TYPES], logged_limited[EV_NR_TYPES], logged_stdout, logged_write;

/* The store, the exemplar table and the analyzers' state, shared with the HTTP thread. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct event_rec *store;
static size_t store_head, store_n;
static uint64_t seq;
static struct event_rec exemplars[EXEMPLAR_SERIES];
static struct mbuf line;
static double stdout_tat;
static uint64_t stdout_suppressed;

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

void events_configure(const struct sampling_config *c)
{
	cfg = *c;
}

const char *event_type_name(unsigned type)
{
	return type < EV_NR_TYPES ? type_names[type] : "unknown";
}

int events_set(struct sampling_config *c, const char *key, const char *value, char *err,
	       size_t errlen)
{
	for (int t = 1; t < EV_NR_TYPES; t++) {
		size_t n = strlen(type_names[t]);

		if (strncmp(key, type_names[t], n) || key[n] != '_')
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

int events_prepare(struct bpf_object *obj, enum event_type type, struct sample_config *sc)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "events");
	struct bpf_map *state = bpf_object__find_map_by_name(obj, "events_state");

	memset(sc, 0, sizeof(*sc));
	if (state)
		bpf_map__set_max_entries(state, cpu_array_entries(1)); /* by-CPU: one per CPU */
	if (!cfg.rate[type] || !map)
		return 0;
	sample_config_of(&cfg, type, sc);
	if (ring_fd < 0) {
		ring_fd =
			bpf_map_create(BPF_MAP_TYPE_RINGBUF, "events", 0, 0, cfg.ring_bytes, NULL);
		if (ring_fd < 0) {
			log_error("sampling: cannot create a %u-byte ring buffer: %s",
				  cfg.ring_bytes, strerror(errno));
			return -errno;
		}
	}
	return bpf_map__reuse_fd(map, ring_fd);
}

/* Stop the consumer thread; the ring buffer, the store and the analyzers stay. */
static void consumer_stop(void)
{
	if (__atomic_exchange_n(&running, false, __ATOMIC_ACQ_REL))
		pthread_join(thread, NULL);
}

/* The newest events of the store, as many as max fits, in a store of that size. Lock held. */
static void store_resize(unsigned max)
{
	size_t n = store_n < max ? store_n : max;
	struct event_rec *v;

	if (!store)
		return;
	v = calloc(max, sizeof(*v));
	if (!v) {
		free(store); /* keep nothing rather than index past a smaller store */
		store = NULL;
		store_n = store_head = 0;
		return;
	}
	for (size_t k = 0; k < n; k++)
		v[k] = store[(store_head + cfg.max_events - n + k) % cfg.max_events];
	free(store);
	store = v;
	store_n = n;
	store_head = n % max;
}

static bool same_sampling(const struct sampling_config *a, const struct sampling_config *b)
{
	return !memcmp(a->rate, b->rate, sizeof(a->rate)) &&
	       !memcmp(a->max_per_second, b->max_per_second, sizeof(a->max_per_second)) &&
	       !memcmp(a->burst, b->burst, sizeof(a->burst)) && a->min_rtt_us == b->min_rtt_us &&
	       a->ring_bytes == b->ring_bytes && a->max_events == b->max_events &&
	       a->to_stdout == b->to_stdout && a->stdout_per_second == b->stdout_per_second;
}

unsigned events_reconfigure(const struct sampling_config *c)
{
	struct sample_config a, b;
	unsigned restart = 0;

	if (same_sampling(c, &cfg))
		return 0;
	/* The consumer reads cfg without the lock: it waits while cfg changes. */
	consumer_stop();
	for (int t = 1; t < EV_NR_TYPES; t++) {
		sample_config_of(&cfg, t, &a);
		sample_config_of(c, t, &b);
		if (memcmp(&a, &b, sizeof(a)))
			restart |= 1u << t;
	}
	/* Another size is another ring: every program writing into the old one restarts. */
	if (c->ring_bytes != cfg.ring_bytes && ring_fd >= 0) {
		ring_buffer__free(rb);
		rb = NULL;
		close(ring_fd);
		ring_fd = -1;
	}
	pthread_mutex_lock(&lock);
	if (c->max_events != cfg.max_events)
		store_resize(c->max_events);
	cfg = *c;
	pthread_mutex_unlock(&lock);
	return restart;
}

void events_loaded(struct bpf_object *obj, enum event_type type)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "events_stats");
	int fd = map ? fcntl(bpf_map__fd(map), F_DUPFD_CLOEXEC, 0) : -1;

	if (map && fd < 0)
		log_warn("sampling: cannot keep the %s counters: %s", type_names[type],
			 strerror(errno));
	pthread_mutex_lock(&stats_lock);
	if (stats_fd[type] >= 0)
		close(stats_fd[type]);
	stats_fd[type] = fd;
	pthread_mutex_unlock(&stats_lock);
}

void events_unloaded(enum event_type type)
{
	pthread_mutex_lock(&stats_lock);
	if (stats_fd[type] >= 0)
		close(stats_fd[type]);
	stats_fd[type] = -1;
	pthread_mutex_unlock(&stats_lock);
}

static bool stats_loaded(int type)
{
	bool loaded;

	pthread_mutex_lock(&stats_lock);
	loaded = stats_fd[type] >= 0;
	pthread_mutex_unlock(&stats_lock);
	return loaded;
}

/* One counter of a type summed over CPUs (0 when unreadable). */
static uint64_t read_stat(int type, uint32_t stat)
{
	int ncpus = libbpf_num_possible_cpus(), err = -1;
	uint64_t sum = 0;

	if (ncpus <= 0)
		return 0;
	uint64_t v[ncpus];

	pthread_mutex_lock(&stats_lock);
	if (stats_fd[type] >= 0)
		err = bpf_map_lookup_elem(stats_fd[type], &stat, v);
	pthread_mutex_unlock(&stats_lock);
	if (err)
		return 0;
	for (int i = 0; i < ncpus; i++)
		sum += v[i];
	return sum;
}

static void check_losses(void)
{
	for (int t = 1; t < EV_NR_TYPES; t++) {
		if (read_stat(t, EV_STAT_LOST))
			log_once(logged_lost[t], LOG_WARN,
				 "sampling: %s events lost, the ring buffer was full "
				 "(ring_buffer_bytes=%u); see netstack_events_lost_total",
				 type_names[t], cfg.ring_bytes);
		if (read_stat(t, EV_STAT_RATELIMITED))
			log_once(logged_limited[t], LOG_WARN,
				 "sampling: %s events over %s_max_events_per_second=%u per CPU are "
				 "dropped; see netstack_events_ratelimited_total",
				 type_names[t], type_names[t], cfg.max_per_second[t]);
	}
}

void events_collect(struct expo *e)
{
	static const struct {
		const char *name, *help;
	} fams[EV_NR_STATS] = {
		{ "netstack_events_sampled_total", "Events sampled into the ring buffer." },
		{ "netstack_events_lost_total",
		  "Sampled events lost because the ring buffer was full." },
		{ "netstack_events_ratelimited_total",
		  "Sampled events refused by the per-CPU max_events_per_second cap." },
	};

	for (uint32_t s = 0; s < EV_NR_STATS; s++) {
		expo_family(e, fams[s].name, METRIC_COUNTER, fams[s].help);
		for (int t = 1; t < EV_NR_TYPES; t++) {
			struct labels l = { 0 };

			if (!stats_loaded(t))
				continue;
			labels_add(&l, "type", type_names[t]);
			expo_u64(e, &l, read_stat(t, s));
		}
	}
}

int event_decode(const void *data, size_t len, struct event *out)
{
	struct event ev;

	if (!data || len != sizeof(ev))
		return -EINVAL;
	memcpy(&ev, data, sizeof(ev));
	if (ev.size != sizeof(ev) || ev.type == EV_NONE || ev.type >= EV_NR_TYPES)
		return -EINVAL;
	if (ev.flow.family != 0 && ev.flow.family != 4 && ev.flow.family != 6)
		return -EINVAL;
	if (ev.type == EV_RETRANS && ev.retrans.kind >= RT_NR_KINDS)
		return -EINVAL;
	*out = ev;
	return 0;
}

/* Same drop series: reason, family, protocol, netns, interface and function (not offset). */
static bool same_series(const struct event_rec *a, const struct event_rec *b)
{
	size_t fa = strcspn(a->function, "+"), fb = strcspn(b->function, "+");

	return a->ev.drop.reason == b->ev.drop.reason && a->ev.flow.family == b->ev.flow.family &&
	       a->ev.flow.proto == b->ev.flow.proto && a->ev.netns == b->ev.netns &&
	       !strcmp(a->ifname, b->ifname) && fa == fb && !memcmp(a->function, b->function, fa);
}

static void remember_exemplar(const struct event_rec *r)
{
	struct event_rec *slot = &exemplars[0];

	for (size_t i = 0; i < EXEMPLAR_SERIES; i++) {
		struct event_rec *x = &exemplars[i];

		if (!x->seq || same_series(x, r)) {
			slot = x;
			break;
		}
		if (x->seq < slot->seq)
			slot = x;
	}
	*slot = *r;
}

/* At most stdout_max_per_second lines (GCRA with a one-second burst), the rest counted. */
static void log_stdout(const struct event_rec *r)
{
	double interval = 1.0 / cfg.stdout_per_second;

	if (stdout_tat < r->time)
		stdout_tat = r->time;
	if (stdout_tat - r->time > 1.0) {
		stdout_suppressed++;
		log_once(logged_stdout, LOG_WARN,
			 "sampling: more than stdout_max_per_second=%u events; the rest are not "
			 "logged to stdout",
			 cfg.stdout_per_second);
		return;
	}
	stdout_tat += interval;
	event_json(&line, r);
	mbuf_puts(&line, "\n");
}

/* Whole lines in one write(2): never interleaved with the log on stderr, even in one file. */
static void flush_stdout(void)
{
	pthread_mutex_lock(&lock);
	if (line.len && !line.oom && write(STDOUT_FILENO, line.data, line.len) < 0)
		log_once(logged_write, LOG_WARN, "sampling: cannot write events to stdout: %s",
			 strerror(errno));
	mbuf_reset(&line);
	pthread_mutex_unlock(&lock);
}

void events_add(const struct event *ev, double unix_time)
{
	struct event_rec *r;

	pthread_mutex_lock(&lock);
	if (!store) {
		store = calloc(cfg.max_events, sizeof(*store));
		if (!store) {
			pthread_mutex_unlock(&lock);
			return;
		}
	}
	r = &store[store_head];
	store_head = (store_head + 1) % cfg.max_events;
	if (store_n < cfg.max_events)
		store_n++;
	memset(r, 0, sizeof(*r));
	r->ev = *ev;
	r->seq = ++seq;
	r->time = unix_time;
	for (const struct analyzer *const *a = analyzers; *a; a++)
		if ((*a)->entry[ev->type])
			(*a)->entry[ev->type](r);
	if (ev->type == EV_DROP)
		remember_exemplar(r);
	if (cfg.to_stdout)
		log_stdout(r);
	pthread_mutex_unlock(&lock);
}

static double clock_seconds(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int handle_event(void *ctx, void *data, size_t len)
{
	static bool logged_bad;
	struct event ev;

	(void)ctx;
	if (event_decode(data, len, &ev)) {
		log_once(logged_bad, LOG_WARN, "sampling: ignoring a malformed %zu-byte event",
			 len);
		return 0;
	}
	/* Monotonic to wall clock, at the time of reading (events are at most a poll old). */
	events_add(&ev,
		   clock_seconds(CLOCK_REALTIME) - clock_seconds(CLOCK_MONOTONIC) + ev.ts_ns / 1e9);
	return 0;
}

static void *consume(void *arg)
{
	time_t last = 0;

	(void)arg;
	while (__atomic_load_n(&running, __ATOMIC_ACQUIRE)) {
		/* Woken for a backlog, else every 100 ms: the kernel spares per-event wakeups. */
		int n = ring_buffer__poll(rb, 100);

		if (n >= 0)
			n = ring_buffer__consume(rb);

		if (n < 0 && n != -EINTR) {
			log_error("sampling: reading the ring buffer failed: %s", strerror(-n));
			break;
		}
		flush_stdout(); /* nothing to write unless [sampling] stdout is on */
		if (time(NULL) != last) {
			last = time(NULL);
			check_losses();
		}
	}
	return NULL;
}

int events_start(struct kernel *k)
{
	int err;

	if (ring_fd < 0 || __atomic_load_n(&running, __ATOMIC_ACQUIRE))
		return 0;
	for (const struct analyzer *const *a = analyzers; *a && !analyzers_ready; a++)
		if ((*a)->init && (*a)->init(k))
			return -1;
	analyzers_ready = true;
	if (!rb)
		rb = ring_buffer__new(ring_fd, handle_event, NULL, NULL);
	if (!rb) {
		log_error("sampling: cannot read the ring buffer: %s", strerror(errno));
		return -errno;
	}
	__atomic_store_n(&running, true, __ATOMIC_RELEASE);
	err = pthread_create(&thread, NULL, consume, NULL);
	if (err) {
		__atomic_store_n(&running, false, __ATOMIC_RELEASE);
		ring_buffer__free(rb);
		rb = NULL;
		return -err;
	}
	log_info("sampling: reading events (ring buffer %u bytes, keeping the last %u)",
		 cfg.ring_bytes, cfg.max_events);
	return 0;
}

void events_stop(void)
{
	consumer_stop();
	ring_buffer__free(rb);
	rb = NULL;
	if (ring_fd >= 0)
		close(ring_fd);
	ring_fd = -1;
	pthread_mutex_lock(&lock);
	for (const struct analyzer *const *a = analyzers; *a; a++)
		if ((*a)->reset)
			(*a)->reset();
	analyzers_ready = false;
	free(store);
	store = NULL;
	store_n = store_head = 0;
	mbuf_free(&line);
	pthread_mutex_unlock(&lock);
}

/* ---- output ---- */

void flow_addr(const struct event_flow *f, bool src, char *buf, size_t len)
{
	const void *a = src ? f->saddr : f->daddr;

	buf[0] = 0;
	if (f->family == 4)
		inet_ntop(AF_INET, a, buf, len);
	else if (f->family == 6)
		inet_ntop(AF_INET6, a, buf, len);
}

static const char *proto_name(unsigned p)
{
	switch (p) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmpv6";
	}
	return "other";
}

static void tcp_flags(char *buf, unsigned f)
{
	static const char *const names[8] = {
		"FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"
	};

	buf[0] = 0;
	for (int i = 0; i < 8; i++)
		if (f & 1u << i) {
			if (buf[0])
				strcat(buf, "|");
			strcat(buf, names[i]);
		}
}

static void json_str(struct mbuf *m, const char *name, const char *v)
{
	mbuf_printf(m, ",\"%s\":\"", name);
	escape_json(m, v);
	mbuf_puts(m, "\"");
}

void event_json(struct mbuf *m, const struct event_rec *r)
{
	const struct event *ev = &r->ev;
	char flags[40], buf[32];

	mbuf_printf(m, "{\"seq\":%" PRIu64 ",\"time\":%.6f,\"type\":\"%s\",\"cpu\":%u", r->seq,
		    r->time, event_type_name(ev->type), ev->cpu);
	mbuf_printf(m, ",\"netns\":%u,\"ifindex\":%u", ev->netns, ev->ifindex);
	flow_json(m, ev);
	switch (ev->type) {
	case EV_DROP:
		tcp_flags(flags, ev->flow.tcp_flags);
		mbuf_printf(m, ",\"tcp_flags\":\"%s\",\"len\":%u", flags, ev->drop.len);
		json_str(m, "interface", r->ifname);
		if (r->reason) {
			json_str(m, "reason", r->reason);
		} else {
			snprintf(buf, sizeof(buf), "%u", ev->drop.reason);
			json_str(m, "reason", buf);
		}
		json_str(m, "function", r->function);
		if (r->explanation) {
			json_str(m, "explanation", r->explanation);
			json_str(m, "hint", r->hint);
		}
		break;
	case EV_RETRANS:
		json_str(m, "state", r->state);
		mbuf_printf(m, ",\"kind\":\"%s\",\"srtt_us\":%u,\"cwnd\":%u",
			    ev->retrans.kind == RT_KIND_SYNACK ? "synack" : "retransmit",
			    ev->retrans.srtt_us, ev->retrans.cwnd);
		break;
	case EV_RTT:
		mbuf_printf(m, ",\"rtt_us\":%u,\"srtt_us\":%u", ev->rtt.rtt_us, ev->rtt.srtt_us);
		break;
	}
	mbuf_puts(m, "}");
}

void flow_json(struct mbuf *m, const struct event *ev)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

	flow_addr(&ev->flow, true, s, sizeof(s));
	flow_addr(&ev->flow, false, d, sizeof(d));
	mbuf_printf(m,
		    ",\"family\":\"%s\",\"protocol\":\"%s\",\"saddr\":\"%s\",\"sport\":%u,"
		    "\"daddr\":\"%s\",\"dport\":%u",
		    ev->flow.family == 4   ? "ipv4"
		    : ev->flow.family == 6 ? "ipv6"
					   : "other",
		    proto_name(ev->flow.proto), s, ev->flow.sport, d, ev->flow.dport);
}

void flow_html(struct mbuf *m, const struct event *ev)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

	flow_addr(&ev->flow, true, s, sizeof(s));
	flow_addr(&ev->flow, false, d, sizeof(d));
	/* Addresses and numbers only: nothing here needs escaping. */
	mbuf_printf(m, "<td>%s</td><td>%u</td><td>%s%s%s:%u</td><td>%s%s%s:%u</td>",
		    proto_name(ev->flow.proto), ev->netns, ev->flow.family == 6 ? "[" : "", s,
		    ev->flow.family == 6 ? "]" : "", ev->flow.sport,
		    ev->flow.family == 6 ? "[" : "", d, ev->flow.family == 6 ? "]" : "",
		    ev->flow.dport);
}

static bool matches(const struct event_rec *r, const struct event_filter *f)
{
	if (f->type && r->ev.type != f->type)
		return false;
	if (f->reason && (r->ev.type != EV_DROP || !r->reason || strcmp(f->reason, r->reason)))
		return false;
	if (f->netns && r->ev.netns != f->netns)
		return false;
	return r->time >= f->since;
}

/* The i-th stored event, oldest first. Lock held. */
static const struct event_rec *stored(size_t i)
{
	return &store[(store_head + cfg.max_events - store_n + i) % cfg.max_events];
}

/*
 * Stored events hold consecutive seq numbers, the newest being seq (also across a restart of
 * the store, which empties it): the one with seq s is stored(s - oldest_seq()). Lock held.
 */
static uint64_t oldest_seq(void)
{
	return seq - store_n + 1;
}

void events_cursor_open(struct events_cursor *c, const struct event_filter *f, unsigned limit)
{
	uint64_t oldest;

	memset(c, 0, sizeof(*c));
	c->f = *f;
	if (f->reason) {
		snprintf(c->reason, sizeof(c->reason), "%s", f->reason);
		c->f.reason = c->reason;
	}
	pthread_mutex_lock(&lock);
	oldest = oldest_seq();
	c->next = oldest;
	c->end = seq;
	/* Back from the newest to the oldest of the last `limit` matching events. */
	for (size_t i = store_n; i-- > 0 && c->left < limit;) {
		if (matches(stored(i), &c->f)) {
			c->left++;
			c->next = oldest + i;
		}
	}
	pthread_mutex_unlock(&lock);
}

long events_cursor_read(struct events_cursor *c, char *buf, size_t max)
{
	size_t n;

	if (c->off == c->pending.len) {
		uint64_t oldest;

		mbuf_reset(&c->pending);
		c->off = 0;
		pthread_mutex_lock(&lock);
		oldest = oldest_seq();
		if (c->next < oldest)
			c->next = oldest;
		/* About max bytes per piece: the lock is held for a few dozen events at most. */
		while (c->left && c->next <= c->end && c->pending.len < max) {
			const struct event_rec *r = stored(c->next++ - oldest);

			if (!matches(r, &c->f))
				continue;
			event_json(&c->pending, r);
			mbuf_puts(&c->pending, "\n");
			c->left--;
		}
		pthread_mutex_unlock(&lock);
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

void events_top_json(struct mbuf *m)
{
	double now = clock_seconds(CLOCK_REALTIME);
	bool first = true;

	mbuf_puts(m, "{");
	pthread_mutex_lock(&lock);
	for (const struct analyzer *const *a = analyzers; *a; a++) {
		mbuf_printf(m, "%s\"%s\":", first ? "" : ",", (*a)->name);
		(*a)->top_json(m, now);
		first = false;
	}
	pthread_mutex_unlock(&lock);
	mbuf_puts(m, "}\n");
}

void events_status_html(struct mbuf *m)
{
	double now = clock_seconds(CLOCK_REALTIME);
	char when[32];

	pthread_mutex_lock(&lock);
	for (const struct analyzer *const *a = analyzers; *a; a++)
		(*a)->top_html(m, now);
	mbuf_puts(m, "<h2>Latest sampled events</h2>\n<table class=\"events\">\n<tr><th>time</th>"
		     "<th>type</th><th>protocol</th><th>netns</th><th>source</th>"
		     "<th>destination</th><th>detail</th></tr>\n");
	/* Newest first. */
	for (size_t k = 0; k < store_n && k < HTML_EVENTS; k++) {
		const struct event_rec *r = stored(store_n - 1 - k);
		time_t t = (time_t)r->time;
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		mbuf_printf(m, "<tr><td>%s</td><td>%s</td>", when, event_type_name(r->ev.type));
		flow_html(m, &r->ev);
		mbuf_puts(m, "<td>");
		if (r->ev.type == EV_DROP) {
			if (r->reason)
				escape_html(m, r->reason);
			else
				mbuf_printf(m, "%u", r->ev.drop.reason);
			mbuf_puts(m, " at ");
			escape_html(m, r->function);
			if (r->ifname[0]) {
				mbuf_puts(m, " on ");
				escape_html(m, r->ifname);
			}
		} else if (r->ev.type == EV_RETRANS) {
			escape_html(m, r->state);
			mbuf_printf(m, " srtt %u us", r->ev.retrans.srtt_us);
		} else {
			mbuf_printf(m, "rtt %u us", r->ev.rtt.rtt_us);
		}
		mbuf_puts(m, "</td></tr>\n");
	}
	mbuf_puts(m, "</table>\n");
	pthread_mutex_unlock(&lock);
}

bool events_drop_exemplar(uint32_t reason, uint8_t family, uint8_t proto, const char *function,
			  uint32_t netns, const char *ifname, struct labels *l, char *buf,
			  size_t len, double *time)
{
	static const uint8_t fam[NR_FAMILIES] = { 4, 6, 0, 0 };
	static const uint8_t prot[NR_PROTOS] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP,
						 IPPROTO_ICMPV6, 0 };
	const struct event_rec *best = NULL;
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	int n;

	if (family >= NR_FAMILIES || proto >= NR_PROTOS)
		return false;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < EXEMPLAR_SERIES; i++) {
		const struct event_rec *x = &exemplars[i];
		size_t fl = strcspn(x->function, "+");

		if (!x->seq || x->ev.drop.reason != reason || x->ev.flow.family != fam[family])
			continue;
		if (proto == PROTO_OTHER
			    ? x->ev.flow.proto == IPPROTO_TCP || x->ev.flow.proto == IPPROTO_UDP ||
				      x->ev.flow.proto == IPPROTO_ICMP ||
				      x->ev.flow.proto == IPPROTO_ICMPV6
			    : x->ev.flow.proto != prot[proto])
			continue;
		if ((netns && x->ev.netns != netns) || (ifname && strcmp(ifname, x->ifname)) ||
		    (function && (strlen(function) != fl || memcmp(function, x->function, fl))))
			continue;
		if (!best || x->seq > best->seq)
			best = x;
	}
	if (best) {
		flow_addr(&best->ev.flow, true, s, sizeof(s));
		flow_addr(&best->ev.flow, false, d, sizeof(d));
		*time = best->time;
		n = snprintf(buf, len, "%s%c%s%c%u%c%u", s, 0, d, 0, best->ev.flow.sport, 0,
			     best->ev.flow.dport);
		if (n > 0 && (size_t)n < len) {
			labels_add(l, "saddr", buf);
			buf += strlen(buf) + 1;
			labels_add(l, "daddr", buf);
			buf += strlen(buf) + 1;
			labels_add(l, "sport", buf);
			buf += strlen(buf) + 1;
			labels_add(l, "dport", buf);
		}
	}
	pthread_mutex_unlock(&lock);
	return best != NULL;
}
