/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Exposition library: Prometheus text 0.0.4, OpenMetrics 1.0.0 and protobuf rendering, label
 * escaping, content negotiation and gzip. Pure C: no BPF, no HTTP, so it can be unit tested
 * alone. One file per concern: mbuf.c the buffer, text.c UTF-8 and escaping, number.c numbers,
 * expo.c the exposition, proto.c its protobuf encoding, negotiate.c Accept headers, gzip.c
 * compression.
 */
#ifndef NETSTACK_METRICS_H
#define NETSTACK_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Growable output buffer; a failed allocation sets oom and stops writes. */
struct mbuf {
	char *data;
	size_t len;
	size_t cap;
	bool oom;
};

void mbuf_reset(struct mbuf *b);
/* Room for n more bytes plus a NUL: 0, or -ENOMEM (and oom set) when it cannot be had. */
int mbuf_reserve(struct mbuf *b, size_t n);
void mbuf_free(struct mbuf *b);
void mbuf_write(struct mbuf *b, const void *p, size_t n);
void mbuf_puts(struct mbuf *b, const char *s);
void mbuf_printf(struct mbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

enum metric_format {
	FORMAT_PROMETHEUS,  /* text/plain; version=0.0.4 */
	FORMAT_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
	/*
	 * application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily;
	 * encoding=delimited (metrics/prometheus.proto): histograms with their native buckets too.
	 */
	FORMAT_PROTOBUF,
};

enum metric_type {
	METRIC_COUNTER,
	METRIC_GAUGE,
	METRIC_HISTOGRAM,
};

#define LABELS_MAX 12

/*
 * A label set. Names are checked at render (a sample with a name no format allows is left out
 * and counted in expo.bad_samples); values are escaped, whatever bytes they hold.
 */
struct labels {
	int n;
	const char *name[LABELS_MAX];
	const char *value[LABELS_MAX];
};

/* Append a label; silently ignored past LABELS_MAX (a programming error caught by tests). */
void labels_add(struct labels *l, const char *name, const char *value);

struct expo;

/* A sample's exemplar (OpenMetrics): its labels, value and Unix time. */
struct exemplar {
	const struct labels *l;
	double value, time;
};

/*
 * A filter set between families (expo_set_filter): samples of the families it captures go to
 * sample() instead of the output, and flush() writes what it made of them (through expo_*, with
 * capture off) before the next family starts, at expo_finish, or when the filter is removed.
 * counts has nbounds + 1 entries; a counter is nbounds = 0 with bounds NULL; ex is the
 * sample's exemplar, or NULL.
 */
struct native_hist;

struct expo_filter {
	bool (*capture)(struct expo_filter *f, const char *family, enum metric_type type);
	/* nh: the histogram's native buckets, or NULL (counters, classic-only histograms). */
	void (*sample)(struct expo_filter *f, const struct labels *l, const double *bounds,
		       const uint64_t *counts, int nbounds, double sum,
		       const struct native_hist *nh, const struct exemplar *ex);
	/* keep false: the caller abandons this family (its collector failed). */
	void (*flush)(struct expo_filter *f, struct expo *e, bool keep);
};

#define EXPO_MAX_OVERFLOWS 16

struct expo {
	struct mbuf *out;
	enum metric_format format;
	const char *family;	       /* name of the family being written */
	const struct labels *constant; /* added to every sample (e.g. node), or NULL */
	enum metric_type type;
	struct expo_filter *filter; /* NULL: every sample is written as it comes */
	bool capturing;		    /* the current family goes to filter */
	/*
	 * What bounded maps had no room for, as collectors report it (expo_map_overflow), for
	 * the one family the scrape renders after them all.
	 */
	struct expo_overflow {
		const char *map;
		uint64_t count;
	} overflows[EXPO_MAX_OVERFLOWS];
	unsigned n_overflows;
	/* Samples left out because a label name is not [a-zA-Z_][a-zA-Z0-9_]* (a bug of ours). */
	unsigned bad_samples;
	/*
	 * Protobuf: where the open family's message starts in out. Its length prefix has a fixed
	 * width, filled in when the family ends, so the output only ever grows: a caller may take
	 * back what it wrote since a length it noted between two families (scrape.c does for a
	 * failing collector), and a family so taken back is left out whole.
	 */
	size_t pb_start;
	bool pb_open;
};

void expo_init(struct expo *e, struct mbuf *out, enum metric_format format);
/*
 * Start a family. Counter names are given with their "_total" suffix, as in Prometheus
 * text; in OpenMetrics the HELP/TYPE lines use the name without it and samples keep it; in
 * protobuf the family keeps it, as client_golang's do.
 */
void expo_family(struct expo *e, const char *name, enum metric_type type, const char *help);
void expo_u64(struct expo *e, const struct labels *l, uint64_t v);
/* v in decimal at the end of buf (NUL-terminated); returns where the digits start. */
const char *u64_str(char buf[static 21], uint64_t v);
void expo_double(struct expo *e, const struct labels *l, double v);
/*
 * A counter sample with an exemplar (OpenMetrics and protobuf: labels, value and Unix time).
 * The exemplar is left out in Prometheus text, when ex is NULL, or when its label names and
 * values together exceed EXEMPLAR_MAX_RUNES characters (the OpenMetrics limit). A family a
 * filter captures hands the exemplar to the filter with the sample.
 */
#define EXEMPLAR_MAX_RUNES 128
void expo_u64_exemplar(struct expo *e, const struct labels *l, uint64_t v, const struct labels *ex,
		       double ex_value, double ex_time);
/*
 * A histogram sample set: bounds[i] are upper bounds ascending (without +Inf), counts[i]
 * non-cumulative counts per bucket with counts[nbounds] the overflow bucket; rendered cumulative.
 */
void expo_histogram(struct expo *e, const struct labels *l, const double *bounds,
		    const uint64_t *counts, int nbounds, double sum);
/*
 * A native (exponential) histogram's buckets, dense: counts[j] (non-cumulative) is bucket
 * offset + j, which holds values in (2^((i-1)/2^schema), 2^(i/2^schema)]; zero_count the
 * values at most zero_threshold. A family's histograms share schema, offset and n, so that
 * they add up bucket by bucket.
 */
struct native_hist {
	int schema;
	double zero_threshold;
	uint64_t zero_count;
	int32_t offset;
	const uint64_t *counts;
	unsigned n;
};
/*
 * A histogram with both classic buckets (as expo_histogram) and native ones: the text formats
 * render the classic buckets only, the protobuf format both.
 */
void expo_histogram_native(struct expo *e, const struct labels *l, const double *bounds,
			   const uint64_t *counts, int nbounds, double sum,
			   const struct native_hist *nh);
/* Value of every optional label of the series counting what a bounded map had no room for. */
#define OVERFLOW_LABEL "__overflow__"
/* A collector's bounded map (name outliving the exposition) had no room for count entries. */
void expo_map_overflow(struct expo *e, const char *map, uint64_t count);
/* Flush the current filter (keep: write its result), then use f (NULL: none) from now on. */
void expo_set_filter(struct expo *e, struct expo_filter *f, bool keep);
/* End of exposition: "# EOF" for OpenMetrics, the last family's length for protobuf. */
void expo_finish(struct expo *e);

/*
 * Strings from outside the process (interface names, comm, pod names, cgroup paths, symbols)
 * may be any bytes; every writer below emits valid UTF-8: well-formed characters unchanged, and
 * each maximal subpart of an ill-formed sequence (Unicode 15 section 3.9, what WHATWG's decoder
 * does: overlong forms, surrogates, code points above U+10FFFF, stray or missing continuation
 * bytes) as one U+FFFD.
 */
#define UTF8_REPLACEMENT "\xef\xbf\xbd"
/*
 * At s, whose first byte is >= 0x80: the length of a well-formed character (2 to 4), or minus
 * the length (1 to 3) of the maximal subpart that becomes one U+FFFD. Never reads past a NUL.
 */
int utf8_char(const char *s);
/*
 * The one door for text from outside (interface names, comm, cgroup paths, pod, namespace,
 * container and node names) into a label value: src into dst[len] as valid UTF-8, each C0
 * control character and DEL as U+FFFD too, NUL-terminated and cut between characters; returns
 * dst.
 */
char *label_text(char *dst, size_t len, const char *src);
/* Characters in s once made valid. */
size_t utf8_runes(const char *s);

/*
 * Escape a label value (\\, \", \n; other control characters as U+FFFD) or HELP text (\\, \n)
 * into out, as valid UTF-8.
 */
void escape_label_value(struct mbuf *out, const char *s);
void escape_help(struct mbuf *out, const char *s);
/*
 * Escape text for HTML content or a quoted attribute (<, >, &, ", '; control characters other
 * than white space become U+FFFD).
 */
void escape_html(struct mbuf *out, const char *s);
/* The inside of a JSON string: \", \\, \u00XX for C0 controls and DEL, UTF-8 kept raw. */
void escape_json(struct mbuf *out, const char *s);

/*
 * Pick the format from an Accept header (NULL = absent; several field lines joined by ", ") by
 * RFC 9110: a format's q is that of the most specific range matching it (its own type, else
 * text/plain's or application's wildcard, else the full wildcard), and q=0 excludes it. The
 * highest q wins; at equal q a format named outright beats one a wildcard let in, named ones
 * tie to protobuf, then OpenMetrics, wildcard ones to text. Protobuf only for
 * application/vnd.google.protobuf with proto=io.prometheus.client.MetricFamily and
 * encoding=delimited, OpenMetrics only for version 1.0.0 or none. When none is acceptable the
 * header is disregarded (text), unless it excluded text: then false (406 Not Acceptable).
 */
bool negotiate_format(const char *accept, enum metric_format *format);
const char *format_content_type(enum metric_format f);
/* True when an Accept-Encoding header (NULL = absent) allows gzip with q > 0. */
bool accepts_gzip(const char *accept_encoding);
/* Gzip in[0..n) into out (reset first): 0, or -ENOMEM, or -EIO when zlib fails. */
int gzip_buffer(const void *in, size_t n, struct mbuf *out);

#endif
