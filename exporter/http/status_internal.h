/* SPDX-License-Identifier: GPL-2.0-only */
/* The status page's samples as status.c keeps them and status_page.c renders them. */
#ifndef NETSTACK_STATUS_INTERNAL_H
#define NETSTACK_STATUS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/status.h"

/* What a table shows: a counter family with a reason label, from the collector that has it. */
struct source {
	const char *title, *collector, *family, *what, *color;
};
#define NR_SOURCES 2
extern const struct source status_sources[NR_SOURCES];

enum source_state {
	SOURCE_OK,
	SOURCE_NOT_BUILT, /* no collector of that name in this build */
	SOURCE_DISABLED,
	SOURCE_DOWN,	  /* enabled, but it did not start */
	SOURCE_FAILED,	  /* its collect failed at the last sample */
	SOURCE_NO_FAMILY, /* running, without that family */
};

/* A counter by reason at one sample. */
struct tally {
	char *name;
	uint64_t count;
	double in_other; /* when its increase last went to the other row (0: never) */
};

struct reading {
	size_t n;
	struct tally *e;  /* STATUS_NAMES of them at most */
	uint64_t rest;	  /* reasons past STATUS_NAMES, summed */
	bool seen_family; /* the collector wrote the family (with or without samples) */
};

/* A reason's increase per point; rows[STATUS_ROWS] is other, for every reason without a row. */
struct row {
	char *name; /* NULL: free */
	uint32_t inc[STATUS_POINTS];
};

struct series {
	enum source_state state;
	bool have_last;
	struct reading last;
	unsigned n; /* points it holds: the newest n of the ring */
	struct row rows[STATUS_ROWS + 1];
};

struct status {
	struct scrape *scrape;	  /* main's: its collectors are sampled */
	struct events *events;	  /* main's: the latest sampled events; NULL: none */
	unsigned head;		  /* the ring's slot for the next point */
	double t[STATUS_POINTS];  /* when each point's sample was taken */
	double dt[STATUS_POINTS]; /* since the sample before it */
	double t_prev, next;	  /* the last sample's time; when the next is due */
	unsigned samples;	  /* taken so far */
	struct series series[NR_SOURCES];
};

/* The ring slot of a series' point of age k (0: the newest). */
static inline unsigned slot(const struct status *s, unsigned k)
{
	return (s->head + 2 * STATUS_POINTS - 1 - k) % STATUS_POINTS;
}

/* r's tally of the reason name, or NULL. */
struct tally *reading_find(const struct reading *r, const char *name);

#endif
