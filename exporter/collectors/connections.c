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
#include "collectors/histogram.h"
#include "connections.h"
#include "connections.skel.h"
#include "connections_nokfunc.skel.h"
#include "kernel/kernel.h"
#include "base/log.h"
#include "base/parse.h"

#define DEFAULT_MAX_SERIES 4096

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
	int native_schema;	   /* its native buckets' schema, or HIST_NATIVE_OFF */
};
_Static_assert(sizeof(struct connections_opts) <= COLLECTOR_OPTS_SIZE,
	       "connections options too large");

/* The families of the slot table's series (series >> 16), in the order they render. */
enum { FAM_CONNECTIONS, FAM_UNTIMED, FAM_HANDSHAKE };

/*
 * Every slot is a series of its own, but the overflow count and a histogram's established
 * count (the counter's series): each cell and sum of a handshake histogram too (the rows of one
 * histogram are put together at render).
 */
static uint32_t slot_series(uint32_t slot)
{
	uint32_t hist = (slot - HS_BASE) / HS_BLOCK, at = (slot - HS_BASE) % HS_BLOCK;

	if (slot < CN_OVERFLOW)
		return FAM_CONNECTIONS << 16 | slot;
	if (slot < HS_BASE || hist >= HS_NR_HISTS)
		return SLOT_NONE;
	if (at == HS_EST_AT)
		return FAM_CONNECTIONS << 16 |
		       CN_SLOT(hist / CN_NR_DIRECTIONS, hist % CN_NR_DIRECTIONS, CN_ESTABLISHED);
	if (at == HS_UNTIMED_AT)
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
_Static_assert(sizeof(always) / sizeof(always[0]) == NR_ALWAYS_CONNECTIONS + HS_NR_HISTS,
	       "always: the IPv4 and IPv6 slots");

/* A running connections collector. */
struct connections {
	struct connections_opts cfg;
	struct connections_bpf *skel;
	struct slot_table counts;
	struct hist_family handshakes; /* hist: HS_HIST(family, direction) */
};

/*
 * The skeleton, opened on connections.bpf.o (which reads the socket's TCP fields through the
 * bpf_rdonly_cast kfunc) or on connections_nokfunc.bpf.o (a helper call instead): libbpf 1.1
 * fails an object naming a kfunc the kernel lacks (retrans.c does the same).
 */
static struct connections_bpf *connections_open(bool kfunc)
{
	struct connections_bpf *s = calloc(1, sizeof(*s));
	int err;

	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	err = connections_bpf__create_skeleton(s);
	if (!err && !kfunc)
		s->skeleton->data = connections_nokfunc_bpf__elf_bytes(&s->skeleton->data_sz);
	if (!err)
		err = bpf_object__open_skeleton(s->skeleton, NULL);
	if (err) {
		connections_bpf__destroy(s);
		errno = -err;
		return NULL;
	}
	return s;
}

static void connections_reset(void *opts)
{
	struct connections_opts *o = opts;

	o->handshake = true;
	o->native_schema = HIST_SCHEMA_DEFAULT;
}

static int connections_set(void *opts, const char *key, const char *value, char *err, size_t errlen)
{
	if (!strcmp(key, "native_schema"))
		return hist_parse_schema(value, &((struct connections_opts *)opts)->native_schema,
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
	hist_family_free(&cn->handshakes);
	free(cn);
}

/* family and direction, then netns (hist_family_init) */
static void handshake_labels(const void *collector, struct labels *l, uint32_t hist)
{
	(void)collector;
	labels_add(l, "family", family_label(hist / CN_NR_DIRECTIONS));
	labels_add(l, "direction", direction_names[hist % CN_NR_DIRECTIONS]);
}

static int connections_start(const struct collector_env *env, const void *opts, void **state)
{
	const struct kernel *k = env->kernel;
	const struct connections_opts *o = opts;
	bool netns = o->series.label_mask & CN_LABEL_NETNS;
	uint32_t hash_size = netns ? o->series.max_series : 1;
	uint32_t bounds_us[HS_NR_BOUNDS];
	struct bpf_program *progs[2];
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
	for (int b = 0; b < HS_NR_BOUNDS; b++)
		bounds_us[b] = HS_BOUND(b);
	/* The bounds are cell boundaries (tests/unit/test_hist.c); the key checked the schema. */
	err = hist_family_init(&cn->handshakes, bounds_us, HS_NR_BOUNDS, o->native_schema,
			       handshake_labels, netns ? 2 : -1);
	if (err) {
		log_error("connections: handshake buckets: %s", strerror(-err));
		goto cleanup;
	}
	cn->skel = connections_open(k->features.rdonly_cast);
	if (!cn->skel) {
		err = -errno;
		log_error("connections: cannot open BPF object: %s", strerror(-err));
		goto cleanup;
	}
	/*
	 * The variant without the code of what is off (bpf/connections.bpf.c), and with handshake
	 * timing the retransmitted SYNs' program; without it, the slot table without histograms.
	 */
	if (o->handshake) {
		progs[0] = netns ? cn->skel->progs.count_handshake_netns
				 : cn->skel->progs.count_handshake;
		progs[1] = cn->skel->progs.note_syn_retransmit;
	} else {
		progs[0] = netns ? cn->skel->progs.count_connection_netns
				 : cn->skel->progs.count_connection;
		bpf_map__set_value_size(cn->skel->maps.tcp_connections,
					CN_COUNT_STRIDE * sizeof(uint64_t));
	}
	autoload_only(cn->skel->obj, progs, o->handshake ? 2 : 1);
	bpf_map__set_max_entries(cn->skel->maps.tcp_connections_netns, hash_size);
	bpf_map__set_max_entries(cn->skel->maps.tcp_connections, cpu_array_entries(1));
	err = collector_load(env, cn->skel->skeleton, "connections", NULL, false);
	if (err)
		goto cleanup;
	err = collector_attach(env, cn->skel->skeleton, "connections", "tp_btf/inet_sock_set_state",
			       EV_NONE);
	if (err)
		goto cleanup;
	err = slot_table_init(&cn->counts, bpf_map__fd(cn->skel->maps.tcp_connections),
			      o->handshake ? CN_NR_SLOTS : CN_NR_COUNT_SLOTS,
			      o->handshake ? CN_STRIDE : CN_COUNT_STRIDE,
			      bpf_map__fd(cn->skel->maps.tcp_connections_netns), hash_size, netns,
			      slot_series);
	if (err)
		goto cleanup;
	*state = cn;
	if (!o->handshake)
		snprintf(hs, sizeof(hs), "handshake timing off");
	else if (o->native_schema == HIST_NATIVE_OFF)
		snprintf(hs, sizeof(hs), "handshake native buckets off");
	else
		snprintf(hs, sizeof(hs), "handshake native buckets of schema %d", o->native_schema);
	log_info("connections: attached %s to tp_btf/inet_sock_set_state (max_series=%u, %s)",
		 bpf_program__name(progs[0]), cn->cfg.series.max_series, hs);
	return 0;
cleanup:
	connections_stop(cn);
	return err;
}

static void render_row(void *collector, struct expo *e, const struct slot_row *r)
{
	struct connections *cn = collector;
	/* A row's slot is any of its series' slots: the labels come from the series. */
	uint32_t s = slot_series(r->slot) & 0xffff;
	bool untimed = s >= HS_BASE; /* FAM_UNTIMED: a (family, direction) histogram's */
	uint32_t pair = untimed ? (s - HS_BASE) / HS_BLOCK : s / CN_NR_OUTCOMES;
	struct labels l = { 0 };
	char netns_buf[21];

	if (pair >= CN_NR_FAMILIES * CN_NR_DIRECTIONS)
		return; /* not a series (slot_series) */
	labels_add(&l, "family", family_label(pair / CN_NR_DIRECTIONS));
	labels_add(&l, "direction", direction_names[pair % CN_NR_DIRECTIONS]);
	if (!untimed)
		labels_add(&l, "outcome", outcome_names[s % CN_NR_OUTCOMES]);
	if (cn->cfg.series.label_mask & CN_LABEL_NETNS)
		labels_add_netns(&l, netns_buf, r->overflow, r->netns);
	expo_u64(e, &l, r->value);
}

static const struct slot_family families[] = {
	{ "netstack_tcp_connections_total",
	  "TCP connections by direction (active: connect, passive: accepted) and outcome "
	  "(established, failed before it, or how an established one ended: reset, timeout, "
	  "closed)." },
	{ "netstack_tcp_handshakes_untimed_total",
	  "TCP connections established whose handshake has no time in "
	  "netstack_tcp_handshake_seconds (no time kept by the kernel, a SYN retransmitted "
	  "before the exporter attached, a simultaneous open: see "
	  "docs/collectors/connections.md)." },
};

static const struct slot_collector slots = {
	.name = "connections",
	.map = "tcp_connections_netns",
	.overflow = CN_OVERFLOW,
	.families = families,
	.render = render_row,
};

/* A slot's place in the handshake histograms: their sums and cells (hist_slot_fn). */
static bool handshake_slot(uint32_t slot, uint32_t *hist, unsigned *counter)
{
	uint32_t at = (slot - HS_BASE) % HS_BLOCK;

	*hist = (slot - HS_BASE) / HS_BLOCK;
	*counter = at == HS_SUM_AT ? HIST_SUM : at - HS_CELLS_AT;
	return slot >= HS_BASE && *hist < HS_NR_HISTS && at >= HS_SUM_AT;
}

/* The histograms from the rows of the last read (rows: those of FAM_HANDSHAKE, n of them). */
static int render_handshakes(struct connections *cn, struct expo *e, struct slot_row *rows,
			     size_t n)
{
	struct hist_family *f = &cn->handshakes;
	int err = 0;

	hist_family_clear(f);
	/* Without the label, the IPv4 and IPv6 histograms exist from the start. */
	for (uint32_t i = 0; !(cn->cfg.series.label_mask & CN_LABEL_NETNS) && i < HS_NR_HISTS; i++)
		if (!hist_family_add(f, false, 0, i))
			err = -ENOMEM;
	if (!err)
		err = hist_family_add_rows(f, rows, n, handshake_slot);
	if (err)
		return err;
	expo_family(
		e, HANDSHAKE_FAMILY, METRIC_HISTOGRAM,
		"TCP handshake time by direction: active from the first SYN sent to the SYN-ACK "
		"received, SYN retransmits included; passive from the SYN's arrival to "
		"ESTABLISHED.");
	hist_family_render(f, e, cn);
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
	.name = CONNECTIONS_COLLECTOR,
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
