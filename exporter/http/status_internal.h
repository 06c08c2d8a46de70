/* SPDX-License-Identifier: GPL-2.0-only */
/* The status page's samples as status.c keeps them and status_page.c renders them. */
#ifndef NETSTACK_STATUS_INTERNAL_H
#define NETSTACK_STATUS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/status.h"

/*
 * What a table shows: a family (base/families.h) from the collector that writes it. A
 * counter table has a row per value of label; a quantile table (a histogram) a row per value
 * of label and, when the series have it, label2.
 */
struct source {
	const char *title, *collector, *family, *label, *label2, *what, *color;
};
#define NR_SOURCES 3
extern const struct source status_sources[NR_SOURCES];
#define NR_QSOURCES 2
extern const struct source status_qsources[NR_QSOURCES];

enum source_state {
	SOURCE_OK,
	SOURCE_NOT_BUILT, /* no collector of that name in this build */
	SOURCE_DISABLED,
	SOURCE_DOWN,	  /* enabled, but it did not start */
	SOURCE_FAILED,	  /* its collect failed at the last sample */
	SOURCE_NO_FAMILY, /* running, without that family */
	SOURCE_NO_LABEL,  /* the family's series have no such label (a labels key without it) */
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
	bool no_label;	  /* some of its samples had no reason label */
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

/* A quantile table's window: the last minute's sample intervals, so one reading more. */
#define STATUS_QPOINTS (60 / STATUS_STEP)
/* Rows of a quantile table (label values); series of further ones are left out. */
#define STATUS_QROWS 8
/* Buckets of a histogram: schema 3's native ones of a u32 of microseconds and the zero bucket. */
#define STATUS_BUCKETS 300

/* A histogram's buckets at the readings, summed over the series of one row. */
struct qrow {
	char *name;
	uint64_t *c; /* [STATUS_QPOINTS + 1][nb]: its bucket counts at each reading of the ring */
	/* Over the window, as of the newest reading. */
	uint64_t n;
	double p50, p99;
};

struct qseries {
	enum source_state state;
	bool label2;	   /* some row is named by label2 too */
	unsigned nb;	   /* buckets (0: none read yet) */
	double *edge;	   /* their nb + 1 edges, from 0 up: bucket b is (edge[b], edge[b + 1]] */
	unsigned readings; /* in the ring, at most STATUS_QPOINTS + 1 */
	unsigned head;	   /* the ring's slot for the next reading */
	double t[STATUS_QPOINTS + 1];
	double span; /* seconds the quantiles cover */
	unsigned n_rows;
	struct qrow rows[STATUS_QROWS];
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
	struct qseries qseries[NR_QSOURCES];
};

/* The ring slot of a series' point of age k (0: the newest). */
static inline unsigned slot(const struct status *s, unsigned k)
{
	return (s->head + 2 * STATUS_POINTS - 1 - k) % STATUS_POINTS;
}

/* r's tally of the reason name, or NULL. */
struct tally *reading_find(const struct reading *r, const char *name);

#endif
