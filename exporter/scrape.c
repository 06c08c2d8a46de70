// SPDX-License-Identifier: GPL-2.0-only
/* One scrape: every enabled collector, then the exporter's own metrics. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "collectors/collector.h"
#include "sampling/events.h"
#include "base/log.h"
#include "kernel/pin.h"
#include "pods/pods.h"
#include "version.h"
#include "scrape.h"

struct scrape {
	pthread_mutex_t lock;
	struct collector *running; /* main.c's table */
	struct pods *pods;	   /* for the pod-label filters and its metrics; NULL: none */
	struct events *events;	   /* NULL: none */
	struct labels constant;
	char constant_value[384]; /* its one value (node, under 128 bytes) made a label value */
	bool reload_ok;
	bool logged_bad_names;
	double reload_ok_time; /* wall clock of the last successful load, start-up included */
};

struct scrape *scrape_new(struct collector *table, struct pods *pods, struct events *evs)
{
	struct scrape *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	s->running = table;
	s->pods = pods;
	s->events = evs;
	s->reload_ok = true;
	return s;
}

void scrape_free(struct scrape *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s);
}

bool scrape_collector_at(const struct scrape *s, size_t i, struct collector_status *cs)
{
	const struct collector *c = &s->running[i];

	if (!c->ops)
		return false;
	*cs = (struct collector_status){ c->ops->name, c->ops->description, c->enabled,
					 c->state != NULL };
	return true;
}

void scrape_lock(struct scrape *s)
{
	pthread_mutex_lock(&s->lock);
}

void scrape_unlock(struct scrape *s)
{
	pthread_mutex_unlock(&s->lock);
}

void scrape_constant_label(struct scrape *s, const char *name, const char *value)
{
	label_text(s->constant_value, sizeof(s->constant_value), value);
	labels_add(&s->constant, name, s->constant_value);
}

void scrape_reload_result(struct scrape *s, bool ok)
{
	struct timespec ts;

	s->reload_ok = ok;
	if (ok) {
		clock_gettime(CLOCK_REALTIME, &ts);
		s->reload_ok_time = ts.tv_sec + ts.tv_nsec / 1e9;
	}
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * scrape_read's filter: a family the pod filter folds goes to it first, and what its flush
 * writes (its folded series) goes on to tap through an exposition of its own; the others go to
 * tap as they come.
 */
struct tap_chain {
	struct expo_filter f;
	struct expo_filter *pods, *tap; /* pods: the collector's pod filter, NULL: none */
	bool folding;			/* the current family goes to pods */
	const char *family;
	enum metric_type type;
	struct expo folded; /* pods' output, its filter tap */
};

static bool chain_capture(struct expo_filter *f, const char *family, enum metric_type type)
{
	struct tap_chain *c = (struct tap_chain *)f;

	c->folding = c->pods && c->pods->capture(c->pods, family, type);
	c->family = family;
	c->type = type;
	return c->folding || c->tap->capture(c->tap, family, type);
}

static void chain_sample(struct expo_filter *f, const struct labels *l, const double *bounds,
			 const uint64_t *counts, int nbounds, double sum,
			 const struct native_hist *nh, const struct exemplar *ex)
{
	struct tap_chain *c = (struct tap_chain *)f;
	struct expo_filter *to = c->folding ? c->pods : c->tap;

	to->sample(to, l, bounds, counts, nbounds, sum, nh, ex);
}

static void chain_flush(struct expo_filter *f, struct expo *e, bool keep)
{
	struct tap_chain *c = (struct tap_chain *)f;

	if (!c->folding) {
		c->tap->flush(c->tap, e, keep);
		return;
	}
	/* tap decides here whether it takes the folded family; what it does not take is text. */
	expo_family(&c->folded, c->family, c->type, NULL);
	c->pods->flush(c->pods, &c->folded, keep);
	expo_set_filter(&c->folded, c->tap, keep);
}

/* chain: scrape_read's (its pods filled in here), NULL: a scrape's. */
static void render_collector(const struct scrape *s, struct collector *c, struct expo *e,
			     struct tap_chain *chain)
{
	struct expo_filter *pods;
	size_t mark = e->out->len;
	double start = now_seconds();
	uint64_t gen = 0;
	bool ok;

	/*
	 * Pod labels are folded in at render time, from the netns label the collector writes; the
	 * fold tells the collector's restarts by the ids of the maps it counts into.
	 */
	if (s->pods && c->ops->object)
		gen = counters_generation(c->ops->object(c->state));
	pods = s->pods ? pods_filter(s->pods, c->ops->name, gen) : NULL;
	if (chain)
		chain->pods = pods;
	expo_set_filter(e, chain ? &chain->f : pods, true);
	ok = c->ops->collect(c->state, e) == 0;
	expo_set_filter(e, NULL, ok);
	/* A failing collector leaves nothing half-written, and the scrape goes on. */
	if (!ok)
		e->out->len = mark;
	c->last_success = ok;
	c->last_duration = now_seconds() - start;
}

enum collector_reading scrape_read(struct scrape *s, const char *collector, struct expo_filter *tap)
{
	struct tap_chain chain = { .f = { chain_capture, chain_sample, chain_flush }, .tap = tap };
	struct mbuf scratch = { 0 }, folded = { 0 };
	struct collector *c = s->running;
	struct expo e;

	while (c->ops && strcmp(c->ops->name, collector))
		c++;
	if (!c->ops)
		return READING_NOT_BUILT;
	if (!c->enabled)
		return READING_DISABLED;
	if (!c->state)
		return READING_DOWN;
	expo_init(&e, &scratch, FORMAT_PROMETHEUS);
	expo_init(&chain.folded, &folded, FORMAT_PROMETHEUS);
	expo_set_filter(&chain.folded, tap, true);
	render_collector(s, c, &e, &chain);
	expo_finish(&e);
	expo_finish(&chain.folded);
	mbuf_free(&scratch);
	mbuf_free(&folded);
	return c->last_success ? READING_OK : READING_FAILED;
}

static void per_collector(const struct scrape *s, struct expo *e, const char *name,
			  const char *help, enum metric_type type, int which)
{
	expo_family(e, name, type, help);
	for (const struct collector *c = s->running; c->ops; c++) {
		bool up = c->state;
		struct labels l = { 0 };

		if (!c->enabled)
			continue;
		labels_add(&l, "collector", c->ops->name);
		if (which == 0)
			expo_u64(e, &l, up);
		else if (which == 1)
			expo_u64(e, &l, up && c->last_success);
		else
			expo_double(e, &l, up ? c->last_duration : 0);
	}
}

static bool bpf_stats_enabled(void)
{
	FILE *f = fopen("/proc/sys/kernel/bpf_stats_enabled", "r");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v == 1;
}

/* Run counts and run time per program, kept by the kernel only while bpf_stats is on. */
static void render_bpf_stats(const struct scrape *s, struct expo *e)
{
	struct {
		const char *name;
		struct bpf_prog_info info;
	} progs[32];
	int n = 0;

	if (!bpf_stats_enabled())
		return;
	for (const struct collector *c = s->running; c->ops; c++) {
		struct bpf_object *obj =
			c->state && c->ops->object ? c->ops->object(c->state) : NULL;
		struct bpf_program *prog;

		if (!obj)
			continue;
		bpf_object__for_each_program(prog, obj) {
			__u32 len = sizeof(struct bpf_prog_info);

			if (n == (int)(sizeof(progs) / sizeof(progs[0])) ||
			    bpf_program__fd(prog) < 0)
				continue;
			memset(&progs[n].info, 0, len);
			if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &progs[n].info, &len))
				continue;
			progs[n++].name = bpf_program__name(prog);
		}
	}
	expo_family(e, "netstack_bpf_program_runs_total", METRIC_COUNTER,
		    "Times each BPF program ran (kernel.bpf_stats_enabled=1 only).");
	for (int i = 0; i < n; i++) {
		struct labels l = { 0 };

		labels_add(&l, "program", progs[i].name);
		expo_u64(e, &l, progs[i].info.run_cnt);
	}
	expo_family(e, "netstack_bpf_program_run_seconds_total", METRIC_COUNTER,
		    "Time spent in each BPF program (kernel.bpf_stats_enabled=1 only).");
	for (int i = 0; i < n; i++) {
		struct labels l = { 0 };

		labels_add(&l, "program", progs[i].name);
		expo_double(e, &l, progs[i].info.run_time_ns / 1e9);
	}
}

static void render_process(struct expo *e)
{
	unsigned long utime = 0, stime = 0, vsize = 0;
	unsigned long long starttime = 0, btime = 0;
	long rss = 0, ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	struct rlimit rl = { 0 };
	char line[256];
	int fds = 0;
	FILE *f;
	DIR *d;

	f = fopen("/proc/self/stat", "r");
	if (f) {
		/* Fields 14, 15, 22, 23, 24; the command name (2) cannot contain ") " here. */
		if (fscanf(f,
			   "%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d "
			   "%*d %*d %*d %*d %llu %lu %ld",
			   &utime, &stime, &starttime, &vsize, &rss) != 5)
			utime = stime = 0;
		fclose(f);
	}
	f = fopen("/proc/stat", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", &btime) == 1)
			break;
	if (f)
		fclose(f);
	d = opendir("/proc/self/fd");
	while (d && readdir(d))
		fds++;
	if (d) {
		closedir(d);
		fds -= 3; /* ".", ".." and the directory's own fd */
	}
	getrlimit(RLIMIT_NOFILE, &rl);

	expo_family(e, "process_cpu_seconds_total", METRIC_COUNTER,
		    "Total user and system CPU time spent in seconds.");
	expo_double(e, NULL, (double)(utime + stime) / ticks);
	expo_family(e, "process_resident_memory_bytes", METRIC_GAUGE,
		    "Resident memory size in bytes.");
	expo_u64(e, NULL, (uint64_t)rss * page);
	expo_family(e, "process_virtual_memory_bytes", METRIC_GAUGE,
		    "Virtual memory size in bytes.");
	expo_u64(e, NULL, vsize);
	expo_family(e, "process_start_time_seconds", METRIC_GAUGE,
		    "Start time of the process since unix epoch in seconds.");
	expo_double(e, NULL, btime + (double)starttime / ticks);
	expo_family(e, "process_open_fds", METRIC_GAUGE, "Number of open file descriptors.");
	expo_u64(e, NULL, fds);
	expo_family(e, "process_max_fds", METRIC_GAUGE, "Maximum number of open file descriptors.");
	expo_u64(e, NULL, rl.rlim_cur);
}

void scrape_render(struct scrape *s, struct mbuf *out, enum metric_format format,
		   const struct guard_stats *gs)
{
	struct utsname uts;
	struct labels l = { 0 };
	char kernel[3 * sizeof(uts.release)];
	struct expo e;

	mbuf_reset(out);
	expo_init(&e, out, format);
	e.constant = s->constant.n ? &s->constant : NULL;
	for (struct collector *c = s->running; c->ops; c++)
		if (c->enabled && c->state)
			render_collector(s, c, &e, NULL);
	if (s->events)
		events_collect(s->events, &e);

	uname(&uts);
	expo_family(&e, "netstack_exporter_build_info", METRIC_GAUGE,
		    "Build and kernel the exporter runs with; always 1.");
	labels_add(&l, "version", NETSTACK_VERSION);
	labels_add(&l, "commit", NETSTACK_COMMIT);
	labels_add(&l, "kernel", label_text(kernel, sizeof(kernel), uts.release));
	expo_u64(&e, &l, 1);
	/* Prometheus' own names for its reloads. */
	expo_family(&e, "netstack_config_last_reload_successful", METRIC_GAUGE,
		    "Whether the last configuration reload (SIGHUP) was applied; 1 before any.");
	expo_u64(&e, NULL, s->reload_ok);
	expo_family(&e, "netstack_config_last_reload_success_timestamp_seconds", METRIC_GAUGE,
		    "When the configuration was last loaded successfully (start-up or SIGHUP).");
	expo_double(&e, NULL, s->reload_ok_time);
	expo_family(
		&e, "netstack_http_connections_evicted_total", METRIC_COUNTER,
		"Connections closed over max_connections, of the addresses that held the most.");
	expo_u64(&e, NULL, gs->evicted);
	expo_family(
		&e, "netstack_http_auth_refused_total", METRIC_COUNTER,
		"Password checks refused before bcrypt: rate_limited (429, the address's failure "
		"budget), queue_full (503).");
	expo_u64(&e, &(struct labels){ 1, { "reason" }, { "rate_limited" } }, gs->limited);
	expo_u64(&e, &(struct labels){ 1, { "reason" }, { "queue_full" } }, gs->busy);
	per_collector(s, &e, "netstack_collector_up",
		      "Whether the collector's BPF programs are attached.", METRIC_GAUGE, 0);
	per_collector(s, &e, "netstack_scrape_collector_success",
		      "Whether the collector succeeded in this scrape.", METRIC_GAUGE, 1);
	per_collector(s, &e, "netstack_scrape_collector_duration_seconds",
		      "Time the collector took in this scrape.", METRIC_GAUGE, 2);
	expo_family(&e, "netstack_map_overflow_total", METRIC_COUNTER,
		    "Events a bounded BPF map had no room for (counted in overflow series).");
	for (unsigned i = 0; i < e.n_overflows; i++) {
		struct labels ml = { 0 };

		labels_add(&ml, "map", e.overflows[i].map);
		expo_u64(&e, &ml, e.overflows[i].count);
	}
	if (s->pods)
		pods_render_metrics(s->pods, &e);
	render_bpf_stats(s, &e);
	render_process(&e);
	expo_finish(&e);
	if (e.bad_samples)
		log_once(s->logged_bad_names, LOG_ERROR,
			 "scrape: %u samples left out: a label name is not "
			 "[a-zA-Z_][a-zA-Z0-9_]* (a bug)",
			 e.bad_samples);
}
