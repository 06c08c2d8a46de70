// SPDX-License-Identifier: GPL-2.0-only
/*
 * The pod resolver's configuration: [pods] and the collectors' pod_labels, parsed, checked and
 * compared. Pure: no I/O, no lock.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/parse.h"
#include "pods/podsconf.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

void pods_config_defaults(struct pods_config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->token_file, SA_DIR "/token");
	strcpy(c->ca_file, SA_DIR "/ca.crt");
	c->refresh = 10;
	c->grace = 300;
	c->max_series = 1000;
	c->timeout = 10;
}

static int set_str(char *dst, size_t size, const char *s, char *err, size_t errlen)
{
	if (strlen(s) >= size) {
		snprintf(err, errlen, "value longer than %zu characters", size - 1);
		return -EINVAL;
	}
	strcpy(dst, s);
	return 0;
}

int pods_config_set(struct pods_config *c, const char *key, const char *value, char *err,
		    size_t errlen)
{
	if (!strcmp(key, "source")) {
		static const char *const names[] = { "auto", "kubernetes", "kubelet", "none" };

		for (int i = 0; i < 4; i++) {
			if (!strcmp(value, names[i])) {
				c->source = i;
				return 0;
			}
		}
		snprintf(err, errlen, "expected auto, kubernetes, kubelet or none, got '%s'",
			 value);
		return -EINVAL;
	}
	if (!strcmp(key, "api_url") || !strcmp(key, "kubelet_url")) {
		if (*value && strncmp(value, "https://", 8) && strncmp(value, "http://", 7)) {
			snprintf(err, errlen, "expected an http:// or https:// URL, got '%s'",
				 value);
			return -EINVAL;
		}
		return key[0] == 'a' ? set_str(c->api_url, sizeof(c->api_url), value, err, errlen)
				     : set_str(c->kubelet_url, sizeof(c->kubelet_url), value, err,
					       errlen);
	}
	if (!strcmp(key, "token_file"))
		return set_str(c->token_file, sizeof(c->token_file), value, err, errlen);
	if (!strcmp(key, "ca_file"))
		return set_str(c->ca_file, sizeof(c->ca_file), value, err, errlen);
	if (!strcmp(key, "node_name"))
		return set_str(c->node_name, sizeof(c->node_name), value, err, errlen);
	if (!strcmp(key, "refresh_seconds"))
		return parse_uint(value, 1, 3600, &c->refresh, err, errlen);
	if (!strcmp(key, "grace_seconds"))
		return parse_uint(value, 0, 86400, &c->grace, err, errlen);
	if (!strcmp(key, "max_series"))
		return parse_uint(value, 1, 1u << 20, &c->max_series, err, errlen);
	if (!strcmp(key, "timeout_seconds"))
		return parse_uint(value, 1, 600, &c->timeout, err, errlen);
	snprintf(err, errlen, "unknown key '%s' in [pods]", key);
	return -EINVAL;
}

int pods_config_find(const struct pods_config *c, const char *collector)
{
	for (int i = 0; i < c->n_per; i++)
		if (!strcmp(c->per[i].name, collector))
			return i;
	return -ENOENT;
}

/* The collector's entry in c->per, added if need be; its index, or -ENOSPC. */
static int per_index(struct pods_config *c, const char *collector)
{
	int i = pods_config_find(c, collector);

	if (i >= 0)
		return i;
	if (c->n_per == PODS_MAX_COLLECTORS || strlen(collector) >= sizeof(c->per[0].name))
		return -ENOSPC;
	memset(&c->per[c->n_per], 0, sizeof(c->per[0]));
	strcpy(c->per[c->n_per].name, collector);
	return c->n_per++;
}

int pods_collector_labels(struct pods_config *c, const char *collector, const char *value, int line,
			  char *err, size_t errlen)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = { { "namespace", POD_LABEL_NAMESPACE },
		      { "pod", POD_LABEL_POD },
		      { "container", POD_LABEL_CONTAINER },
		      { "process", POD_LABEL_PROCESS },
		      { "netns", POD_LABEL_NETNS } };
	char buf[256], *save, *tok;
	unsigned mask = 0;
	int i = per_index(c, collector);

	if (i < 0 || strlen(value) >= sizeof(buf)) {
		snprintf(err, errlen, "list too long");
		return -EINVAL;
	}
	strcpy(buf, value);
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		size_t j;

		for (j = 0; j < sizeof(names) / sizeof(names[0]) && strcmp(tok, names[j].name); j++)
			;
		if (j == sizeof(names) / sizeof(names[0])) {
			snprintf(err, errlen,
				 "unknown label '%s' (known: namespace, pod, container, process, "
				 "netns)",
				 tok);
			return -EINVAL;
		}
		mask |= names[j].bit;
	}
	c->per[i].mask = mask;
	c->per[i].line = line;
	return 0;
}

void pods_collector_netns(struct pods_config *c, const char *collector, const char *labels)
{
	char buf[256], *save, *tok;
	int i = per_index(c, collector);

	if (i < 0)
		return;
	c->per[i].netns = false;
	snprintf(buf, sizeof(buf), "%s", labels);
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save))
		c->per[i].netns |= !strcmp(tok, "netns");
}

int pods_config_check(const struct pods_config *c, const char *path, char *err, size_t errlen)
{
	for (int i = 0; i < c->n_per; i++) {
		if (c->per[i].mask && !c->per[i].netns) {
			snprintf(err, errlen,
				 "%s:%d: pod_labels: needs netns in the labels of "
				 "[collector.%s] (the kernel keys counts by network namespace)",
				 path, c->per[i].line, c->per[i].name);
			return -EINVAL;
		}
	}
	return 0;
}

unsigned pods_labels_of(const struct pods_config *c, const char *collector)
{
	int i = pods_config_find(c, collector);

	return i < 0 ? 0 : c->per[i].mask;
}

bool pods_config_wanted(const struct pods_config *c)
{
	for (int i = 0; i < c->n_per; i++)
		if (c->per[i].mask)
			return true;
	return false;
}

bool pods_config_resolver_differs(const struct pods_config *a, const struct pods_config *b)
{
	return a->source != b->source || strcmp(a->api_url, b->api_url) ||
	       strcmp(a->token_file, b->token_file) || strcmp(a->ca_file, b->ca_file) ||
	       strcmp(a->kubelet_url, b->kubelet_url) || strcmp(a->node_name, b->node_name) ||
	       a->refresh != b->refresh || a->grace != b->grace || a->timeout != b->timeout;
}

bool pods_config_masks_differ(const struct pods_config *a, const struct pods_config *b)
{
	for (int i = 0; i < a->n_per; i++)
		if (pods_labels_of(b, a->per[i].name) != a->per[i].mask)
			return true;
	for (int i = 0; i < b->n_per; i++)
		if (pods_labels_of(a, b->per[i].name) != b->per[i].mask)
			return true;
	return false;
}
