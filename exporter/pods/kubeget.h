/* SPDX-License-Identifier: GPL-2.0-only */
/* One request of the API client (kubeget.c). */
#ifndef NETSTACK_KUBEGET_H
#define NETSTACK_KUBEGET_H

#include "pods/kubeclient.h"

/*
 * GET url, its body decoded as it arrives (a PodList, or watch events applied to the sink):
 * how it ended, each failure counted and logged (kube_count_error).
 */
enum result kube_get(struct kube_client *k, enum verb v, const char *url, long total_timeout);
/* A failure of kind: counted every time, logged the first time per kind. */
void kube_count_error(struct kube_client *k, int kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The pod list is known current now (netstack_pods_last_sync_timestamp_seconds). */
void kube_synced(struct kube_client *k);

#endif
