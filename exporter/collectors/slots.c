// SPDX-License-Identifier: GPL-2.0-only
/* Rendering shared by the collectors: a slot table's families, the family label. */
#include <string.h>

#include "kernel/bpfmap.h"
#include "collectors/collector.h"
#include "base/log.h"

int slot_collect(const struct slot_collector *c, unsigned n_families, struct slot_table *t,
		 const uint32_t *always, size_t n_always, void *state, struct expo *e)
{
	int n = slot_table_read(t, always, n_always), i = 0;
	uint64_t overflowed;

	if (n < 0) {
		log_warn("%s: cannot read maps: %s", c->name, strerror(-n));
		return n;
	}
	for (unsigned m = 0; m < n_families; m++) {
		expo_family(e, c->families[m].name, METRIC_COUNTER, c->families[m].help);
		for (; i < n && t->series(t->rows[i].slot) >> 16 == m; i++)
			c->render(state, e, &t->rows[i]);
	}
	if (!t->labelled)
		return 0;
	overflowed = slot_table_unlabelled(t, c->overflow);
	if (overflowed)
		log_once(t->logged_overflow, LOG_WARN,
			 "%s: map %s is full (max_series=%u); further series are counted with "
			 "netns '" OVERFLOW_LABEL "'",
			 c->name, c->map, t->hash.max_entries);
	expo_map_overflow(e, c->map, overflowed);
	return 0;
}

const char *family_label(unsigned family)
{
	static const char *const names[] = { "ipv4", "ipv6" };

	return family < 2 ? names[family] : "other";
}
