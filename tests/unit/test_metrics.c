/* SPDX-License-Identifier: GPL-2.0-only */
/* Unit tests for the exposition library: rendering, escaping, negotiation and gzip. */
#include "check.h"
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <zlib.h>

#define R UTF8_REPLACEMENT

/* Render through fn in the given format; the caller frees the returned buffer. */
static struct mbuf render(void (*fn)(struct expo *), enum metric_format f)
{
	struct mbuf b = { 0 };
	struct expo e;

	expo_init(&e, &b, f);
	fn(&e);
	expo_finish(&e);
	return b;
}

static void check_render(void (*fn)(struct expo *), const char *prom, const char *om)
{
	struct mbuf b = render(fn, FORMAT_PROMETHEUS);

	CHECK(!b.oom);
	CHECK(b.len == strlen(prom));
	CHECK_STR(b.data, prom);
	mbuf_free(&b);

	b = render(fn, FORMAT_OPENMETRICS);
	CHECK(!b.oom);
	CHECK(b.len == strlen(om));
	CHECK_STR(b.data, om);
	mbuf_free(&b);
}

static void check_escape(void (*escape)(struct mbuf *, const char *), const char *in,
			 const char *want)
{
	struct mbuf b = { 0 };

	escape(&b, in);
	CHECK(b.len == strlen(want));
	CHECK_STR(b.len ? b.data : "", want);
	mbuf_free(&b);
}

#define check_label_escape(in, want) check_escape(escape_label_value, in, want)
#define check_help_escape(in, want) check_escape(escape_help, in, want)
#define check_html_escape(in, want) check_escape(escape_html, in, want)

static void test_escape_html(void)
{
	check_html_escape("NO_SOCKET", "NO_SOCKET");
	check_html_escape("", "");
	check_html_escape("<script>alert('x')</script>",
			  "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
	check_html_escape("a=\"1\" & b", "a=&quot;1&quot; &amp; b");
	check_html_escape("eth0 \xc3\xa9", "eth0 \xc3\xa9");
}

static void test_escape_label_value(void)
{
	check_label_escape("plain", "plain");
	check_label_escape("", "");
	check_label_escape("a\\b", "a\\\\b");
	check_label_escape("say \"hi\"", "say \\\"hi\\\"");
	check_label_escape("line1\nline2", "line1\\nline2");
	check_label_escape("\\\"\n", "\\\\\\\"\\n");
	/* No format has an escape for other control characters: U+FFFD, as label_text() does. */
	check_label_escape("tab\there\x1f\x1e\x7f\r", "tab" R "here" R R R R);
	/* UTF-8 is passed through byte for byte. */
	check_label_escape("eth0 \xc3\xa9t\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x90\xa7",
			   "eth0 \xc3\xa9t\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x90\xa7");
}

static void test_escape_help(void)
{
	check_help_escape("Bytes received.", "Bytes received.");
	check_help_escape("back\\slash", "back\\\\slash");
	check_help_escape("two\nlines", "two\\nlines");
	/* Quotes are not special in Prometheus text HELP. */
	check_help_escape("a \"quoted\" word", "a \"quoted\" word");
}

/* ---- UTF-8 ---- */

/*
 * Byte sequences and what every writer makes of them: well-formed text unchanged, each maximal
 * subpart of an ill-formed sequence one U+FFFD (Unicode 15 section 3.9, Tables 3-8 to 3-11;
 * Python's bytes.decode("utf-8", "replace") agrees with every row).
 */
static const struct {
	const char *in, *want;
	size_t runes;
} utf8_cases[] = {
	{ "", "", 0 },
	{ "eth0", "eth0", 4 },
	/* Well-formed, at the edges of each length and around the surrogates. */
	{ "\xc2\x80", "\xc2\x80", 1 },		       /* U+0080 */
	{ "\xdf\xbf", "\xdf\xbf", 1 },		       /* U+07FF */
	{ "\xe0\xa0\x80", "\xe0\xa0\x80", 1 },	       /* U+0800 */
	{ "\xed\x9f\xbf", "\xed\x9f\xbf", 1 },	       /* U+D7FF */
	{ "\xee\x80\x80", "\xee\x80\x80", 1 },	       /* U+E000 */
	{ "\xef\xbf\xbf", "\xef\xbf\xbf", 1 },	       /* U+FFFF */
	{ "\xf0\x90\x80\x80", "\xf0\x90\x80\x80", 1 }, /* U+10000 */
	{ "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf", 1 }, /* U+10FFFF */
	{ "\xef\xbf\xbd", "\xef\xbf\xbd", 1 },	       /* U+FFFD itself */
	{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7",
	  8 },
	/* Stray continuation bytes: one each. */
	{ "\x80", R, 1 },
	{ "\xbf", R, 1 },
	{ "a\x80\xbfz", "a" R R "z", 4 },
	/* Bytes that never start a sequence. */
	{ "\xc0", R, 1 },
	{ "\xc1", R, 1 },
	{ "\xf5", R, 1 },
	{ "\xfe", R, 1 },
	{ "\xff", R, 1 },
	{ "\xff\xfex", R R "x", 3 },
	/* Overlong forms: the lead byte alone, then each continuation byte. */
	{ "\xc0\xaf", R R, 2 },
	{ "\xc1\xbf", R R, 2 },
	{ "\xe0\x80\xaf", R R R, 3 },
	{ "\xe0\x9f\xbf", R R R, 3 },
	{ "\xf0\x80\x80\xaf", R R R R, 4 },
	{ "\xf0\x8f\xbf\xbf", R R R R, 4 },
	/* Surrogates (U+D800, U+DFFF, a pair). */
	{ "\xed\xa0\x80", R R R, 3 },
	{ "\xed\xbf\xbf", R R R, 3 },
	{ "\xed\xa0\xbd\xed\xb2\xa9", R R R R R R, 6 },
	/* Above U+10FFFF. */
	{ "\xf4\x90\x80\x80", R R R R, 4 },
	{ "\xf7\xbf\xbf\xbf", R R R R, 4 },
	{ "\xf8\x88\x80\x80\x80", R R R R R, 5 },
	/* Truncated: the well-formed prefix is one maximal subpart, at the end or before more. */
	{ "\xc3", R, 1 },
	{ "\xe2\x82", R, 1 },
	{ "\xf0\x9f\x90", R, 1 },
	{ "\xe2\x82x", R "x", 2 },
	{ "\xe2\x82\xe2\x82\xac", R "\xe2\x82\xac", 2 },
	{ "\xf0\x9f\x90\xf0\x9f\x90\xa7", R "\xf0\x9f\x90\xa7", 2 },
	{ "\xf4\x8f\xbf", R, 1 },
	{ "\xed\x9f", R, 1 },
	/* Unicode's Table 3-8 example. */
	{ "\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64", "a" R R R "b" R "c" R R "d", 10 },
};

#define N_UTF8_CASES (sizeof(utf8_cases) / sizeof(utf8_cases[0]))

static void test_utf8_table(void)
{
	for (size_t i = 0; i < N_UTF8_CASES; i++) {
		const char *in = utf8_cases[i].in, *want = utf8_cases[i].want;
		char out[64];

		/* The label and HELP escapes, JSON and HTML have nothing else to do here. */
		check_label_escape(in, want);
		check_help_escape(in, want);
		check_html_escape(in, want);
		check_escape(escape_json, in, want);
		CHECK_STR(label_text(out, sizeof(out), in), want);
		CHECK(utf8_runes(in) == utf8_cases[i].runes);
		if (utf8_runes(in) != utf8_cases[i].runes)
			fprintf(stderr, "  case %zu: %zu runes\n", i, utf8_runes(in));
	}
}

/* The sample writer (label_pair in text.c) has its own copy loop: the same results in a series. */
static void test_utf8_label_rendered(void)
{
	for (size_t i = 0; i < N_UTF8_CASES; i++) {
		struct mbuf b = { 0 }, want = { 0 };
		struct labels l = { 0 };
		struct expo e;

		labels_add(&l, "interface", utf8_cases[i].in);
		expo_init(&e, &b, FORMAT_PROMETHEUS);
		e.family = "x";
		e.type = METRIC_GAUGE;
		expo_u64(&e, &l, 1);
		mbuf_printf(&want, "x{interface=\"%s\"} 1\n", utf8_cases[i].want);
		CHECK(!b.oom);
		CHECK_STR(b.data, want.data);
		mbuf_free(&b);
		mbuf_free(&want);
	}
	/* Escapes and replacements mixed, each byte its worst case. */
	{
		struct mbuf b = { 0 };
		struct labels l = { 0 };
		struct expo e;

		labels_add(&l, "process", "\xff\"\xfe\\\n\xc3");
		expo_init(&e, &b, FORMAT_OPENMETRICS);
		e.family = "x";
		e.type = METRIC_GAUGE;
		expo_u64(&e, &l, 1);
		CHECK_STR(b.data, "x{process=\"" R "\\\"" R "\\\\\\n" R "\"} 1\n");
		mbuf_free(&b);
	}
}

static void test_label_text_bounds(void)
{
	char out[8];

	/* Cut between characters, never inside one; a replacement counts three bytes. */
	CHECK_STR(label_text(out, 4, "ab\xc3\xa9"), "ab");
	CHECK_STR(label_text(out, 5, "ab\xc3\xa9"), "ab\xc3\xa9");
	CHECK_STR(label_text(out, 4, "a\xff"), "a");
	CHECK_STR(label_text(out, 5, "a\xff"), "a" R);
	CHECK_STR(label_text(out, 1, "abc"), "");
	CHECK_STR(label_text(out, 5, "\xf0\x9f\x90\xa7z"), "\xf0\x9f\x90\xa7");
	memset(out, 'x', sizeof(out));
	label_text(out, 0, "abc");
	CHECK(out[0] == 'x');
	/* Sixteen bad bytes (an interface name) fit in 3 * 16 + 1. */
	{
		char name[17], big[3 * 16 + 1];

		memset(name, 0xff, 16);
		name[16] = 0;
		label_text(big, sizeof(big), name);
		CHECK(strlen(big) == 48 && utf8_runes(big) == 16);
	}
}

/* utf8_char's contract for every lead byte with every second byte: well-formed or not. */
static void test_utf8_char_exhaustive(void)
{
	for (unsigned a = 0x80; a < 0x100; a++) {
		for (unsigned b = 0; b < 0x100; b++) {
			char s[5] = { (char)a, (char)b, (char)0x80, (char)0x80, 0 };
			int n = utf8_char(s);
			bool lead = (a >= 0xc2 && a <= 0xf4);
			bool second = b >= 0x80 && b <= 0xbf && !(a == 0xe0 && b < 0xa0) &&
				      !(a == 0xed && b > 0x9f) && !(a == 0xf0 && b < 0x90) &&
				      !(a == 0xf4 && b > 0x8f);

			if (!lead)
				CHECK(n == -1);
			else if (!second)
				CHECK(n == -1);
			else
				CHECK(n == (a < 0xe0 ? 2 : a < 0xf0 ? 3 : 4));
		}
	}
}

static void test_escape_json(void)
{
	check_escape(escape_json, "plain", "plain");
	check_escape(escape_json, "q\"b\\s", "q\\\"b\\\\s");
	check_escape(escape_json, "\x01\t\n\r\x1f\x7f",
		     "\\u0001\\u0009\\u000a\\u000d\\u001f\\u007f");
	/* Valid UTF-8 stays raw (it was once \u00c3\u00a9: two wrong characters). */
	check_escape(escape_json, "p\xc3\xa9", "p\xc3\xa9");
	check_escape(escape_json, "\xff\"", R "\\\"");
}

static void fam_counter(struct expo *e)
{
	struct labels l = { 0 };

	expo_family(e, "netstack_rx_bytes_total", METRIC_COUNTER, "Bytes received.\nPer device.");
	labels_add(&l, "dev", "eth0");
	labels_add(&l, "dir", "in");
	expo_u64(e, &l, 18446744073709551615ull);
	l.n = 0;
	labels_add(&l, "dev", "we\"ird\\");
	labels_add(&l, "dir", "x\ny");
	expo_u64(e, &l, 0);
}

static void test_counter(void)
{
	check_render(fam_counter,
		     "# HELP netstack_rx_bytes_total Bytes received.\\nPer device.\n"
		     "# TYPE netstack_rx_bytes_total counter\n"
		     "netstack_rx_bytes_total{dev=\"eth0\",dir=\"in\"} 18446744073709551615\n"
		     "netstack_rx_bytes_total{dev=\"we\\\"ird\\\\\",dir=\"x\\ny\"} 0\n",
		     "# TYPE netstack_rx_bytes counter\n"
		     "# HELP netstack_rx_bytes Bytes received.\\nPer device.\n"
		     "netstack_rx_bytes_total{dev=\"eth0\",dir=\"in\"} 18446744073709551615\n"
		     "netstack_rx_bytes_total{dev=\"we\\\"ird\\\\\",dir=\"x\\ny\"} 0\n"
		     "# EOF\n");
}

/* A counter named without _total still gets the suffix OpenMetrics requires on samples. */
static void fam_counter_no_suffix(struct expo *e)
{
	expo_family(e, "netstack_drops", METRIC_COUNTER, "Drops.");
	expo_u64(e, NULL, 7);
}

static void test_counter_without_total_suffix(void)
{
	check_render(fam_counter_no_suffix,
		     "# HELP netstack_drops Drops.\n"
		     "# TYPE netstack_drops counter\n"
		     "netstack_drops 7\n",
		     "# TYPE netstack_drops counter\n"
		     "# HELP netstack_drops Drops.\n"
		     "netstack_drops_total 7\n"
		     "# EOF\n");
}

static void fam_gauge(struct expo *e)
{
	struct labels l = { 0 };

	expo_family(e, "netstack_tcp_srtt_seconds", METRIC_GAUGE, "Smoothed RTT with \"quotes\".");
	expo_double(e, NULL, 0.25);
	labels_add(&l, "dev", "lo");
	expo_double(e, &l, 3);
	expo_u64(e, &l, 42);
}

static void test_gauge(void)
{
	check_render(fam_gauge,
		     "# HELP netstack_tcp_srtt_seconds Smoothed RTT with \"quotes\".\n"
		     "# TYPE netstack_tcp_srtt_seconds gauge\n"
		     "netstack_tcp_srtt_seconds 0.25\n"
		     "netstack_tcp_srtt_seconds{dev=\"lo\"} 3\n"
		     "netstack_tcp_srtt_seconds{dev=\"lo\"} 42\n",
		     "# TYPE netstack_tcp_srtt_seconds gauge\n"
		     "# HELP netstack_tcp_srtt_seconds Smoothed RTT with \\\"quotes\\\".\n"
		     "netstack_tcp_srtt_seconds 0.25\n"
		     "netstack_tcp_srtt_seconds{dev=\"lo\"} 3.0\n"
		     "netstack_tcp_srtt_seconds{dev=\"lo\"} 42\n"
		     "# EOF\n");
}

static void fam_no_help(struct expo *e)
{
	expo_family(e, "up", METRIC_GAUGE, NULL);
	expo_u64(e, NULL, 1);
	expo_family(e, "empty_help", METRIC_GAUGE, "");
	expo_u64(e, NULL, 2);
}

static void test_no_labels_no_help(void)
{
	check_render(fam_no_help,
		     "# TYPE up gauge\n"
		     "up 1\n"
		     "# TYPE empty_help gauge\n"
		     "empty_help 2\n",
		     "# TYPE up gauge\n"
		     "up 1\n"
		     "# TYPE empty_help gauge\n"
		     "empty_help 2\n"
		     "# EOF\n");
}

static const double hist_bounds[] = { 0.001, 0.01, 0.1, 1, 10 };
static const uint64_t hist_counts[] = { 1, 2, 0, 4, 0, 3 };

static void fam_histogram(struct expo *e)
{
	struct labels l = { 0 };

	expo_family(e, "netstack_rtt_seconds", METRIC_HISTOGRAM, "RTT.");
	labels_add(&l, "dev", "eth0");
	expo_histogram(e, &l, hist_bounds, hist_counts, 5, 12.5);
	expo_histogram(e, NULL, hist_bounds, hist_counts, 5, 0);
}

static void test_histogram(void)
{
	check_render(fam_histogram,
		     "# HELP netstack_rtt_seconds RTT.\n"
		     "# TYPE netstack_rtt_seconds histogram\n"
		     "netstack_rtt_seconds_bucket{dev=\"eth0\",le=\"0.001\"} 1\n"
		     "netstack_rtt_seconds_bucket{dev=\"eth0\",le=\"0.01\"} 3\n"
		     "netstack_rtt_seconds_bucket{dev=\"eth0\",le=\"0.1\"} 3\n"
		     "netstack_rtt_seconds_bucket{dev=\"eth0\",le=\"1\"} 7\n"
		     "netstack_rtt_seconds_bucket{dev=\"eth0\",le=\"10\"} 7\n"
		     "netstack_rtt_seconds_bucket{dev=\"eth0\",le=\"+Inf\"} 10\n"
		     "netstack_rtt_seconds_sum{dev=\"eth0\"} 12.5\n"
		     "netstack_rtt_seconds_count{dev=\"eth0\"} 10\n"
		     "netstack_rtt_seconds_bucket{le=\"0.001\"} 1\n"
		     "netstack_rtt_seconds_bucket{le=\"0.01\"} 3\n"
		     "netstack_rtt_seconds_bucket{le=\"0.1\"} 3\n"
		     "netstack_rtt_seconds_bucket{le=\"1\"} 7\n"
		     "netstack_rtt_seconds_bucket{le=\"10\"} 7\n"
		     "netstack_rtt_seconds_bucket{le=\"+Inf\"} 10\n"
		     "netstack_rtt_seconds_sum 0\n"
		     "netstack_rtt_seconds_count 10\n",
		     "# TYPE netstack_rtt_seconds histogram\n"
		     "# HELP netstack_rtt_seconds RTT.\n"
		     "netstack_rtt_seconds_bucket{dev=\"eth0\",le=\"0.001\"} 1\n"
		     "netstack_rtt_seconds_bucket{dev=\"eth0\",le=\"0.01\"} 3\n"
		     "netstack_rtt_seconds_bucket{dev=\"eth0\",le=\"0.1\"} 3\n"
		     "netstack_rtt_seconds_bucket{dev=\"eth0\",le=\"1.0\"} 7\n"
		     "netstack_rtt_seconds_bucket{dev=\"eth0\",le=\"10.0\"} 7\n"
		     "netstack_rtt_seconds_bucket{dev=\"eth0\",le=\"+Inf\"} 10\n"
		     "netstack_rtt_seconds_sum{dev=\"eth0\"} 12.5\n"
		     "netstack_rtt_seconds_count{dev=\"eth0\"} 10\n"
		     "netstack_rtt_seconds_bucket{le=\"0.001\"} 1\n"
		     "netstack_rtt_seconds_bucket{le=\"0.01\"} 3\n"
		     "netstack_rtt_seconds_bucket{le=\"0.1\"} 3\n"
		     "netstack_rtt_seconds_bucket{le=\"1.0\"} 7\n"
		     "netstack_rtt_seconds_bucket{le=\"10.0\"} 7\n"
		     "netstack_rtt_seconds_bucket{le=\"+Inf\"} 10\n"
		     "netstack_rtt_seconds_sum 0.0\n"
		     "netstack_rtt_seconds_count 10\n"
		     "# EOF\n");
}

/* Render one value through expo_double in both formats and compare the value text. */
static void check_double(double v, const char *prom, const char *om)
{
	char want[128];
	struct mbuf b = { 0 };
	struct expo e;

	expo_init(&e, &b, FORMAT_PROMETHEUS);
	e.family = "x";
	e.type = METRIC_GAUGE;
	expo_double(&e, NULL, v);
	snprintf(want, sizeof(want), "x %s\n", prom);
	CHECK_STR(b.data, want);
	mbuf_reset(&b);
	e.format = FORMAT_OPENMETRICS;
	expo_double(&e, NULL, v);
	snprintf(want, sizeof(want), "x %s\n", om);
	CHECK_STR(b.data, want);
	mbuf_free(&b);
}

static void test_double_format(void)
{
	check_double(0, "0", "0.0");
	check_double(-0.0, "-0", "-0.0");
	check_double(1, "1", "1.0");
	check_double(-2.5, "-2.5", "-2.5");
	check_double(0.1, "0.1", "0.1");
	check_double(0.95, "0.95", "0.95");
	check_double(0.999, "0.999", "0.999");
	check_double(1.7, "1.7", "1.7");
	check_double(0.1 + 0.2, "0.30000000000000004", "0.30000000000000004");
	check_double(1.0 / 3, "0.3333333333333333", "0.3333333333333333");
	/* The fixed/exponent switch follows OpenMetrics' canonical examples. */
	check_double(1e-10, "1e-10", "1e-10");
	check_double(1e-5, "1e-05", "1e-05");
	check_double(1e-4, "0.0001", "0.0001");
	check_double(100000, "100000", "100000.0");
	check_double(123456.7, "123456.7", "123456.7");
	check_double(1e6, "1e+06", "1e+06");
	check_double(1.5e6, "1.5e+06", "1.5e+06");
	check_double(1e23, "1e+23", "1e+23");
	check_double(1.1e23, "1.1e+23", "1.1e+23");
	check_double(4.9e-324, "5e-324", "5e-324");
	check_double(1.7976931348623157e308, "1.7976931348623157e+308", "1.7976931348623157e+308");
	check_double(NAN, "NaN", "NaN");
	check_double(INFINITY, "+Inf", "+Inf");
	check_double(-INFINITY, "-Inf", "-Inf");
}

/* Every rendered double must parse back to the same bits. */
static void test_double_round_trip(void)
{
	int i, k;

	srand(1);
	for (i = 0; i < 20000; i++) {
		char buf[128], *end, *sp;
		struct mbuf b = { 0 };
		struct expo e;
		double got, v;

		expo_init(&e, &b, i & 1 ? FORMAT_OPENMETRICS : FORMAT_PROMETHEUS);
		e.family = "x";
		e.type = METRIC_GAUGE;
		/* Random mantissa scaled over 1e-20..1e+19, without needing libm. */
		v = (double)rand() / RAND_MAX * 1e-20 * (rand() & 1 ? 1 : -1);
		for (k = rand() % 40; k > 0; k--)
			v *= 10;
		expo_double(&e, NULL, v);
		snprintf(buf, sizeof(buf), "%s", b.data);
		sp = strchr(buf, ' ');
		got = sp ? strtod(sp + 1, &end) : NAN;
		CHECK(sp && *end == '\n' && got == v);
		mbuf_free(&b);
	}
}

static void test_openmetrics_eof(void)
{
	struct mbuf b = { 0 };
	struct expo e;

	expo_init(&e, &b, FORMAT_OPENMETRICS);
	expo_finish(&e);
	CHECK_STR(b.data, "# EOF\n");
	mbuf_free(&b);

	expo_init(&e, &b, FORMAT_PROMETHEUS);
	expo_finish(&e);
	CHECK(b.len == 0);
	mbuf_free(&b);
}

static void test_labels_add_limit(void)
{
	struct labels l = { 0 };
	int i;

	for (i = 0; i < LABELS_MAX + 3; i++)
		labels_add(&l, "n", "v");
	CHECK(l.n == LABELS_MAX);
	labels_add(&l, "extra", NULL);
	CHECK(l.n == LABELS_MAX);

	l.n = 0;
	labels_add(&l, "a", NULL);
	CHECK(l.n == 1);
	CHECK_STR(l.value[0], "");
}

static const char prometheus_accept[] =
	"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
	"q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/* The format negotiate_format picks, or -1 when it refuses the request (406). */
static int nf(const char *accept)
{
	enum metric_format f;

	return negotiate_format(accept, &f) ? (int)f : -1;
}

static void test_negotiate(void)
{
	CHECK(nf(prometheus_accept) == FORMAT_OPENMETRICS);
	/* Prometheus 3 also sends escaping= and a text/plain 1.0.0 entry. */
	CHECK(nf("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;"
		 "q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,"
		 "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,"
		 "text/plain;version=0.0.4;q=0.3,*/*;q=0.2") == FORMAT_OPENMETRICS);
	/* OpenMetrics disabled in Prometheus: text only. */
	CHECK(nf("text/plain;version=0.0.4;q=1,*/*;q=0.1") == FORMAT_PROMETHEUS);
	CHECK(nf("text/html,application/xhtml+xml,application/xml;q=0.9,"
		 "image/avif,image/webp,*/*;q=0.8") == FORMAT_PROMETHEUS);
	CHECK(nf("application/openmetrics-text;q=0") == FORMAT_PROMETHEUS);
	CHECK(nf("application/openmetrics-text;version=1.0.0;q=0.0,*/*;q=0.1") ==
	      FORMAT_PROMETHEUS);
	CHECK(nf("application/openmetrics-text;version=0.0.1") == FORMAT_PROMETHEUS);
	CHECK(nf("application/openmetrics-text") == FORMAT_OPENMETRICS);
	CHECK(nf("application/openmetrics-text;version=\"1.0.0\"") == FORMAT_OPENMETRICS);
	/* Text preferred over OpenMetrics, and a tie going to OpenMetrics. */
	CHECK(nf("application/openmetrics-text;q=0.5,text/plain") == FORMAT_PROMETHEUS);
	CHECK(nf("application/openmetrics-text;q=0.5,text/*;q=0.5") == FORMAT_OPENMETRICS);
	CHECK(nf(NULL) == FORMAT_PROMETHEUS);
	CHECK(nf("") == FORMAT_PROMETHEUS);
	CHECK(nf("   ,  , ") == FORMAT_PROMETHEUS);
	CHECK(nf("garbage;;;==,\"\",;q=1") == FORMAT_PROMETHEUS);
	CHECK(nf("*/*") == FORMAT_PROMETHEUS);
	CHECK(nf("APPLICATION/OpenMetrics-Text; VERSION=1.0.0; Q=0.9 , TEXT/PLAIN;"
		 "Q=0.5") == FORMAT_OPENMETRICS);
	CHECK(nf(" application/openmetrics-text\t;\tversion = 1.0.0 ") == FORMAT_OPENMETRICS);
	/* An invalid q drops the entry instead of defaulting to 1. */
	CHECK(nf("application/openmetrics-text;q=2") == FORMAT_PROMETHEUS);
	CHECK(nf("application/openmetrics-text;q=abc,text/plain;q=0.1") == FORMAT_PROMETHEUS);
	CHECK(nf("application/openmetrics-text;q=0.0001") == FORMAT_PROMETHEUS);
	CHECK(nf("application/openmetrics-text;q=1.000") == FORMAT_OPENMETRICS);
	/* Trailing junk inside an element disqualifies just that element. */
	CHECK(nf("application/openmetrics-text junk,text/plain") == FORMAT_PROMETHEUS);
	/* Prometheus 2.42 with native histograms. */
	CHECK(nf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
		 "encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,"
		 "application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"
		 "*/*;q=0.1") == FORMAT_PROTOBUF);
	/* q=0 excludes a format: a wildcard matching it does not let it back in (RFC 9110). */
	CHECK(nf("*/*, text/plain;q=0") == FORMAT_OPENMETRICS);
	CHECK(nf("text/plain;q=0, */*") == FORMAT_OPENMETRICS);
	CHECK(nf("text/plain;version=0.0.4;q=0,*/*;q=0.1") == FORMAT_OPENMETRICS);
	CHECK(nf("text/*;q=0, */*") == FORMAT_OPENMETRICS);
	CHECK(nf("*/*;q=0.5, text/plain;q=0, application/openmetrics-text;q=0") == FORMAT_PROTOBUF);
	CHECK(nf("application/*;q=0.5, text/plain;q=0.4") == FORMAT_OPENMETRICS);
	CHECK(nf("application/*;q=0, */*") == FORMAT_PROMETHEUS);
	/* Nothing acceptable: refused when text was, else the header is disregarded. */
	CHECK(nf("text/plain;q=0") == -1);
	CHECK(nf("*/*;q=0") == -1);
	CHECK(nf("text/plain;q=0, text/*") == -1);
	CHECK(nf("text/plain;q=0, application/openmetrics-text;version=0.0.1") == -1);
	CHECK(nf("application/json") == FORMAT_PROMETHEUS);
	CHECK(nf("application/openmetrics-text;q=0, application/json") == FORMAT_PROMETHEUS);
	/* Several Accept lines arrive joined by ", ": each element counts. */
	CHECK(nf("application/json, application/openmetrics-text;version=1.0.0") ==
	      FORMAT_OPENMETRICS);
}

static void test_content_type(void)
{
	CHECK_STR(format_content_type(FORMAT_PROMETHEUS),
		  "text/plain; version=0.0.4; charset=utf-8");
	CHECK_STR(format_content_type(FORMAT_OPENMETRICS),
		  "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

static void test_accepts_gzip(void)
{
	CHECK(accepts_gzip("gzip"));
	CHECK(!accepts_gzip("gzip;q=0"));
	CHECK(!accepts_gzip("gzip; q=0.000"));
	CHECK(accepts_gzip("deflate, gzip;q=0.5"));
	CHECK(accepts_gzip("gzip, deflate, br, zstd"));
	CHECK(accepts_gzip("*"));
	CHECK(!accepts_gzip("*;q=0"));
	CHECK(!accepts_gzip("*, gzip;q=0"));
	CHECK(accepts_gzip("x-gzip"));
	CHECK(accepts_gzip("GZIP"));
	CHECK(!accepts_gzip("identity"));
	CHECK(!accepts_gzip("deflate, br"));
	CHECK(!accepts_gzip("gzipper"));
	CHECK(!accepts_gzip(""));
	CHECK(!accepts_gzip(NULL));
}

/* Inflate a gzip stream with zlib and compare with the original. */
static void check_gzip_round_trip(const void *in, size_t n)
{
	struct mbuf z = { 0 };
	unsigned char *back;
	z_stream zs;
	int rc;

	CHECK(gzip_buffer(in, n, &z) == 0);
	CHECK(!z.oom);
	CHECK(z.len >= 18 && (unsigned char)z.data[0] == 0x1f && (unsigned char)z.data[1] == 0x8b);

	back = malloc(n + 1);
	memset(&zs, 0, sizeof(zs));
	CHECK(back && inflateInit2(&zs, 15 + 16) == Z_OK);
	if (!back) {
		mbuf_free(&z);
		return;
	}
	zs.next_in = (Bytef *)z.data;
	zs.avail_in = z.len;
	zs.next_out = back;
	zs.avail_out = n + 1;
	rc = inflate(&zs, Z_FINISH);
	CHECK(rc == Z_STREAM_END);
	CHECK(zs.total_out == n);
	CHECK(zs.avail_in == 0);
	CHECK(n == 0 || !memcmp(back, in, n));
	inflateEnd(&zs);
	free(back);
	mbuf_free(&z);
}

static void test_gzip_round_trip(void)
{
	static const char text[] = "# TYPE up gauge\nup 1\n";
	size_t big = 1 << 20, i;
	unsigned char *buf;
	unsigned int seed = 12345;
	struct mbuf out = { 0 };

	check_gzip_round_trip("", 0);
	check_gzip_round_trip(text, sizeof(text) - 1);

	buf = malloc(big);
	CHECK(buf != NULL);
	if (!buf)
		return;
	/* Repetitive exposition-like text... */
	for (i = 0; i < big; i++)
		buf[i] = text[i % (sizeof(text) - 1)];
	check_gzip_round_trip(buf, big);
	/* ...and incompressible noise, which needs the worst-case output size. */
	for (i = 0; i < big; i++) {
		seed = seed * 1103515245 + 12345;
		buf[i] = seed >> 16;
	}
	check_gzip_round_trip(buf, big);
	free(buf);

	/* The output buffer is reset, not appended to. */
	mbuf_puts(&out, "stale");
	CHECK(gzip_buffer(text, sizeof(text) - 1, &out) == 0);
	CHECK((unsigned char)out.data[0] == 0x1f);
	mbuf_free(&out);
}

static void test_mbuf_growth(void)
{
	struct mbuf b = { 0 };
	size_t want = 0;
	int i;

	for (i = 0; i < 100000; i++) {
		mbuf_printf(&b, "line %d\n", i);
		want += snprintf(NULL, 0, "line %d\n", i);
	}
	CHECK(!b.oom);
	CHECK(b.len == want);
	CHECK(b.cap > b.len && b.data[b.len] == '\0');
	CHECK(!strncmp(b.data, "line 0\nline 1\n", 14));
	CHECK(!strcmp(b.data + b.len - 11, "line 99999\n"));

	/* A single write far beyond the current capacity. */
	mbuf_reset(&b);
	CHECK(b.len == 0 && b.data[0] == '\0');
	mbuf_printf(&b, "%5000s|", "x");
	CHECK(b.len == 5001 && b.data[4999] == 'x' && b.data[5000] == '|');
	mbuf_write(&b, "ab", 2);
	mbuf_puts(&b, "cd");
	CHECK(b.len == 5005 && !strcmp(b.data + 5000, "|abcd"));
	mbuf_free(&b);
	CHECK(!b.data && !b.len && !b.cap);
}

static void test_mbuf_oom(void)
{
	struct mbuf b = { 0 };

	mbuf_puts(&b, "keep");
	/* A size that cannot be represented sets oom; later writes are ignored. */
	mbuf_write(&b, "x", SIZE_MAX - 1);
	CHECK(b.oom);
	mbuf_puts(&b, "more");
	mbuf_printf(&b, "%d", 1);
	CHECK(b.len == 4 && !strcmp(b.data, "keep"));
	/* The one error convention: -ENOMEM, not false, while oom holds. */
	CHECK(mbuf_reserve(&b, 1) == -ENOMEM);
	mbuf_reset(&b);
	CHECK(!b.oom);
	CHECK(mbuf_reserve(&b, 16) == 0);
	mbuf_puts(&b, "ok");
	CHECK_STR(b.data, "ok");
	mbuf_free(&b);
}

static void test_constant_labels(void)
{
	struct mbuf b = { 0 };
	struct labels c = { 0 }, l = { 0 };
	struct expo e;
	const double bounds[] = { 1 };
	const uint64_t counts[] = { 1, 0 };

	labels_add(&c, "node", "n\"1");
	labels_add(&l, "a", "x");
	expo_init(&e, &b, FORMAT_PROMETHEUS);
	e.constant = &c;
	expo_family(&e, "t_total", METRIC_COUNTER, "h");
	expo_u64(&e, &l, 1);
	expo_u64(&e, NULL, 2);
	expo_family(&e, "h", METRIC_HISTOGRAM, "h");
	expo_histogram(&e, NULL, bounds, counts, 1, 0.5);
	CHECK_STR(b.data,
		  "# HELP t_total h\n# TYPE t_total counter\n"
		  "t_total{a=\"x\",node=\"n\\\"1\"} 1\nt_total{node=\"n\\\"1\"} 2\n"
		  "# HELP h h\n# TYPE h histogram\n"
		  "h_bucket{node=\"n\\\"1\",le=\"1\"} 1\nh_bucket{node=\"n\\\"1\",le=\"+Inf\"} 1\n"
		  "h_sum{node=\"n\\\"1\"} 0.5\nh_count{node=\"n\\\"1\"} 1\n");
	mbuf_free(&b);
}

static void test_exemplar(void)
{
	char long_value[120];
	struct mbuf b = { 0 };
	struct labels l = { 0 }, ex = { 0 }, big = { 0 };
	struct expo e;

	labels_add(&l, "reason", "NO_SOCKET");
	labels_add(&ex, "saddr", "fd99::1");
	labels_add(&ex, "dport", "5\"5");
	memset(long_value, 'x', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = 0;
	labels_add(&big, "saddr", long_value);
	labels_add(&big, "dport", "1234"); /* 5 + 119 + 5 + 4 = 133 > 128 */

	expo_init(&e, &b, FORMAT_OPENMETRICS);
	expo_family(&e, "d_total", METRIC_COUNTER, "h");
	expo_u64_exemplar(&e, &l, 7, &ex, 1, 1700000000.5);
	expo_u64_exemplar(&e, &l, 8, &big, 1, 1700000000.5);
	expo_u64_exemplar(&e, NULL, 9, NULL, 1, 1);
	CHECK_STR(b.data, "# TYPE d counter\n# HELP d h\n"
			  "d_total{reason=\"NO_SOCKET\"} 7 # {saddr=\"fd99::1\",dport=\"5\\\"5\"} "
			  "1.0 1700000000.500\n"
			  "d_total{reason=\"NO_SOCKET\"} 8\nd_total 9\n");

	/* Text 0.0.4 has no exemplars: the output is what expo_u64 writes. */
	mbuf_reset(&b);
	expo_init(&e, &b, FORMAT_PROMETHEUS);
	expo_family(&e, "d_total", METRIC_COUNTER, "h");
	expo_u64_exemplar(&e, &l, 7, &ex, 1, 1700000000.5);
	CHECK_STR(b.data,
		  "# HELP d_total h\n# TYPE d_total counter\nd_total{reason=\"NO_SOCKET\"} 7\n");
	mbuf_free(&b);
}

/* Every C0 control and DEL, the fold's old separators among them, become one U+FFFD each. */
static void test_label_text_controls(void)
{
	for (int c = 1; c < 0x80; c++) {
		char in[4] = { 'a', (char)c, 'b', 0 }, out[8], want[8];
		bool ctl = c < 0x20 || c == 0x7f;

		snprintf(want, sizeof(want), "a%sb", ctl ? R : (char[]){ (char)c, 0 });
		CHECK_STR(label_text(out, sizeof(out), in), want);
	}
}

/* Hostile values of any byte render as one sample line, whatever they hold. */
static void test_hostile_value_rendered(void)
{
	char hostile[64], *p = hostile;
	struct mbuf b = { 0 };
	struct labels l = { 0 };
	struct expo e;

	for (int c = 1; c < 0x20; c++)
		*p++ = (char)c;
	strcpy(p, "\x7f\\\"{}=,# x 1");
	labels_add(&l, "pod", hostile);
	expo_init(&e, &b, FORMAT_OPENMETRICS);
	expo_family(&e, "x", METRIC_GAUGE, NULL);
	expo_u64(&e, &l, 1);
	{
		struct mbuf want = { 0 };

		mbuf_puts(&want, "# TYPE x gauge\nx{pod=\"");
		for (int c = 1; c < 0x20; c++)
			mbuf_puts(&want, c == '\n' ? "\\n" : R);
		mbuf_puts(&want, R "\\\\\\\"{}=,# x 1\"} 1\n");
		CHECK_STR(b.data, want.data);
		mbuf_free(&want);
	}
	mbuf_free(&b);
}

/* A label name no format allows leaves its sample out (counted), never ends a label set. */
static void test_bad_label_name(void)
{
	static const char *const bad[] = {
		"", "0a", "a b", "a}", "a\nb", "a\"", "a=b", "\xc3\xa9"
	};
	struct mbuf b = { 0 };
	struct expo e;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct labels l = { 0 }, c = { 0 };
		const double bounds[] = { 1 };
		const uint64_t counts[] = { 1, 0 };

		labels_add(&l, bad[i], "v");
		labels_add(&c, bad[i], "v");
		mbuf_reset(&b);
		expo_init(&e, &b, FORMAT_PROMETHEUS);
		expo_family(&e, "x", METRIC_GAUGE, NULL);
		expo_u64(&e, &l, 1);
		expo_double(&e, &l, 1);
		expo_histogram(&e, &l, bounds, counts, 1, 1);
		expo_u64(&e, &(struct labels){ 1, { "ok_1" }, { "v" } }, 2);
		e.constant = &c;
		expo_u64(&e, NULL, 3);
		CHECK_STR(b.data, "# TYPE x gauge\nx{ok_1=\"v\"} 2\n");
		CHECK(e.bad_samples == 4);
	}
	mbuf_free(&b);
}

struct capture {
	struct expo_filter f;
	int samples;
	const struct exemplar *ex;
};

static bool capture_capture(struct expo_filter *f, const char *family, enum metric_type type)
{
	(void)f;
	(void)type;
	return !strcmp(family, "d_total");
}

static void capture_sample(struct expo_filter *f, const struct labels *l, const double *bounds,
			   const uint64_t *counts, int nbounds, double sum,
			   const struct native_hist *nh, const struct exemplar *ex)
{
	struct capture *c = (struct capture *)f;

	(void)l;
	(void)nh;
	(void)bounds;
	(void)nbounds;
	(void)sum;
	CHECK(counts[0] == 7);
	c->samples++;
	c->ex = ex;
	if (ex)
		CHECK(ex->l->n == 1 && ex->value == 1 && ex->time == 1700000000.5);
}

static void capture_flush(struct expo_filter *f, struct expo *e, bool keep)
{
	(void)f;
	(void)e;
	(void)keep;
}

/* A family a filter captures gets its samples with exemplars too, none written past it. */
static void test_exemplar_captured(void)
{
	struct capture c = { { capture_capture, capture_sample, capture_flush }, 0, NULL };
	struct labels ex = { 1, { "saddr" }, { "fd99::1" } };
	struct mbuf b = { 0 };
	struct expo e;

	expo_init(&e, &b, FORMAT_OPENMETRICS);
	expo_set_filter(&e, &c.f, true);
	expo_family(&e, "d_total", METRIC_COUNTER, "h");
	expo_u64_exemplar(&e, NULL, 7, &ex, 1, 1700000000.5);
	CHECK(c.samples == 1 && c.ex);
	expo_finish(&e);
	CHECK_STR(b.data, "# TYPE d counter\n# HELP d h\n# EOF\n");
	mbuf_free(&b);
}

int main(void)
{
	RUN(test_escape_label_value);
	RUN(test_escape_html);
	RUN(test_exemplar);
	RUN(test_exemplar_captured);
	RUN(test_label_text_controls);
	RUN(test_hostile_value_rendered);
	RUN(test_bad_label_name);
	RUN(test_escape_help);
	RUN(test_escape_json);
	RUN(test_utf8_table);
	RUN(test_utf8_label_rendered);
	RUN(test_label_text_bounds);
	RUN(test_utf8_char_exhaustive);
	RUN(test_counter);
	RUN(test_counter_without_total_suffix);
	RUN(test_gauge);
	RUN(test_no_labels_no_help);
	RUN(test_histogram);
	RUN(test_double_format);
	RUN(test_double_round_trip);
	RUN(test_openmetrics_eof);
	RUN(test_labels_add_limit);
	RUN(test_negotiate);
	RUN(test_content_type);
	RUN(test_accepts_gzip);
	RUN(test_gzip_round_trip);
	RUN(test_mbuf_growth);
	RUN(test_mbuf_oom);
	RUN(test_constant_labels);
	CHECK_EXIT();
}
