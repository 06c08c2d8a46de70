// SPDX-License-Identifier: GPL-2.0-only
/* TCP round-trip times: bpf/rtt.bpf.c counts cells (bpf/hist.h), this file attaches and renders. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "collectors/bpfload.h"
#include "kernel/bpfmap.h"
#include "collectors/collector.h"
#include "collectors/histogram.h"
#include "collectors/rtt_existing.h"
#include "kernel/kernel.h"
#include "kernel/ns.h"
#include "base/log.h"
#include "base/parse.h"
#include "rtt.h"
#include "kernel/confine.h"
#include "sampling/events.h" /* before the skeleton: struct sample_config */
#include "rtt.skel.h"

#define DEFAULT_MAX_SERIES 1024
#define CGROUP_AUTO "auto"
#define CAPS_HINT " (sockops needs CAP_BPF and CAP_NET_ADMIN; the netns label also CAP_PERFMON)"

static const char *const kind_names[NR_RTT_KINDS] = { "srtt", "sample" };
static const char *const required_labels[] = { "family", NULL };
static const struct label_option optional_labels[] = {
	{ "netns", RTT_LABEL_NETNS },
	{ "rtt_kind", RTT_LABEL_KIND },
};
#define NR_OPTIONAL (sizeof(optional_labels) / sizeof(optional_labels[0]))

struct rtt_opts {
	struct series_opts series; /* first: registry.c parses labels, max_series */
	char cgroup[PATH_MAX];	   /* CGROUP_AUTO: the cgroup2 root from /proc/self/mountinfo */
	bool existing_sockets;	   /* turn the callback on for connections open before start */
	int native_schema;	   /* native buckets' schema, or HIST_NATIVE_OFF */
};
_Static_assert(sizeof(struct rtt_opts) <= COLLECTOR_OPTS_SIZE, "rtt options too large");

/* A running rtt collector. */
struct rtt {
	struct rtt_opts cfg;
	struct rtt_bpf *skel;
	struct events *events; /* owned by main */
	struct percpu_reader by_family, sums, cells;
	struct hist_family hists; /* hist: RTT_HIST(0, kind, family) */
	unsigned nhists;	  /* histograms in tcp_rtt_by_family's slices */
	bool existing_covered;
	bool logged_overflow;
};

static void rtt_reset(void *opts)
{
	struct rtt_opts *o = opts;

	strcpy(o->cgroup, CGROUP_AUTO);
	o->existing_sockets = true;
	o->native_schema = HIST_SCHEMA_DEFAULT;
}

static int rtt_set(void *opts, const char *key, const char *value, char *err, size_t errlen)
{
	struct rtt_opts *o = opts;

	if (!strcmp(key, "existing_sockets"))
		return parse_bool(value, &o->existing_sockets, err, errlen);
	if (!strcmp(key, "native_schema"))
		return hist_parse_schema(value, &o->native_schema, err, errlen);
	if (!strcmp(key, "cgroup")) {
		if (strcmp(value, CGROUP_AUTO) && value[0] != '/') {
			snprintf(err, errlen, "expected auto or an absolute path, got '%s'", value);
			return -EINVAL;
		}
		if (strlen(value) >= sizeof(o->cgroup)) {
			snprintf(err, errlen, "path longer than %zu characters",
				 sizeof(o->cgroup) - 1);
			return -ENAMETOOLONG;
		}
		/* No bytes of a longer path before it: reloads compare options whole (test_config.c). */
		memset(o->cgroup, 0, sizeof(o->cgroup));
		strcpy(o->cgroup, value);
		return 0;
	}
	return 1;
}

/*
 * Sockops RTT callbacks (Linux 5.3); the netns label reads the socket through skops->sk and
 * bpf_skc_to_tcp_sock (5.10, CAP_PERFMON). *iter tells whether the start-up pass can turn
 * callbacks on for open connections: iter/tcp with bpf_setsockopt(TCP_BPF_SOCK_OPS_CB_FLAGS)
 * (6.12).
 */
static int probe_kernel(const struct kernel *k, bool *iter)
{
	const struct kernel_features *f = &k->features;

	*iter = f->iter_tcp_cb_flags;
	if (f->btf_err) {
		log_error("rtt: no kernel BTF (/sys/kernel/btf/vmlinux): %s",
			  strerror(-f->btf_err));
		return -ENOENT;
	}
	if (!f->sockops_rtt_cb) {
		log_error("rtt: kernel has no sockops RTT callback (needs Linux 5.3 or later)");
		return -ENOENT;
	}
	return 0;
}

static void rtt_stop(void *state)
{
	struct rtt *rt = state;

	events_unloaded(rt->events, EV_RTT);
	rtt_bpf__destroy(rt->skel);
	percpu_reader_free(&rt->by_family);
	percpu_reader_free(&rt->sums);
	percpu_reader_free(&rt->cells);
	hist_family_free(&rt->hists);
	free(rt);
}

/*
 * with_iter: also the iterators over open connections; quiet: a failure is retried without, and
 * logged then. 0 or -errno.
 */
static int open_and_load(const struct collector_env *env, struct rtt *rt, bool with_iter,
			 bool quiet)
{
	bool netns = rt->cfg.series.label_mask & RTT_LABEL_NETNS;
	int err;

	rt->skel = rtt_bpf__open();
	if (!rt->skel) {
		err = -errno;
		/* Quiet: the retry without the iterators fails the same way and says so. */
		if (!quiet)
			log_error("rtt: cannot open BPF object: %s", strerror(-err));
		return err;
	}
	bpf_program__set_autoload(rt->cfg.series.label_mask
					  ? rt->skel->progs.tcp_rtt_sockops
					  : rt->skel->progs.tcp_rtt_sockops_labels,
				  false);
	bpf_program__set_autoload(rt->skel->progs.tcp_rtt_netns, with_iter);
	bpf_program__set_autoload(rt->skel->progs.tcp_rtt_existing, with_iter);
	rt->skel->rodata->label_mask = rt->cfg.series.label_mask;
	rt->skel->rodata->hist_stride = RTT_STRIDE(rt->nhists);
	bpf_map__set_value_size(rt->skel->maps.tcp_rtt_by_family,
				RTT_STRIDE(rt->nhists) * sizeof(uint64_t));
	bpf_map__set_max_entries(rt->skel->maps.tcp_rtt_by_family,
				 cpu_array_entries(1) /* a slice per element */);
	/* Without the netns label the hashes stay unused: keep them at one entry. */
	bpf_map__set_max_entries(rt->skel->maps.tcp_rtt, netns ? rt->cfg.series.max_series : 1);
	bpf_map__set_max_entries(rt->skel->maps.tcp_rtt_cells,
				 netns ? rt->cfg.series.max_series * RTT_NETNS_CELLS : 1);
	err = events_prepare(rt->events, rt->skel->obj, EV_RTT,
			     (struct sample_config *)&rt->skel->rodata->sample_cfg);
	if (!err)
		err = collector_load(env, rt->skel->skeleton, "rtt", CAPS_HINT, quiet);
	return err;
}

/* Linux 6.10 passes the measured RTT and the updated srtt to the callback; before, nothing. */
static bool callback_has_args(void)
{
	return kernel_at_least(6, 10);
}

/* family, then netns (hist_family_init), then rtt_kind */
static void rtt_labels(const void *collector, struct labels *l, uint32_t hist)
{
	const struct rtt *rt = collector;

	labels_add(l, "family", family_label(hist % NR_RTT_FAMILIES));
	if (rt->cfg.series.label_mask & RTT_LABEL_KIND)
		labels_add(l, "rtt_kind", kind_names[hist / NR_RTT_FAMILIES]);
}

static int rtt_start(const struct collector_env *env, const void *opts, void **state)
{
	const struct kernel *k = env->kernel;
	const struct rtt_opts *o = opts;
	struct rtt *rt;
	struct bpf_link **link;
	struct bpf_program *prog;
	char cgroup[PATH_MAX], hint[300];
	struct statfs fs;
	bool iter;
	int err, iter_err = 0, cgroup_fd = -1;

	err = probe_kernel(k, &iter);
	if (err)
		return err;
	iter = iter && o->existing_sockets;
	if (!strcmp(o->cgroup, CGROUP_AUTO)) {
		err = cgroup2_root(cgroup, sizeof(cgroup));
		if (err) {
			log_error("rtt: no cgroup2 mount in /proc/self/mountinfo (%s): mount one, "
				  "or set [collector.rtt] cgroup",
				  strerror(-err));
			return err;
		}
	} else {
		strcpy(cgroup, o->cgroup);
	}
	cgroup_fd = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgroup_fd < 0) {
		err = -errno;
		log_error("rtt: cannot open cgroup %s: %s", cgroup, strerror(-err));
		return err;
	}
	/* The kernel's EBADF from the attach would not say that the hierarchy is the wrong one. */
	if (!fstatfs(cgroup_fd, &fs) && fs.f_type != CGROUP2_SUPER_MAGIC) {
		const char *what = fs.f_type == CGROUP_SUPER_MAGIC ? "it is cgroup v1"
				   : fs.f_type == TMPFS_MAGIC	   ? "a tmpfs: the cgroup v1 layout"
								   : "another filesystem";

		log_error(
			"rtt: cgroup %s is not a cgroup2 mount (%s): sockops attach only to "
			"cgroup2; mount the cgroup2 hierarchy there or set [collector.rtt] cgroup "
			"to its mount (/sys/fs/cgroup/unified on the hybrid layout), see "
			"docs/collectors/rtt.md",
			cgroup, what);
		close(cgroup_fd);
		return -EINVAL;
	}
	rt = calloc(1, sizeof(*rt));
	if (!rt) {
		close(cgroup_fd);
		return -ENOMEM;
	}
	rt->cfg = *o;
	rt->events = env->events;
	/* The highest histogram the label set reaches, and those below it. */
	rt->nhists = RTT_HIST(!!(o->series.label_mask & RTT_LABEL_NETNS),
			      !!(o->series.label_mask & RTT_LABEL_KIND), NR_RTT_FAMILIES - 1) +
		     1;
	{
		uint32_t bounds[RTT_NR_BOUNDS];

		for (int i = 0; i < RTT_NR_BOUNDS; i++)
			bounds[i] = 1u << (RTT_MIN_SHIFT + i);
		/* Powers of two are cell boundaries, and the key checked the schema. */
		hist_family_init(&rt->hists, bounds, RTT_NR_BOUNDS, o->native_schema, rtt_labels,
				 o->series.label_mask & RTT_LABEL_NETNS ? 1 : -1);
	}

	err = open_and_load(env, rt, iter, iter);
	if (err && iter) {
		/*
		 * Without CAP_PERFMON, or on a kernel that refuses bpf_setsockopt in iter/tcp,
		 * measure new connections only.
		 */
		iter_err = err;
		rtt_bpf__destroy(rt->skel);
		rt->skel = NULL;
		iter = false;
		err = open_and_load(env, rt, iter, false);
	}
	if (err)
		goto cleanup;
	/* Without optional labels, the program that has no label code (bpf/rtt.bpf.c). */
	prog = rt->cfg.series.label_mask ? rt->skel->progs.tcp_rtt_sockops_labels
					 : rt->skel->progs.tcp_rtt_sockops;
	link = rt->cfg.series.label_mask ? &rt->skel->links.tcp_rtt_sockops_labels
					 : &rt->skel->links.tcp_rtt_sockops;
	*link = bpf_program__attach_cgroup(prog, cgroup_fd);
	if (!*link) {
		err = -errno;
		log_error("rtt: cannot attach sockops to cgroup %s: %s%s", cgroup, strerror(-err),
			  confine_denied_hint(err, hint, sizeof(hint)));
		goto cleanup;
	}
	err = collector_attach(env, rt->skel->skeleton, "rtt", NULL, EV_RTT);
	if (err)
		goto cleanup;
	err = cpu_array_reader_init(&rt->by_family, bpf_map__fd(rt->skel->maps.tcp_rtt_by_family),
				    rt->nhists * HIST_SIZE, RTT_STRIDE(rt->nhists));
	if (!err)
		err = percpu_reader_init(&rt->sums, bpf_map__fd(rt->skel->maps.tcp_rtt),
					 sizeof(struct rtt_key),
					 bpf_map__max_entries(rt->skel->maps.tcp_rtt));
	if (!err)
		err = percpu_reader_init(&rt->cells, bpf_map__fd(rt->skel->maps.tcp_rtt_cells),
					 sizeof(struct rtt_key),
					 bpf_map__max_entries(rt->skel->maps.tcp_rtt_cells));
	if (err) {
		log_error("rtt: cannot allocate map buffers: %s", strerror(-err));
		goto cleanup;
	}
	if (o->native_schema != HIST_NATIVE_OFF)
		log_info("rtt: attached sockops to cgroup %s (max_series=%u, native buckets of "
			 "schema %d)",
			 cgroup, rt->cfg.series.max_series, o->native_schema);
	else
		log_info("rtt: attached sockops to cgroup %s (max_series=%u, native buckets off)",
			 cgroup, rt->cfg.series.max_series);
	if (!callback_has_args())
		log_warn("rtt: before Linux 6.10 the RTT callback carries no values: srtt is read "
			 "as it was before the update, and rtt_kind=\"sample\" stays empty");
	close(cgroup_fd);

	*state = rt;
	if (iter)
		rt->existing_covered = rtt_cover_existing(rt->skel, env->rtt_covered_once);
	else if (!rt->cfg.existing_sockets)
		log_info("rtt: TCP connections open before start are not measured until they "
			 "reconnect (existing_sockets = false)");
	else if (iter_err)
		log_warn("rtt: TCP connections open before start are not measured until they "
			 "reconnect: cannot load the iterators that turn their RTT callbacks on "
			 "(%s; they need CAP_PERFMON)",
			 strerror(-iter_err));
	else
		log_warn("rtt: TCP connections open before start are not measured until they "
			 "reconnect: the kernel cannot turn RTT callbacks on for them "
			 "(bpf_setsockopt TCP_BPF_SOCK_OPS_CB_FLAGS from iter/tcp, Linux 6.12+)");
	return 0;
cleanup:
	close(cgroup_fd);
	rtt_stop(rt);
	return err;
}

/* A key's histogram, as the family indexes it. */
static uint32_t hist_of(const struct rtt_key *k)
{
	return RTT_HIST(0, k->kind < NR_RTT_KINDS ? k->kind : RTT_KIND_SRTT,
			k->family < NR_RTT_FAMILIES ? k->family : RTT_IPV4);
}

/*
 * Histograms from the array: by family, or (netns label) what the hashes had no room for, whose
 * samples *overflowed counts.
 */
static int from_array(struct rtt *rt, bool overflow_part, uint64_t *overflowed)
{
	for (uint32_t i = 0; i < NR_RTT_FAMILIES * NR_RTT_KINDS; i++) {
		const uint64_t *h = rt->by_family.sums +
				    (size_t)(RTT_HIST(overflow_part, 0, 0) + i) * HIST_SIZE;
		uint64_t count, *c;

		if (i / NR_RTT_FAMILIES != RTT_KIND_SRTT &&
		    !(rt->cfg.series.label_mask & RTT_LABEL_KIND))
			continue;
		/* Histograms by family always appear; overflow ones once used. */
		if (overflow_part) {
			count = hist_count(h);
			*overflowed += count;
			if (!count)
				continue;
		}
		c = hist_family_add(&rt->hists, overflow_part, 0, i);
		if (!c)
			return -ENOMEM;
		memcpy(c, h, HIST_SIZE * sizeof(*c));
	}
	return 0;
}

/* The netns histograms: their sums from tcp_rtt, their cells from tcp_rtt_cells. */
static int from_hashes(struct rtt *rt, int ns, int nc)
{
	for (int i = 0; i < ns; i++) {
		const struct rtt_key *k = (struct rtt_key *)rt->sums.keys + i;
		uint64_t *c = hist_family_add(&rt->hists, false, k->netns, hist_of(k));

		if (!c)
			return -ENOMEM;
		c[HIST_SUM] = rt->sums.sums[i];
	}
	for (int i = 0; i < nc; i++) {
		const struct rtt_key *k = (struct rtt_key *)rt->cells.keys + i;
		uint64_t *c = hist_family_find(&rt->hists, false, k->netns, hist_of(k));

		/* A series inserted between the two reads shows up next scrape. */
		if (c && k->cell < HIST_CELLS)
			c[k->cell] += rt->cells.sums[i];
	}
	return 0;
}

static int rtt_collect(void *state, struct expo *e)
{
	struct rtt *rt = state;
	bool netns = rt->cfg.series.label_mask & RTT_LABEL_NETNS;
	uint64_t overflowed = 0;
	int na, ns = 0, nc = 0, err;

	na = percpu_reader_read(&rt->by_family);
	if (netns) {
		ns = percpu_reader_read(&rt->sums);
		nc = percpu_reader_read(&rt->cells);
	}
	if (na < 0 || ns < 0 || nc < 0) {
		err = na < 0 ? na : ns < 0 ? ns : nc;
		log_warn("rtt: cannot read maps: %s", strerror(-err));
		return err;
	}
	hist_family_clear(&rt->hists);
	err = netns ? from_hashes(rt, ns, nc) : 0;
	if (!err)
		err = from_array(rt, netns, &overflowed);
	if (err)
		return err;

	expo_family(e, RTT_FAMILY, METRIC_HISTOGRAM,
		    "TCP round-trip time: the smoothed RTT (as ss shows it) each time the kernel "
		    "measures a round trip (sockops RTT callback).");
	hist_family_render(&rt->hists, e, rt);
	expo_family(e, "netstack_tcp_rtt_existing_sockets_covered", METRIC_GAUGE,
		    "1 when TCP connections open before the exporter started are measured too, 0 "
		    "when some are not until they reconnect.");
	expo_u64(e, NULL, rt->existing_covered);

	if (overflowed)
		log_once(rt->logged_overflow, LOG_WARN,
			 "rtt: map tcp_rtt is full (max_series=%u), or tcp_rtt_cells (%u cells); "
			 "further samples without room are counted with netns '" OVERFLOW_LABEL "'",
			 rt->cfg.series.max_series, rt->cfg.series.max_series * RTT_NETNS_CELLS);
	expo_map_overflow(e, "tcp_rtt", overflowed);
	return 0;
}

static struct bpf_object *rtt_object(void *state)
{
	return ((struct rtt *)state)->skel->obj;
}

const struct collector_ops rtt_collector = {
	.name = RTT_COLLECTOR,
	.description = "TCP round-trip times as a histogram (sockops RTT callback)",
	.default_enabled = true,
	.sampled = EV_RTT,
	.required_labels = required_labels,
	.optional_labels = optional_labels,
	.n_optional = NR_OPTIONAL,
	.max_series = DEFAULT_MAX_SERIES,
	.max_series_limit = 1u << 16,
	.reset = rtt_reset,
	.set = rtt_set,
	.start = rtt_start,
	.collect = rtt_collect,
	.stop = rtt_stop,
	.object = rtt_object,
};
