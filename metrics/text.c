/* SPDX-License-Identifier: GPL-2.0-only */
/* Text from outside made valid UTF-8, and escaped for label values, HELP text, HTML or JSON. */
#include <string.h>

#include "metrics.h"
#include "metrics_internal.h"

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

/*
 * Unescaped: a label value keeps its newline (which the text formats escape) and loses the
 * other control characters as they do; HELP text keeps them all, as Prometheus text does.
 */
static const char *const raw_label[128] = { CTLS };
static const char *const raw_help[128] = { 0 };

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

bool text_clean(const char *s, bool label)
{
	const char *const *tab = label ? raw_label : raw_help;

	while (*s) {
		int n = (unsigned char)*s < 0x80 ? 1 : utf8_char(s);

		if (n < 0 || (n == 1 && tab[(unsigned char)*s]))
			return false;
		s += n;
	}
	return true;
}

void text_raw(struct mbuf *out, const char *s, bool label)
{
	escape_with(out, s, label ? raw_label : raw_help);
}

/*
 * One label pair, escaped like escape_label_value(): room for the worst case (a byte becoming
 * U+FFFD) is reserved once and the bytes are copied in place, as piecewise writes were a fifth
 * of a large scrape.
 */
void label_pair(struct mbuf *out, char sep, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value), need = nl + 3 * vl + 4;
	const char *rep;
	char *p;
	int n;

	if ((out->oom || need >= out->cap - out->len) && mbuf_reserve(out, need))
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
