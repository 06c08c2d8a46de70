/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Exposition library: Prometheus text 0.0.4 and OpenMetrics 1.0.0 rendering, label escaping,
 * content negotiation and gzip.
 */
#include "metrics.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- growable buffer ---- */

#define MBUF_MIN_CAP 1024

/* Room for n more bytes plus a NUL; on failure set oom so the partial output is never served. */
bool mbuf_reserve(struct mbuf *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (b->oom)
		return false;
	if (n >= SIZE_MAX - b->len) {
		b->oom = true;
		return false;
	}
	need = b->len + n + 1;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : MBUF_MIN_CAP;
	while (cap < need) {
		if (cap > SIZE_MAX / 2) {
			cap = need;
			break;
		}
		cap *= 2;
	}
	p = realloc(b->data, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

/* Keeps the allocation for the next scrape; oom is cleared so a transient failure can recover. */
void mbuf_reset(struct mbuf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->data)
		b->data[0] = '\0';
}

void mbuf_free(struct mbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->oom = false;
}

void mbuf_write(struct mbuf *b, const void *p, size_t n)
{
	/* Called several times per series: skip the checks while the buffer has room. */
	if ((b->oom || n >= b->cap - b->len) && !mbuf_reserve(b, n))
		return;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void mbuf_puts(struct mbuf *b, const char *s)
{
	mbuf_write(b, s, strlen(s));
}

void mbuf_printf(struct mbuf *b, const char *fmt, ...)
{
	va_list ap;
	size_t avail;
	int n;

	if (b->oom)
		return;
	avail = b->cap - b->len;
	va_start(ap, fmt);
	n = vsnprintf(b->data ? b->data + b->len : NULL, avail, fmt, ap);
	va_end(ap);
	if (n < 0) {
		/* An encoding error leaves the output incomplete: report it like a failed write. */
		b->oom = true;
		goto out;
	}
	if ((size_t)n < avail) {
		b->len += n;
		return;
	}
	if (!mbuf_reserve(b, n))
		goto out;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += n;
	return;
out:
	/* The first attempt may have overwritten the terminator with a truncated tail. */
	if (b->data)
		b->data[b->len] = '\0';
}

/* ---- labels and escaping ---- */

void labels_add(struct labels *l, const char *name, const char *value)
{
	if (l->n < 0 || l->n >= LABELS_MAX)
		return;
	l->name[l->n] = name;
	l->value[l->n] = value ? value : "";
	l->n++;
}

/* ---- UTF-8 ---- */

/*
 * Unicode's table of well-formed byte sequences (Table 3-7): the lead byte fixes the range of
 * the first continuation byte, which rules out overlong forms (E0, F0), surrogates (ED) and
 * code points above U+10FFFF (F4); C0, C1 and F5..FF never start one.
 */
int utf8_char(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned char lo = 0x80, hi = 0xbf;
	int need;

	if (u[0] >= 0xc2 && u[0] <= 0xdf) {
		need = 1;
	} else if (u[0] >= 0xe0 && u[0] <= 0xef) {
		need = 2;
		if (u[0] == 0xe0)
			lo = 0xa0;
		else if (u[0] == 0xed)
			hi = 0x9f;
	} else if (u[0] >= 0xf0 && u[0] <= 0xf4) {
		need = 3;
		if (u[0] == 0xf0)
			lo = 0x90;
		else if (u[0] == 0xf4)
			hi = 0x8f;
	} else {
		return -1;
	}
	/* A NUL is never in range, so a truncated sequence stops at the string's end. */
	for (int i = 1; i <= need; i++) {
		if (u[i] < lo || u[i] > hi)
			return -i;
		lo = 0x80;
		hi = 0xbf;
	}
	return need + 1;
}

/* C0 controls and DEL: no format has a place for them, and the fold must never see them. */
static bool is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

char *label_text(char *dst, size_t len, const char *src)
{
	size_t o = 0;

	if (!len)
		return dst;
	while (*src) {
		int n = (unsigned char)*src < 0x80 ? 1 : utf8_char(src);
		bool bad = n < 0 || is_ctl(*src);
		size_t w = bad ? sizeof(UTF8_REPLACEMENT) - 1 : (size_t)n;

		if (w >= len - o)
			break;
		memcpy(dst + o, bad ? UTF8_REPLACEMENT : src, w);
		o += w;
		src += n > 0 ? n : -n;
	}
	dst[o] = '\0';
	return dst;
}

size_t utf8_runes(const char *s)
{
	size_t n = 0;

	while (*s) {
		int c = (unsigned char)*s < 0x80 ? 1 : utf8_char(s);

		s += c > 0 ? c : -c;
		n++;
	}
	return n;
}

/* ---- escaping ---- */

/*
 * Copy s as valid UTF-8, runs of plain bytes in one go; an ASCII byte with an entry in tab is
 * written as that entry, an ill-formed sequence as U+FFFD.
 */
static void escape_with(struct mbuf *out, const char *s, const char *const tab[128])
{
	const char *run = s;

	if (!s)
		return;
	for (;;) {
		unsigned char c = *s;
		const char *rep;
		int n;

		if (c < 0x80) {
			if (!c)
				break;
			if (!tab[c]) {
				s++;
				continue;
			}
			rep = tab[c];
			n = 1;
		} else {
			n = utf8_char(s);
			if (n > 0) {
				s += n;
				continue;
			}
			rep = UTF8_REPLACEMENT;
			n = -n;
		}
		mbuf_write(out, run, s - run);
		mbuf_puts(out, rep);
		s += n;
		run = s;
	}
	mbuf_write(out, run, s - run);
}

/* Other control characters have no escape in either format: U+FFFD, as label_text() does. */
#define CTL(c) [c] = UTF8_REPLACEMENT
#define CTLS                                                                                       \
	CTL(0x01), CTL(0x02), CTL(0x03), CTL(0x04), CTL(0x05), CTL(0x06), CTL(0x07), CTL(0x08),    \
		CTL(0x09), CTL(0x0b), CTL(0x0c), CTL(0x0d), CTL(0x0e), CTL(0x0f), CTL(0x10),       \
		CTL(0x11), CTL(0x12), CTL(0x13), CTL(0x14), CTL(0x15), CTL(0x16), CTL(0x17),       \
		CTL(0x18), CTL(0x19), CTL(0x1a), CTL(0x1b), CTL(0x1c), CTL(0x1d), CTL(0x1e),       \
		CTL(0x1f), CTL(0x7f)
static const char *const label_escapes[128] = {
	CTLS,
	['\\'] = "\\\\",
	['"'] = "\\\"",
	['\n'] = "\\n",
};

static const char *const help_escapes[128] = {
	['\\'] = "\\\\",
	['\n'] = "\\n",
};

/* Control characters other than white space are errors in HTML: shown as U+FFFD. */
#define HTML_CTL(c) [c] = UTF8_REPLACEMENT
static const char *const html_escapes[128] = {
	['<'] = "&lt;", ['>'] = "&gt;", ['&'] = "&amp;", ['"'] = "&quot;", ['\''] = "&#39;",
	HTML_CTL(0x01), HTML_CTL(0x02), HTML_CTL(0x03),	 HTML_CTL(0x04),   HTML_CTL(0x05),
	HTML_CTL(0x06), HTML_CTL(0x07), HTML_CTL(0x08),	 HTML_CTL(0x0b),   HTML_CTL(0x0e),
	HTML_CTL(0x0f), HTML_CTL(0x10), HTML_CTL(0x11),	 HTML_CTL(0x12),   HTML_CTL(0x13),
	HTML_CTL(0x14), HTML_CTL(0x15), HTML_CTL(0x16),	 HTML_CTL(0x17),   HTML_CTL(0x18),
	HTML_CTL(0x19), HTML_CTL(0x1a), HTML_CTL(0x1b),	 HTML_CTL(0x1c),   HTML_CTL(0x1d),
	HTML_CTL(0x1e), HTML_CTL(0x1f), HTML_CTL(0x7f),
};

/* JSON must escape the C0 controls; DEL is escaped too, as it is invisible in a terminal. */
#define JSON_CTL(h) [0x##h] = "\\u00" #h
static const char *const json_escapes[128] = {
	['"'] = "\\\"", ['\\'] = "\\\\", JSON_CTL(01), JSON_CTL(02), JSON_CTL(03), JSON_CTL(04),
	JSON_CTL(05),	JSON_CTL(06),	 JSON_CTL(07), JSON_CTL(08), JSON_CTL(09), JSON_CTL(0a),
	JSON_CTL(0b),	JSON_CTL(0c),	 JSON_CTL(0d), JSON_CTL(0e), JSON_CTL(0f), JSON_CTL(10),
	JSON_CTL(11),	JSON_CTL(12),	 JSON_CTL(13), JSON_CTL(14), JSON_CTL(15), JSON_CTL(16),
	JSON_CTL(17),	JSON_CTL(18),	 JSON_CTL(19), JSON_CTL(1a), JSON_CTL(1b), JSON_CTL(1c),
	JSON_CTL(1d),	JSON_CTL(1e),	 JSON_CTL(1f), JSON_CTL(7f),
};

void escape_html(struct mbuf *out, const char *s)
{
	escape_with(out, s, html_escapes);
}

void escape_json(struct mbuf *out, const char *s)
{
	escape_with(out, s, json_escapes);
}

void escape_label_value(struct mbuf *out, const char *s)
{
	escape_with(out, s, label_escapes);
}

void escape_help(struct mbuf *out, const char *s)
{
	escape_with(out, s, help_escapes);
}

/* ---- numbers ---- */

/* "-1.2345678901234567e-308" is 24 bytes; leave room for the OpenMetrics ".0". */
#define NUM_MAX 40

/*
 * Render like Go's strconv.FormatFloat(v, 'g', -1, 64): the shortest digits that round-trip,
 * exponent form only below 1e-4 or from 1e+6. Matching Go keeps our "le" values identical to
 * client_golang's, and OpenMetrics' canonical numbers are defined as that plus ".0" for
 * integral values. Assumes the "C" numeric locale (the exporter never calls setlocale).
 */
static void fmt_double(char *buf, double v, bool canonical)
{
	int digits, exp10;

	if (isnan(v)) {
		strcpy(buf, "NaN");
		return;
	}
	if (isinf(v)) {
		strcpy(buf, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (digits = 1; digits < 17; digits++) {
		snprintf(buf, NUM_MAX, "%.*e", digits - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	snprintf(buf, NUM_MAX, "%.*e", digits - 1, v);
	exp10 = atoi(strchr(buf, 'e') + 1);
	if (exp10 >= -4 && exp10 < 6) {
		int decimals = digits - 1 - exp10;

		snprintf(buf, NUM_MAX, "%.*f", decimals > 0 ? decimals : 0, v);
	}
	if (canonical && !strpbrk(buf, ".e"))
		strcat(buf, ".0");
}

/* ---- exposition ---- */

static const char *type_name(enum metric_type t)
{
	switch (t) {
	case METRIC_COUNTER:
		return "counter";
	case METRIC_GAUGE:
		return "gauge";
	case METRIC_HISTOGRAM:
		return "histogram";
	}
	return "unknown";
}

static bool has_total_suffix(const char *name, size_t len)
{
	return len >= 6 && !memcmp(name + len - 6, "_total", 6);
}

void expo_init(struct expo *e, struct mbuf *out, enum metric_format format)
{
	e->out = out;
	e->format = format;
	e->family = NULL;
	e->type = METRIC_GAUGE;
	e->constant = NULL;
	e->filter = NULL;
	e->capturing = false;
	e->n_overflows = 0;
	e->bad_samples = 0;
}

static void flush_filter(struct expo *e, bool keep)
{
	if (e->capturing) {
		e->capturing = false;
		e->filter->flush(e->filter, e, keep);
	}
}

void expo_set_filter(struct expo *e, struct expo_filter *f, bool keep)
{
	flush_filter(e, keep);
	e->filter = f;
}

static void write_help(struct expo *e, const char *name, size_t len, const char *help)
{
	mbuf_puts(e->out, "# HELP ");
	mbuf_write(e->out, name, len);
	mbuf_puts(e->out, " ");
	/* OpenMetrics HELP is an escaped-string like label values, so quotes are escaped too. */
	if (e->format == FORMAT_OPENMETRICS)
		escape_label_value(e->out, help);
	else
		escape_help(e->out, help);
	mbuf_puts(e->out, "\n");
}

static void write_type(struct expo *e, const char *name, size_t len, enum metric_type type)
{
	mbuf_puts(e->out, "# TYPE ");
	mbuf_write(e->out, name, len);
	mbuf_printf(e->out, " %s\n", type_name(type));
}

void expo_family(struct expo *e, const char *name, enum metric_type type, const char *help)
{
	size_t len = strlen(name);

	flush_filter(e, true);
	e->family = name;
	e->type = type;
	e->capturing = e->filter && e->filter->capture(e->filter, name, type);
	/* An empty HELP means "no HELP" in OpenMetrics; skip it in both formats for symmetry. */
	if (help && !*help)
		help = NULL;
	if (e->format == FORMAT_OPENMETRICS) {
		if (type == METRIC_COUNTER && has_total_suffix(name, len))
			len -= 6;
		/* OpenMetrics recommends TYPE, UNIT, HELP in that order. */
		write_type(e, name, len, type);
		if (help)
			write_help(e, name, len, help);
	} else {
		if (help)
			write_help(e, name, len, help);
		write_type(e, name, len, type);
	}
}

static void write_name(struct expo *e, const char *suffix)
{
	mbuf_puts(e->out, e->family);
	/* OpenMetrics counter samples must end in _total even if the caller forgot it. */
	if (e->format == FORMAT_OPENMETRICS && e->type == METRIC_COUNTER &&
	    !has_total_suffix(e->family, strlen(e->family)))
		mbuf_puts(e->out, "_total");
	if (suffix)
		mbuf_puts(e->out, suffix);
}

/*
 * One label pair, escaped like escape_label_value(): room for the worst case (a byte becoming
 * U+FFFD) is reserved once and the bytes are copied in place, as piecewise writes were a fifth
 * of a large scrape.
 */
static void write_pair(struct mbuf *out, char sep, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value), need = nl + 3 * vl + 4;
	const char *rep;
	char *p;
	int n;

	if ((out->oom || need >= out->cap - out->len) && !mbuf_reserve(out, need))
		return;
	p = out->data + out->len;
	*p++ = sep;
	while (*name)
		*p++ = *name++;
	*p++ = '=';
	*p++ = '"';
	for (; *value; value++) {
		if ((unsigned char)*value < 0x80) {
			rep = label_escapes[(unsigned char)*value];
			if (!rep) {
				*p++ = *value;
				continue;
			}
			n = 1;
		} else {
			n = utf8_char(value);
			if (n > 0) {
				memcpy(p, value, n);
				p += n;
				value += n - 1;
				continue;
			}
			rep = UTF8_REPLACEMENT;
			n = -n;
		}
		while (*rep)
			*p++ = *rep++;
		value += n - 1;
	}
	*p++ = '"';
	out->len = p - out->data;
	out->data[out->len] = '\0';
}

static void write_pairs(struct mbuf *out, const struct labels *l, bool *first)
{
	int n = l ? l->n : 0;

	if (n > LABELS_MAX)
		n = LABELS_MAX;
	for (int i = 0; i < n; i++) {
		write_pair(out, *first ? '{' : ',', l->name[i], l->value[i]);
		*first = false;
	}
}

/* [a-zA-Z_][a-zA-Z0-9_]*: anything else would let a name end the label set. */
static bool label_name_ok(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

static bool names_ok(const struct labels *l)
{
	for (int i = 0; l && i < l->n && i < LABELS_MAX; i++)
		if (!label_name_ok(l->name[i]))
			return false;
	return true;
}

/* A sample whose labels (or the constant ones) have a name no format allows is left out. */
static bool sample_ok(struct expo *e, const struct labels *l)
{
	if (names_ok(l) && names_ok(e->constant))
		return true;
	e->bad_samples++;
	return false;
}

/*
 * The sample's labels, then the exposition's constant labels, then le when given (already
 * formatted, needs no escaping).
 */
static void write_labels(struct expo *e, const struct labels *l, const char *le)
{
	bool first = true;

	write_pairs(e->out, l, &first);
	write_pairs(e->out, e->constant, &first);
	if (le) {
		mbuf_puts(e->out, first ? "{" : ",");
		first = false;
		mbuf_puts(e->out, "le=\"");
		mbuf_puts(e->out, le);
		mbuf_puts(e->out, "\"");
	}
	if (!first)
		mbuf_puts(e->out, "}");
}

const char *u64_str(char buf[static 21], uint64_t v)
{
	char *p = buf + 20;

	*p = '\0';
	do
		*--p = '0' + v % 10;
	while (v /= 10);
	return p;
}

void expo_u64(struct expo *e, const struct labels *l, uint64_t v)
{
	if (e->capturing) {
		e->filter->sample(e->filter, l, NULL, &v, 0, 0, NULL);
		return;
	}
	if (!sample_ok(e, l))
		return;
	/* Digits written backwards from the end: printf costs (docs/cost.md, the scrape). */
	char num[24], *p = num + sizeof(num);

	*--p = '\n';
	do
		*--p = '0' + v % 10;
	while (v /= 10);
	*--p = ' ';
	write_name(e, NULL);
	write_labels(e, l, NULL);
	mbuf_write(e->out, p, num + sizeof(num) - p);
}

void expo_u64_exemplar(struct expo *e, const struct labels *l, uint64_t v, const struct labels *ex,
		       double ex_value, double ex_time)
{
	char num[NUM_MAX];
	size_t len = 0;
	bool first = true;

	if (e->capturing) {
		const struct exemplar x = { ex, ex_value, ex_time };

		e->filter->sample(e->filter, l, NULL, &v, 0, 0, ex ? &x : NULL);
		return;
	}
	if (e->format != FORMAT_OPENMETRICS || !ex || !names_ok(ex)) {
		expo_u64(e, l, v);
		return;
	}
	for (int i = 0; i < ex->n && i < LABELS_MAX; i++)
		len += utf8_runes(ex->name[i]) + utf8_runes(ex->value[i]);
	if (len > EXEMPLAR_MAX_RUNES || !sample_ok(e, l)) {
		expo_u64(e, l, v);
		return;
	}
	write_name(e, NULL);
	write_labels(e, l, NULL);
	mbuf_printf(e->out, " %" PRIu64 " # ", v);
	write_pairs(e->out, ex, &first);
	mbuf_puts(e->out, first ? "{}" : "}");
	fmt_double(num, ex_value, true);
	mbuf_printf(e->out, " %s %.3f\n", num, ex_time);
}

void expo_double(struct expo *e, const struct labels *l, double v)
{
	char num[NUM_MAX];

	if (!sample_ok(e, l))
		return;
	fmt_double(num, v, e->format == FORMAT_OPENMETRICS);
	write_name(e, NULL);
	write_labels(e, l, NULL);
	mbuf_printf(e->out, " %s\n", num);
}

void expo_histogram(struct expo *e, const struct labels *l, const double *bounds,
		    const uint64_t *counts, int nbounds, double sum)
{
	bool om = e->format == FORMAT_OPENMETRICS;
	char num[NUM_MAX];
	uint64_t cum = 0;
	int i;

	if (e->capturing) {
		e->filter->sample(e->filter, l, bounds, counts, nbounds, sum, NULL);
		return;
	}
	if (!sample_ok(e, l))
		return;
	for (i = 0; i < nbounds; i++) {
		cum += counts[i];
		fmt_double(num, bounds[i], om);
		write_name(e, "_bucket");
		write_labels(e, l, num);
		mbuf_printf(e->out, " %" PRIu64 "\n", cum);
	}
	cum += counts[nbounds > 0 ? nbounds : 0];
	write_name(e, "_bucket");
	write_labels(e, l, "+Inf");
	mbuf_printf(e->out, " %" PRIu64 "\n", cum);

	fmt_double(num, sum, om);
	write_name(e, "_sum");
	write_labels(e, l, NULL);
	mbuf_printf(e->out, " %s\n", num);

	write_name(e, "_count");
	write_labels(e, l, NULL);
	mbuf_printf(e->out, " %" PRIu64 "\n", cum);
}

void expo_map_overflow(struct expo *e, const char *map, uint64_t count)
{
	if (e->n_overflows < EXPO_MAX_OVERFLOWS)
		e->overflows[e->n_overflows++] = (struct expo_overflow){ map, count };
}

void expo_finish(struct expo *e)
{
	flush_filter(e, true);
	if (e->format == FORMAT_OPENMETRICS)
		mbuf_puts(e->out, "# EOF\n");
}

/* ---- content negotiation ---- */

/* One element of an Accept or Accept-Encoding list. */
struct list_item {
	const char *tok; /* media range or content coding */
	size_t tok_len;
	int q; /* thousandths, 0..1000; an invalid q counts as 0 */
	bool has_version;
	const char *version;
	size_t version_len;
	bool bad; /* trailing garbage: ignore the element */
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

enum metric_format negotiate_format(const char *accept)
{
	int om_q = 0, text_q = 0;
	struct list_item it;

	if (!accept)
		return FORMAT_PROMETHEUS;
	while (next_item(&accept, &it)) {
		if (it.bad || !it.tok_len)
			continue;
		if (span_ieq(it.tok, it.tok_len, "application/openmetrics-text")) {
			/* Only 1.0.0 is spoken; 0.0.1 was a pre-release with different rules. */
			if (it.has_version && !span_ieq(it.version, it.version_len, "1.0.0"))
				continue;
			if (it.q > om_q)
				om_q = it.q;
		} else if (span_ieq(it.tok, it.tok_len, "text/plain") ||
			   span_ieq(it.tok, it.tok_len, "text/*") ||
			   span_ieq(it.tok, it.tok_len, "*/*")) {
			if (it.q > text_q)
				text_q = it.q;
		}
	}
	return om_q > 0 && om_q >= text_q ? FORMAT_OPENMETRICS : FORMAT_PROMETHEUS;
}

const char *format_content_type(enum metric_format f)
{
	if (f == FORMAT_OPENMETRICS)
		return "application/openmetrics-text; version=1.0.0; charset=utf-8";
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

/* ---- gzip ---- */

/*
 * Level 1: exposition text is so repetitive that the fastest level already gets most of the
 * ratio (about 6x against 8x for the default level, at a third of the CPU), and the exporter
 * should cost as little CPU as possible on the host it observes.
 */
#define GZIP_LEVEL 1

int gzip_buffer(const void *in, size_t n, struct mbuf *out)
{
	const unsigned char *src = in;
	z_stream zs;
	int rc;

	mbuf_reset(out);
	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	/* Sized so one pass normally suffices; the loop still copes if it does not. */
	if (!mbuf_reserve(out, deflateBound(&zs, n)))
		goto fail;
	do {
		size_t avail;
		int flush;

		/* avail_in is 32-bit: feed larger inputs in slices. */
		if (!zs.avail_in && n) {
			size_t chunk = n > UINT_MAX ? UINT_MAX : n;

			zs.next_in = (Bytef *)src;
			zs.avail_in = chunk;
			src += chunk;
			n -= chunk;
		}
		flush = n ? Z_NO_FLUSH : Z_FINISH;
		/* Keep one byte spare for the NUL mbuf maintains. */
		if (out->cap - out->len <= 1 && !mbuf_reserve(out, out->cap))
			goto fail;
		avail = out->cap - out->len - 1;
		if (avail > UINT_MAX)
			avail = UINT_MAX;
		zs.next_out = (Bytef *)out->data + out->len;
		zs.avail_out = avail;
		rc = deflate(&zs, flush);
		out->len += avail - zs.avail_out;
		/* Z_BUF_ERROR with output space left means no progress is possible. */
		if (rc == Z_STREAM_ERROR || (rc == Z_BUF_ERROR && zs.avail_out))
			goto fail;
	} while (rc != Z_STREAM_END);
	deflateEnd(&zs);
	out->data[out->len] = '\0';
	return 0;
fail:
	deflateEnd(&zs);
	if (out->data)
		out->data[out->len] = '\0';
	return -1;
}
