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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "podfold.h"
#include "pods.h"

#define GONE_LABEL "__gone__"
#define KEY_NAME_END '\x1f'
#define KEY_LABEL_END '\x1e'

enum out_kind { OUT_NORMAL, OUT_OVERFLOW, OUT_GONE };

/* Intrusive string-keyed hash table: entries start with a struct node. */
struct node {
	struct node *next;
	char *key;
	uint64_t hash;
};

struct smap {
	struct node **b;
	size_t nb, n;
};

struct podfold {
	struct fam *fams;
	struct podsnap *snap; /* the resolver's */
	unsigned max_series;
	struct node **all; /* smap_all's buffer */
	size_t all_cap;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static void *smap_find(const struct smap *m, const char *key)
{
	uint64_t h = hash_str(key);

	if (!m->nb)
		return NULL;
	for (struct node *n = m->b[h % m->nb]; n; n = n->next)
		if (n->hash == h && !strcmp(n->key, key))
			return n;
	return NULL;
}

static int smap_add(struct smap *m, struct node *nd)
{
	if (m->n >= m->nb) {
		size_t nb = m->nb ? m->nb * 2 : 64;
		struct node **b = calloc(nb, sizeof(struct node *));

		if (!b)
			return -1;
		for (size_t i = 0; i < m->nb; i++) {
			for (struct node *n = m->b[i], *next; n; n = next) {
				next = n->next;
				n->next = b[n->hash % nb];
				b[n->hash % nb] = n;
			}
		}
		free(m->b);
		m->b = b;
		m->nb = nb;
	}
	nd->hash = hash_str(nd->key);
	nd->next = m->b[nd->hash % m->nb];
	m->b[nd->hash % m->nb] = nd;
	m->n++;
	return 0;
}

static void smap_del(struct smap *m, struct node *nd)
{
	for (struct node **p = &m->b[nd->hash % m->nb]; *p; p = &(*p)->next) {
		if (*p == nd) {
			*p = nd->next;
			m->n--;
			return;
		}
	}
}

/*
 * The entries at this moment, NULL-terminated, in fold's buffer reused by the next call (loops
 * are never nested): the caller may add and delete entries while walking it. NULL if out of
 * memory.
 */
static struct node **smap_all(struct podfold *fold, const struct smap *m)
{
	size_t n = 0;

	if (!fold->all || m->n + 1 > fold->all_cap) {
		struct node **v = realloc(fold->all, (m->n + 1) * 2 * sizeof(struct node *));

		if (!v)
			return NULL;
		fold->all = v;
		fold->all_cap = (m->n + 1) * 2;
	}
	for (size_t i = 0; i < m->nb; i++)
		for (struct node *nd = m->b[i]; nd; nd = nd->next)
			fold->all[n++] = nd;
	fold->all[n] = NULL;
	return fold->all;
}

/* A value: nv bucket counts (one for a counter) and a sum (histograms only). */
struct val {
	uint64_t *c;
	double sum;
};

struct out {
	struct node nd;
	enum out_kind kind;
	struct labels l; /* values point into nd.key's copy below */
	char *strs;
	struct val carry, cur;
	unsigned nin;	/* inputs assigned */
	unsigned live;	/* of which not expired */
	bool expired;	/* an expired input left it: hand it to the remainder once empty */
	uint32_t netns; /* one namespace it came from, to notice expiry with no inputs left */
};

struct in {
	struct node nd;
	struct out *out;
	struct val base, last, now;
	uint64_t gen; /* scrape it was last seen in */
	char *want;   /* output key it should go to */
	enum out_kind want_kind;
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
	enum metric_type type;
	int nv; /* values per series; 0 until the first sample */
	double *bounds;
	struct smap outs, ins, overflowed;
	unsigned n_normal;
	uint64_t overflow_total, gen;
	bool logged_overflow, logged_shape;
};

struct pods_filter {
	struct expo_filter f;
	struct podfold *fold;
	unsigned mask;
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
	return v->c ? 0 : -1;
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

static bool is_attr_label(const char *name)
{
	static const char *const names[] = { "namespace", "pod", "container", "process", "netns" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/* Append "name<US>value<RS>" to buf; false when it does not fit. */
static bool key_add(char *buf, size_t len, size_t *used, const char *name, const char *value)
{
	int n = snprintf(buf + *used, len - *used, "%s%c%s%c", name, KEY_NAME_END, value,
			 KEY_LABEL_END);

	if (n < 0 || (size_t)n >= len - *used)
		return false;
	*used += n;
	return true;
}

/*
 * The output key of a sample: its labels with netns dropped (unless kept), then the
 * attribution labels of mask. marker, when set, replaces every attribution value.
 */
static bool out_key(char *buf, size_t len, const struct labels *l, unsigned mask,
		    const struct pod_attr *a, const char *marker)
{
	static const struct {
		unsigned bit;
		const char *name;
	} attrs[] = { { POD_LABEL_NAMESPACE, "namespace" },
		      { POD_LABEL_POD, "pod" },
		      { POD_LABEL_CONTAINER, "container" },
		      { POD_LABEL_PROCESS, "process" } };
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < l->n; i++) {
		if (!strcmp(l->name[i], "netns")) {
			if ((mask & POD_LABEL_NETNS) &&
			    !key_add(buf, len, &used, "netns", marker ? marker : l->value[i]))
				return false;
		} else if (!key_add(buf, len, &used, l->name[i], l->value[i])) {
			return false;
		}
	}
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		const char *v = marker ? marker : "";

		if (!(mask & attrs[i].bit))
			continue;
		if (!marker && a) {
			v = attrs[i].bit == POD_LABEL_NAMESPACE	  ? a->namespace
			    : attrs[i].bit == POD_LABEL_POD	  ? a->pod
			    : attrs[i].bit == POD_LABEL_CONTAINER ? a->container
								  : a->process;
		}
		if (!key_add(buf, len, &used, attrs[i].name, v))
			return false;
	}
	return true;
}

/* Same key with every attribution value replaced by marker. */
static bool remark_key(char *buf, size_t len, const struct labels *l, const char *marker)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < l->n; i++)
		if (!key_add(buf, len, &used, l->name[i],
			     is_attr_label(l->name[i]) ? marker : l->value[i]))
			return false;
	return true;
}

/* Split a writable copy of a key into l, in place. */
static void parse_key(char *p, struct labels *l)
{
	l->n = 0;
	while (*p && l->n < LABELS_MAX) {
		char *v = strchr(p, KEY_NAME_END), *end = v ? strchr(v, KEY_LABEL_END) : NULL;

		if (!end)
			break;
		*v = *end = '\0';
		l->name[l->n] = p;
		l->value[l->n++] = v + 1;
		p = end + 1;
	}
}

static void out_free(struct out *o)
{
	free(o->nd.key);
	free(o->strs);
	free(o->carry.c);
	free(o->cur.c);
	free(o);
}

static struct out *out_new(struct fam *f, const char *key, enum out_kind kind)
{
	struct out *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->kind = kind;
	o->nd.key = strdup(key);
	o->strs = strdup(key);
	if (!o->nd.key || !o->strs || val_init(&o->carry, f->nv) || val_init(&o->cur, f->nv))
		goto fail;
	parse_key(o->strs, &o->l);
	if (smap_add(&f->outs, &o->nd))
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
	smap_del(&f->outs, &o->nd);
	if (o->kind == OUT_NORMAL)
		f->n_normal--;
	out_free(o);
}

static void in_free(struct in *in)
{
	free(in->nd.key);
	free(in->want);
	free(in->base.c);
	free(in->last.c);
	free(in->now.c);
	free(in);
}

static bool filter_capture(struct expo_filter *ef, const char *family, enum metric_type type)
{
	struct pods_filter *pf = (struct pods_filter *)ef;

	if (type == METRIC_GAUGE)
		return false;
	pf->cur = fam_get(pf->fold, family, type);
	if (!pf->cur)
		return false;
	pf->cur->gen++;
	if (!pf->snap)
		pf->snap = podsnap_get(pf->fold->snap);
	return true;
}

static void filter_sample(struct expo_filter *ef, const struct labels *l, const double *bounds,
			  const uint64_t *counts, int nbounds, double sum)
{
	struct pods_filter *pf = (struct pods_filter *)ef;
	struct fam *f = pf->cur;
	const struct pod_attr *a = NULL;
	const char *netns = NULL, *marker = NULL;
	char ikey[1024], okey[1024];
	enum out_kind kind = OUT_NORMAL;
	size_t used = 0;
	struct in *in;
	bool ok = true;

	if (!f->nv) {
		f->nv = nbounds + 1;
		if (nbounds) {
			f->bounds = malloc(nbounds * sizeof(*bounds));
			if (!f->bounds) {
				f->nv = 0;
				return;
			}
			memcpy(f->bounds, bounds, nbounds * sizeof(*bounds));
		}
	}
	if (f->nv != nbounds + 1) {
		log_once(f->logged_shape, LOG_ERROR,
			 "pods: %s changed its bucket count; samples "
			 "dropped",
			 f->name);
		return;
	}
	for (int i = 0; i < l->n; i++) {
		ok = ok && key_add(ikey, sizeof(ikey), &used, l->name[i], l->value[i]);
		if (!strcmp(l->name[i], "netns"))
			netns = l->value[i];
	}
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
	if (!ok || !out_key(okey, sizeof(okey), l, pf->mask, a, marker))
		return; /* labels beyond any sensible size: cannot happen with our collectors */

	in = smap_find(&f->ins, ikey);
	if (!in) {
		in = calloc(1, sizeof(*in));
		if (!in)
			return;
		in->nd.key = strdup(ikey);
		if (!in->nd.key || val_init(&in->base, f->nv) || val_init(&in->last, f->nv) ||
		    val_init(&in->now, f->nv) || smap_add(&f->ins, &in->nd)) {
			in_free(in);
			return;
		}
	}
	if (!in->want || strcmp(in->want, okey)) {
		char *w = strdup(okey);

		if (!w)
			return;
		free(in->want);
		in->want = w;
	}
	in->want_kind = kind;
	in->expired = kind == OUT_GONE;
	in->netns = netns ? (uint32_t)strtoul(netns, NULL, 10) : 0;
	in->gen = f->gen;
	memcpy(in->now.c, counts, f->nv * sizeof(*counts));
	in->now.sum = sum;
}

/* Where an input goes when its wanted series does not exist yet. */
static struct out *place(struct fam *f, struct in *in, unsigned max)
{
	char key[1024], want[1024];
	struct overflowed *ov;
	struct out *o;
	struct labels l;

	if (in->want_kind != OUT_NORMAL || f->n_normal < max)
		return out_new(f, in->want, in->want_kind);
	/* Over the cap: the overflow series of the same other labels. */
	ov = smap_find(&f->overflowed, in->want);
	if (!ov) {
		ov = calloc(1, sizeof(*ov));
		if (ov && (ov->nd.key = strdup(in->want)) && !smap_add(&f->overflowed, &ov->nd)) {
			f->overflow_total++;
		} else if (ov) {
			free(ov->nd.key);
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
	snprintf(want, sizeof(want), "%s", in->want);
	parse_key(want, &l);
	if (!remark_key(key, sizeof(key), &l, OVERFLOW_LABEL))
		return NULL;
	o = smap_find(&f->outs, key);
	return o ? o : out_new(f, key, OUT_OVERFLOW);
}

static int cmp_out(const void *a, const void *b)
{
	return strcmp((*(struct out *const *)a)->nd.key, (*(struct out *const *)b)->nd.key);
}

static void fold_family(struct pods_filter *pf, struct fam *f)
{
	unsigned max = pf->fold->max_series;

	/* Inputs the collector no longer reports leave their counts where they were. */
	for (struct node **it_ = smap_all(pf->fold, &f->ins), *n; it_ && (n = *it_); it_++) {
		struct in *in = (struct in *)n;

		if (in->gen == f->gen)
			continue;
		if (in->out) {
			val_add_diff(&in->out->carry, &in->last, &in->base, f->nv);
			in->out->nin--;
		}
		smap_del(&f->ins, n);
		in_free(in);
	}
	/* Live (unexpired) inputs per output, to know whether an expiry empties it. */
	for (struct node **it_ = smap_all(pf->fold, &f->outs), *n; it_ && (n = *it_); it_++)
		((struct out *)n)->live = 0;
	for (struct node **it_ = smap_all(pf->fold, &f->ins), *n; it_ && (n = *it_); it_++) {
		struct in *in = (struct in *)n;

		if (in->out && !in->expired)
			in->out->live++;
	}
	for (struct node **it_ = smap_all(pf->fold, &f->ins), *n; it_ && (n = *it_); it_++) {
		struct in *in = (struct in *)n;
		struct out *to;
		struct overflowed *ov;

		/* A counter reset in the kernel: what it had stays in its series. */
		if (in->out && val_total(&in->now, f->nv) < val_total(&in->last, f->nv)) {
			val_add_diff(&in->out->carry, &in->last, &in->base, f->nv);
			val_zero(&in->base, f->nv);
		}
		if (in->out && !strcmp(in->out->nd.key, in->want))
			goto keep;
		/* Once folded into overflow, a label set stays there: no counter jumps back. */
		if (in->out && in->out->kind == OUT_OVERFLOW && in->want_kind == OUT_NORMAL &&
		    (ov = smap_find(&f->overflowed, in->want))) {
			ov->gen = f->gen;
			goto keep;
		}
		to = smap_find(&f->outs, in->want);
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
	for (struct node **it_ = smap_all(pf->fold, &f->outs), *n; it_ && (n = *it_); it_++) {
		struct out *o = (struct out *)n, *gone;
		char key[1024];
		const struct pod_attr *a;

		if (o->nin || o->kind != OUT_NORMAL)
			continue;
		a = podsnap_find(pf->snap, o->netns);
		if (!o->expired && !(a && a->expired) && val_total(&o->carry, f->nv))
			continue;
		if (val_total(&o->carry, f->nv) &&
		    remark_key(key, sizeof(key), &o->l, GONE_LABEL)) {
			gone = smap_find(&f->outs, key);
			if (!gone)
				gone = out_new(f, key, OUT_GONE);
			if (gone)
				val_add_diff(&gone->carry, &o->carry, NULL, f->nv);
		}
		out_del(f, o);
	}
	for (struct node **it_ = smap_all(pf->fold, &f->overflowed), *n; it_ && (n = *it_); it_++) {
		if (((struct overflowed *)n)->gen != f->gen) {
			smap_del(&f->overflowed, n);
			free(n->key);
			free(n);
		}
	}
}

static void filter_flush(struct expo_filter *ef, struct expo *e, bool keep)
{
	struct pods_filter *pf = (struct pods_filter *)ef;
	struct fam *f = pf->cur;
	struct out **v;
	size_t n = 0;

	pf->cur = NULL;
	/* An abandoned family teaches nothing: the next scrape starts from the last kept one. */
	if (!keep || !f->nv)
		goto out;
	fold_family(pf, f);
	v = malloc((f->outs.n + 1) * sizeof(struct out *));
	if (!v)
		goto out;
	for (struct node **it_ = smap_all(pf->fold, &f->outs), *nd; it_ && (nd = *it_); it_++) {
		struct out *o = (struct out *)nd;

		val_copy(&o->cur, &o->carry, f->nv);
		v[n++] = o;
	}
	for (struct node **it_ = smap_all(pf->fold, &f->ins), *nd; it_ && (nd = *it_); it_++) {
		struct in *in = (struct in *)nd;

		if (in->out)
			val_add_diff(&in->out->cur, &in->now, &in->base, f->nv);
	}
	qsort(v, n, sizeof(struct out *), cmp_out);
	for (size_t i = 0; i < n; i++) {
		if (f->type == METRIC_HISTOGRAM)
			expo_histogram(e, &v[i]->l, f->bounds, v[i]->cur.c, f->nv - 1,
				       v[i]->cur.sum);
		else
			expo_u64(e, &v[i]->l, v[i]->cur.c[0]);
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

void podfold_render_metrics(struct podfold *fold, struct expo *e)
{
	if (!fold->fams)
		return;
	expo_family(e, "netstack_series_overflow_total", METRIC_COUNTER,
		    "Label sets folded into the __overflow__ series because the family had "
		    "[pods] max_series series already.");
	for (struct fam *f = fold->fams; f; f = f->next) {
		struct labels l = { 0 };

		labels_add(&l, "metric", f->name);
		expo_u64(e, &l, f->overflow_total);
	}
}

static void smap_free(struct podfold *fold, struct smap *m, void (*fn)(void *))
{
	for (struct node **it_ = smap_all(fold, m), *n; it_ && (n = *it_); it_++)
		fn(n);
	free(m->b);
	memset(m, 0, sizeof(*m));
}

static void free_overflowed(void *p)
{
	free(((struct node *)p)->key);
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

void podfold_clear(struct podfold *fold)
{
	while (fold->fams) {
		struct fam *f = fold->fams;

		fold->fams = f->next;
		smap_free(fold, &f->ins, free_in);
		smap_free(fold, &f->outs, free_out);
		smap_free(fold, &f->overflowed, free_overflowed);
		free(f->bounds);
		free(f->name);
		free(f);
	}
}

void podfold_free(struct podfold *fold)
{
	if (!fold)
		return;
	podfold_clear(fold);
	free(fold->all);
	free(fold);
}
