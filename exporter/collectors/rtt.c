// SPDX-License-Identifier: GPL-2.0-only
/* TCP round-trip times: bpf/rtt.bpf.c fills log2 histograms, this file attaches and renders. */
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
#include "collectors/nativehist.h"
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

static const char *const family_names[NR_RTT_FAMILIES] = { "ipv4", "ipv6" };
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
	int native_schema;	   /* native buckets' schema, or NATIVE_OFF */
};
_Static_assert(sizeof(struct rtt_opts) <= COLLECTOR_OPTS_SIZE, "rtt options too large");

/* One histogram being rendered. */
struct hist {
	uint32_t netns;
	uint8_t family;
	uint8_t kind;
	bool overflow; /* netns unknown: the hash was full */
	uint64_t sum_us;
	uint64_t counts[RTT_NR_BUCKETS];
	uint64_t *native; /* table.slots native slots, or NULL (native buckets off) */
};

/* A running rtt collector. */
struct rtt {
	struct rtt_opts cfg;
	struct rtt_bpf *skel;
	struct events *events; /* owned by main */
	struct percpu_reader by_family, sums, buckets;
	struct percpu_reader native_arr, native_hash; /* when native buckets are on */
	struct native_table table;		      /* the schema's edges (native.h) */
	unsigned native_hists;			      /* histograms in tcp_rtt_native's slices */
	double bounds[RTT_NR_BOUNDS];		      /* upper bounds in seconds */
	bool existing_covered;
	bool logged_overflow;
	struct hist *hists;
	uint64_t *native_slots; /* table.slots per histogram of hists */
	size_t hists_cap;
};

static void rtt_reset(void *opts)
{
	struct rtt_opts *o = opts;

	strcpy(o->cgroup, CGROUP_AUTO);
	o->existing_sockets = true;
	o->native_schema = NATIVE_SCHEMA_DEFAULT;
}

static int rtt_set(void *opts, const char *key, const char *value, char *err, size_t errlen)
{
	struct rtt_opts *o = opts;

	if (!strcmp(key, "existing_sockets"))
		return parse_bool(value, &o->existing_sockets, err, errlen);
	if (!strcmp(key, "native_schema"))
		return native_parse_schema(value, &o->native_schema, err, errlen);
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
	percpu_reader_free(&rt->buckets);
	percpu_reader_free(&rt->native_arr);
	percpu_reader_free(&rt->native_hash);
	free(rt->hists);
	free(rt->native_slots);
	free(rt);
}

/*
 * Native slots the netns hash has room for, per histogram on average: RTT_NATIVE_OCTAVES octaves'
 * worth, not all the schema's (the reader reserves room for each entry on every CPU). A sample
 * whose slot finds no room is counted in the overflow histograms, classic and native alike.
 */
static uint32_t native_room(const struct native_table *t)
{
	uint32_t room = RTT_NATIVE_OCTAVES << t->schema;

	return room < t->slots ? room : t->slots;
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
	bpf_map__set_max_entries(rt->skel->maps.tcp_rtt_by_family,
				 cpu_array_entries(1) /* a slice per element */);
	/* Without the netns label the hashes stay unused: keep them at one entry. */
	bpf_map__set_max_entries(rt->skel->maps.tcp_rtt, netns ? rt->cfg.series.max_series : 1);
	bpf_map__set_max_entries(rt->skel->maps.tcp_rtt_buckets,
				 netns ? rt->cfg.series.max_series * RTT_NR_BUCKETS : 1);
	if (rt->native_hists) {
		uint32_t stride = RTT_NATIVE_STRIDE(rt->native_hists, rt->table.slots);

		rt->skel->rodata->native_stride = stride;
		rt->skel->rodata->native_schema = rt->table.schema;
		bpf_map__set_value_size(rt->skel->maps.tcp_rtt_native, stride * sizeof(uint64_t));
		bpf_map__set_max_entries(rt->skel->maps.tcp_rtt_native, cpu_array_entries(1));
		if (netns)
			bpf_map__set_max_entries(rt->skel->maps.tcp_rtt_nslots,
						 rt->cfg.series.max_series *
							 native_room(&rt->table));
	}
	err = events_prepare(rt->events, rt->skel->obj, EV_RTT,
			     (struct sample_config *)&rt->skel->rodata->sample_cfg);
	if (!err)
		err = bpf_load(env, rt->skel->skeleton, "rtt", CAPS_HINT, quiet);
	/* The edges, before anything is attached: the program reads them from its first run. */
	if (!err && rt->native_hists) {
		uint32_t zero = 0;

		if (bpf_map_update_elem(bpf_map__fd(rt->skel->maps.rtt_native_edges), &zero,
					&rt->table, BPF_ANY)) {
			err = -errno;
			log_error("rtt: cannot write the native buckets' edges: %s",
				  strerror(-err));
		}
	}
	return err;
}

/* Linux 6.10 passes the measured RTT and the updated srtt to the callback; before, nothing. */
static bool callback_has_args(void)
{
	return kernel_at_least(6, 10);
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
	if (o->native_schema != NATIVE_OFF) {
		unsigned m = o->series.label_mask;

		native_table_init(&rt->table, o->native_schema); /* the key checked the schema */
		/* The highest histogram the label set reaches, and those below it. */
		rt->native_hists = RTT_HIST(!!(m & RTT_LABEL_NETNS), !!(m & RTT_LABEL_KIND),
					    NR_RTT_FAMILIES - 1) +
				   1;
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
	err = bpf_attach(env, rt->skel->skeleton, "rtt", NULL, EV_RTT);
	if (err)
		goto cleanup;
	err = cpu_array_reader_init(&rt->by_family, bpf_map__fd(rt->skel->maps.tcp_rtt_by_family),
				    RTT_ARRAY_SIZE, RTT_STRIDE);
	if (!err)
		err = percpu_reader_init(&rt->sums, bpf_map__fd(rt->skel->maps.tcp_rtt),
					 sizeof(struct rtt_key),
					 bpf_map__max_entries(rt->skel->maps.tcp_rtt));
	if (!err)
		err = percpu_reader_init(&rt->buckets, bpf_map__fd(rt->skel->maps.tcp_rtt_buckets),
					 sizeof(struct rtt_key),
					 bpf_map__max_entries(rt->skel->maps.tcp_rtt_buckets));
	if (!err && rt->native_hists)
		err = cpu_array_reader_init(&rt->native_arr,
					    bpf_map__fd(rt->skel->maps.tcp_rtt_native),
					    rt->native_hists * rt->table.slots,
					    RTT_NATIVE_STRIDE(rt->native_hists, rt->table.slots));
	if (!err && rt->native_hists && (rt->cfg.series.label_mask & RTT_LABEL_NETNS))
		err = percpu_reader_init(&rt->native_hash,
					 bpf_map__fd(rt->skel->maps.tcp_rtt_nslots),
					 sizeof(struct rtt_native_key),
					 bpf_map__max_entries(rt->skel->maps.tcp_rtt_nslots));
	if (err) {
		log_error("rtt: cannot allocate map buffers: %s", strerror(-err));
		goto cleanup;
	}
	for (int i = 0; i < RTT_NR_BOUNDS; i++)
		rt->bounds[i] = (double)(1ull << (RTT_MIN_SHIFT + i)) / 1e6;
	if (rt->native_hists)
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
		rt->existing_covered = rtt_cover_existing(rt->skel);
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

static int cmp_hist(const void *a, const void *b)
{
	const struct hist *x = a, *y = b;

	if (x->family != y->family)
		return x->family - y->family;
	if (x->overflow != y->overflow)
		return x->overflow - y->overflow;
	if (x->netns != y->netns)
		return x->netns < y->netns ? -1 : 1;
	return x->kind - y->kind;
}

static struct hist *new_hist(struct rtt *rt, size_t *n, const struct rtt_key *k, bool overflow)
{
	struct hist *h = &rt->hists[*n];

	memset(h, 0, sizeof(*h));
	/* Slots by order of creation: a histogram keeps its own wherever sorting moves it. */
	if (rt->native_hists) {
		h->native = rt->native_slots + *n * rt->table.slots;
		memset(h->native, 0, rt->table.slots * sizeof(*h->native));
	}
	(*n)++;
	h->family = k->family < NR_RTT_FAMILIES ? k->family : RTT_IPV4;
	h->kind = k->kind < NR_RTT_KINDS ? k->kind : RTT_KIND_SRTT;
	h->netns = k->netns;
	h->overflow = overflow;
	return h;
}

/*
 * Histograms from the array: by family, or (netns label) what the hash had no room for. Their
 * count of samples: with the netns label, the samples the hash had no room for.
 */
static uint64_t from_array(struct rtt *rt, size_t *n, bool overflow_part)
{
	const uint64_t *v = rt->by_family.sums; /* RTT_ARRAY_SIZE slots */
	uint64_t total = 0;

	for (int i = 0; i < NR_RTT_FAMILIES * NR_RTT_KINDS; i++) {
		struct rtt_key k = { .family = i % NR_RTT_FAMILIES, .kind = i / NR_RTT_FAMILIES };
		unsigned hist = RTT_HIST(overflow_part, k.kind, k.family);
		struct hist *h;
		uint64_t count = 0;

		if (k.kind != RTT_KIND_SRTT && !(rt->cfg.series.label_mask & RTT_LABEL_KIND))
			continue;
		h = new_hist(rt, n, &k, overflow_part);
		for (unsigned b = 0; b < RTT_NR_BUCKETS; b++) {
			unsigned i_count = RTT_COUNT(hist, b), i_sum = RTT_SUM(hist, b);

			h->counts[b] = v[i_count];
			h->sum_us += v[i_sum];
			count += h->counts[b];
		}
		if (h->native)
			memcpy(h->native, rt->native_arr.sums + (size_t)hist * rt->table.slots,
			       rt->table.slots * sizeof(*h->native));
		total += count;
		/* Histograms by family always appear; overflow ones once used. */
		if (overflow_part && !count && !h->sum_us)
			(*n)--;
	}
	return total;
}

static void render_hist(const struct rtt *rt, struct expo *e, const struct hist *h)
{
	struct labels l = { 0 };
	struct native_hist nh;
	char netns[21];

	labels_add(&l, "family", family_names[h->family]);
	if (rt->cfg.series.label_mask & RTT_LABEL_NETNS)
		labels_add(&l, "netns", h->overflow ? OVERFLOW_LABEL : u64_str(netns, h->netns));
	if (rt->cfg.series.label_mask & RTT_LABEL_KIND)
		labels_add(&l, "rtt_kind", kind_names[h->kind]);
	if (!h->native) {
		expo_histogram(e, &l, rt->bounds, h->counts, RTT_NR_BOUNDS, h->sum_us / 1e6);
		return;
	}
	native_hist_of(&nh, &rt->table, h->native);
	expo_histogram_native(e, &l, rt->bounds, h->counts, RTT_NR_BOUNDS, h->sum_us / 1e6, &nh);
}

/* Native slots of the netns histograms found in hists[0..nsorted), from their hash. */
static void native_from_hash(struct rtt *rt, size_t nsorted, int nn)
{
	for (int i = 0; i < nn; i++) {
		const struct rtt_native_key *k = (struct rtt_native_key *)rt->native_hash.keys + i;
		struct hist key = { .family = k->family, .kind = k->kind, .netns = k->netns };
		struct hist *h = bsearch(&key, rt->hists, nsorted, sizeof(*rt->hists), cmp_hist);

		if (h && k->slot < rt->table.slots)
			h->native[k->slot] += rt->native_hash.sums[i];
	}
}

static int rtt_collect(void *state, struct expo *e)
{
	struct rtt *rt = state;
	bool netns = rt->cfg.series.label_mask & RTT_LABEL_NETNS;
	uint64_t overflowed = 0;
	int na, ns = 0, nb = 0, nn = 0, nna = 0;
	size_t n = 0, nsorted;

	na = percpu_reader_read(&rt->by_family);
	if (rt->native_hists)
		nna = percpu_reader_read(&rt->native_arr);
	if (netns) {
		ns = percpu_reader_read(&rt->sums);
		nb = percpu_reader_read(&rt->buckets);
		if (rt->native_hists)
			nn = percpu_reader_read(&rt->native_hash);
	}
	if (na < 0 || ns < 0 || nb < 0 || nn < 0 || nna < 0) {
		int err = na < 0 ? na : ns < 0 ? ns : nb < 0 ? nb : nn < 0 ? nn : nna;

		log_warn("rtt: cannot read maps: %s", strerror(-err));
		return err;
	}
	if ((size_t)ns + RTT_NR_HISTS > rt->hists_cap) {
		size_t cap = (size_t)ns + RTT_NR_HISTS;
		struct hist *h = realloc(rt->hists, cap * sizeof(*h));
		uint64_t *slots;

		if (!h)
			return -ENOMEM;
		rt->hists = h;
		if (rt->native_hists) {
			slots = realloc(rt->native_slots, cap * rt->table.slots * sizeof(*slots));
			if (!slots)
				return -ENOMEM;
			rt->native_slots = slots;
		}
		rt->hists_cap = cap;
	}
	if (!netns) {
		from_array(rt, &n, false);
	} else {
		for (int i = 0; i < ns; i++) {
			const struct rtt_key *k = (struct rtt_key *)rt->sums.keys + i;

			new_hist(rt, &n, k, false)->sum_us = rt->sums.sums[i];
		}
		qsort(rt->hists, n, sizeof(*rt->hists), cmp_hist);
		nsorted = n;
		for (int i = 0; i < nb; i++) {
			const struct rtt_key *k = (struct rtt_key *)rt->buckets.keys + i;
			struct hist key = { .family = k->family,
					    .kind = k->kind,
					    .netns = k->netns };
			struct hist *h;

			h = bsearch(&key, rt->hists, nsorted, sizeof(*rt->hists), cmp_hist);
			/* A series inserted between the two reads shows up next scrape. */
			if (h && k->bucket < RTT_NR_BUCKETS)
				h->counts[k->bucket] += rt->buckets.sums[i];
		}
		if (rt->native_hists)
			native_from_hash(rt, nsorted, nn);
		overflowed = from_array(rt, &n, true);
		qsort(rt->hists, n, sizeof(*rt->hists), cmp_hist);
	}

	expo_family(e, "netstack_tcp_rtt_seconds", METRIC_HISTOGRAM,
		    "TCP round-trip time: the smoothed RTT (as ss shows it) each time the kernel "
		    "measures a round trip (sockops RTT callback).");
	for (size_t i = 0; i < n; i++)
		render_hist(rt, e, &rt->hists[i]);
	expo_family(e, "netstack_tcp_rtt_existing_sockets_covered", METRIC_GAUGE,
		    "1 when TCP connections open before the exporter started are measured too, 0 "
		    "when some are not until they reconnect.");
	expo_u64(e, NULL, rt->existing_covered);

	if (overflowed)
		log_once(rt->logged_overflow, LOG_WARN,
			 "rtt: map tcp_rtt is full (max_series=%u), or tcp_rtt_nslots (%u native "
			 "buckets); further samples without room are counted with netns "
			 "'" OVERFLOW_LABEL "'",
			 rt->cfg.series.max_series,
			 rt->native_hists ? rt->cfg.series.max_series * native_room(&rt->table)
					  : 0);
	expo_map_overflow(e, "tcp_rtt", overflowed);
	return 0;
}

static struct bpf_object *rtt_object(void *state)
{
	return ((struct rtt *)state)->skel->obj;
}

const struct collector_ops rtt_collector = {
	.name = "rtt",
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
