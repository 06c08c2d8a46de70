// SPDX-License-Identifier: GPL-2.0-only
/*
 * TCP connections by outcome and their handshake times: bpf/connections.bpf.c counts, this file
 * names and renders.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/bpfload.h"
#include "kernel/bpfmap.h"
#include "collectors/collector.h"
#include "collectors/nativehist.h"
#include "connections.h"
#include "connections.skel.h"
#include "kernel/kernel.h"
#include "base/log.h"
#include "base/parse.h"

#define DEFAULT_MAX_SERIES 4096

static const char *const family_names[CN_NR_FAMILIES] = { "ipv4", "ipv6", "other" };
static const char *const direction_names[CN_NR_DIRECTIONS] = { "active", "passive" };
static const char *const outcome_names[CN_NR_OUTCOMES] = { "established", "failed", "reset",
							   "timeout", "closed" };

static const char *const required_labels[] = { "family", "direction", "outcome", NULL };
static const struct label_option optional_labels[] = {
	{ "netns", CN_LABEL_NETNS },
};

struct connections_opts {
	struct series_opts series; /* first: registry.c parses labels, max_series */
	bool handshake;		   /* netstack_tcp_handshake_seconds */
	int native_schema;	   /* its native buckets' schema, or NATIVE_OFF */
};
_Static_assert(sizeof(struct connections_opts) <= COLLECTOR_OPTS_SIZE,
	       "connections options too large");

/* The families of the slot table's series (series >> 16), in the order they render. */
enum { FAM_CONNECTIONS, FAM_UNTIMED, FAM_HANDSHAKE };

/*
 * Every slot is a series of its own, but the overflow count: each bucket and sum of a handshake
 * histogram too (rows of one histogram are put together at render).
 */
static uint32_t slot_series(uint32_t slot)
{
	if (slot < HS_BASE)
		return slot;
	if (slot >= HS_NATIVE_BASE) /* native buckets, with the netns label */
		return FAM_HANDSHAKE << 16 | slot;
	if (slot >= CN_OVERFLOW)
		return SLOT_NONE;
	if ((slot - HS_BASE) % HS_PER_HIST == 2 * HS_NR_BUCKETS)
		return FAM_UNTIMED << 16 | slot;
	return FAM_HANDSHAKE << 16 | slot;
}

/*
 * Without optional labels, every IPv4 and IPv6 series exists from the start, at 0 (the
 * untimed counts only with handshake timing; the histograms are made at render).
 */
static const uint32_t always[] = {
	0,
	1,
	2,
	3,
	4,
	5,
	6,
	7,
	8,
	9,
	10,
	11,
	12,
	13,
	14,
	15,
	16,
	17,
	18,
	19,
	HS_UNTIMED(HS_HIST(CN_IPV4, CN_ACTIVE)),
	HS_UNTIMED(HS_HIST(CN_IPV4, CN_PASSIVE)),
	HS_UNTIMED(HS_HIST(CN_IPV6, CN_ACTIVE)),
	HS_UNTIMED(HS_HIST(CN_IPV6, CN_PASSIVE)),
};
#define NR_ALWAYS_CONNECTIONS CN_SLOT(CN_OTHER, 0, 0)
_Static_assert(sizeof(always) / sizeof(always[0]) == NR_ALWAYS_CONNECTIONS + 4,
	       "always: the IPv4 and IPv6 slots");

/* One handshake histogram being rendered. */
struct hs_hist {
	uint32_t hist; /* HS_HIST(family, direction) */
	uint32_t netns;
	bool overflow;
	uint64_t sum_us;
	uint64_t counts[HS_NR_BUCKETS];
	uint64_t *native; /* table.slots native slots, or NULL (native buckets off) */
};

/* A running connections collector. */
struct connections {
	struct connections_opts cfg;
	struct connections_bpf *skel;
	struct slot_table counts;
	double bounds[HS_NR_BOUNDS]; /* seconds */
	struct hs_hist *hists;
	size_t hists_cap;
	struct native_table table;	 /* native buckets' edges, when native_slots */
	uint32_t native_slots;		 /* table.slots, 0: native buckets off */
	struct percpu_reader native_arr; /* tcp_handshake_native */
	uint64_t *native_buf;		 /* native_slots per histogram of hists */
};

static void connections_reset(void *opts)
{
	struct connections_opts *o = opts;

	o->handshake = true;
	o->native_schema = NATIVE_SCHEMA_DEFAULT;
}

static int connections_set(void *opts, const char *key, const char *value, char *err, size_t errlen)
{
	if (!strcmp(key, "native_schema"))
		return native_parse_schema(value, &((struct connections_opts *)opts)->native_schema,
					   err, errlen);
	if (!strcmp(key, "handshake_time"))
		return parse_bool(value, &((struct connections_opts *)opts)->handshake, err,
				  errlen);
	return 1;
}

static void connections_stop(void *state)
{
	struct connections *cn = state;

	connections_bpf__destroy(cn->skel);
	slot_table_free(&cn->counts);
	percpu_reader_free(&cn->native_arr);
	free(cn->native_buf);
	free(cn->hists);
	free(cn);
}

static int connections_start(const struct collector_env *env, const void *opts, void **state)
{
	const struct kernel *k = env->kernel;
	const struct connections_opts *o = opts;
	bool netns = o->series.label_mask & CN_LABEL_NETNS;
	uint32_t hash_size = netns ? o->series.max_series : 1;
	struct bpf_program *count;
	struct connections *cn;
	char hs[64];
	int err;

	if (k->features.btf_err) {
		log_error("connections: no kernel BTF (/sys/kernel/btf/vmlinux): %s",
			  strerror(-k->features.btf_err));
		return -ENOENT;
	}
	if (k->features.inet_sock_set_state_args < 3) {
		log_error("connections: kernel has no inet_sock_set_state tracepoint in its BTF");
		return -ENOENT;
	}
	cn = calloc(1, sizeof(*cn));
	if (!cn)
		return -ENOMEM;
	cn->cfg = *o;
	cn->skel = connections_bpf__open();
	if (!cn->skel) {
		err = -errno;
		log_error("connections: cannot open BPF object: %s", strerror(-err));
		goto cleanup;
	}
	/* The variant without the code of what is off (bpf/connections.bpf.c). */
	if (o->handshake)
		count = netns ? cn->skel->progs.count_handshake_netns
			      : cn->skel->progs.count_handshake;
	else
		count = netns ? cn->skel->progs.count_connection_netns
			      : cn->skel->progs.count_connection;
	bpf_autoload_only(cn->skel->obj, &count, 1);
	/* The start times only when timing is on. */
	bpf_map__set_autocreate(cn->skel->maps.tcp_handshake_start, o->handshake);
	bpf_map__set_max_entries(cn->skel->maps.tcp_connections_netns, hash_size);
	bpf_map__set_max_entries(cn->skel->maps.tcp_connections, cpu_array_entries(1));
	if (o->handshake && o->native_schema != NATIVE_OFF) {
		native_table_init(&cn->table, o->native_schema); /* the key checked the schema */
		cn->native_slots = cn->table.slots;
		memcpy((void *)&cn->skel->rodata->hs_native_table, &cn->table, sizeof(cn->table));
		cn->skel->rodata->native_stride = HS_NATIVE_STRIDE(cn->native_slots);
		bpf_map__set_value_size(cn->skel->maps.tcp_handshake_native,
					HS_NATIVE_STRIDE(cn->native_slots) * sizeof(uint64_t));
		bpf_map__set_max_entries(cn->skel->maps.tcp_handshake_native, cpu_array_entries(1));
	} else {
		bpf_map__set_autocreate(cn->skel->maps.tcp_handshake_native, false);
	}
	err = bpf_load(env, cn->skel->skeleton, "connections", NULL, false);
	if (!err)
		err = bpf_attach(env, cn->skel->skeleton, "connections",
				 "tp_btf/inet_sock_set_state", EV_NONE);
	if (err)
		goto cleanup;
	err = slot_table_init(&cn->counts, bpf_map__fd(cn->skel->maps.tcp_connections), CN_NR_SLOTS,
			      CN_STRIDE, bpf_map__fd(cn->skel->maps.tcp_connections_netns),
			      hash_size, netns, slot_series);
	if (!err && cn->native_slots) {
		/* With the netns label, native slots live in the hash beyond the array's. */
		cn->counts.hash_slots = HS_NATIVE_BASE + HS_NR_HISTS * cn->native_slots;
		err = cpu_array_reader_init(
			&cn->native_arr, bpf_map__fd(cn->skel->maps.tcp_handshake_native),
			HS_NR_HISTS * cn->native_slots, HS_NATIVE_STRIDE(cn->native_slots));
	}
	if (err)
		goto cleanup;
	for (int b = 0; b < HS_NR_BOUNDS; b++)
		cn->bounds[b] = HS_BOUND(b) / 1e6;
	*state = cn;
	if (cn->native_slots)
		snprintf(hs, sizeof(hs), "handshake native buckets of schema %d", o->native_schema);
	else
		snprintf(hs, sizeof(hs), "handshake %s",
			 o->handshake ? "native buckets off" : "timing off");
	log_info("connections: attached %s to tp_btf/inet_sock_set_state (max_series=%u, %s)",
		 bpf_program__name(count), cn->cfg.series.max_series, hs);
	return 0;
cleanup:
	connections_stop(cn);
	return err;
}

static void render_row(void *collector, struct expo *e, const struct slot_row *r)
{
	struct connections *cn = collector;
	bool untimed = r->slot >= HS_BASE; /* FAM_UNTIMED: a (family, direction) pair */
	uint32_t pair = untimed ? (r->slot - HS_BASE) / HS_PER_HIST : r->slot / CN_NR_OUTCOMES;
	struct labels l = { 0 };
	char netns_buf[21];

	labels_add(&l, "family", family_names[pair / CN_NR_DIRECTIONS]);
	labels_add(&l, "direction", direction_names[pair % CN_NR_DIRECTIONS]);
	if (!untimed)
		labels_add(&l, "outcome", outcome_names[r->slot % CN_NR_OUTCOMES]);
	if (cn->cfg.series.label_mask & CN_LABEL_NETNS)
		labels_add(&l, "netns",
			   r->overflow ? OVERFLOW_LABEL : u64_str(netns_buf, r->netns));
	expo_u64(e, &l, r->value);
}

static const struct slot_family families[] = {
	{ "netstack_tcp_connections_total",
	  "TCP connections by direction (active: connect, passive: accepted) and outcome "
	  "(established, failed before it, or how an established one ended: reset, timeout, "
	  "closed)." },
	{ "netstack_tcp_handshakes_untimed_total",
	  "TCP connections established whose handshake has no time in "
	  "netstack_tcp_handshake_seconds (begun before the exporter attached, or no time kept "
	  "by the kernel: see docs/collectors/connections.md)." },
};

static const struct slot_collector slots = {
	.name = "connections",
	.map = "tcp_connections_netns",
	.overflow = CN_OVERFLOW,
	.families = families,
	.render = render_row,
};

/* Rows of the handshake histograms: by overflow, netns, histogram, then bucket. */
static int cmp_hs_row(const void *a, const void *b)
{
	const struct slot_row *x = a, *y = b;

	if (x->overflow != y->overflow)
		return x->overflow - y->overflow;
	if (x->netns != y->netns)
		return x->netns < y->netns ? -1 : 1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static struct hs_hist *new_hist(struct connections *cn, size_t *n, uint32_t hist, uint32_t netns,
				bool overflow)
{
	struct hs_hist *h = &cn->hists[*n];

	memset(h, 0, sizeof(*h));
	h->hist = hist;
	h->netns = netns;
	h->overflow = overflow;
	if (cn->native_slots) {
		h->native = cn->native_buf + *n * cn->native_slots;
		memset(h->native, 0, cn->native_slots * sizeof(*h->native));
	}
	(*n)++;
	return h;
}

/* The histogram of (hist, netns, overflow) among those from first on, made if new. */
static struct hs_hist *hist_of(struct connections *cn, size_t *n, size_t first, uint32_t hist,
			       uint32_t netns, bool overflow)
{
	for (size_t i = first; i < *n; i++)
		if (cn->hists[i].hist == hist && cn->hists[i].netns == netns &&
		    cn->hists[i].overflow == overflow)
			return &cn->hists[i];
	return new_hist(cn, n, hist, netns, overflow);
}

/* Make room for n histograms; 0 or -ENOMEM. */
static int hists_room(struct connections *cn, size_t n)
{
	struct hs_hist *p;

	if (n <= cn->hists_cap)
		return 0;
	p = realloc(cn->hists, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	cn->hists = p;
	if (cn->native_slots) {
		uint64_t *b = realloc(cn->native_buf, n * cn->native_slots * sizeof(*b));

		if (!b)
			return -ENOMEM;
		cn->native_buf = b;
	}
	cn->hists_cap = n;
	return 0;
}

static void render_hist(struct connections *cn, struct expo *e, const struct hs_hist *h)
{
	bool netns = cn->cfg.series.label_mask & CN_LABEL_NETNS;
	struct labels l = { 0 };
	struct native_hist nh;
	char netns_buf[21];

	labels_add(&l, "family", family_names[h->hist / CN_NR_DIRECTIONS]);
	labels_add(&l, "direction", direction_names[h->hist % CN_NR_DIRECTIONS]);
	if (netns)
		labels_add(&l, "netns",
			   h->overflow ? OVERFLOW_LABEL : u64_str(netns_buf, h->netns));
	if (!h->native) {
		expo_histogram(e, &l, cn->bounds, h->counts, HS_NR_BOUNDS, h->sum_us / 1e6);
		return;
	}
	native_hist_of(&nh, &cn->table, h->native);
	expo_histogram_native(e, &l, cn->bounds, h->counts, HS_NR_BOUNDS, h->sum_us / 1e6, &nh);
}

/*
 * The histograms from the rows of the last read (rows: those of FAM_HANDSHAKE, n of them) and,
 * with native buckets, the native array (without the netns label all of them; with it, what
 * the hash had no room for).
 */
static int render_handshakes(struct connections *cn, struct expo *e, struct slot_row *rows,
			     size_t n)
{
	bool netns = cn->cfg.series.label_mask & CN_LABEL_NETNS;
	size_t nh = 0, group = 0;
	uint32_t ns = cn->native_slots;
	/* A histogram a row, the IPv4 and IPv6 ones, the native array's overflow ones. */
	int err = hists_room(cn, n + (size_t)HS_NR_HISTS + (size_t)HS_NR_HISTS);

	if (err)
		return err;
	if (ns) {
		err = percpu_reader_read(&cn->native_arr);
		if (err < 0) {
			log_warn("connections: cannot read tcp_handshake_native: %s",
				 strerror(-err));
			return err;
		}
	}
	/* Without the label, the IPv4 and IPv6 histograms exist from the start. */
	if (!netns)
		for (uint32_t i = 0; i < HS_HIST(CN_OTHER, 0); i++)
			new_hist(cn, &nh, i, 0, false);
	qsort(rows, n, sizeof(*rows), cmp_hs_row);
	for (size_t i = 0; i < n; i++) {
		const struct slot_row *r = &rows[i];
		struct hs_hist *h;
		uint32_t hist, idx;

		/* Rows sort by (overflow, netns): a new pair starts a new group of histograms. */
		if (netns && i &&
		    (r->netns != rows[i - 1].netns || r->overflow != rows[i - 1].overflow))
			group = nh;
		if (r->slot >= HS_NATIVE_BASE) {
			idx = r->slot - HS_NATIVE_BASE;
			if (!ns || idx >= HS_NR_HISTS * ns)
				continue;
			h = hist_of(cn, &nh, group, idx / ns, r->netns, r->overflow);
			h->native[idx % ns] += r->value;
			continue;
		}
		hist = (r->slot - HS_BASE) / HS_PER_HIST;
		idx = (r->slot - HS_BASE) % HS_PER_HIST; /* 2 * bucket (+ 1: sum) */
		h = hist_of(cn, &nh, group, hist, r->netns, r->overflow);
		if (idx % 2)
			h->sum_us += r->value;
		else
			h->counts[idx / 2] += r->value;
	}
	/* The native array: every histogram without the label, the overflow ones with it. */
	for (uint32_t hist = 0; ns && hist < HS_NR_HISTS; hist++) {
		const uint64_t *v = cn->native_arr.sums + (size_t)hist * ns;
		struct hs_hist *h = NULL;

		for (uint32_t d = 0; d < ns; d++) {
			if (!v[d])
				continue;
			if (!h)
				h = hist_of(cn, &nh, 0, hist, 0, netns);
			h->native[d] += v[d];
		}
	}
	expo_family(e, "netstack_tcp_handshake_seconds", METRIC_HISTOGRAM,
		    "TCP handshake time by direction: active from connect() to ESTABLISHED, SYN "
		    "retransmits included; passive from the SYN's arrival to ESTABLISHED.");
	for (size_t i = 0; i < nh; i++)
		render_hist(cn, e, &cn->hists[i]);
	return 0;
}

static int connections_collect(void *state, struct expo *e)
{
	struct connections *cn = state;
	struct slot_table *t = &cn->counts;
	size_t n_always =
		cn->cfg.handshake ? sizeof(always) / sizeof(always[0]) : NR_ALWAYS_CONNECTIONS;
	int err, first, n;

	err = slot_collect(&slots, cn->cfg.handshake ? 2 : 1, t, always, n_always, state, e);
	if (err || !cn->cfg.handshake)
		return err;
	/* Rows sort by series: the histograms' rows come last. */
	n = (int)t->n_rows;
	for (first = n; first > 0 && t->series(t->rows[first - 1].slot) >> 16 == FAM_HANDSHAKE;
	     first--)
		;
	return render_handshakes(cn, e, t->rows + first, n - first);
}

static struct bpf_object *connections_object(void *state)
{
	return ((struct connections *)state)->skel->obj;
}

const struct collector_ops connections_collector = {
	.name = "connections",
	.description = "TCP connections by direction and outcome: established, failed, reset, "
		       "timeout, closed (tp_btf/inet_sock_set_state)",
	.default_enabled = true,
	.required_labels = required_labels,
	.optional_labels = optional_labels,
	.n_optional = sizeof(optional_labels) / sizeof(optional_labels[0]),
	.max_series = DEFAULT_MAX_SERIES,
	.max_series_limit = 1u << 20,
	.reset = connections_reset,
	.set = connections_set,
	.start = connections_start,
	.collect = connections_collect,
	.stop = connections_stop,
	.object = connections_object,
};
