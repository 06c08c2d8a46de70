// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>

#include "collector.h"
#include "config.h"

extern const struct collector_ops drops_collector;
extern const struct collector_ops resets_collector;
extern const struct collector_ops retrans_collector;
extern const struct collector_ops rtt_collector;
extern const struct collector_ops connections_collector;

const struct collector_ops *const collectors[] = {
	&drops_collector,
	&retrans_collector,
	&resets_collector,
	&rtt_collector,
	&connections_collector,
	NULL,
};
_Static_assert(sizeof(collectors) / sizeof(collectors[0]) <= MAX_COLLECTORS + 1,
	       "raise MAX_COLLECTORS");

int collector_index(const char *name)
{
	for (int i = 0; collectors[i]; i++)
		if (!strcmp(collectors[i]->name, name))
			return i;
	return -1;
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
