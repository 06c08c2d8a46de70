// SPDX-License-Identifier: GPL-2.0-only
/* The analyzers' bounded top-K table over a sliding window (see analyzer.h). */
#include <stdlib.h>
#include <string.h>

#include "sampling/analyzers/analyzer.h"

static int64_t slot_of(double t)
{
	return (int64_t)(t / TOPK_SLOT_SECONDS);
}

void topk_add(struct topk *t, const void *key, size_t keylen, const struct event_rec *r,
	      uint32_t value)
{
	unsigned char k[TOPK_KEY] = { 0 };
	struct topk_entry *e = NULL;
	int64_t s = slot_of(r->time);
	int i = (int)(((s % TOPK_SLOTS) + TOPK_SLOTS) % TOPK_SLOTS);

	memcpy(k, key, keylen < TOPK_KEY ? keylen : TOPK_KEY);
	if (!t->e) {
		t->e = calloc(TOPK_CAP, sizeof(*t->e));
		if (!t->e)
			return;
	}
	for (size_t j = 0; j < t->n && !e; j++)
		if (!memcmp(t->e[j].key, k, TOPK_KEY))
			e = &t->e[j];
	if (!e) {
		if (t->n < TOPK_CAP) {
			e = &t->e[t->n++];
		} else {
			/* Full: the key seen least recently makes room. */
			e = &t->e[0];
			for (size_t j = 1; j < t->n; j++)
				if (t->e[j].last.seq < e->last.seq)
					e = &t->e[j];
		}
		memset(e, 0, sizeof(*e));
		memcpy(e->key, k, TOPK_KEY);
		for (int j = 0; j < TOPK_SLOTS; j++)
			e->slot[j] = INT64_MIN;
	}
	if (e->slot[i] != s) {
		e->slot[i] = s;
		e->count[i] = 0;
		e->max[i] = 0;
	}
	e->count[i]++;
	if (value > e->max[i])
		e->max[i] = value;
	e->last = *r;
}

size_t topk_top(const struct topk *t, double now, bool by_max, struct topk_item *out)
{
	int64_t cur = slot_of(now);
	size_t n = 0;

	for (size_t j = 0; t && j < t->n; j++) {
		const struct topk_entry *e = &t->e[j];
		struct topk_item it = { .e = e };
		size_t pos;

		for (int i = 0; i < TOPK_SLOTS; i++) {
			if (e->slot[i] <= cur - TOPK_SLOTS || e->slot[i] > cur)
				continue;
			it.count += e->count[i];
			if (e->max[i] > it.max)
				it.max = e->max[i];
		}
		if (!it.count)
			continue;
		/* Insertion into the sorted top K. */
		for (pos = n; pos > 0; pos--) {
			const struct topk_item *o = &out[pos - 1];

			if (by_max ? o->max >= it.max : o->count >= it.count)
				break;
		}
		if (pos >= TOPK_K)
			continue;
		if (n < TOPK_K)
			n++;
		memmove(&out[pos + 1], &out[pos], (n - 1 - pos) * sizeof(*out));
		out[pos] = it;
	}
	return n;
}

void topk_free(struct topk *t)
{
	free(t->e);
	t->e = NULL;
	t->n = 0;
}
