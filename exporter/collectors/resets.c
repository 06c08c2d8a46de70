// SPDX-License-Identifier: GPL-2.0-only
/* TCP resets sent and received: bpf/resets.bpf.c counts, this file names and renders. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpfload.h"
#include "bpfmap.h"
#include "collector.h"
#include "kernel.h"
#include "log.h"
#include "parse.h"
#include "resets.h"
#include "../events.h" /* before the skeleton: struct sample_config */
#include "resets.skel.h"
#include "scrape.h"

#define DEFAULT_MAX_SERIES 4096
/* The exporter's own label values: the kernel's names are upper case. */
#define REASON_UNKNOWN "__unknown__" /* the kernel gives no reason (before Linux 6.10) */
#define REASON_OTHER "__other__"     /* a reason past the array (RS_NR_REASONS - 1 and up) */
#define STATE_NONE "__none__"	     /* a reset sent for a segment no socket matched */

static const char *const family_names[RS_NR_FAMILIES] = { "ipv4", "ipv6" };

static const char *const required_labels[] = { "family", "reason", "state", NULL };
static const struct label_option optional_labels[] = {
	{ "netns", RS_LABEL_NETNS },
};

struct resets_opts {
	unsigned label_mask;
	unsigned max_series;
};
_Static_assert(sizeof(struct resets_opts) <= COLLECTOR_OPTS_SIZE, "resets options too large");

/* The families, in the order they are rendered. */
enum metric { M_SENT, M_RECEIVED };

/* One series before merging (the array's and the hash's rows of one series add up). */
struct row {
	uint8_t metric;
	uint32_t slot;
	bool overflow; /* netns unknown: the hash was full */
	uint32_t netns;
	uint64_t value;
};

/* A running resets collector. */
struct resets {
	struct resets_opts cfg;
	struct resets_bpf *skel;
	const struct tcp_states *states;    /* owned by main */
	const struct reason_table *reasons; /* owned by main; NULL: the kernel gives none */
	bool reason_other;		    /* the kernel has reasons past the array */
	struct percpu_reader by_slot, by_key;
	bool logged_overflow, logged_unknown;
	struct row *rows;
	size_t rows_cap;
};

static void resets_reset(void *opts)
{
	struct resets_opts *o = opts;

	o->max_series = DEFAULT_MAX_SERIES;
}

static int resets_set(void *opts, const char *key, const char *value, char *err, size_t errlen)
{
	struct resets_opts *o = opts;

	if (!strcmp(key, "labels"))
		return parse_label_list(value, required_labels, optional_labels,
					sizeof(optional_labels) / sizeof(optional_labels[0]),
					&o->label_mask, err, errlen);
	if (!strcmp(key, "max_series"))
		return parse_uint(value, 1, 1u << 20, &o->max_series, err, errlen);
	snprintf(err, errlen, "unknown key '%s' in [collector.resets]", key);
	return -1;
}

static void resets_stop(void *state)
{
	struct resets *rs = state;

	events_unloaded(EV_RESET);
	resets_bpf__destroy(rs->skel);
	percpu_reader_free(&rs->by_slot);
	percpu_reader_free(&rs->by_key);
	free(rs->rows);
	free(rs);
}

static int resets_start(const struct kernel *k, const void *opts, void **state)
{
	const struct kernel_features *f = &k->features;
	const struct resets_opts *o = opts;
	bool netns = o->label_mask & RS_LABEL_NETNS, with_reason, received;
	uint32_t hash_size = netns ? o->max_series : 1;
	struct bpf_program *prog, *sent, *recv;
	struct resets *rs;
	int err;

	if (f->btf_err) {
		log_error("resets: no kernel BTF (/sys/kernel/btf/vmlinux): %s",
			  strerror(-f->btf_err));
		return -ENOENT;
	}
	if (f->tcp_send_reset_args < 2) {
		log_error("resets: kernel has no tcp_send_reset tracepoint in its BTF");
		return -ENOENT;
	}
	with_reason = f->tcp_send_reset_args >= 3 && !k->rst_reasons_err;
	received = f->tcp_receive_reset_args >= 1;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	rs->cfg = *o;
	rs->states = &k->states;
	rs->reasons = with_reason ? &k->rst_reasons : NULL;
	if (with_reason && k->rst_reasons.n &&
	    k->rst_reasons.e[k->rst_reasons.n - 1].value >= RS_NR_REASONS - 1)
		rs->reason_other = true;
	if (k->states_err)
		log_warn("resets: no TCP state names in kernel BTF (%s): states are numbers",
			 strerror(-k->states_err));
	rs->skel = resets_bpf__open();
	if (!rs->skel) {
		err = -errno;
		log_error("resets: cannot open BPF object: %s", strerror(-err));
		goto cleanup;
	}
	/* One program per hook: the one for this kernel's tracepoint and these labels. */
	if (with_reason)
		sent = netns ? rs->skel->progs.count_sent_netns : rs->skel->progs.count_sent;
	else
		sent = netns ? rs->skel->progs.count_sent_noreason_netns
			     : rs->skel->progs.count_sent_noreason;
	recv = netns ? rs->skel->progs.count_received_netns : rs->skel->progs.count_received;
	for (prog = bpf_object__next_program(rs->skel->obj, NULL); prog;
	     prog = bpf_object__next_program(rs->skel->obj, prog))
		bpf_program__set_autoload(prog, prog == sent || (received && prog == recv));
	bpf_map__set_max_entries(rs->skel->maps.tcp_resets_netns, hash_size);
	bpf_map__set_max_entries(rs->skel->maps.tcp_resets,
				 cpu_array_entries(1) /* a slice per element */);
	err = events_prepare(rs->skel->obj, EV_RESET,
			     (struct sample_config *)&rs->skel->rodata->sample_cfg);
	if (!err)
		err = bpf_load(rs->skel->skeleton, "resets", NULL, false);
	if (!err)
		err = bpf_attach(rs->skel->skeleton, "resets",
				 "tp_btf/tcp_send_reset and tcp_receive_reset", EV_RESET);
	if (err)
		goto cleanup;
	err = cpu_array_reader_init(&rs->by_slot, bpf_map__fd(rs->skel->maps.tcp_resets),
				    RS_NR_SLOTS, RS_STRIDE);
	if (!err)
		err = percpu_reader_init(&rs->by_key, bpf_map__fd(rs->skel->maps.tcp_resets_netns),
					 sizeof(struct reset_key), hash_size);
	if (err)
		goto cleanup;
	*state = rs;
	log_info("resets: attached %s to tp_btf/tcp_send_reset%s%s%s (%u reset reasons and %u "
		 "TCP states from BTF, max_series=%u)",
		 bpf_program__name(sent), received ? " and " : "",
		 received ? bpf_program__name(recv) : "", received ? " to tcp_receive_reset" : "",
		 with_reason ? k->rst_reasons.n : 0, rs->states->n, rs->cfg.max_series);
	if (!with_reason)
		log_warn("resets: tcp_send_reset has no reason argument before Linux 6.10: every "
			 "reset sent has reason='" REASON_UNKNOWN "', and resets sent without a "
			 "full socket (no socket, TIME_WAIT) are not seen "
			 "(docs/collectors/resets.md)");
	if (rs->reason_other)
		log_warn("resets: this kernel has reset reasons from %u on: they are counted "
			 "together as reason='" REASON_OTHER "'",
			 RS_NR_REASONS - 1);
	if (!received)
		log_warn("resets: kernel has no tcp_receive_reset tracepoint: resets received are "
			 "not counted");
	return 0;
cleanup:
	resets_stop(rs);
	return err;
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->metric != y->metric)
		return x->metric - y->metric;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	if (x->overflow != y->overflow)
		return x->overflow - y->overflow;
	return x->netns < y->netns ? -1 : x->netns > y->netns;
}

static const char *state_label(struct resets *rs, uint32_t state, char *buf, size_t len)
{
	const char *name;

	if (state == RS_STATE_NONE)
		return STATE_NONE;
	name = tcp_state_name(rs->states, state, buf, len);
	if (name == buf)
		log_once(rs->logged_unknown, LOG_WARN,
			 "resets: TCP state %u has no name in this kernel's BTF; it is rendered as "
			 "its number",
			 state);
	return name;
}

/* A sent-reset sample, with the latest sampled reset of its series as exemplar (OpenMetrics). */
static void render_sent(struct resets *rs, struct expo *e, const struct labels *l,
			const struct row *r, uint32_t reason, uint8_t family, uint8_t state)
{
	struct labels ex = { 0 };
	char buf[128];
	double t;

	if (e->format != FORMAT_OPENMETRICS || r->overflow ||
	    (rs->reason_other && reason == RS_NR_REASONS - 1) ||
	    !events_reset_exemplar(rs->reasons ? reason : RS_REASON_NONE, family, state,
				   rs->cfg.label_mask & RS_LABEL_NETNS ? r->netns : 0, &ex, buf,
				   sizeof(buf), &t)) {
		expo_u64(e, l, r->value);
		return;
	}
	expo_u64_exemplar(e, l, r->value, &ex, 1, t);
}

static void render_row(struct resets *rs, struct expo *e, const struct row *r)
{
	char state_buf[16], reason_buf[16], netns_buf[16];
	uint32_t i, reason = 0, family = 0, state = 0;
	struct labels l = { 0 };

	if (r->metric == M_SENT) {
		i = r->slot - RS_SENT_BASE;
		reason = i / RS_NR_STATES % RS_NR_REASONS;
		family = i / RS_NR_STATES / RS_NR_REASONS;
		state = i % RS_NR_STATES;
		labels_add(&l, "family", family_names[family]);
		labels_add(
			&l, "reason",
			!rs->reasons ? REASON_UNKNOWN
			: rs->reason_other && reason == RS_NR_REASONS - 1
				? REASON_OTHER
				: reason_name(rs->reasons, reason, reason_buf, sizeof(reason_buf)));
		labels_add(&l, "state", state_label(rs, state, state_buf, sizeof(state_buf)));
	} else {
		i = r->slot - RS_RECEIVED(0, 0);
		labels_add(&l, "family", family_names[i / RS_NR_STATES]);
		labels_add(&l, "state",
			   state_label(rs, i % RS_NR_STATES, state_buf, sizeof(state_buf)));
	}
	if (rs->cfg.label_mask & RS_LABEL_NETNS) {
		snprintf(netns_buf, sizeof(netns_buf), "%u", r->netns);
		labels_add(&l, "netns", r->overflow ? OVERFLOW_LABEL : netns_buf);
	}
	if (r->metric == M_SENT)
		render_sent(rs, e, &l, r, reason, family, state);
	else
		expo_u64(e, &l, r->value);
}

static const struct {
	const char *name, *help;
} families[] = {
	[M_SENT] = { "netstack_tcp_resets_sent_total",
		     "TCP resets sent, by the kernel's reset reason and the TCP state of the "
		     "socket (__none__: no socket matched the segment)." },
	[M_RECEIVED] = { "netstack_tcp_resets_received_total",
			 "TCP resets received and accepted by a socket, by its TCP state." },
};

static struct row slot_row(uint32_t slot, uint64_t value)
{
	return (struct row){ .metric = slot >= RS_SENT_BASE ? M_SENT : M_RECEIVED,
			     .slot = slot,
			     .value = value };
}

static int resets_collect(void *state, struct expo *e)
{
	struct resets *rs = state;
	uint64_t overflowed = 0;
	size_t n = 0, i = 0;
	int na, nk = 0;

	na = percpu_reader_read(&rs->by_slot);
	if (na >= 0 && rs->cfg.label_mask)
		nk = percpu_reader_read(&rs->by_key);
	if (na < 0 || nk < 0) {
		log_warn("resets: cannot read maps: %s", strerror(-(na < 0 ? na : nk)));
		return -1;
	}
	if ((size_t)na + (size_t)nk > rs->rows_cap) {
		size_t cap = (size_t)na + (size_t)nk;
		struct row *r = realloc(rs->rows, cap * sizeof(*r));

		if (!r)
			return -1;
		rs->rows = r;
		rs->rows_cap = cap;
	}
	for (int k = 0; k < na; k++) {
		uint32_t slot = k;

		if (slot == RS_OVERFLOW)
			overflowed = rs->by_slot.sums[k];
		if (slot == RS_OVERFLOW || slot >= RS_NR_SLOTS || !rs->by_slot.sums[k])
			continue;
		rs->rows[n] = slot_row(slot, rs->by_slot.sums[k]);
		rs->rows[n++].overflow = rs->cfg.label_mask != 0;
	}
	for (int k = 0; k < nk; k++) {
		const struct reset_key *key = (struct reset_key *)rs->by_key.keys + k;

		if (key->slot == RS_OVERFLOW || key->slot >= RS_NR_SLOTS)
			continue;
		rs->rows[n] = slot_row(key->slot, rs->by_key.sums[k]);
		rs->rows[n++].netns = key->netns;
	}
	qsort(rs->rows, n, sizeof(*rs->rows), cmp_row);

	for (int m = M_SENT; m <= M_RECEIVED; m++) {
		expo_family(e, families[m].name, METRIC_COUNTER, families[m].help);
		for (; i < n && rs->rows[i].metric == m; i++) {
			if (i + 1 < n && !cmp_row(&rs->rows[i], &rs->rows[i + 1])) {
				rs->rows[i + 1].value += rs->rows[i].value;
				continue;
			}
			render_row(rs, e, &rs->rows[i]);
		}
	}
	if (overflowed)
		log_once(rs->logged_overflow, LOG_WARN,
			 "resets: map tcp_resets_netns is full (max_series=%u); further series are "
			 "counted with netns '" OVERFLOW_LABEL "'",
			 rs->cfg.max_series);
	if (rs->cfg.label_mask)
		scrape_map_overflow("tcp_resets_netns", overflowed);
	return 0;
}

static struct bpf_object *resets_object(void *state)
{
	return ((struct resets *)state)->skel->obj;
}

const struct collector_ops resets_collector = {
	.name = "resets",
	.description = "TCP resets sent by reset reason and TCP state, and resets received "
		       "(tp_btf/tcp_send_reset, tcp_receive_reset)",
	.default_enabled = true,
	.sampled = EV_RESET,
	.reset = resets_reset,
	.set = resets_set,
	.start = resets_start,
	.collect = resets_collect,
	.stop = resets_stop,
	.object = resets_object,
};
