// SPDX-License-Identifier: GPL-2.0-only
/* TCP connections by outcome: bpf/connections.bpf.c counts, this file names and renders. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpfload.h"
#include "bpfmap.h"
#include "collector.h"
#include "connections.h"
#include "connections.skel.h"
#include "kernel.h"
#include "log.h"
#include "parse.h"
#include "scrape.h"

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
	unsigned label_mask;
	unsigned max_series;
};
_Static_assert(sizeof(struct connections_opts) <= COLLECTOR_OPTS_SIZE,
	       "connections options too large");

/* One series before merging: the array's copy of a slot (overflow) and the hash's. */
struct row {
	uint32_t slot;
	bool overflow; /* netns unknown: the hash was full */
	uint32_t netns;
	uint64_t value;
};

/* A running connections collector. */
struct connections {
	struct connections_opts cfg;
	struct connections_bpf *skel;
	struct percpu_reader by_slot, by_key;
	bool logged_overflow;
	struct row *rows;
	size_t rows_cap;
};

static void connections_reset(void *opts)
{
	struct connections_opts *o = opts;

	o->max_series = DEFAULT_MAX_SERIES;
}

static int connections_set(void *opts, const char *key, const char *value, char *err, size_t errlen)
{
	struct connections_opts *o = opts;

	if (!strcmp(key, "labels"))
		return parse_label_list(value, required_labels, optional_labels,
					sizeof(optional_labels) / sizeof(optional_labels[0]),
					&o->label_mask, err, errlen);
	if (!strcmp(key, "max_series"))
		return parse_uint(value, 1, 1u << 20, &o->max_series, err, errlen);
	snprintf(err, errlen, "unknown key '%s' in [collector.connections]", key);
	return -1;
}

static void connections_stop(void *state)
{
	struct connections *cn = state;

	connections_bpf__destroy(cn->skel);
	percpu_reader_free(&cn->by_slot);
	percpu_reader_free(&cn->by_key);
	free(cn->rows);
	free(cn);
}

static int connections_start(const struct kernel *k, const void *opts, void **state)
{
	const struct connections_opts *o = opts;
	bool netns = o->label_mask & CN_LABEL_NETNS;
	uint32_t hash_size = netns ? o->max_series : 1;
	struct bpf_program *prog, *count;
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
	for (prog = bpf_object__next_program(cn->skel->obj, NULL); prog;
	     prog = bpf_object__next_program(cn->skel->obj, prog))
		bpf_program__set_autoload(prog, prog == count);
	bpf_map__set_max_entries(cn->skel->maps.tcp_connections_netns, hash_size);
	bpf_map__set_max_entries(cn->skel->maps.tcp_connections, cpu_array_entries(1));
	err = bpf_load(cn->skel->skeleton, "connections", NULL, false);
	if (!err)
		err = bpf_attach(cn->skel->skeleton, "connections", "tp_btf/inet_sock_set_state",
				 EV_NONE);
	if (err)
		goto cleanup;
	err = cpu_array_reader_init(&cn->by_slot, bpf_map__fd(cn->skel->maps.tcp_connections),
				    CN_NR_SLOTS, CN_STRIDE);
	if (!err)
		err = percpu_reader_init(&cn->by_key,
					 bpf_map__fd(cn->skel->maps.tcp_connections_netns),
					 sizeof(struct conn_key), hash_size);
	if (err)
		goto cleanup;
	*state = cn;
	log_info("connections: attached %s to tp_btf/inet_sock_set_state (max_series=%u)",
		 bpf_program__name(count), cn->cfg.max_series);
	return 0;
cleanup:
	connections_stop(cn);
	return err;
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	if (x->overflow != y->overflow)
		return x->overflow - y->overflow;
	return x->netns < y->netns ? -1 : x->netns > y->netns;
}

static void render_row(struct connections *cn, struct expo *e, const struct row *r)
{
	uint32_t outcome = r->slot % CN_NR_OUTCOMES, pair = r->slot / CN_NR_OUTCOMES;
	struct labels l = { 0 };
	char netns_buf[16];

	labels_add(&l, "family", family_names[pair / CN_NR_DIRECTIONS]);
	labels_add(&l, "direction", direction_names[pair % CN_NR_DIRECTIONS]);
	labels_add(&l, "outcome", outcome_names[outcome]);
	if (cn->cfg.label_mask & CN_LABEL_NETNS) {
		snprintf(netns_buf, sizeof(netns_buf), "%u", r->netns);
		labels_add(&l, "netns", r->overflow ? OVERFLOW_LABEL : netns_buf);
	}
	expo_u64(e, &l, r->value);
}

static int connections_collect(void *state, struct expo *e)
{
	struct connections *cn = state;
	uint64_t overflowed = 0;
	size_t n = 0, need;
	int na, nk = 0;

	na = percpu_reader_read(&cn->by_slot);
	if (na >= 0 && cn->cfg.label_mask)
		nk = percpu_reader_read(&cn->by_key);
	if (na < 0 || nk < 0) {
		log_warn("connections: cannot read maps: %s", strerror(-(na < 0 ? na : nk)));
		return -1;
	}
	need = (size_t)na + nk + CN_NR_SLOTS;
	if (need > cn->rows_cap) {
		struct row *r = realloc(cn->rows, need * sizeof(*r));

		if (!r)
			return -1;
		cn->rows = r;
		cn->rows_cap = need;
	}
	/* Without optional labels, every IPv4 and IPv6 series exists from the start, at 0. */
	if (!cn->cfg.label_mask)
		for (uint32_t s = 0; s < CN_SLOT(CN_OTHER, 0, 0); s++)
			cn->rows[n++] = (struct row){ .slot = s };
	for (int i = 0; i < na; i++) {
		if ((uint32_t)i == CN_OVERFLOW)
			overflowed = cn->by_slot.sums[i];
		if ((uint32_t)i >= CN_OVERFLOW || !cn->by_slot.sums[i])
			continue;
		cn->rows[n++] = (struct row){ .slot = i,
					      .overflow = cn->cfg.label_mask != 0,
					      .value = cn->by_slot.sums[i] };
	}
	for (int i = 0; i < nk; i++) {
		const struct conn_key *key = (struct conn_key *)cn->by_key.keys + i;

		if (key->slot >= CN_OVERFLOW)
			continue;
		cn->rows[n++] = (struct row){ .slot = key->slot,
					      .netns = key->netns,
					      .value = cn->by_key.sums[i] };
	}
	qsort(cn->rows, n, sizeof(*cn->rows), cmp_row);

	expo_family(e, "netstack_tcp_connections_total", METRIC_COUNTER,
		    "TCP connections by direction (active: connect, passive: accepted) and outcome "
		    "(established, failed before it, or how an established one ended: reset, "
		    "timeout, closed).");
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n && !cmp_row(&cn->rows[i], &cn->rows[i + 1])) {
			cn->rows[i + 1].value += cn->rows[i].value;
			continue;
		}
		render_row(cn, e, &cn->rows[i]);
	}
	if (overflowed)
		log_once(cn->logged_overflow, LOG_WARN,
			 "connections: map tcp_connections_netns is full (max_series=%u); further "
			 "series are counted with netns '" OVERFLOW_LABEL "'",
			 cn->cfg.max_series);
	if (cn->cfg.label_mask)
		scrape_map_overflow("tcp_connections_netns", overflowed);
	return 0;
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
	.reset = connections_reset,
	.set = connections_set,
	.start = connections_start,
	.collect = connections_collect,
	.stop = connections_stop,
	.object = connections_object,
};
