// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>

#include "collector.h"

extern struct collector drops_collector;
extern struct collector retrans_collector;
extern struct collector rtt_collector;

struct collector *const collectors[] = {
	&drops_collector,
	&retrans_collector,
	&rtt_collector,
	NULL,
};

struct collector *collector_find(const char *name)
{
	for (struct collector *const *c = collectors; *c; c++)
		if (!strcmp((*c)->name, name))
			return *c;
	return NULL;
}
