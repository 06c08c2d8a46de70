// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer: label values and HELP text of any bytes render into lines that stay lines: the
 * escaped output has exactly one newline per sample, no other control byte, is valid UTF-8,
 * and escapes round-trip to the input made a label value (label_text). The input as a label
 * name renders its sample only when it is a valid name. In protobuf the family decodes (with
 * protobuf-c's unpacker) into the same samples, its strings valid UTF-8 and the label value
 * the one the text format's escape reads back to.
 */
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "metrics/prometheus.pb-c.h"

static void check_utf8(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		int k = (unsigned char)s[i] < 0x80 ? 1 : utf8_char(s + i);

		if (k < 0)
			abort();
		i += k;
	}
}

static void check_unescape(const char *escaped, size_t n, const char *orig)
{
	size_t len = 3 * strlen(orig) + 1; /* each byte at most one U+FFFD */
	char *out = malloc(3 * n + 1), *valid = malloc(len);
	size_t j = 0;

	if (!out || !valid) {
		free(out);
		free(valid);
		return;
	}
	check_utf8(escaped, n);
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)escaped[i] < 0x20 || escaped[i] == 0x7f || escaped[i] == '"')
			abort(); /* raw control byte or quote would break the line or the label */
		if (escaped[i] != '\\') {
			out[j++] = escaped[i];
			continue;
		}
		if (++i == n || (escaped[i] != 'n' && escaped[i] != '\\' && escaped[i] != '"'))
			abort();
		/* A newline is the one control byte escaped: label_text() makes it U+FFFD. */
		if (escaped[i] == 'n') {
			memcpy(out + j, UTF8_REPLACEMENT, 3);
			j += 3;
		} else {
			out[j++] = escaped[i];
		}
	}
	out[j] = 0;
	if (strcmp(out, label_text(valid, len, orig)))
		abort();
	free(out);
	free(valid);
}

static bool name_ok(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

/* The protobuf exposition of the same samples: one family, its strings valid, the value raw. */
static void check_proto(const struct mbuf *body, const char *s, const struct mbuf *escaped)
{
	const uint8_t *p = (const uint8_t *)body->data;
	Io__Prometheus__Client__MetricFamily *f;
	struct mbuf again = { 0 };
	size_t len = 0, i;
	char *raw;

	for (i = 0; i < 5 && i < body->len; i++)
		len |= (size_t)(p[i] & 0x7f) << (7 * i);
	if (body->len < 5 || len != body->len - 5)
		abort();
	f = io__prometheus__client__metric_family__unpack(NULL, len, p + 5);
	if (!f || f->n_metric != 1u + name_ok(s) || !f->help || f->metric[0]->n_label != 1)
		abort();
	check_utf8(f->help, strlen(f->help));
	raw = f->metric[0]->label[0]->value;
	check_utf8(raw, strlen(raw));
	/* The text escape of the raw value is the text format's value, byte for byte. */
	escape_label_value(&again, raw);
	if (again.len != escaped->len ||
	    (again.len && memcmp(again.data, escaped->data, again.len)))
		abort();
	mbuf_free(&again);
	io__prometheus__client__metric_family__free_unpacked(f, NULL);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct mbuf m = { 0 }, body = { 0 };
	struct labels l = { 0 };
	char *s = malloc(size + 2), *help = s;
	struct expo e;

	if (!s)
		return 0;
	/* help is "h" + the input: an empty HELP is left out, which would change the count. */
	*help = 'h';
	s = help + 1;
	memcpy(s, data, size);
	s[size] = 0;
	escape_label_value(&m, s);
	check_unescape(m.data ? m.data : "", m.len, s);

	for (int f = FORMAT_PROMETHEUS; f <= FORMAT_PROTOBUF; f++) {
		mbuf_reset(&body);
		expo_init(&e, &body, f);
		labels_add(&l, "v", s);
		expo_family(&e, "fuzz_total", METRIC_COUNTER, help);
		expo_u64(&e, &l, 1);
		l.n = 0;
		labels_add(&l, s, "v");
		expo_u64(&e, &l, 2);
		if (e.bad_samples != !name_ok(s))
			abort();
		expo_finish(&e);
		l.n = 0;
		if (f == FORMAT_PROTOBUF) {
			check_proto(&body, s, &m);
			continue;
		}
		/*
		 * HELP, TYPE, one sample, the second when its name is valid (and # EOF): nothing
		 * the input holds adds a line.
		 */
		size_t lines = 0;

		check_utf8(body.data, body.len);
		for (size_t i = 0; i < body.len; i++)
			lines += body.data[i] == '\n';
		if (lines != (f == FORMAT_OPENMETRICS ? 4u : 3u) + name_ok(s))
			abort();
	}
	mbuf_free(&m);
	mbuf_free(&body);
	free(help);
	return 0;
}
