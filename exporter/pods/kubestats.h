/* SPDX-License-Identifier: GPL-2.0-only */
/* What the API clients count, and its metrics (kubestats.c). */
#ifndef NETSTACK_KUBESTATS_H
#define NETSTACK_KUBESTATS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct expo;

#define KUBE_NR_ERRORS 9   /* connect timeout tls forbidden http parse gone closed other */
#define KUBE_NR_VERBS 3	   /* list watch get */
#define KUBE_REQ_SERIES 32 /* (verb, code) pairs; more codes count as code="other" */
/* What clients count, kept by their owner: a new client (a reload) counts on from there. */
struct kube_stats {
	pthread_mutex_t mu;
	uint64_t errors[KUBE_NR_ERRORS], other_codes[KUBE_NR_VERBS];
	struct {
		int verb;
		char code[8];
		uint64_t n;
	} req[KUBE_REQ_SERIES];
	int n_req;
	double last_sync, watch_start;
	bool logged[KUBE_NR_ERRORS]; /* each kind of failure is logged once */
};

enum verb { V_LIST, V_WATCH, V_GET, NR_V };
enum { E_CONNECT, E_TIMEOUT, E_TLS, E_FORBIDDEN, E_HTTP, E_PARSE, E_GONE, E_CLOSED, E_OTHER, NR_E };
_Static_assert(NR_E == KUBE_NR_ERRORS && NR_V == KUBE_NR_VERBS, "the counts above");
extern const char *const kube_verbs[NR_V], *const kube_error_kinds[NR_E]; /* label values */

/* Requests, errors, the watch's age (watch: the API source) and the last sync. */
/* One request of verb (0 list, 1 watch, 2 get) that ended with code (an HTTP status, a kind). */
void kube_stats_count(struct kube_stats *s, int verb, const char *code);
void kube_stats_render(struct kube_stats *s, bool watch, struct expo *e);

#endif
