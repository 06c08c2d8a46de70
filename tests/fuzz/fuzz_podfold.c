// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer: label values and pod names of any bytes (the input, cut at NULs) through the
 * pod-label fold and the renderer, two scrapes in both formats. Every line must be a comment,
 * "# EOF" or one sample of the family whose label set parses back into the names the fold
 * writes, with no raw control byte; the counts add up to what the collector reported (the fold
 * moves counts between series, it never makes or loses any).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pods/podfold.h"
#include "pods/pods.h"

#define NSTR 8

static const char *const names[] = { "reason", "netns",	    "interface", "namespace",
				     "pod",    "container", "process",	 "saddr" };

static bool known_name(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && !memcmp(s, names[i], n))
			return true;
	return false;
}

static void check_utf8(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		int k = (unsigned char)s[i] < 0x80 ? 1 : utf8_char(s + i);

		if (k < 0)
			abort();
		i += k;
	}
}

/* A label set at p ("{name="value",...}"): where it ends; aborts when it does not parse. */
static const char *label_set(const char *p)
{
	if (*p++ != '{')
		abort();
	if (*p == '}')
		return p + 1;
	for (;;) {
		const char *n = p;

		while (*p && *p != '=')
			p++;
		if (!known_name(n, p - n) || *p++ != '=' || *p++ != '"')
			abort();
		for (; *p != '"'; p++) {
			if (!*p || (unsigned char)*p < 0x20 || *p == 0x7f)
				abort();
			if (*p == '\\' && *++p != '\\' && *p != '"' && *p != 'n')
				abort();
		}
		p++;
		if (*p == '}')
			return p + 1;
		if (*p++ != ',')
			abort();
	}
}

/* The lines of one rendering; returns the sum of the samples' values. */
static uint64_t check_lines(char *out, size_t len)
{
	uint64_t sum = 0;

	check_utf8(out, len);
	for (char *line = out, *end; *line; line = end + 1) {
		const char *p;
		char *num;

		end = strchr(line, '\n');
		if (!end)
			abort(); /* every line ends in a newline */
		*end = '\0';
		if (!strncmp(line, "# ", 2))
			continue; /* HELP, TYPE and EOF: the fixed names below */
		if (strncmp(line, "f_total", 7))
			abort();
		p = line + 7;
		if (*p == '{')
			p = label_set(p);
		if (*p++ != ' ')
			abort();
		sum += strtoull(p, &num, 10);
		if (num == p || (*num && strncmp(num, " # {", 4)))
			abort();
		if (*num && (p = label_set(num + 3), *p != ' '))
			abort();
	}
	return sum;
}

/* A copy of the input's k-th NUL-separated string ("" past the last). */
static char *piece(const char *in, size_t size, int k)
{
	size_t off = 0;

	for (; k > 0 && off < size; k--)
		off += strnlen(in + off, size - off) + 1;
	return off < size ? strndup(in + off, size - off) : strdup("");
}

static void render(struct podfold *fold, struct expo_filter *filter, char **s, uint64_t base,
		   enum metric_format fmt, uint64_t *want, uint64_t *got)
{
	static const char *const netns[] = { "1", "2", "3", OVERFLOW_LABEL };
	struct mbuf m = { 0 };
	struct expo e;

	expo_init(&e, &m, fmt);
	expo_set_filter(&e, filter, true);
	expo_family(&e, "f_total", METRIC_COUNTER, "h");
	*want = 0;
	/* One sample per namespace: label sets never repeat, so every count must show. */
	for (int i = 0; i < 4; i++) {
		struct labels l = { 0 }, ex = { 0 };
		uint64_t v = base + i;

		labels_add(&l, "reason", s[(6 + i) % NSTR]);
		labels_add(&l, "netns", netns[i]);
		labels_add(&l, "interface", s[(7 + i) % NSTR]);
		labels_add(&ex, "saddr", s[i % NSTR]);
		expo_u64_exemplar(&e, &l, v, i % 2 ? &ex : NULL, 1, 1);
		*want += v;
	}
	expo_finish(&e);
	if (m.oom)
		abort();
	*got = check_lines(m.data, m.len);
	/* The fold's own family, in an exposition of its own. */
	mbuf_reset(&m);
	expo_init(&e, &m, fmt);
	podfold_render_metrics(fold, &e);
	expo_finish(&e);
	mbuf_free(&m);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *in = (const char *)data;
	struct pods_snapshot *snap = calloc(1, sizeof(*snap));
	struct podsnap slot;
	struct podfold *fold;
	struct expo_filter *filter;
	uint64_t want, got;
	char *s[NSTR];

	for (int i = 0; i < NSTR; i++)
		s[i] = piece(in, size, i);
	podsnap_init(&slot);
	if (!snap || !(snap->v = calloc(2, sizeof(*snap->v))))
		abort();
	snap->n = 2;
	snap->refs = 1; /* the slot's */
	for (uint32_t i = 0; i < 2; i++) {
		struct pod_attr *a = &snap->v[i];

		a->netns = i + 1;
		a->expired = size % 5 == 0 && i == 1;
		a->namespace = strdup(s[4 * i]);
		a->pod = strdup(s[4 * i + 1]);
		a->container = strdup(s[4 * i + 2]);
		a->process = strdup(s[4 * i + 3]);
	}
	podsnap_publish(&slot, snap);
	fold = podfold_new(&slot);
	podfold_max_series(fold, 1 + size % 4);
	filter = podfold_filter_new(fold, POD_LABEL_NAMESPACE | POD_LABEL_POD |
						  POD_LABEL_CONTAINER | POD_LABEL_PROCESS |
						  (size % 2 ? POD_LABEL_NETNS : 0));
	if (!fold || !filter)
		abort();
	/* Counters only grow: the second scrape reports more, in the other format. */
	for (int scrape = 0; scrape < 2; scrape++) {
		render(fold, filter, s, 10 + 100 * scrape,
		       scrape ? FORMAT_OPENMETRICS : FORMAT_PROMETHEUS, &want, &got);
		if (got != want)
			abort();
	}
	free(filter);
	podfold_free(fold);
	podsnap_publish(&slot, NULL);
	pthread_mutex_destroy(&slot.mu);
	for (int i = 0; i < NSTR; i++)
		free(s[i]);
	return 0;
}
