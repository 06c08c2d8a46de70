// SPDX-License-Identifier: GPL-2.0-only
/* The pod fold's label sets: copies, hash, order and a sample's output labels (no I/O, no lock). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pods/foldlabels.h"
#include "pods/podsnap.h"
#include "pods/podsconf.h"

uint64_t labels_hash(const struct labels *l)
{
	uint64_t h = 1469598103934665603ull;

	for (int i = 0; i < l->n; i++) {
		for (const char *s = l->name[i];; s++) {
			h = (h ^ (unsigned char)*s) * 1099511628211ull;
			if (!*s)
				break;
		}
		for (const char *s = l->value[i];; s++) {
			h = (h ^ (unsigned char)*s) * 1099511628211ull;
			if (!*s)
				break;
		}
	}
	return h;
}

int labels_cmp(const struct labels *a, const struct labels *b)
{
	for (int i = 0; i < a->n && i < b->n; i++) {
		int c = strcmp(a->name[i], b->name[i]);

		if (!c)
			c = strcmp(a->value[i], b->value[i]);
		if (c)
			return c;
	}
	return a->n - b->n;
}

int lset_set(struct lset *s, const struct labels *l)
{
	size_t len = 0;
	char *mem, *p;

	for (int i = 0; i < l->n; i++)
		len += strlen(l->name[i]) + strlen(l->value[i]) + 2;
	mem = malloc(len ? len : 1);
	if (!mem)
		return -ENOMEM;
	free(s->mem);
	s->mem = p = mem;
	s->l.n = l->n;
	for (int i = 0; i < l->n; i++) {
		s->l.name[i] = strcpy(p, l->name[i]);
		p += strlen(p) + 1;
		s->l.value[i] = strcpy(p, l->value[i]);
		p += strlen(p) + 1;
	}
	return 0;
}

static bool is_attr_label(const char *name)
{
	static const char *const names[] = { "namespace", "pod", "container", "process", "netns" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/* Append a label; false when the set is full. */
static bool add(struct labels *l, const char *name, const char *value)
{
	if (l->n >= LABELS_MAX)
		return false;
	l->name[l->n] = name;
	l->value[l->n++] = value;
	return true;
}

bool fold_out_labels(struct labels *o, const struct labels *l, unsigned mask,
		     const struct pod_attr *a, const char *marker)
{
	static const struct {
		unsigned bit;
		const char *name;
	} attrs[] = { { POD_LABEL_NAMESPACE, "namespace" },
		      { POD_LABEL_POD, "pod" },
		      { POD_LABEL_CONTAINER, "container" },
		      { POD_LABEL_PROCESS, "process" } };

	o->n = 0;
	for (int i = 0; i < l->n; i++) {
		if (!strcmp(l->name[i], "netns")) {
			if ((mask & POD_LABEL_NETNS) &&
			    !add(o, "netns", marker ? marker : l->value[i]))
				return false;
		} else if (!add(o, l->name[i], l->value[i])) {
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
		if (!add(o, attrs[i].name, v))
			return false;
	}
	return true;
}

void fold_remark(struct labels *o, const struct labels *l, const char *marker)
{
	*o = *l;
	for (int i = 0; i < l->n; i++)
		if (is_attr_label(l->name[i]))
			o->value[i] = marker;
}
