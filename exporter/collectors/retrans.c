// SPDX-License-Identifier: GPL-2.0-only
/* TCP retransmissions: bpf/retrans.bpf.c counts, this file names and renders. */
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
#include "retrans.h"
#include "sampling/events.h" /* before the skeleton: struct sample_config */
#include "retrans.skel.h"
#include "retrans_nokfunc.skel.h"

#define DEFAULT_MAX_SERIES 4096

static const char *const kind_names[RT_NR_KINDS] = { "retransmit", "synack" };
static const char *const cause_names[RT_NR_CAUSES] = { "timeout", "fast", "tail_loss_probe",
						       "syn" };

static const char *const required_labels[] = { "family", "kind", "state", NULL };
static const struct label_option optional_labels[] = {
	{ "cause", RT_LABEL_CAUSE },
	{ "netns", RT_LABEL_NETNS },
};

struct retrans_opts {
	struct series_opts series; /* first: registry.c parses labels, max_series */
};
_Static_assert(sizeof(struct retrans_opts) <= COLLECTOR_OPTS_SIZE, "retrans options too large");

/* The families, in the order they are rendered. */
enum metric { M_PACKETS, M_SEGMENTS, M_FAILURES };

/* A pair's row (kind and cause), family and state (bpf/retrans.h). */
struct pair {
	uint32_t row, family, state;
};

static struct pair slot_pair(uint32_t slot)
{
	uint32_t fs;
	struct pair p;

	if (slot >= RT_SYNACK_BASE) {
		p.row = RT_ROW_SYNACK;
		fs = (slot - RT_SYNACK_BASE) / 2;
	} else {
		p.row = RT_POS_CAUSE((slot - RT_PAIR_BASE) / 2 % RT_NR_CAUSES);
		fs = (slot - RT_PAIR_BASE) / 2 / RT_NR_CAUSES;
	}
	p.family = fs / RT_NR_STATES;
	p.state = fs % RT_NR_STATES;
	return p;
}

/* A row's cause: its own for kind retransmit, syn for kind synack. */
static uint32_t row_cause(uint32_t row)
{
	return row < RT_NR_CAUSES ? row : RT_CAUSE_SYN;
}

/* A slot's series: the metric, then packets by slot, failures by family, segments by family. */
static uint32_t slot_series_plain(uint32_t slot)
{
	if (slot < RT_OVERFLOW)
		return M_FAILURES << 16 | slot;
	if (slot < RT_PAIR_BASE)
		return SLOT_NONE; /* the overflow count, and slots no program writes */
	if ((slot - RT_PAIR_BASE) % 2)
		return M_SEGMENTS << 16 | slot_pair(slot).family;
	return M_PACKETS << 16 | slot;
}

/* With the cause label, segments by family and cause (a SYN-ACK's cause is syn). */
static uint32_t slot_series_cause(uint32_t slot)
{
	struct pair p;

	if (slot < RT_PAIR_BASE || (slot - RT_PAIR_BASE) % 2 == 0)
		return slot_series_plain(slot);
	p = slot_pair(slot);
	return M_SEGMENTS << 16 | (p.family * RT_NR_CAUSES + row_cause(p.row));
}

/* Without the netns label, IPv4 and IPv6 segments and failures exist from the start. */
static const uint32_t always_plain[] = {
	RT_SEGMENTS(0, RT_IPV4, 0),
	RT_SEGMENTS(0, RT_IPV6, 0),
	RT_FAILURES(RT_IPV4),
	RT_FAILURES(RT_IPV6),
};

/* With the cause label, the segments of each cause. */
#define ALWAYS_CAUSES(family)                                                                      \
	RT_SEGMENTS(RT_CAUSE_TIMEOUT, family, 0), RT_SEGMENTS(RT_CAUSE_FAST, family, 0),           \
		RT_SEGMENTS(RT_CAUSE_TAIL_LOSS_PROBE, family, 0),                                  \
		RT_SEGMENTS(RT_CAUSE_SYN, family, 0)
static const uint32_t always_cause[] = {
	ALWAYS_CAUSES(RT_IPV4),
	ALWAYS_CAUSES(RT_IPV6),
	RT_FAILURES(RT_IPV4),
	RT_FAILURES(RT_IPV6),
};
_Static_assert(RT_NR_CAUSES == 4, "always_cause lists every cause");

/* A running retrans collector. */
struct retrans {
	struct retrans_opts cfg;
	struct retrans_bpf *skel;
	struct events *events;		 /* owned by main */
	const struct tcp_states *states; /* owned by main */
	struct slot_table counts;
	bool have_err; /* the tracepoint reports failed attempts too (Linux 6.17+) */
	bool logged_unknown;
};

/* cause is on by default: a labels list without it leaves the counts unsplit. */
static void retrans_reset(void *opts)
{
	((struct retrans_opts *)opts)->series.label_mask = RT_LABEL_CAUSE;
}

/* One skeleton serves both objects: they are built from one source (bpf/retrans_nokfunc.bpf.c). */
_Static_assert(offsetof(struct retrans_bpf__rodata, sample_cfg) ==
		       offsetof(struct retrans_nokfunc_bpf__rodata, sample_cfg),
	       "retrans objects differ in sample_cfg");
_Static_assert(sizeof(struct retrans_bpf__rodata) == sizeof(struct retrans_nokfunc_bpf__rodata),
	       "retrans objects differ in read-only data");

/*
 * The skeleton, opened on retrans.bpf.o (whose cause reads the socket through the
 * bpf_rdonly_cast kfunc) or on retrans_nokfunc.bpf.o (a helper call instead): libbpf 1.1 fails
 * an object naming a kfunc the kernel lacks unless it may list module BTFs (drops.c).
 */
static struct retrans_bpf *retrans_open(bool kfunc)
{
	struct retrans_bpf *s = calloc(1, sizeof(*s));
	int err;

	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	err = retrans_bpf__create_skeleton(s);
	if (!err && !kfunc)
		s->skeleton->data = retrans_nokfunc_bpf__elf_bytes(&s->skeleton->data_sz);
	if (!err)
		err = bpf_object__open_skeleton(s->skeleton, NULL);
	if (err) {
		retrans_bpf__destroy(s);
		errno = -err;
		return NULL;
	}
	return s;
}

static int probe_kernel(const struct kernel *k, bool *err_arg, bool *synack)
{
	const struct kernel_features *f = &k->features;

	if (f->btf_err) {
		log_error("retrans: no kernel BTF (/sys/kernel/btf/vmlinux): %s",
			  strerror(-f->btf_err));
		return -ENOENT;
	}
	*err_arg = f->tcp_retransmit_skb_args >= 3;
	*synack = f->tcp_retransmit_synack_args >= 2;
	if (f->tcp_retransmit_skb_args < 2) {
		log_error("retrans: kernel has no tcp_retransmit_skb tracepoint in its BTF");
		return -ENOENT;
	}
	return 0;
}

static void retrans_stop(void *state)
{
	struct retrans *rt = state;

	events_unloaded(rt->events, EV_RETRANS);
	retrans_bpf__destroy(rt->skel);
	slot_table_free(&rt->counts);
	free(rt);
}

/*
 * The programs for this kernel's tracepoint (err or not), these labels and sampling (sample_*,
 * which alone test the sampling rate: bpf/retrans.bpf.c).
 */
static void prog_names(char *retransmit, char *synack, size_t len, bool have_err, bool cause,
		       bool netns, bool sampled)
{
	const char *prefix = sampled ? "sample" : "count", *ns = netns ? "_netns" : "";

	snprintf(retransmit, len, "%s_retransmit%s%s%s", prefix, have_err ? "" : "_noerr",
		 cause ? "" : "_nocause", ns);
	snprintf(synack, len, "%s_synack%s", prefix, ns);
}

static int retrans_start(const struct collector_env *env, const void *opts, void **state)
{
	const struct kernel *k = env->kernel;
	const struct retrans_opts *o = opts;
	bool netns = o->series.label_mask & RT_LABEL_NETNS, synack, have_err;
	bool cause = o->series.label_mask & RT_LABEL_CAUSE;
	uint32_t hash_size = netns ? o->series.max_series : 1;
	struct bpf_program *retransmit, *synack_prog;
	char retransmit_name[48], synack_name[48];
	struct retrans *rt;
	int err;

	err = probe_kernel(k, &have_err, &synack);
	if (err)
		return err;
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	rt->cfg = *o;
	rt->events = env->events;
	rt->have_err = have_err;
	rt->states = &k->states;
	if (k->states_err)
		log_warn("retrans: no TCP state names in kernel BTF (%s): states are numbers",
			 strerror(-k->states_err));
	rt->skel = retrans_open(k->features.rdonly_cast);
	if (!rt->skel) {
		err = -errno;
		log_error("retrans: cannot open BPF object: %s", strerror(-err));
		goto cleanup;
	}
	err = events_prepare(rt->events, rt->skel->obj, EV_RETRANS,
			     (struct sample_config *)&rt->skel->rodata->sample_cfg);
	if (err)
		goto cleanup;
	/* One program per hook: the one for this kernel's tracepoint, these labels, sampling. */
	prog_names(retransmit_name, synack_name, sizeof(retransmit_name), have_err, cause, netns,
		   rt->skel->rodata->sample_cfg.rate);
	retransmit = bpf_object__find_program_by_name(rt->skel->obj, retransmit_name);
	synack_prog = bpf_object__find_program_by_name(rt->skel->obj, synack_name);
	if (!retransmit || !synack_prog) {
		err = -ENOENT;
		log_error("retrans: BPF object has no program %s or %s", retransmit_name,
			  synack_name);
		goto cleanup;
	}
	autoload_only(rt->skel->obj,
		      (struct bpf_program *[]){ retransmit, synack ? synack_prog : NULL }, 2);
	bpf_map__set_max_entries(rt->skel->maps.tcp_retransmits_netns, hash_size);
	bpf_map__set_max_entries(rt->skel->maps.tcp_retransmits,
				 cpu_array_entries(1) /* a slice per element */);
	err = collector_load(env, rt->skel->skeleton, "retrans", NULL, false);
	if (!err)
		err = collector_attach(env, rt->skel->skeleton, "retrans",
				       "tp_btf/tcp_retransmit_skb and tcp_retransmit_synack",
				       EV_RETRANS);
	if (err)
		goto cleanup;
	err = slot_table_init(&rt->counts, bpf_map__fd(rt->skel->maps.tcp_retransmits), RT_NR_SLOTS,
			      RT_STRIDE, bpf_map__fd(rt->skel->maps.tcp_retransmits_netns),
			      hash_size, netns, cause ? slot_series_cause : slot_series_plain);
	if (err)
		goto cleanup;
	*state = rt;
	log_info("retrans: attached %s to tp_btf/tcp_retransmit_skb%s%s%s (%u TCP states from "
		 "BTF, max_series=%u)",
		 bpf_program__name(retransmit), synack ? " and " : "",
		 synack ? bpf_program__name(synack_prog) : "",
		 synack ? " to tp_btf/tcp_retransmit_synack" : "", rt->states->n,
		 rt->cfg.series.max_series);
	if (!have_err)
		log_warn("retrans: tcp_retransmit_skb has no err argument before Linux 6.17: only "
			 "successful retransmissions are seen, and "
			 "netstack_tcp_retransmit_failures_total is not exported");
	if (!synack)
		log_warn("retrans: kernel has no tcp_retransmit_synack tracepoint: SYN-ACK "
			 "retransmissions are not counted");
	return 0;
cleanup:
	retrans_stop(rt);
	return err;
}

static void render_row(void *collector, struct expo *e, const struct slot_row *r)
{
	struct retrans *rt = collector;
	struct pair p = slot_pair(r->slot);
	bool cause = rt->cfg.series.label_mask & RT_LABEL_CAUSE;
	char state_buf[16], netns_buf[21];
	struct labels l = { 0 };

	if (r->slot < RT_OVERFLOW) {
		labels_add(&l, "family", family_label(r->slot));
	} else if (rt->counts.series(r->slot) >> 16 == M_SEGMENTS) {
		labels_add(&l, "family", family_label(p.family));
		if (cause)
			labels_add(&l, "cause", cause_names[row_cause(p.row)]);
	} else {
		/* Slots are below RT_NR_SLOTS (struct slot_table): row and family are in range. */
		const char *name =
			tcp_state_name(rt->states, p.state, state_buf, sizeof(state_buf));

		if (name == state_buf)
			log_once(rt->logged_unknown, LOG_WARN,
				 "retrans: TCP state %u has no name in this kernel's BTF; it is "
				 "rendered as its number",
				 p.state);
		labels_add(&l, "family", family_label(p.family));
		labels_add(
			&l, "kind",
			kind_names[p.row == RT_ROW_SYNACK ? RT_KIND_SYNACK : RT_KIND_RETRANSMIT]);
		if (cause)
			labels_add(&l, "cause", cause_names[row_cause(p.row)]);
		labels_add(&l, "state", name);
	}
	if (rt->cfg.series.label_mask & RT_LABEL_NETNS)
		labels_add_netns(&l, netns_buf, r->overflow, r->netns);
	expo_u64(e, &l, r->value);
}

static const struct slot_family families[] = {
	[M_PACKETS] = { RETRANSMITS_FAMILY, "TCP retransmissions the kernel counted, "
					    "one per packet, by kind, cause and "
					    "TCP state." },
	[M_SEGMENTS] = { "netstack_tcp_retransmitted_segments_total",
			 "TCP segments retransmitted, as counted in TcpRetransSegs, by cause." },
	[M_FAILURES] = { "netstack_tcp_retransmit_failures_total",
			 "TCP retransmission attempts that failed (tracepoint err != 0)." },
};

static const struct slot_collector slots = {
	.name = "retrans",
	.map = "tcp_retransmits_netns",
	.overflow = RT_OVERFLOW,
	.families = families,
	.render = render_row,
};

static int retrans_collect(void *state, struct expo *e)
{
	struct retrans *rt = state;
	bool cause = rt->cfg.series.label_mask & RT_LABEL_CAUSE;

	return slot_collect(&slots, rt->have_err ? 3 : 2, &rt->counts,
			    cause ? always_cause : always_plain,
			    cause ? sizeof(always_cause) / sizeof(always_cause[0])
				  : sizeof(always_plain) / sizeof(always_plain[0]),
			    state, e);
}

static struct bpf_object *retrans_object(void *state)
{
	return ((struct retrans *)state)->skel->obj;
}

const struct collector_ops retrans_collector = {
	.name = RETRANS_COLLECTOR,
	.description = "TCP retransmissions by kind, cause and TCP state, and retransmitted "
		       "segments (tp_btf/tcp_retransmit_skb, tcp_retransmit_synack)",
	.default_enabled = true,
	.sampled = EV_RETRANS,
	.required_labels = required_labels,
	.optional_labels = optional_labels,
	.n_optional = sizeof(optional_labels) / sizeof(optional_labels[0]),
	.max_series = DEFAULT_MAX_SERIES,
	.max_series_limit = 1u << 20,
	.reset = retrans_reset,
	.start = retrans_start,
	.collect = retrans_collect,
	.stop = retrans_stop,
	.object = retrans_object,
};
