// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <errno.h>
#include <string.h>

#include "collectors/collector.h"

extern const struct collector_ops drops_collector;
extern const struct collector_ops resets_collector;
extern const struct collector_ops retrans_collector;
extern const struct collector_ops rtt_collector;
extern const struct collector_ops connections_collector;

/* clang-format off */
const struct collector_ops *const collectors[] = {
	&drops_collector,
	&retrans_collector,
	&resets_collector,
	&rtt_collector,
	&connections_collector,
	NULL,
};
/* clang-format on */
_Static_assert(sizeof(collectors) / sizeof(collectors[0]) <= MAX_COLLECTORS + 1,
	       "raise MAX_COLLECTORS");

int collector_index(const char *name)
{
	for (int i = 0; collectors[i]; i++)
		if (!strcmp(collectors[i]->name, name))
			return i;
	return -ENOENT;
}

const struct collector_ops *collector_find(const char *name)
{
	int i = collector_index(name);

	return i < 0 ? NULL : collectors[i];
}

bool collector_opts_equal(const struct collector_opts *a, const struct collector_opts *b)
{
	return a->enabled == b->enabled && !memcmp(a->v, b->v, sizeof(a->v));
}

void collector_defaults(const struct collector_ops *c, struct collector_opts *o)
{
	o->enabled = c->default_enabled;
	((struct series_opts *)o->v)->max_series = c->max_series;
	if (c->reset)
		c->reset(o->v);
}

int collector_set(const struct collector_ops *c, void *opts, const char *key, const char *value,
		  char *err, size_t errlen)
{
	struct series_opts *o = opts;
	int ret = 1;

	if (!strcmp(key, "labels"))
		ret = parse_label_list(value, c->required_labels, c->optional_labels, c->n_optional,
				       &o->label_mask, err, errlen);
	else if (!strcmp(key, "max_series"))
		ret = parse_uint(value, 1, c->max_series_limit, &o->max_series, err, errlen);
	else if (c->set)
		ret = c->set(opts, key, value, err, errlen);
	if (ret > 0)
		snprintf(err, errlen, "unknown key '%s' in [collector.%s]", key, c->name);
	return ret ? -EINVAL : 0;
}
