// SPDX-License-Identifier: GPL-2.0-only
/* TCP connections by outcome: bpf/connections.bpf.c counts, this file names and renders. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/bpfload.h"
#include "kernel/bpfmap.h"
#include "collectors/collector.h"
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
};
_Static_assert(sizeof(struct connections_opts) <= COLLECTOR_OPTS_SIZE,
	       "connections options too large");

/* Every slot is a series of its own, but the overflow count. */
static uint32_t slot_series(uint32_t slot)
{
	return slot < CN_OVERFLOW ? slot : SLOT_NONE;
}

/* Without optional labels, every IPv4 and IPv6 series exists from the start, at 0. */
static const uint32_t always[] = { 0,  1,  2,  3,  4,  5,  6,  7,  8,  9,
				   10, 11, 12, 13, 14, 15, 16, 17, 18, 19 };
_Static_assert(sizeof(always) / sizeof(always[0]) == CN_SLOT(CN_OTHER, 0, 0),
	       "always: the IPv4 and IPv6 slots");

/* A running connections collector. */
struct connections {
	struct connections_opts cfg;
	struct connections_bpf *skel;
	struct slot_table counts;
};

static void connections_stop(void *state)
{
	struct connections *cn = state;

	connections_bpf__destroy(cn->skel);
	slot_table_free(&cn->counts);
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
	count = netns ? cn->skel->progs.count_connection_netns : cn->skel->progs.count_connection;
	bpf_autoload_only(cn->skel->obj, &count, 1);
	bpf_map__set_max_entries(cn->skel->maps.tcp_connections_netns, hash_size);
	bpf_map__set_max_entries(cn->skel->maps.tcp_connections, cpu_array_entries(1));
	err = bpf_load(env, cn->skel->skeleton, "connections", NULL, false);
	if (!err)
		err = bpf_attach(env, cn->skel->skeleton, "connections",
				 "tp_btf/inet_sock_set_state", EV_NONE);
	if (err)
		goto cleanup;
	err = slot_table_init(&cn->counts, bpf_map__fd(cn->skel->maps.tcp_connections), CN_NR_SLOTS,
			      CN_STRIDE, bpf_map__fd(cn->skel->maps.tcp_connections_netns),
			      hash_size, netns, slot_series);
	if (err)
		goto cleanup;
	*state = cn;
	log_info("connections: attached %s to tp_btf/inet_sock_set_state (max_series=%u)",
		 bpf_program__name(count), cn->cfg.series.max_series);
	return 0;
cleanup:
	connections_stop(cn);
	return err;
}

static void render_row(void *collector, struct expo *e, const struct slot_row *r)
{
	struct connections *cn = collector;
	uint32_t outcome = r->slot % CN_NR_OUTCOMES, pair = r->slot / CN_NR_OUTCOMES;
	struct labels l = { 0 };
	char netns_buf[21];

	labels_add(&l, "family", family_names[pair / CN_NR_DIRECTIONS]);
	labels_add(&l, "direction", direction_names[pair % CN_NR_DIRECTIONS]);
	labels_add(&l, "outcome", outcome_names[outcome]);
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
};

static const struct slot_collector slots = {
	.name = "connections",
	.map = "tcp_connections_netns",
	.overflow = CN_OVERFLOW,
	.families = families,
	.render = render_row,
};

static int connections_collect(void *state, struct expo *e)
{
	struct connections *cn = state;

	return slot_collect(&slots, 1, &cn->counts, always, sizeof(always) / sizeof(always[0]),
			    state, e);
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
	.start = connections_start,
	.collect = connections_collect,
	.stop = connections_stop,
	.object = connections_object,
};
