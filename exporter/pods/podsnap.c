// SPDX-License-Identifier: GPL-2.0-only
/* The pod resolver's published snapshot: a reference-counted, immutable table. */
#include <stdlib.h>

#include "pods/podsnap.h"

void podsnap_init(struct podsnap *p)
{
	pthread_mutex_init(&p->mu, NULL);
	p->current = NULL;
}

struct pods_snapshot *podsnap_get(struct podsnap *p)
{
	struct pods_snapshot *s;

	pthread_mutex_lock(&p->mu);
	s = p->current;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&p->mu);
	return s;
}

void podsnap_free(struct pods_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free((char *)s->v[i].namespace);
		free((char *)s->v[i].pod);
		free((char *)s->v[i].container);
		free((char *)s->v[i].process);
	}
	free(s->v);
	free(s);
}

void podsnap_put(struct podsnap *p, struct pods_snapshot *s)
{
	bool last;

	if (!s)
		return;
	pthread_mutex_lock(&p->mu);
	last = --s->refs == 0;
	pthread_mutex_unlock(&p->mu);
	if (last)
		podsnap_free(s);
}

void podsnap_publish(struct podsnap *p, struct pods_snapshot *s)
{
	struct pods_snapshot *old;

	pthread_mutex_lock(&p->mu);
	old = p->current;
	p->current = s;
	pthread_mutex_unlock(&p->mu);
	podsnap_put(p, old);
}

const struct pod_attr *podsnap_find(const struct pods_snapshot *s, uint32_t netns)
{
	size_t lo = 0, hi = s ? s->n : 0;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->v[mid].netns == netns)
			return &s->v[mid];
		if (s->v[mid].netns < netns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
