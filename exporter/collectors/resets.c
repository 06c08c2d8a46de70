// SPDX-License-Identifier: GPL-2.0-only
/* TCP resets sent and received: bpf/resets.bpf.c counts, this file names and renders. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/bpfload.h"
#include "kernel/bpfmap.h"
#include "collectors/collector.h"
#include "kernel/kernel.h"
#include "base/log.h"
#include "base/parse.h"
#include "resets.h"
#include "sampling/events.h" /* before the skeleton: struct sample_config */
#include "resets.skel.h"

#define DEFAULT_MAX_SERIES 4096
/* The exporter's own label values: the kernel's names are upper case. */
#define REASON_UNKNOWN "__unknown__" /* the kernel gives no reason (before Linux 6.10) */
#define REASON_OTHER "__other__"     /* a reason past the array (RS_NR_REASONS - 1 and up) */
#define STATE_NONE "__none__"	     /* a reset sent for a segment no socket matched */

static const char *const required_labels[] = { "family", "reason", "state", NULL };
static const struct label_option optional_labels[] = {
	{ "netns", RS_LABEL_NETNS },
};

struct resets_opts {
	struct series_opts series; /* first: registry.c parses labels, max_series */
};
_Static_assert(sizeof(struct resets_opts) <= COLLECTOR_OPTS_SIZE, "resets options too large");

/* The families, in the order they are rendered. */
enum metric { M_SENT, M_RECEIVED };

/* A slot's series: the metric, then the slot (the overflow counter is none). */
static uint32_t slot_series(uint32_t slot)
{
	if (slot == RS_OVERFLOW)
		return SLOT_NONE;
	return (slot >= RS_SENT_BASE ? M_SENT : M_RECEIVED) << 16 | slot;
}

/* A running resets collector. */
struct resets {
	struct resets_opts cfg;
	struct resets_bpf *skel;
	struct events *events;		    /* owned by main */
	const struct tcp_states *states;    /* owned by main */
	const struct reason_table *reasons; /* owned by main; NULL: the kernel gives none */
	bool reason_other;		    /* the kernel has reasons past the array */
	struct slot_table counts;
	bool logged_unknown;
};

static void resets_stop(void *state)
{
	struct resets *rs = state;

	events_unloaded(rs->events, EV_RESET);
	resets_bpf__destroy(rs->skel);
	slot_table_free(&rs->counts);
	free(rs);
}

static int resets_start(const struct collector_env *env, const void *opts, void **state)
{
	const struct kernel *k = env->kernel;
	const struct kernel_features *f = &k->features;
	const struct resets_opts *o = opts;
	bool netns = o->series.label_mask & RS_LABEL_NETNS, with_reason, received;
	uint32_t hash_size = netns ? o->series.max_series : 1;
	struct bpf_program *sent, *recv;
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
	rs->events = env->events;
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
	autoload_only(rs->skel->obj, (struct bpf_program *[]){ sent, received ? recv : NULL }, 2);
	bpf_map__set_max_entries(rs->skel->maps.tcp_resets_netns, hash_size);
	bpf_map__set_max_entries(rs->skel->maps.tcp_resets,
				 cpu_array_entries(1) /* a slice per element */);
	err = events_prepare(rs->events, rs->skel->obj, EV_RESET,
			     (struct sample_config *)&rs->skel->rodata->sample_cfg);
	if (!err)
		err = collector_load(env, rs->skel->skeleton, "resets", NULL, false);
	if (!err)
		err = collector_attach(env, rs->skel->skeleton, "resets",
				       "tp_btf/tcp_send_reset and tcp_receive_reset", EV_RESET);
	if (err)
		goto cleanup;
	err = slot_table_init(&rs->counts, bpf_map__fd(rs->skel->maps.tcp_resets), RS_NR_SLOTS,
			      RS_STRIDE, bpf_map__fd(rs->skel->maps.tcp_resets_netns), hash_size,
			      netns, slot_series);
	if (err)
		goto cleanup;
	*state = rs;
	log_info("resets: attached %s to tp_btf/tcp_send_reset%s%s%s (%u reset reasons and %u "
		 "TCP states from BTF, max_series=%u)",
		 bpf_program__name(sent), received ? " and " : "",
		 received ? bpf_program__name(recv) : "", received ? " to tcp_receive_reset" : "",
		 with_reason ? k->rst_reasons.n : 0, rs->states->n, rs->cfg.series.max_series);
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
			const struct slot_row *r, uint32_t reason, uint8_t family, uint8_t state)
{
	struct reset_series series = {
		.reason = rs->reasons ? reason : RS_REASON_NONE,
		.family = family,
		.state = state,
		.netns = rs->cfg.series.label_mask & RS_LABEL_NETNS ? r->netns : 0,
	};
	struct labels ex = { 0 };
	char buf[128];
	double t;

	if (e->format == FORMAT_PROMETHEUS || r->overflow ||
	    (rs->reason_other && reason == RS_NR_REASONS - 1) ||
	    !events_exemplar(rs->events, EV_RESET, &series, &ex, buf, sizeof(buf), &t)) {
		expo_u64(e, l, r->value);
		return;
	}
	expo_u64_exemplar(e, l, r->value, &ex, 1, t);
}

static void render_row(void *collector, struct expo *e, const struct slot_row *r)
{
	struct resets *rs = collector;
	char state_buf[16], reason_buf[16], netns_buf[21];
	uint32_t i, reason = 0, family = 0, state = 0;
	struct labels l = { 0 };

	if (r->slot >= RS_SENT_BASE) {
		i = r->slot - RS_SENT_BASE;
		reason = i / RS_NR_STATES % RS_NR_REASONS;
		family = i / RS_NR_STATES / RS_NR_REASONS;
		state = i % RS_NR_STATES;
		labels_add(&l, "family", family_label(family));
		labels_add(
			&l, "reason",
			!rs->reasons ? REASON_UNKNOWN
			: rs->reason_other && reason == RS_NR_REASONS - 1
				? REASON_OTHER
				: reason_name(rs->reasons, reason, reason_buf, sizeof(reason_buf)));
		labels_add(&l, "state", state_label(rs, state, state_buf, sizeof(state_buf)));
	} else {
		i = r->slot - RS_RECEIVED(0, 0);
		labels_add(&l, "family", family_label(i / RS_NR_STATES));
		labels_add(&l, "state",
			   state_label(rs, i % RS_NR_STATES, state_buf, sizeof(state_buf)));
	}
	if (rs->cfg.series.label_mask & RS_LABEL_NETNS)
		labels_add_netns(&l, netns_buf, r->overflow, r->netns);
	if (r->slot >= RS_SENT_BASE)
		render_sent(rs, e, &l, r, reason, family, state);
	else
		expo_u64(e, &l, r->value);
}

static const struct slot_family families[] = {
	[M_SENT] = { RESETS_SENT_FAMILY,
		     "TCP resets sent, by the kernel's reset reason and the TCP state of the "
		     "socket (__none__: no socket matched the segment)." },
	[M_RECEIVED] = { "netstack_tcp_resets_received_total",
			 "TCP resets received and accepted by a socket, by its TCP state." },
};

static const struct slot_collector slots = {
	.name = "resets",
	.map = "tcp_resets_netns",
	.overflow = RS_OVERFLOW,
	.families = families,
	.render = render_row,
};

static int resets_collect(void *state, struct expo *e)
{
	struct resets *rs = state;

	return slot_collect(&slots, 2, &rs->counts, NULL, 0, state, e);
}

static struct bpf_object *resets_object(void *state)
{
	return ((struct resets *)state)->skel->obj;
}

const struct collector_ops resets_collector = {
	.name = RESETS_COLLECTOR,
	.description = "TCP resets sent by reset reason and TCP state, and resets received "
		       "(tp_btf/tcp_send_reset, tcp_receive_reset)",
	.default_enabled = true,
	.sampled = EV_RESET,
	.required_labels = required_labels,
	.optional_labels = optional_labels,
	.n_optional = sizeof(optional_labels) / sizeof(optional_labels[0]),
	.max_series = DEFAULT_MAX_SERIES,
	.max_series_limit = 1u << 20,
	.start = resets_start,
	.collect = resets_collect,
	.stop = resets_stop,
	.object = resets_object,
};
