// SPDX-License-Identifier: GPL-2.0-only
/* The store of recent events and the analyzers' state (see store.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "sampling/analyzers/analyzer.h"
#include "sampling/decode.h"
#include "sampling/store.h"

struct event_store {
	/* Guards everything below but states' pointers, which scrapes read atomically. */
	pthread_mutex_t lock;
	/*
	 * Each type's, from its descriptor's init; written under lock, read atomically by scrapes
	 * (exemplars), freed only by store_free, once no scrape runs.
	 */
	void *states[EV_NR_TYPES];
	bool analyzers_ready;	/* initialised once, by the first start (or event) */
	struct event_rec *recs; /* max of them, allocated with the first event */
	size_t head, n;
	unsigned max;
	uint64_t seq;
};

struct event_store *store_new(unsigned max)
{
	struct event_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->max = max;
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

/* Free every type's state. Lock held (or no other thread left). */
static void analyzers_fini(struct event_store *s)
{
	for (int t = 1; t < EV_NR_TYPES; t++) {
		void *st = __atomic_exchange_n(&s->states[t], NULL, __ATOMIC_ACQ_REL);

		if (st)
			event_descs[t]->fini(st);
	}
	s->analyzers_ready = false;
}

/* Each type's state, made once; k NULL: without the kernel's names (the fuzzer). Lock held. */
static int analyzers_init(struct event_store *s, const struct kernel *k)
{
	for (int t = 1; t < EV_NR_TYPES && !s->analyzers_ready; t++) {
		void *st = NULL;
		int err = event_descs[t] ? event_descs[t]->init(k, &st) : 0;

		if (err) {
			log_error("sampling: cannot set up the %s analyzer", event_type_name(t));
			analyzers_fini(s);
			return err;
		}
		if (st)
			__atomic_store_n(&s->states[t], st, __ATOMIC_RELEASE);
	}
	s->analyzers_ready = true;
	return 0;
}

void store_free(struct event_store *s)
{
	if (!s)
		return;
	analyzers_fini(s);
	free(s->recs);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int store_start(struct event_store *s, const struct kernel *k)
{
	int err;

	pthread_mutex_lock(&s->lock);
	err = analyzers_init(s, k);
	pthread_mutex_unlock(&s->lock);
	return err;
}

void store_resize(struct event_store *s, unsigned max)
{
	struct event_rec *v;
	size_t n;

	pthread_mutex_lock(&s->lock);
	if (!s->recs || max == s->max)
		goto out;
	n = s->n < max ? s->n : max;
	v = calloc(max, sizeof(*v));
	if (!v) {
		free(s->recs); /* keep nothing rather than index past a smaller store */
		s->recs = NULL;
		s->n = s->head = 0;
		goto out;
	}
	for (size_t k = 0; k < n; k++)
		v[k] = s->recs[(s->head + s->max - n + k) % s->max];
	free(s->recs);
	s->recs = v;
	s->n = n;
	s->head = n % max;
out:
	s->max = max;
	pthread_mutex_unlock(&s->lock);
}

bool store_add(struct event_store *s, const struct event *ev, double unix_time,
	       struct event_rec *out)
{
	struct event_rec *r;

	pthread_mutex_lock(&s->lock);
	if (!s->analyzers_ready && analyzers_init(s, NULL))
		goto fail;
	if (!s->recs) {
		s->recs = calloc(s->max, sizeof(*s->recs));
		if (!s->recs)
			goto fail;
	}
	r = &s->recs[s->head];
	s->head = (s->head + 1) % s->max;
	if (s->n < s->max)
		s->n++;
	memset(r, 0, sizeof(*r));
	r->ev = *ev;
	r->seq = ++s->seq;
	r->time = unix_time;
	event_descs[ev->type]->entry(s->states[ev->type], r);
	if (out)
		*out = *r;
	pthread_mutex_unlock(&s->lock);
	return true;
fail:
	pthread_mutex_unlock(&s->lock);
	return false;
}

bool store_exemplar(struct event_store *s, enum event_type type, const void *series,
		    struct labels *l, char *buf, size_t len, double *time)
{
	void *st = type < EV_NR_TYPES ? __atomic_load_n(&s->states[type], __ATOMIC_ACQUIRE) : NULL;

	return st && event_descs[type]->exemplar &&
	       event_descs[type]->exemplar(st, series, l, buf, len, time);
}

/* The i-th stored event, oldest first. Lock held. */
static const struct event_rec *stored(const struct event_store *s, size_t i)
{
	return &s->recs[(s->head + s->max - s->n + i) % s->max];
}

/*
 * Stored events hold consecutive seq numbers, the newest being seq (also across a restart of
 * the store, which empties it): the one with seq q is stored(s, q - oldest_seq(s)). Lock held.
 */
static uint64_t oldest_seq(const struct event_store *s)
{
	return s->seq - s->n + 1;
}

void store_each_type(struct event_store *s, void (*visit)(void *ctx, unsigned type, void *state),
		     void *ctx)
{
	pthread_mutex_lock(&s->lock);
	for (unsigned t = 1; t < EV_NR_TYPES; t++)
		if (event_descs[t])
			visit(ctx, t, s->states[t]);
	pthread_mutex_unlock(&s->lock);
}

size_t store_each_latest(struct event_store *s, size_t max,
			 void (*visit)(void *ctx, const struct event_rec *r), void *ctx)
{
	size_t k;

	pthread_mutex_lock(&s->lock);
	for (k = 0; k < s->n && k < max; k++)
		visit(ctx, stored(s, s->n - 1 - k));
	pthread_mutex_unlock(&s->lock);
	return k;
}

static bool matches(const struct event_rec *r, const struct event_filter *f)
{
	if (f->type && r->ev.type != f->type)
		return false;
	if (f->reason && (!r->reason || strcmp(f->reason, r->reason)))
		return false;
	if (f->netns && r->ev.netns != f->netns)
		return false;
	return r->time >= f->since;
}

void store_cursor_open(struct event_store *s, struct store_cursor *c, const struct event_filter *f,
		       unsigned limit)
{
	uint64_t oldest;

	memset(c, 0, sizeof(*c));
	c->s = s;
	c->f = *f;
	if (f->reason) {
		snprintf(c->reason, sizeof(c->reason), "%s", f->reason);
		c->f.reason = c->reason;
	}
	pthread_mutex_lock(&s->lock);
	oldest = oldest_seq(s);
	c->next = oldest;
	c->end = s->seq;
	/* Back from the newest to the oldest of the last `limit` matching events. */
	for (size_t i = s->n; i-- > 0 && c->left < limit;) {
		if (matches(stored(s, i), &c->f)) {
			c->left++;
			c->next = oldest + i;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

void store_cursor_next(struct store_cursor *c, bool (*visit)(void *ctx, const struct event_rec *r),
		       void *ctx)
{
	struct event_store *s = c->s;
	uint64_t oldest;

	pthread_mutex_lock(&s->lock);
	oldest = oldest_seq(s);
	if (c->next < oldest)
		c->next = oldest;
	while (c->left && c->next <= c->end) {
		const struct event_rec *r = stored(s, c->next++ - oldest);

		if (!matches(r, &c->f))
			continue;
		c->left--;
		if (!visit(ctx, r))
			break;
	}
	pthread_mutex_unlock(&s->lock);
}
