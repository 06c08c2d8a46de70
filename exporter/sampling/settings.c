// SPDX-License-Identifier: GPL-2.0-only
/* [sampling]: its defaults, its keys, and what the BPF side of each type reads of it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/parse.h"
#include "sampling/analyzers/analyzer.h"
#include "sampling/settings.h"

void events_defaults(struct sampling_config *c)
{
	memset(c, 0, sizeof(*c));
	for (int t = 1; t < EV_NR_TYPES; t++) {
		c->max_per_second[t] = 100;
		c->burst[t] = 100;
	}
	c->min_rtt_us = 10000;
	c->ring_bytes = 256 * 1024;
	c->max_events = 1000;
	c->stdout_per_second = 100;
}

/* One key; nonzero with err set (the value parsers' own failures among them). */
static int set_key(struct sampling_config *c, const char *key, const char *value, char *err,
		   size_t errlen)
{
	for (int t = 1; t < EV_NR_TYPES; t++) {
		const char *name = event_descs[t] ? event_descs[t]->name : "";
		size_t n = strlen(name);

		if (!n || strncmp(key, name, n) || key[n] != '_')
			continue;
		if (!strcmp(key + n + 1, "sample_rate"))
			return parse_uint(value, 0, 1000000000, &c->rate[t], err, errlen);
		if (!strcmp(key + n + 1, "max_events_per_second"))
			return parse_uint(value, 0, 1000000, &c->max_per_second[t], err, errlen);
		if (!strcmp(key + n + 1, "burst"))
			return parse_uint(value, 0, 1000000, &c->burst[t], err, errlen);
	}
	if (!strcmp(key, "min_rtt_us"))
		return parse_uint(value, 0, 60000000, &c->min_rtt_us, err, errlen);
	if (!strcmp(key, "max_events"))
		return parse_uint(value, 1, EVENTS_MAX, &c->max_events, err, errlen);
	if (!strcmp(key, "stdout"))
		return parse_bool(value, &c->to_stdout, err, errlen);
	if (!strcmp(key, "stdout_max_per_second"))
		return parse_uint(value, 1, 1000000, &c->stdout_per_second, err, errlen);
	if (!strcmp(key, "ring_buffer_bytes")) {
		unsigned v;

		if (parse_uint(value, 4096, 1u << 30, &v, err, errlen))
			return -EINVAL;
		/* The kernel wants a power of two and a multiple of the page size. */
		if (v & (v - 1) || v % (unsigned)sysconf(_SC_PAGESIZE)) {
			snprintf(err, errlen, "expected a power of two from 4096, got '%s'", value);
			return -EINVAL;
		}
		c->ring_bytes = v;
		return 0;
	}
	snprintf(err, errlen, "unknown key '%s' in [sampling]", key);
	return -EINVAL;
}

int events_set(struct sampling_config *c, const char *key, const char *value, char *err,
	       size_t errlen)
{
	return set_key(c, key, value, err, errlen) ? -EINVAL : 0;
}

void sampling_config_bpf(const struct sampling_config *c, enum event_type type,
			 struct sample_config *sc)
{
	unsigned rate = c->rate[type];

	memset(sc, 0, sizeof(*sc));
	if (!rate)
		return;
	sc->rate = rate;
	sc->gap_mod = 2 * rate - 1;
	if (c->max_per_second[type]) {
		sc->interval_ns = 1000000000ull / c->max_per_second[type];
		sc->burst_ns = sc->interval_ns * c->burst[type];
	}
	sc->min_rtt_us = c->min_rtt_us;
	sc->wakeup_bytes = c->ring_bytes / 4;
}

bool sampling_config_equal(const struct sampling_config *a, const struct sampling_config *b)
{
	return !memcmp(a->rate, b->rate, sizeof(a->rate)) &&
	       !memcmp(a->max_per_second, b->max_per_second, sizeof(a->max_per_second)) &&
	       !memcmp(a->burst, b->burst, sizeof(a->burst)) && a->min_rtt_us == b->min_rtt_us &&
	       a->ring_bytes == b->ring_bytes && a->max_events == b->max_events &&
	       a->to_stdout == b->to_stdout && a->stdout_per_second == b->stdout_per_second;
}

bool sampling_config_on(const struct sampling_config *c)
{
	for (int t = 1; t < EV_NR_TYPES; t++)
		if (c->rate[t])
			return true;
	return false;
}
