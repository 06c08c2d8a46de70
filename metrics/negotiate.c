/* SPDX-License-Identifier: GPL-2.0-only */
/* Content negotiation: the format from Accept, gzip from Accept-Encoding (RFC 9110 lists). */
#include <string.h>

#include "metrics.h"

/* One element of an Accept or Accept-Encoding list. */
struct list_item {
	const char *tok; /* media range or content coding */
	size_t tok_len;
	int q; /* thousandths, 0..1000; an invalid q counts as 0 */
	bool has_version;
	const char *version;
	size_t version_len;
	bool metric_family; /* proto=io.prometheus.client.MetricFamily */
	bool delimited;	    /* encoding=delimited */
	bool bad;	    /* trailing garbage: ignore the element */
};

static char ascii_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* ASCII-only compare: strncasecmp would depend on the locale. */
static bool span_ieq(const char *s, size_t len, const char *lit)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!lit[i] || ascii_lower(s[i]) != lit[i])
			return false;
	return !lit[len];
}

static bool span_eq(const char *s, size_t len, const char *lit)
{
	return strlen(lit) == len && !memcmp(s, lit, len);
}

static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Scan up to any byte of stop (or NUL); the result never moves backwards. */
static const char *scan_until(const char *p, const char *stop)
{
	while (*p && !strchr(stop, *p))
		p++;
	return p;
}

/* RFC 9110 qvalue: "0" ["." 0*3DIGIT] / "1" ["." 0*3("0")]. Returns thousandths or -1. */
static int parse_q(const char *s, size_t len)
{
	int q, scale = 100;
	size_t i;

	if (!len || (s[0] != '0' && s[0] != '1'))
		return -1;
	q = (s[0] - '0') * 1000;
	if (len == 1)
		return q;
	if (s[1] != '.' || len > 5)
		return -1;
	for (i = 2; i < len; i++, scale /= 10) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		q += (s[i] - '0') * scale;
	}
	return q <= 1000 ? q : -1;
}

/* Parse the element at *pp and step past its comma. Returns false at the end of the list. */
static bool next_item(const char **pp, struct list_item *it)
{
	const char *p = skip_ows(*pp);

	if (!*p)
		return false;
	memset(it, 0, sizeof(*it));
	it->q = 1000;
	it->tok = p;
	p = scan_until(p, ",; \t");
	it->tok_len = p - it->tok;
	p = skip_ows(p);
	while (*p == ';') {
		const char *name, *val = NULL;
		size_t name_len, val_len = 0;

		name = p = skip_ows(p + 1);
		p = scan_until(p, "=,; \t");
		name_len = p - name;
		p = skip_ows(p);
		if (*p == '=') {
			p = skip_ows(p + 1);
			if (*p == '"') {
				val = ++p;
				while (*p && *p != '"')
					p += (p[0] == '\\' && p[1]) ? 2 : 1;
				val_len = p - val;
				if (*p == '"')
					p++;
			} else {
				val = p;
				p = scan_until(p, ",; \t");
				val_len = p - val;
			}
			p = skip_ows(p);
		}
		if (span_ieq(name, name_len, "q")) {
			it->q = val ? parse_q(val, val_len) : -1;
			if (it->q < 0)
				it->q = 0;
		} else if (span_ieq(name, name_len, "version") && val) {
			it->has_version = true;
			it->version = val;
			it->version_len = val_len;
		} else if (span_ieq(name, name_len, "proto") && val) {
			/* A protobuf message's full name is case-sensitive. */
			it->metric_family =
				span_eq(val, val_len, "io.prometheus.client.MetricFamily");
		} else if (span_ieq(name, name_len, "encoding") && val) {
			it->delimited = span_ieq(val, val_len, "delimited");
		}
	}
	if (*p && *p != ',') {
		it->bad = true;
		p = scan_until(p, ",");
	}
	if (*p == ',')
		p++;
	*pp = p;
	return true;
}

/* A format's standing in an Accept list: its q from the most specific range that names it. */
struct standing {
	int named;    /* q of the entries naming the format itself, -1 when none does */
	int wildcard; /* q of the most specific wildcard matching it (type's, then any), or -1 */
};

static void raise_q(int *q, int v)
{
	if (v > *q)
		*q = v;
}

bool negotiate_format(const char *accept, enum metric_format *format)
{
	/* Indexed by enum metric_format; 3 formats. */
	struct standing st[3] = { { -1, -1 }, { -1, -1 }, { -1, -1 } };
	int star_q = -1, text_star_q = -1, app_star_q = -1, best = -1;
	int best_key = -1;
	struct list_item it;

	*format = FORMAT_PROMETHEUS;
	if (!accept)
		return true;
	while (next_item(&accept, &it)) {
		if (it.bad || !it.tok_len)
			continue;
		if (span_ieq(it.tok, it.tok_len, "application/vnd.google.protobuf")) {
			/* The other encodings (text, compact-text) are debugging aids: not spoken. */
			if (it.metric_family && it.delimited)
				raise_q(&st[FORMAT_PROTOBUF].named, it.q);
		} else if (span_ieq(it.tok, it.tok_len, "application/openmetrics-text")) {
			/* Only 1.0.0 is spoken; 0.0.1 was a pre-release with different rules. */
			if (!it.has_version || span_ieq(it.version, it.version_len, "1.0.0"))
				raise_q(&st[FORMAT_OPENMETRICS].named, it.q);
		} else if (span_ieq(it.tok, it.tok_len, "text/plain")) {
			raise_q(&st[FORMAT_PROMETHEUS].named, it.q);
		} else if (span_ieq(it.tok, it.tok_len, "text/*")) {
			raise_q(&text_star_q, it.q);
		} else if (span_ieq(it.tok, it.tok_len, "application/*")) {
			raise_q(&app_star_q, it.q);
		} else if (span_ieq(it.tok, it.tok_len, "*/*")) {
			raise_q(&star_q, it.q);
		}
	}
	st[FORMAT_PROMETHEUS].wildcard = text_star_q >= 0 ? text_star_q : star_q;
	st[FORMAT_OPENMETRICS].wildcard = app_star_q >= 0 ? app_star_q : star_q;
	st[FORMAT_PROTOBUF].wildcard = app_star_q >= 0 ? app_star_q : star_q;
	for (int f = 0; f < 3; f++) {
		/* RFC 9110 12.5.1: the most specific range applies, so q=0 there excludes it. */
		bool named = st[f].named >= 0;
		int q = named ? st[f].named : st[f].wildcard;
		/*
		 * At equal q a format named outright beats one a wildcard let in; among named
		 * ones protobuf, then OpenMetrics; among the others text (what a browser's or
		 * curl's wildcard gets), then OpenMetrics.
		 */
		int pref = named ? f : 2 - f;
		int key = q * 8 + named * 4 + pref;

		if (q > 0 && key > best_key) {
			best_key = key;
			best = f;
		}
	}
	if (best >= 0) {
		*format = (enum metric_format)best;
		return true;
	}
	/* Nothing acceptable: the header is disregarded (text) unless its q=0 excluded text. */
	return (st[FORMAT_PROMETHEUS].named >= 0 ? st[FORMAT_PROMETHEUS].named
						 : st[FORMAT_PROMETHEUS].wildcard) != 0;
}

const char *format_content_type(enum metric_format f)
{
	switch (f) {
	case FORMAT_OPENMETRICS:
		return "application/openmetrics-text; version=1.0.0; charset=utf-8";
	case FORMAT_PROTOBUF:
		return "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
		       "encoding=delimited";
	case FORMAT_PROMETHEUS:
		break;
	}
	return "text/plain; version=0.0.4; charset=utf-8";
}

bool accepts_gzip(const char *accept_encoding)
{
	int gzip_q = -1, star_q = -1;
	struct list_item it;

	if (!accept_encoding)
		return false;
	while (next_item(&accept_encoding, &it)) {
		if (it.bad || !it.tok_len)
			continue;
		if (span_ieq(it.tok, it.tok_len, "gzip") ||
		    span_ieq(it.tok, it.tok_len, "x-gzip")) {
			if (it.q > gzip_q)
				gzip_q = it.q;
		} else if (span_ieq(it.tok, it.tok_len, "*")) {
			if (it.q > star_q)
				star_q = it.q;
		}
	}
	/* An explicit gzip entry wins over "*", so "*, gzip;q=0" refuses gzip. */
	if (gzip_q >= 0)
		return gzip_q > 0;
	return star_q > 0;
}
