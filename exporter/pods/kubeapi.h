/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pod source's client of the Kubernetes API (or of the kubelet's /pods), shaped after
 * client-go's reflector: a paged LIST from the API server's cache, a WATCH from its
 * resourceVersion, exponential back-off with jitter. What it reads is decoded by the pure
 * decoders of kubedecode.h.
 */
#ifndef NETSTACK_KUBEAPI_H
#define NETSTACK_KUBEAPI_H

#include <stdbool.h>

#include "pods/kubesink.h"
#include "pods/kubestats.h"
#include "pods/podsconf.h"

struct kube_client;
/*
 * A client for c's source (kubelet: poll kubelet_url, else list+watch api_url), after
 * kube_global_init; NULL with errno ENOMEM.
 */
struct kube_client *kube_client_new(const struct pods_config *c, bool kubelet,
				    const struct kube_sink *sink, struct kube_stats *stats);
/* Follows the pods until the sink says stop; each kind of failure logged once (stats). */
void kube_client_run(struct kube_client *k);
void kube_client_free(struct kube_client *k);

#endif
