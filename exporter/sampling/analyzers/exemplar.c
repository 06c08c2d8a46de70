// SPDX-License-Identifier: GPL-2.0-only
/* The latest sampled event of each series, the exemplars of a collector's counter. */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "sampling/analyzers/analyzer.h"

void exemplars_init(struct exemplars *x)
{
	memset(x, 0, sizeof(*x));
	pthread_mutex_init(&x->lock, NULL);
}

void exemplars_remember(struct exemplars *x, const struct event_rec *r,
			bool (*same)(const struct event_rec *a, const struct event_rec *b))
{
	struct event_rec *slot = &x->e[0];

	pthread_mutex_lock(&x->lock);
	for (size_t i = 0; i < EXEMPLAR_SERIES; i++) {
		struct event_rec *e = &x->e[i];

		if (!e->seq || same(e, r)) {
			slot = e;
			break;
		}
		if (e->seq < slot->seq)
			slot = e;
	}
	*slot = *r;
	pthread_mutex_unlock(&x->lock);
}

bool exemplars_find(struct exemplars *x, bool (*match)(const struct event_rec *r, const void *q),
		    const void *q, struct labels *l, char *buf, size_t len, double *time)
{
	const struct event_rec *best = NULL;
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	int n;

	pthread_mutex_lock(&x->lock);
	for (size_t i = 0; i < EXEMPLAR_SERIES; i++) {
		const struct event_rec *e = &x->e[i];

		if (e->seq && match(e, q) && (!best || e->seq > best->seq))
			best = e;
	}
	if (best) {
		flow_addr(&best->ev.flow, true, s, sizeof(s));
		flow_addr(&best->ev.flow, false, d, sizeof(d));
		*time = best->time;
		n = snprintf(buf, len, "%s%c%s%c%u%c%u", s, 0, d, 0, best->ev.flow.sport, 0,
			     best->ev.flow.dport);
		if (n > 0 && (size_t)n < len) {
			labels_add(l, "saddr", buf);
			buf += strlen(buf) + 1;
			labels_add(l, "daddr", buf);
			buf += strlen(buf) + 1;
			labels_add(l, "sport", buf);
			buf += strlen(buf) + 1;
			labels_add(l, "dport", buf);
		} else {
			best = NULL;
		}
	}
	pthread_mutex_unlock(&x->lock);
	return best != NULL;
}

void exemplars_free(struct exemplars *x)
{
	pthread_mutex_destroy(&x->lock);
}
