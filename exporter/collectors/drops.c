// SPDX-License-Identifier: GPL-2.0-only
/* Packet drops by kernel drop reason: bpf/drops.bpf.c counts, this file names and renders. */
#define _GNU_SOURCE /* qsort_r */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/bpfload.h"
#include "kernel/bpfmap.h"
#include "collectors/collector.h"
#include "drops.h"
#include "sampling/events.h" /* before the skeleton: struct sample_config */
#include "drops.skel.h"
#include "drops_nokfunc.skel.h"
#include "kernel/kernel.h"
#include "base/log.h"
#include "base/parse.h"

#define DEFAULT_MAX_SERIES 4096
_Static_assert(DROP_UNSPECIFIED == DROP_REASON_UNSPECIFIED,
	       "count_drop_noreason's reason is the one kernel.c names NOT_SPECIFIED");

static const char *const proto_names[NR_PROTOS] = { "tcp", "udp", "icmp", "icmpv6", "other" };

static const char *const required_labels[] = { "reason", "family", "protocol", NULL };
static const struct label_option optional_labels[] = {
	{ "function", DROP_LABEL_FUNCTION },
	{ "netns", DROP_LABEL_NETNS },
	{ "interface", DROP_LABEL_INTERFACE },
};
#define NR_OPTIONAL (sizeof(optional_labels) / sizeof(optional_labels[0]))

struct drops_opts {
	struct series_opts series; /* first: registry.c parses labels, max_series */
	bool direct_read;	   /* use bpf_rdonly_cast where the kernel has it */
	bool drop_reason;	   /* use the tracepoint's reason where the kernel has it */
};
_Static_assert(sizeof(struct drops_opts) <= COLLECTOR_OPTS_SIZE, "drops options too large");

/* The function label of a location not in kallsyms (or without CAP_SYSLOG to read it). */
static const char unknown_function[] = KSYM_UNKNOWN;

/* One rendered series before merging: several locations can share a function. */
struct row {
	uint32_t reason; /* UINT32_MAX: the overflow slot */
	uint8_t family, proto;
	bool overflow;	      /* optional labels unknown: the hash was full */
	const char *function; /* unknown_function when not in kallsyms */
	uint32_t netns;
	char ifname[3 * DROP_IFNAMSIZ + 1]; /* valid UTF-8: bytes that are not become U+FFFD */
	uint64_t value;
};

#define SAME_AS_PREV (1u << 31)

/* A running drops collector. */
struct drops {
	struct drops_opts cfg;
	struct drops_bpf *skel;
	/* count_drop_noreason: slots claimed in skb_drop_claims, keys read from there. */
	bool noreason;
	struct events *events; /* owned by main */
	/* Shared with the other threads, owned by main: never freed here. */
	const struct reason_table *reasons;
	const struct ksyms *ksyms;
	struct percpu_reader by_reason, by_slot;
	/* How many slots of the labelled series (bpf/drops.bpf.c) were handed out. */
	const uint32_t *slots_next;
	bool logged_overflow, logged_unknown, logged_keys;
	/*
	 * The labelled series' rows, one per slot in slot order, and the order to render them in
	 * (with SAME_AS_PREV when a row renders as the same series as the one before it). Both
	 * are kept across scrapes: a slot's key never changes, so the sort (docs/cost.md, the
	 * scrape) runs only when new slots were taken.
	 */
	struct row *rows;
	uint32_t *order;
	size_t rows_cap, rows_n;
};

static void drops_reset(void *opts)
{
	struct drops_opts *o = opts;

	o->direct_read = true;
	o->drop_reason = true;
}

static int drops_set(void *opts, const char *key, const char *value, char *err, size_t errlen)
{
	struct drops_opts *o = opts;

	if (!strcmp(key, "direct_read")) {
		if (!strcmp(value, "auto")) {
			o->direct_read = true;
			return 0;
		}
		if (!strcmp(value, "false")) {
			o->direct_read = false;
			return 0;
		}
		snprintf(err, errlen, "expected auto or false, got '%s'", value);
		return -EINVAL;
	}
	if (!strcmp(key, "drop_reason")) {
		if (!strcmp(value, "auto") || !strcmp(value, "false")) {
			o->drop_reason = !strcmp(value, "auto");
			return 0;
		}
		snprintf(err, errlen, "expected auto or false, got '%s'", value);
		return -EINVAL;
	}
	return 1;
}

/*
 * tp_btf/kfree_skb, with the drop reason (Linux 5.17 and later) or without (*noreason: every
 * packet freed through kfree_skb() counts, as NOT_SPECIFIED), as the tracepoint's prototype in
 * BTF says. *direct tells whether the kernel has bpf_rdonly_cast (6.2), which the faster
 * program variant needs.
 */
static int probe_kernel(const struct kernel *k, bool *direct, bool *noreason)
{
	const struct kernel_features *f = &k->features;

	if (f->btf_err) {
		log_error("drops: no kernel BTF (/sys/kernel/btf/vmlinux): %s",
			  strerror(-f->btf_err));
		return -ENOENT;
	}
	*direct = f->rdonly_cast;
	if (f->kfree_skb_args < 2) {
		log_error("drops: kernel BTF has no kfree_skb tracepoint (btf_trace_kfree_skb)");
		return -ENOENT;
	}
	*noreason = f->kfree_skb_args < 3;
	return 0;
}

/* One skeleton serves both objects: they are built from one source (bpf/drops_nokfunc.bpf.c). */
#define SAME_RODATA(f)                                                                             \
	_Static_assert(offsetof(struct drops_bpf__rodata, f) ==                                    \
			       offsetof(struct drops_nokfunc_bpf__rodata, f),                      \
		       "drops objects differ in " #f)
SAME_RODATA(max_series);
SAME_RODATA(slot_stride);
SAME_RODATA(sample_cfg);
SAME_RODATA(label_mask);
_Static_assert(sizeof(struct drops_bpf__rodata) == sizeof(struct drops_nokfunc_bpf__rodata),
	       "drops objects differ in read-only data");

/*
 * The skeleton, opened on drops.bpf.o (whose direct reads use the bpf_rdonly_cast kfunc) or on
 * drops_nokfunc.bpf.o: the same programs and maps with no kfunc reference. libbpf 1.1 fails an
 * object with a kfunc the kernel lacks, even a weak one, unless it may list module BTFs
 * (CAP_SYS_ADMIN), so where the kfunc is missing the object must not name it at all.
 */
static struct drops_bpf *drops_open(bool kfunc)
{
	struct drops_bpf *s = calloc(1, sizeof(*s));
	int err;

	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	err = drops_bpf__create_skeleton(s);
	if (!err && !kfunc)
		s->skeleton->data = drops_nokfunc_bpf__elf_bytes(&s->skeleton->data_sz);
	if (!err)
		err = bpf_object__open_skeleton(s->skeleton, NULL);
	if (err) {
		drops_bpf__destroy(s);
		errno = -err;
		return NULL;
	}
	return s;
}

static void drops_stop(void *state)
{
	struct drops *d = state;

	events_unloaded(d->events, EV_DROP);
	drops_bpf__destroy(d->skel);
	percpu_reader_free(&d->by_reason);
	percpu_reader_free(&d->by_slot);
	map_view_free(d->slots_next, sizeof(*d->slots_next));
	free(d->rows);
	free(d->order);
	free(d);
}

/*
 * The program for this configuration: count_drop_compat without direct reads, else one per
 * optional label set (suffix f, n, i in that order; none for the default labels).
 */
static void prog_name(char *buf, size_t len, unsigned mask, bool direct, bool sampled,
		      bool noreason)
{
	if (noreason) {
		snprintf(buf, len, "count_drop_noreason");
		return;
	}
	if (!direct) {
		snprintf(buf, len, "count_drop_compat");
		return;
	}
	snprintf(buf, len, "%s%s%s%s%s", sampled ? "sample_drop" : "count_drop", mask ? "_" : "",
		 mask & DROP_LABEL_FUNCTION ? "f" : "", mask & DROP_LABEL_NETNS ? "n" : "",
		 mask & DROP_LABEL_INTERFACE ? "i" : "");
}

static int drops_start(const struct collector_env *env, const void *opts, void **state)
{
	const struct kernel *k = env->kernel;
	struct drops *d;
	struct bpf_program *p;
	uint32_t array_size;
	char prog[32];
	bool direct, noreason;
	int err;

	err = probe_kernel(k, &direct, &noreason);
	if (err)
		return err;
	if (k->reasons_err) {
		log_error("drops: cannot read drop reason names from BTF or tracefs: %s",
			  strerror(-k->reasons_err));
		return k->reasons_err;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cfg = *(const struct drops_opts *)opts;
	d->events = env->events;
	d->noreason = noreason || !d->cfg.drop_reason;
	direct = direct && d->cfg.direct_read && !d->noreason;
	d->reasons = &k->reasons;
	if (d->noreason)
		log_info("drops: %s: every packet freed through kfree_skb() counts, as reason "
			 "NOT_SPECIFIED (the function label says where; docs/kernels.md)",
			 noreason ? "this kernel's kfree_skb tracepoint has no drop reason"
				  : "drop_reason = false");
	if (d->cfg.series.label_mask & DROP_LABEL_FUNCTION) {
		d->ksyms = kernel_ksyms(k, &err);
		if (err)
			log_warn("drops: cannot read /proc/kallsyms (%s; addresses need "
				 "CAP_SYSLOG): function labels will be \"" KSYM_UNKNOWN "\"",
				 strerror(-err));
	}
	d->skel = drops_open(direct);
	if (!d->skel) {
		err = -errno;
		log_error("drops: cannot open BPF object: %s", strerror(-err));
		goto cleanup;
	}
	err = events_prepare(d->events, d->skel->obj, EV_DROP,
			     (struct sample_config *)&d->skel->rodata->sample_cfg);
	if (err)
		goto cleanup;
	prog_name(prog, sizeof(prog), d->cfg.series.label_mask, direct,
		  d->skel->rodata->sample_cfg.rate, d->noreason);
	p = bpf_object__find_program_by_name(d->skel->obj, prog);
	autoload_only(d->skel->obj, &p, 1);
	d->skel->rodata->label_mask = d->cfg.series.label_mask;
	/* Reasons past SKB_DROP_REASON_MAX go to the hash (lookups past the array fail). */
	array_size = DROP_INDEX(d->reasons->max, 0, 0);
	bpf_map__set_max_entries(d->skel->maps.skb_drops_by_reason,
				 cpu_array_entries(DROP_STRIDE(d->reasons->max)));
	bpf_map__set_max_entries(d->skel->maps.skb_drops, d->cfg.series.max_series);
	/* The keys: claimed with them in skb_drop_claims by count_drop_noreason, else an array. */
	bpf_map__set_max_entries(d->skel->maps.skb_drop_keys,
				 d->noreason ? 1 : d->cfg.series.max_series);
	bpf_map__set_max_entries(d->skel->maps.skb_drop_claims,
				 d->noreason ? d->cfg.series.max_series : 1);
	bpf_map__set_max_entries(d->skel->maps.skb_drop_last, cpu_array_entries(1));
	bpf_map__set_max_entries(d->skel->maps.skb_drop_counts,
				 cpu_array_entries(CPU_STRIDE(d->cfg.series.max_series)));
	d->skel->rodata->max_series = d->cfg.series.max_series;
	d->skel->rodata->slot_stride = CPU_STRIDE(d->cfg.series.max_series);
	err = collector_load(env, d->skel->skeleton, "drops", NULL, false);
	if (!err)
		err = collector_attach(env, d->skel->skeleton, "drops", "tp_btf/kfree_skb",
				       EV_DROP);
	if (err)
		goto cleanup;
	err = cpu_array_reader_init(&d->by_reason, bpf_map__fd(d->skel->maps.skb_drops_by_reason),
				    array_size, DROP_STRIDE(d->reasons->max));
	if (!err)
		err = cpu_array_reader_init(&d->by_slot, bpf_map__fd(d->skel->maps.skb_drop_counts),
					    d->cfg.series.max_series,
					    CPU_STRIDE(d->cfg.series.max_series));
	if (!err) {
		d->slots_next =
			map_view(bpf_map__fd(d->skel->maps.skb_drop_slots), sizeof(*d->slots_next));
		if (!d->slots_next) {
			err = -errno;
			log_error("drops: cannot map the series' keys: %s", strerror(-err));
		}
	}
	if (err)
		goto cleanup;
	*state = d;
	log_info("drops: attached %s to tp_btf/kfree_skb (%u reasons from %s, max_series=%u, "
		 "%s)",
		 prog, d->reasons->n, d->reasons->source, d->cfg.series.max_series,
		 direct ? "direct reads" : "helper reads");
	return 0;
cleanup:
	drops_stop(d);
	return err;
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c;

	if (x->reason != y->reason)
		return x->reason < y->reason ? -1 : 1;
	if (x->family != y->family)
		return x->family - y->family;
	if (x->proto != y->proto)
		return x->proto - y->proto;
	if (x->overflow != y->overflow)
		return x->overflow - y->overflow;
	c = strcmp(x->function, y->function);
	if (c)
		return c;
	if (x->netns != y->netns)
		return x->netns < y->netns ? -1 : 1;
	return strcmp(x->ifname, y->ifname);
}

/* The value, with the latest sampled event of the series as exemplar (OpenMetrics only). */
static void render_value(const struct drops *d, struct expo *e, const struct labels *l,
			 const struct row *r)
{
	unsigned m = d->cfg.series.label_mask;
	const struct drop_series series = {
		.reason = r->reason,
		.family = r->family,
		.proto = r->proto,
		.function = m & DROP_LABEL_FUNCTION ? r->function : NULL,
		.netns = m & DROP_LABEL_NETNS ? r->netns : 0,
		.ifname = m & DROP_LABEL_INTERFACE ? r->ifname : NULL,
	};
	struct labels ex = { 0 };
	char buf[128];
	double t;

	if (e->format == FORMAT_PROMETHEUS || r->reason == UINT32_MAX || r->overflow ||
	    ((m & DROP_LABEL_FUNCTION) && r->function == unknown_function) ||
	    !events_exemplar(d->events, EV_DROP, &series, &ex, buf, sizeof(buf), &t)) {
		expo_u64(e, l, r->value);
		return;
	}
	expo_u64_exemplar(e, l, r->value, &ex, 1, t);
}

static void render_row(struct drops *d, struct expo *e, const struct row *r)
{
	char reason_buf[32], netns_buf[21];
	struct labels l = { 0 };
	const char *reason;

	if (r->reason == UINT32_MAX) {
		reason = OVERFLOW_LABEL;
	} else {
		reason = reason_name(d->reasons, r->reason, reason_buf, sizeof(reason_buf));
		if (reason == reason_buf)
			log_once(d->logged_unknown, LOG_WARN,
				 "drops: drop reason %u has no name in this kernel's BTF; it is "
				 "rendered as its number",
				 r->reason);
	}
	labels_add(&l, "reason", reason);
	labels_add(&l, "family", r->family == FAMILY_ARP ? "arp" : family_label(r->family));
	labels_add(&l, "protocol", proto_names[r->proto]);
	if (d->cfg.series.label_mask & DROP_LABEL_FUNCTION)
		labels_add(&l, "function", r->overflow ? OVERFLOW_LABEL : r->function);
	if (d->cfg.series.label_mask & DROP_LABEL_NETNS)
		labels_add_netns(&l, netns_buf, r->overflow, r->netns);
	if (d->cfg.series.label_mask & DROP_LABEL_INTERFACE)
		labels_add(&l, "interface", r->overflow ? OVERFLOW_LABEL : r->ifname);
	render_value(d, e, &l, r);
}

static void row_from_key(const struct drops *d, struct row *r, const struct drop_key *k)
{
	char ifname[DROP_IFNAMSIZ + 1] = { 0 };

	memset(r, 0, sizeof(*r));
	r->reason = k->reason;
	r->family = k->family < NR_FAMILIES ? k->family : FAMILY_OTHER;
	r->proto = k->proto < NR_PROTOS ? k->proto : PROTO_OTHER;
	/* Never a raw address: a label must not tell scrapers where the kernel is (KASLR). */
	r->function = d->ksyms ? ksyms_lookup(d->ksyms, k->location) : NULL;
	if (!r->function)
		r->function = unknown_function;
	r->netns = k->netns;
	/*
	 * Any process that may rename a device in its namespace picks these bytes. Made valid here,
	 * so that names differing only in invalid bytes merge into one series (and the exemplar's
	 * interface, made valid the same way, still matches).
	 */
	memcpy(ifname, k->ifname, DROP_IFNAMSIZ);
	label_text(r->ifname, sizeof(r->ifname), ifname);
}

static int cmp_order(const void *a, const void *b, void *rows)
{
	const struct row *r = rows;

	return cmp_row(&r[*(const uint32_t *)a], &r[*(const uint32_t *)b]);
}

static struct row *ordered(const struct drops *d, size_t h)
{
	return &d->rows[d->order[h] & ~SAME_AS_PREV];
}

/*
 * The keys of the slots taken since the last scrape, from a view of the keys' map held only
 * meanwhile (a lasting one would add the whole map to the RSS). A slot whose reason is still 0
 * is being written: it and those after it wait for the next scrape (their counts only show
 * once their key does). Returns the slots known now.
 */
static uint32_t new_rows(struct drops *d, uint32_t n)
{
	size_t len = (size_t)n * sizeof(struct drop_key);
	uint32_t i;

	/*
	 * count_drop_noreason: a slot's key is its claim's value, whole once it can be looked up
	 * (ENOENT: claimed, not yet linked; that slot and those after it wait).
	 */
	if (d->noreason) {
		int fd = bpf_map__fd(d->skel->maps.skb_drop_claims);

		for (i = d->rows_n; i < n; i++) {
			struct drop_key k;

			if (bpf_map_lookup_elem(fd, &i, &k))
				break;
			row_from_key(d, &d->rows[i], &k);
		}
		return i;
	}
	const struct drop_key *keys = map_view(bpf_map__fd(d->skel->maps.skb_drop_keys), len);

	if (!keys) {
		log_once(d->logged_keys, LOG_WARN, "drops: cannot map the series' keys: %s",
			 strerror(errno));
		return d->rows_n;
	}
	for (i = d->rows_n; i < n; i++) {
		struct drop_key k;

		/* The kernel writes the reason last; read it first. */
		k.reason = __atomic_load_n(&keys[i].reason, __ATOMIC_ACQUIRE);
		if (!k.reason)
			break;
		memcpy(&k, &keys[i], sizeof(k));
		row_from_key(d, &d->rows[i], &k);
	}
	map_view_free(keys, len);
	return i;
}

/* The labelled rows: keys of the slots taken since the last scrape, then every slot's count. */
static int slot_rows(struct drops *d)
{
	uint32_t n = __atomic_load_n(d->slots_next, __ATOMIC_RELAXED), i;
	size_t known = d->rows_n;

	if (n > d->cfg.series.max_series)
		n = d->cfg.series.max_series;
	if (n > d->rows_cap) {
		struct row *r = realloc(d->rows, n * sizeof(*r));
		uint32_t *o;

		if (!r)
			return -ENOMEM;
		d->rows = r;
		o = realloc(d->order, n * sizeof(*o));
		if (!o)
			return -ENOMEM;
		d->order = o;
		d->rows_cap = n;
	}
	if (n > d->rows_n)
		d->rows_n = new_rows(d, n);
	for (i = 0; i < d->rows_n; i++)
		d->rows[i].value = d->by_slot.sums[i];
	if (d->rows_n != known) {
		for (i = 0; i < d->rows_n; i++)
			d->order[i] = i;
		qsort_r(d->order, d->rows_n, sizeof(*d->order), cmp_order, d->rows);
		for (i = 1; i < d->rows_n; i++)
			if (!cmp_row(ordered(d, i - 1), ordered(d, i)))
				d->order[i] |= SAME_AS_PREV;
	}
	return 0;
}

/*
 * The array's next non-zero slot from *pos, as a row. Slot order is (reason, family, protocol)
 * order, but for reason 0 (the overflow slots, rendered last): start past them and wrap.
 */
static bool next_array_row(const struct drops *d, int na, int *pos, struct row *r)
{
	for (; *pos < na; (*pos)++) {
		int i = (*pos + NR_FAMILIES * NR_PROTOS) % na;
		uint32_t idx = i;

		if (!d->by_reason.sums[i])
			continue;
		memset(r, 0, sizeof(*r));
		r->reason = idx / (NR_FAMILIES * NR_PROTOS);
		if (r->reason == 0) /* SKB_NOT_DROPPED_YET: the overflow slots */
			r->reason = UINT32_MAX;
		r->family = idx / NR_PROTOS % NR_FAMILIES;
		r->proto = idx % NR_PROTOS;
		r->overflow = d->cfg.series.label_mask != 0;
		r->function = unknown_function;
		r->value = d->by_reason.sums[i];
		(*pos)++;
		return true;
	}
	return false;
}

/*
 * Drops the hash had no room for (bpf/drops.bpf.c count): with optional labels every count in
 * the array, without them those of reason 0.
 */
static uint64_t array_overflow(const struct drops *d, int na)
{
	int n = d->cfg.series.label_mask ? na : NR_FAMILIES * NR_PROTOS;
	uint64_t sum = 0;

	for (int i = 0; i < n && i < na; i++)
		sum += d->by_reason.sums[i];
	return sum;
}

static int drops_collect(void *state, struct expo *e)
{
	struct drops *d = state;
	struct row a, cur;
	bool have_a, have = false, last_hash = false;
	uint64_t overflowed;
	int na, nk, err, pos = 0;
	size_t h = 0;

	na = percpu_reader_read(&d->by_reason);
	nk = percpu_reader_read(&d->by_slot);
	if (na < 0 || nk < 0) {
		err = na < 0 ? na : nk;
		log_warn("drops: cannot read maps: %s", strerror(-err));
		return err;
	}
	err = slot_rows(d);
	if (err)
		return err;

	expo_family(e, DROPS_FAMILY, METRIC_COUNTER,
		    "Packets dropped by the kernel, by drop reason.");
	/* Merge the two sorted sequences, adding up rows that render as the same series. */
	have_a = next_array_row(d, na, &pos, &a);
	while (have_a || h < d->rows_n) {
		const struct row *r;
		bool same;

		if (have_a && (h == d->rows_n || cmp_row(&a, ordered(d, h)) <= 0)) {
			r = &a;
			same = have && !cmp_row(&cur, r);
		} else {
			r = ordered(d, h);
			/* cur holds the previous hash row's series when the last row was one. */
			same = have && (last_hash ? d->order[h] & SAME_AS_PREV : !cmp_row(&cur, r));
			h++;
		}
		last_hash = r != &a;
		if (same) {
			cur.value += r->value;
		} else {
			if (have)
				render_row(d, e, &cur);
			cur = *r;
			have = true;
		}
		if (r == &a)
			have_a = next_array_row(d, na, &pos, &a);
	}
	if (have)
		render_row(d, e, &cur);
	overflowed = array_overflow(d, na);
	if (overflowed)
		log_once(d->logged_overflow, LOG_WARN,
			 "drops: map skb_drops is full (max_series=%u); further series are "
			 "counted with optional labels '" OVERFLOW_LABEL "'",
			 d->cfg.series.max_series);
	expo_map_overflow(e, "skb_drops", overflowed);
	return 0;
}

static struct bpf_object *drops_object(void *state)
{
	return ((struct drops *)state)->skel->obj;
}

const struct collector_ops drops_collector = {
	.name = DROPS_COLLECTOR,
	.description = "packets dropped by the kernel, by drop reason (tp_btf/kfree_skb)",
	.default_enabled = true,
	.sampled = EV_DROP,
	.required_labels = required_labels,
	.optional_labels = optional_labels,
	.n_optional = NR_OPTIONAL,
	.max_series = DEFAULT_MAX_SERIES,
	.max_series_limit = 1u << 20,
	.reset = drops_reset,
	.set = drops_set,
	.start = drops_start,
	.collect = drops_collect,
	.stop = drops_stop,
	.object = drops_object,
};
