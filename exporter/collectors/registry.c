// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>

#include "collector.h"

extern struct collector drops_collector;

struct collector *const collectors[] = {
	&drops_collector,
	NULL,
};

struct collector *collector_find(const char *name)
{
	for (struct collector *const *c = collectors; *c; c++)
		if (!strcmp((*c)->name, name))
			return *c;
	return NULL;
}
