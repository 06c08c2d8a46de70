// SPDX-License-Identifier: GPL-2.0-only
/*
 * Render-time folding of the netns label into pod labels, under a per-family series cap.
 *
 * Each sample a collector renders (an "input", keyed by its full label set) is assigned to an
 * output series. Counters must never go backwards, yet inputs move between outputs: a netns is
 * resolved late, a pod expires, the cap folds a new label set into the overflow series. So each
 * input remembers the value it had when it joined its output (base), an output keeps what
 * departed inputs left in it (carry), and renders carry + sum(value - base) of its inputs. An
 * expired pod's series hands its carry and its inputs to the "__gone__" remainder series.
 *
 * A collector whose counters start again from 0 (a reload restarted it, its maps are new) has a
 * new generation (podfold_filter_generation): every input's counts so far then stay in its
 * series and the new ones add to them. Totals alone cannot tell: a new total that passed the
 * old one before the scrape would leave some bucket below its base.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "pods/foldlabels.h"
#include "pods/foldtable.h"
#include "pods/podfold.h"
#include "pods/podsconf.h"

#define GONE_LABEL "__gone__"

enum out_kind { OUT_NORMAL, OUT_OVERFLOW, OUT_GONE };

struct podfold {
	struct fam *fams;
	struct podsnap *snap; /* the resolver's */
	unsigned max_series;
};

/*
 * A value: nv counts and a sum (histograms only). The counts are the classic buckets (nc of
 * them, one for a counter), then, for a family with native buckets, its zero bucket and its nn
 * native buckets: a family's histograms share their schema, offset and nn, so that they add up
 * bucket by bucket.
 */
struct val {
	uint64_t *c;
	double sum;
};

struct out {
	struct node nd; /* keyed by the series' labels */
	enum out_kind kind;
	struct val carry, cur;
	const struct in *ex; /* the input with the newest exemplar, while rendering */
	unsigned nin;	     /* inputs assigned */
	unsigned live;	     /* of which not expired */
	bool expired;	     /* an expired input left it: hand it to the remainder once empty */
	uint32_t netns;	     /* one namespace it came from, to notice expiry with no inputs left */
};

struct in {
	struct node nd;
	struct out *out;
	struct val base, last, now;
	uint64_t gen;	  /* scrape it was last seen in */
	struct lset want; /* labels of the output it should go to */
	enum out_kind want_kind;
	struct lset ex; /* its latest exemplar's labels, when has_ex */
	double ex_value, ex_time;
	bool has_ex;
	bool expired;
	uint32_t netns;
};

struct overflowed {
	struct node nd;
	uint64_t gen;
};

struct fam {
	struct fam *next;
	char *name;
	char owner[32]; /* the collector whose filter folds it ("" unnamed) */
	enum metric_type type;
	int nv; /* values per series; 0 until the first sample */
	int nc; /* of which classic buckets (1 for a counter) */
	double *bounds;
	bool native; /* histograms with native buckets: their shape, from the first sample */
	int schema;
	int32_t offset;
	unsigned nn;
	double zero_threshold;
	struct node *outs, *ins, *overflowed; /* uthash tables */
	unsigned n_normal;
	uint64_t overflow_total, gen;
	/* The collector's generation its counts are from, and the one of this scrape's samples. */
	uint64_t cgen, cgen_now;
	uint64_t shape_restarts; /* the fold started again for a new bucket shape */
	uint64_t shape_gen;	 /* the scrape of the last sample taken */
	bool logged_overflow, logged_mixed;
};

struct pods_filter {
	struct expo_filter f;
	struct podfold *fold;
	unsigned mask;
	char owner[32]; /* its collector (podfold_filter_owner) */
	uint64_t cgen;	/* the collector's generation, 0: unknown */
	struct pods_snapshot *snap;
	struct fam *cur;
};

static struct fam *fam_get(struct podfold *fold, const char *name, enum metric_type type)
{
	struct fam *f;

	for (f = fold->fams; f; f = f->next)
		if (!strcmp(f->name, name))
			return f;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->name = strdup(name))) {
		free(f);
		return NULL;
	}
	f->type = type;
	f->next = fold->fams;
	fold->fams = f;
	return f;
}

static int val_init(struct val *v, int nv)
{
	v->c = calloc(nv, sizeof(*v->c));
	v->sum = 0;
	return v->c ? 0 : -ENOMEM;
}

/* to += a - b */
static void val_add_diff(struct val *to, const struct val *a, const struct val *b, int nv)
{
	for (int i = 0; i < nv; i++)
		to->c[i] += a->c[i] - (b ? b->c[i] : 0);
	to->sum += a->sum - (b ? b->sum : 0);
}

static void val_copy(struct val *to, const struct val *from, int nv)
{
	memcpy(to->c, from->c, nv * sizeof(*to->c));
	to->sum = from->sum;
}

static void val_zero(struct val *v, int nv)
{
	memset(v->c, 0, nv * sizeof(*v->c));
	v->sum = 0;
}

static uint64_t val_total(const struct val *v, int nv)
{
	uint64_t t = 0;

	for (int i = 0; i < nv; i++)
		t += v->c[i];
	return t;
}

/* Whether some count of a is below b's. */
static bool val_below(const struct val *a, const struct val *b, int nv)
{
	for (int i = 0; i < nv; i++)
		if (a->c[i] < b->c[i])
			return true;
	return false;
}

static void out_free(struct out *o)
{
	free(o->nd.key.mem);
	free(o->carry.c);
	free(o->cur.c);
	free(o);
}

static struct out *out_new(struct fam *f, const struct labels *key, enum out_kind kind)
{
	struct out *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->kind = kind;
	if (lset_set(&o->nd.key, key) || val_init(&o->carry, f->nv) || val_init(&o->cur, f->nv))
		goto fail;
	if (table_add(&f->outs, &o->nd))
		goto fail;
	if (kind == OUT_NORMAL)
		f->n_normal++;
	return o;
fail:
	out_free(o);
	return NULL;
}

static void out_del(struct fam *f, struct out *o)
{
	table_del(&f->outs, &o->nd);
	if (o->kind == OUT_NORMAL)
		f->n_normal--;
	out_free(o);
}

static void in_free(struct in *in)
{
	free(in->nd.key.mem);
	free(in->want.mem);
	free(in->ex.mem);
	free(in->base.c);
	free(in->last.c);
	free(in->now.c);
	free(in);
}

static void free_overflowed(void *p)
{
	free(((struct node *)p)->key.mem);
	free(p);
}

static void free_in(void *p)
{
	in_free(p);
}

static void free_out(void *p)
{
	out_free(p);
}

/* The family's series, inputs and shape go; its name, own counters and generations stay. */
static void fam_forget(struct fam *f)
{
	table_free(&f->ins, free_in);
	table_free(&f->outs, free_out);
	table_free(&f->overflowed, free_overflowed);
	free(f->bounds);
	f->bounds = NULL;
	f->nv = f->nc = 0;
	f->native = false;
	f->n_normal = 0;
}

/* Whether a sample of nbounds classic bounds and native buckets nh adds up with f's. */
static bool same_shape(const struct fam *f, int nbounds, const struct native_hist *nh)
{
	if (f->nc != nbounds + 1 || f->native != !!nh)
		return false;
	return !nh || (nh->schema == f->schema && nh->offset == f->offset && nh->n == f->nn &&
		       nh->zero_threshold == f->zero_threshold);
}

/*
 * Another bucket shape (a reload changed native_schema or turned it off, which restarts the
 * collector: its counts start from 0 anyway): the family's fold starts afresh in the new one,
 * its series restarting as the collector's counters did.
 */
static void fam_restart(struct fam *f, int nbounds, const struct native_hist *nh)
{
	char was[48], now[48];

	if (f->native)
		snprintf(was, sizeof(was), "native schema %d", f->schema);
	else
		snprintf(was, sizeof(was), "%d classic buckets", f->nc);
	if (nh)
		snprintf(now, sizeof(now), "native schema %d", nh->schema);
	else
		snprintf(now, sizeof(now), "%d classic buckets", nbounds + 1);
	log_info("pods: %s changed its buckets (%s, now %s): its folded series start again",
		 f->name, was, now);
	f->shape_restarts++;
	fam_forget(f);
}

static bool filter_capture(struct expo_filter *ef, const char *family, enum metric_type type)
{
	struct pods_filter *pf = (struct pods_filter *)ef;

	if (type == METRIC_GAUGE)
		return false;
	pf->cur = fam_get(pf->fold, family, type);
	if (!pf->cur)
		return false;
	memcpy(pf->cur->owner, pf->owner, sizeof(pf->owner));
	pf->cur->gen++;
	pf->cur->cgen_now = pf->cgen;
	if (!pf->snap)
		pf->snap = podsnap_get(pf->fold->snap);
	return true;
}

static void filter_sample(struct expo_filter *ef, const struct labels *l, const double *bounds,
			  const uint64_t *counts, int nbounds, double sum,
			  const struct native_hist *nh, const struct exemplar *ex)
{
	struct pods_filter *pf = (struct pods_filter *)ef;
	struct fam *f = pf->cur;
	const struct pod_attr *a = NULL;
	const char *netns = NULL, *marker = NULL;
	enum out_kind kind = OUT_NORMAL;
	struct labels want;
	struct in *in;

	if (f->nv && !same_shape(f, nbounds, nh)) {
		/* Samples of this scrape in the old shape: one scrape cannot mix (never seen). */
		if (f->gen == f->shape_gen) {
			log_once(
				f->logged_mixed, LOG_ERROR,
				"pods: %s has samples of two bucket shapes in one scrape; those of "
				"the second dropped",
				f->name);
			return;
		}
		fam_restart(f, nbounds, nh);
	}
	f->shape_gen = f->gen;
	if (!f->nv) {
		f->nc = nbounds + 1;
		f->nv = f->nc + (nh ? (int)nh->n + 1 : 0);
		f->native = nh != NULL;
		if (nh) {
			f->schema = nh->schema;
			f->offset = nh->offset;
			f->nn = nh->n;
			f->zero_threshold = nh->zero_threshold;
		}
		if (nbounds) {
			f->bounds = malloc(nbounds * sizeof(*bounds));
			if (!f->bounds) {
				f->nv = 0;
				return;
			}
			memcpy(f->bounds, bounds, nbounds * sizeof(*bounds));
		}
	}
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->name[i], "netns"))
			netns = l->value[i];
	if (netns && !strcmp(netns, OVERFLOW_LABEL)) {
		kind = OUT_OVERFLOW; /* the kernel's own map was full */
		marker = OVERFLOW_LABEL;
	} else if (netns) {
		a = podsnap_find(pf->snap, (uint32_t)strtoul(netns, NULL, 10));
		if (a && a->expired) {
			kind = OUT_GONE;
			marker = GONE_LABEL;
		}
	}
	if (!fold_out_labels(&want, l, pf->mask, a, marker))
		return; /* more than LABELS_MAX: cannot happen with our collectors */

	in = table_find(f->ins, l);
	if (!in) {
		in = calloc(1, sizeof(*in));
		if (!in)
			return;
		if (lset_set(&in->nd.key, l) || val_init(&in->base, f->nv) ||
		    val_init(&in->last, f->nv) || val_init(&in->now, f->nv) ||
		    table_add(&f->ins, &in->nd)) {
			in_free(in);
			return;
		}
	}
	if ((!in->want.mem || labels_cmp(&in->want.l, &want)) && lset_set(&in->want, &want))
		return;
	/* The newest exemplar of the input; its output shows the newest of its inputs'. */
	if (ex && !lset_set(&in->ex, ex->l)) {
		in->ex_value = ex->value;
		in->ex_time = ex->time;
		in->has_ex = true;
	}
	in->want_kind = kind;
	in->expired = kind == OUT_GONE;
	in->netns = netns ? (uint32_t)strtoul(netns, NULL, 10) : 0;
	in->gen = f->gen;
	memcpy(in->now.c, counts, f->nc * sizeof(*counts));
	if (nh) {
		in->now.c[f->nc] = nh->zero_count;
		memcpy(in->now.c + f->nc + 1, nh->counts, nh->n * sizeof(*counts));
	}
	in->now.sum = sum;
}

/* Where an input goes when its wanted series does not exist yet. */
static struct out *place(struct fam *f, struct in *in, unsigned max)
{
	struct overflowed *ov;
	struct out *o;
	struct labels key;

	if (in->want_kind != OUT_NORMAL || f->n_normal < max)
		return out_new(f, &in->want.l, in->want_kind);
	/* Over the cap: the overflow series of the same other labels. */
	ov = table_find(f->overflowed, &in->want.l);
	if (!ov) {
		ov = calloc(1, sizeof(*ov));
		if (ov && !lset_set(&ov->nd.key, &in->want.l) &&
		    !table_add(&f->overflowed, &ov->nd)) {
			f->overflow_total++;
		} else if (ov) {
			free(ov->nd.key.mem);
			free(ov);
			ov = NULL;
		}
		log_once(f->logged_overflow, LOG_WARN,
			 "pods: %s reached max_series=%u; new label sets are counted in series "
			 "labelled '" OVERFLOW_LABEL "' and in netstack_series_overflow_total",
			 f->name, max);
	}
	if (ov)
		ov->gen = f->gen;
	fold_remark(&key, &in->want.l, OVERFLOW_LABEL);
	o = table_find(f->outs, &key);
	return o ? o : out_new(f, &key, OUT_OVERFLOW);
}

static int cmp_out(const void *a, const void *b)
{
	return labels_cmp(&(*(struct out *const *)a)->nd.key.l,
			  &(*(struct out *const *)b)->nd.key.l);
}

static void fold_family(struct pods_filter *pf, struct fam *f)
{
	unsigned max = pf->fold->max_series;
	struct node *n, *tmp;
	/* The collector started again with new counters since the last scrape (0: unknown). */
	bool restarted = f->cgen_now && f->cgen && f->cgen_now != f->cgen;

	if (f->cgen_now)
		f->cgen = f->cgen_now;

	/* Inputs the collector no longer reports leave their counts where they were. */
	table_for_each(f->ins, n, tmp) {
		struct in *in = (struct in *)n;

		if (in->gen == f->gen)
			continue;
		if (in->out) {
			val_add_diff(&in->out->carry, &in->last, &in->base, f->nv);
			in->out->nin--;
		}
		table_del(&f->ins, n);
		in_free(in);
	}
	/* Live (unexpired) inputs per output, to know whether an expiry empties it. */
	table_for_each(f->outs, n, tmp)
		((struct out *)n)->live = 0;
	table_for_each(f->ins, n, tmp) {
		struct in *in = (struct in *)n;

		if (in->out && !in->expired)
			in->out->live++;
	}
	table_for_each(f->ins, n, tmp) {
		struct in *in = (struct in *)n;
		struct out *to;
		struct overflowed *ov;

		/*
		 * A counter reset in the kernel: what it had stays in its series. Any count below
		 * its last one tells too: now - base must never wrap. Its last counts are then
		 * those of the restart, 0: a move below must not hand them over a second time.
		 */
		if (in->out && (restarted || val_below(&in->now, &in->last, f->nv))) {
			val_add_diff(&in->out->carry, &in->last, &in->base, f->nv);
			val_zero(&in->base, f->nv);
			val_zero(&in->last, f->nv);
		}
		if (in->out && !labels_cmp(&in->out->nd.key.l, &in->want.l))
			goto keep;
		/* Once folded into overflow, a label set stays there: no counter jumps back. */
		if (in->out && in->out->kind == OUT_OVERFLOW && in->want_kind == OUT_NORMAL &&
		    (ov = table_find(f->overflowed, &in->want.l))) {
			ov->gen = f->gen;
			goto keep;
		}
		to = table_find(f->outs, &in->want.l);
		if (!to)
			to = place(f, in, max);
		if (!to)
			goto keep;
		if (in->out) {
			if (in->expired && !in->out->live) {
				in->out->expired = true; /* its carry follows once it is empty */
			} else {
				val_add_diff(&in->out->carry, &in->last, &in->base, f->nv);
				val_copy(&in->base, &in->last, f->nv);
			}
			in->out->nin--;
		}
		in->out = to;
		to->nin++;
		to->netns = in->netns;
	keep:
		val_copy(&in->last, &in->now, f->nv);
	}
	/* Empty series of expired pods: their counts join the remainder, the series goes. */
	table_for_each(f->outs, n, tmp) {
		struct out *o = (struct out *)n, *gone;
		struct labels key;
		const struct pod_attr *a;

		if (o->nin || o->kind != OUT_NORMAL)
			continue;
		a = podsnap_find(pf->snap, o->netns);
		if (!o->expired && !(a && a->expired) && val_total(&o->carry, f->nc))
			continue;
		if (val_total(&o->carry, f->nc)) {
			fold_remark(&key, &o->nd.key.l, GONE_LABEL);
			gone = table_find(f->outs, &key);
			if (!gone)
				gone = out_new(f, &key, OUT_GONE);
			if (gone)
				val_add_diff(&gone->carry, &o->carry, NULL, f->nv);
		}
		out_del(f, o);
	}
	table_for_each(f->overflowed, n, tmp) {
		if (((struct overflowed *)n)->gen != f->gen) {
			table_del(&f->overflowed, n);
			free(n->key.mem);
			free(n);
		}
	}
}

/* A folded histogram with its native buckets, which follow the classic ones in its value. */
static void render_native(struct expo *e, const struct fam *f, const struct labels *l,
			  const struct val *v)
{
	struct native_hist nh = {
		.schema = f->schema,
		.zero_threshold = f->zero_threshold,
		.zero_count = v->c[f->nc],
		.offset = f->offset,
		.counts = v->c + f->nc + 1,
		.n = f->nn,
	};

	expo_histogram_native(e, l, f->bounds, v->c, f->nc - 1, v->sum, &nh);
}

static void filter_flush(struct expo_filter *ef, struct expo *e, bool keep)
{
	struct pods_filter *pf = (struct pods_filter *)ef;
	struct fam *f = pf->cur;
	struct node *nd, *tmp;
	struct out **v;
	size_t n = 0;

	pf->cur = NULL;
	/* An abandoned family teaches nothing: the next scrape starts from the last kept one. */
	if (!keep || !f->nv)
		goto out;
	fold_family(pf, f);
	v = malloc((HASH_COUNT(f->outs) + 1) * sizeof(struct out *));
	if (!v)
		goto out;
	table_for_each(f->outs, nd, tmp) {
		struct out *o = (struct out *)nd;

		val_copy(&o->cur, &o->carry, f->nv);
		o->ex = NULL;
		v[n++] = o;
	}
	table_for_each(f->ins, nd, tmp) {
		struct in *in = (struct in *)nd;

		if (!in->out)
			continue;
		val_add_diff(&in->out->cur, &in->now, &in->base, f->nv);
		if (in->has_ex && (!in->out->ex || in->ex_time > in->out->ex->ex_time))
			in->out->ex = in;
	}
	qsort(v, n, sizeof(struct out *), cmp_out);
	for (size_t i = 0; i < n; i++) {
		const struct labels *l = &v[i]->nd.key.l;
		const struct in *x = v[i]->ex;

		if (f->type == METRIC_HISTOGRAM && f->native)
			render_native(e, f, l, &v[i]->cur);
		else if (f->type == METRIC_HISTOGRAM)
			expo_histogram(e, l, f->bounds, v[i]->cur.c, f->nc - 1, v[i]->cur.sum);
		else if (x)
			expo_u64_exemplar(e, l, v[i]->cur.c[0], &x->ex.l, x->ex_value, x->ex_time);
		else
			expo_u64(e, l, v[i]->cur.c[0]);
	}
	free(v);
out:
	podsnap_put(pf->fold->snap, pf->snap);
	pf->snap = NULL;
}

struct expo_filter *podfold_filter_new(struct podfold *fold, unsigned mask)
{
	struct pods_filter *pf = calloc(1, sizeof(*pf));

	if (!pf)
		return NULL;
	pf->f.capture = filter_capture;
	pf->f.sample = filter_sample;
	pf->f.flush = filter_flush;
	pf->fold = fold;
	pf->mask = mask;
	return &pf->f;
}

void podfold_filter_owner(struct expo_filter *ef, const char *collector)
{
	struct pods_filter *pf = (struct pods_filter *)ef;

	snprintf(pf->owner, sizeof(pf->owner), "%s", collector);
}

void podfold_filter_generation(struct expo_filter *ef, uint64_t gen)
{
	((struct pods_filter *)ef)->cgen = gen;
}

/* A counter family of the fold's own, one series per folded family: its field at offset. */
static void render_per_family(const struct podfold *fold, struct expo *e, const char *name,
			      const char *help, size_t offset)
{
	expo_family(e, name, METRIC_COUNTER, help);
	for (const struct fam *f = fold->fams; f; f = f->next) {
		struct labels l = { 0 };

		labels_add(&l, "metric", f->name);
		expo_u64(e, &l, *(const uint64_t *)((const char *)f + offset));
	}
}

void podfold_render_metrics(struct podfold *fold, struct expo *e)
{
	if (!fold->fams)
		return;
	render_per_family(fold, e, "netstack_series_overflow_total",
			  "Label sets folded into the __overflow__ series because the family had "
			  "[pods] max_series series already.",
			  offsetof(struct fam, overflow_total));
	render_per_family(fold, e, "netstack_pods_fold_restarts_total",
			  "Times the pod fold of the family started afresh because its buckets "
			  "changed (a reload changed native_schema); its folded series restarted "
			  "from 0.",
			  offsetof(struct fam, shape_restarts));
}

struct podfold *podfold_new(struct podsnap *snap)
{
	struct podfold *fold = calloc(1, sizeof(*fold));

	if (fold)
		fold->snap = snap;
	return fold;
}

void podfold_max_series(struct podfold *fold, unsigned max)
{
	fold->max_series = max;
}

void podfold_forget(struct podfold *fold, const char *collector)
{
	for (struct fam **pp = &fold->fams; *pp;) {
		struct fam *f = *pp;

		if (strcmp(f->owner, collector)) {
			pp = &f->next;
			continue;
		}
		*pp = f->next;
		fam_forget(f);
		free(f->name);
		free(f);
	}
}

void podfold_clear(struct podfold *fold)
{
	while (fold->fams) {
		struct fam *f = fold->fams;

		fold->fams = f->next;
		fam_forget(f);
		free(f->name);
		free(f);
	}
}

void podfold_free(struct podfold *fold)
{
	if (!fold)
		return;
	podfold_clear(fold);
	free(fold);
}
