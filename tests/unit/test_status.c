// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the status page's samples (exporter/http/status.c) and its rendering
 * (status_page.c): collectors of its own write netstack_skb_drops_total and
 * netstack_tcp_resets_sent_total as real collectors do, samples are taken at chosen times, and
 * the rendered page is read back: collecting before a rate exists, rates and sparklines,
 * counter resets, the other row past STATUS_ROWS reasons with nothing lost, quiet windows, and
 * each way a source can be missing. A histogram collector of its own writes
 * netstack_tcp_rtt_seconds: p50 and p99 over the last minute, from classic and native buckets,
 * as Prometheus' histogram_quantile works them out.
 */
#include "check.h"
#include "collectors/collector.h"
#include "scrape.h"
#include "http/status.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REASONS 32

/* A collector's counters: each reason split over two series (family ipv4 and ipv6). */
struct fake {
	const char *family, *label; /* label: NULL, reason */
	unsigned n;
	char names[MAX_REASONS][24];
	uint64_t count[MAX_REASONS];
};

static int fake_collect(void *state, struct expo *e)
{
	const struct fake *f = state;

	/* Another family first, as collectors write several. */
	expo_family(e, "netstack_unrelated_total", METRIC_COUNTER, "Not read.");
	expo_u64(e, &(struct labels){ 1, { "reason" }, { "X" } }, 1000000);
	expo_family(e, f->family, METRIC_COUNTER, "Counts.");
	for (unsigned i = 0; i < f->n; i++) {
		struct labels l = { 0 };
		uint64_t half = f->count[i] / 2;

		labels_add(&l, f->label ? f->label : "reason", f->names[i]);
		labels_add(&l, "family", "ipv4");
		expo_u64(e, &l, half);
		l.value[1] = "ipv6";
		expo_u64(e, &l, f->count[i] - half);
	}
	return 0;
}

static const struct collector_ops drops_ops = { .name = DROPS_COLLECTOR,
						.description = "fake drops",
						.collect = fake_collect };
static const struct collector_ops resets_ops = { .name = RESETS_COLLECTOR,
						 .description = "fake resets",
						 .collect = fake_collect };

/*
 * A histogram collector: ipv4 with classic bounds of 10, 20 and 40 ms, or native buckets of
 * schema 0 ((0.5, 1], (1, 2], (2, 4], (4, 8] s, a zero bucket up to 0.5 s); its series split over
 * two netns labels, as the collector's would be.
 */
struct fakeh {
	bool native;
	uint64_t c[4];
};

static int fakeh_collect(void *state, struct expo *e)
{
	static const double bounds[] = { 0.010, 0.020, 0.040 };
	const struct fakeh *f = state;
	uint64_t half[4], rest[4], zero = 0;
	struct native_hist nh = { 0, 0.5, 0, 0, half, 4 };
	struct labels l = { 0 };

	for (int i = 0; i < 4; i++) {
		half[i] = f->c[i] / 2;
		rest[i] = f->c[i] - half[i];
	}
	expo_family(e, RTT_FAMILY, METRIC_HISTOGRAM, "Times.");
	labels_add(&l, "family", "ipv4");
	labels_add(&l, "netns", "1");
	if (f->native) {
		expo_histogram_native(e, &l, bounds, (uint64_t[]){ 0, 0, 0, f->c[0] / 2 }, 3, 0,
				      &nh);
		nh.counts = rest;
		nh.zero_count = zero;
		l.value[1] = "2";
		expo_histogram_native(e, &l, bounds, (uint64_t[]){ 0, 0, 0, rest[0] }, 3, 0, &nh);
	} else {
		expo_histogram(e, &l, bounds, half, 3, 0);
		l.value[1] = "2";
		expo_histogram(e, &l, bounds, rest, 3, 0);
	}
	return 0;
}

static const struct collector_ops retrans_ops = { .name = RETRANS_COLLECTOR,
						  .description = "fake retrans",
						  .collect = fake_collect };
static const struct collector_ops rtt_ops = { .name = RTT_COLLECTOR,
					      .description = "fake rtt",
					      .collect = fakeh_collect };

static struct fake drops, resets;
static struct collector table[5];
static struct scrape *sc; /* over table: what the status samples */

/* A table with drops running and, with resets_state, resets (enabled: a NULL state is down). */
static void setup(bool with_resets, bool resets_enabled, struct fake *resets_state)
{
	memset(&drops, 0, sizeof(drops));
	memset(&resets, 0, sizeof(resets));
	drops.family = DROPS_FAMILY;
	resets.family = RESETS_SENT_FAMILY;
	memset(table, 0, sizeof(table));
	table[0] = (struct collector){ &drops_ops, true, &drops, false, 0 };
	if (with_resets)
		table[1] =
			(struct collector){ &resets_ops, resets_enabled, resets_state, false, 0 };
}

static void set(struct fake *f, const char *name, uint64_t count)
{
	unsigned i;

	for (i = 0; i < f->n && strcmp(f->names[i], name); i++)
		;
	if (i == f->n)
		snprintf(f->names[f->n++], sizeof(f->names[0]), "%s", name);
	f->count[i] = count;
}

static char *page(const struct status *s)
{
	struct mbuf m = { 0 };
	char *copy;

	status_page(s, &m, "/metrics");
	CHECK(!m.oom);
	copy = strndup(m.data, m.len);
	mbuf_free(&m);
	return copy;
}

/* The section of a page under heading h2 (up to the next <h2>), in a static buffer. */
static const char *section(const char *p, const char *h2)
{
	static char buf[65536];
	char head[96];
	const char *a, *b;

	snprintf(head, sizeof(head), "<h2>%s</h2>", h2);
	a = strstr(p, head);
	if (!a)
		return "";
	b = strstr(a + 1, "<h2>");
	snprintf(buf, sizeof(buf), "%.*s", (int)(b ? b - a : (long)strlen(a)), a);
	return buf;
}

/* A row's cells: now, in the window, total; and its polyline's y values. false: no such row. */
struct row_cells {
	double now;
	uint64_t sum, total;
	int y[STATUS_POINTS + 1], ny;
};

static bool row(const char *sec, const char *name, struct row_cells *c)
{
	char head[96];
	const char *p, *pts;
	int off;

	snprintf(head, sizeof(head), "<tr><td>%s", name);
	p = strstr(sec, head);
	if (!p || !(p = strstr(p, "<td class=\"num\">")))
		return false;
	if (sscanf(p, "<td class=\"num\">%lf</td>", &c->now) != 1)
		return false;
	pts = strstr(p, "points=\"");
	if (!pts)
		return false;
	pts += 8;
	c->ny = 0;
	for (int x, y; *pts != '"' && sscanf(pts, "%d,%d%n", &x, &y, &off) == 2;) {
		if (c->ny <= STATUS_POINTS)
			c->y[c->ny++] = y;
		for (pts += off; *pts == ' '; pts++)
			;
	}
	p = strstr(pts, "</svg></td>");
	return p &&
	       sscanf(p, "</svg></td><td class=\"num\">%" SCNu64 "</td><td class=\"num\">%" SCNu64,
		      &c->sum, &c->total) == 2;
}

static void test_collecting_then_rates(void)
{
	struct status *s = status_new(sc, NULL);
	struct row_cells c;
	char *p;

	setup(false, false, NULL);
	set(&drops, "NETFILTER_DROP", 1000); /* counted before the exporter started (pins) */
	status_sample_at(s, 100);
	p = page(s);
	CHECK(strstr(section(p, "Drops by reason"), "class=\"empty collecting\">Collecting"));
	CHECK(strstr(section(p, "TCP resets sent by reason"),
		     "The resets collector is not in this build."));
	CHECK(!strstr(p, "<svg"));
	free(p);

	status_sample_at(s, 115); /* nothing new: a rate of zero, and no row */
	p = page(s);
	CHECK(strstr(section(p, "Drops by reason"),
		     "No drops in the last 15 s (1000 since the collector started)."));
	free(p);

	set(&drops, "NETFILTER_DROP", 1000 + 3000);
	status_sample_at(s, 130);
	p = page(s);
	CHECK(row(section(p, "Drops by reason"), "NETFILTER_DROP", &c));
	CHECK(c.now == 200);
	CHECK(c.sum == 3000);
	CHECK(c.total == 4000);
	/* The first interval's start and both points; the burst is the top of the line. */
	CHECK(c.ny == 3);
	CHECK(c.y[0] == c.y[1] && c.y[2] < c.y[1]);
	CHECK(c.y[2] == 1 && c.y[0] == 19);
	/* x by time over the 30 s the header names. */
	CHECK(strstr(p, "points=\"0,19 60,19 120,1\""));
	CHECK(strstr(p, "aria-label=\"NETFILTER_DROP: 200/s now, peak 200/s, 3000 in 30 s\""));
	CHECK(strstr(p, "<title>NETFILTER_DROP: 200/s now, peak 200/s, 3000 in 30 s</title>"));
	free(p);
	status_free(s);
}

/* A collector restarted with new maps: its counter starts again from zero, no negative rate. */
static void test_counter_reset(void)
{
	struct status *s = status_new(sc, NULL);
	struct row_cells c;
	char *p;

	setup(false, false, NULL);
	set(&drops, "NO_SOCKET", 5000);
	status_sample_at(s, 0);
	set(&drops, "NO_SOCKET", 5150);
	status_sample_at(s, 15);
	set(&drops, "NO_SOCKET", 30); /* reset, then 30 */
	status_sample_at(s, 30);
	p = page(s);
	CHECK(row(section(p, "Drops by reason"), "NO_SOCKET", &c));
	CHECK(c.sum == 150 + 30);
	CHECK(c.now == 2);
	CHECK(c.total == 30);
	for (int i = 0; i < c.ny; i++)
		CHECK(c.y[i] >= 1 && c.y[i] <= 19);
	free(p);
	status_free(s);
}

/* 20 reasons: the 16 busiest have rows, the rest share other, and every drop is in one. */
static void test_twenty_reasons(void)
{
	struct status *s = status_new(sc, NULL);
	struct row_cells c;
	uint64_t in_rows = 0, want = 0;
	char name[48], *p;
	const char *sec;
	unsigned rows = 0;

	setup(false, false, NULL);
	for (unsigned r = 1; r <= 20; r++) {
		snprintf(name, sizeof(name), "REASON_%02u_LONGER_NAME", r);
		set(&drops, name, 0);
	}
	for (unsigned k = 0; k <= STATUS_POINTS + 5; k++) {
		for (unsigned r = 1; r <= 20; r++)
			drops.count[r - 1] += k ? 15 * r * (1 + k % 3) : 0;
		status_sample_at(s, 15.0 * k);
	}
	/* The window: the last STATUS_POINTS increases. */
	for (unsigned k = 6; k <= STATUS_POINTS + 5; k++)
		for (unsigned r = 1; r <= 20; r++)
			want += 15 * r * (1 + k % 3);
	p = page(s);
	sec = section(p, "Drops by reason");
	for (unsigned r = 1; r <= 20; r++) {
		snprintf(name, sizeof(name), "REASON_%02u_LONGER_NAME</td>", r);
		if (row(sec, name, &c)) {
			rows++;
			in_rows += c.sum;
			CHECK(r > 4); /* the least busy four are in other */
			CHECK(c.ny == STATUS_POINTS + 1);
		}
	}
	CHECK(rows == STATUS_ROWS);
	CHECK(row(sec, "other: ", &c));
	CHECK(strstr(sec, "<tr><td>other: REASON_01_LONGER_NAME, REASON_02_LONGER_NAME, "
			  "REASON_03_LONGER_NAME, REASON_04_LONGER_NAME</td>"));
	CHECK(in_rows + c.sum == want);
	CHECK(!strstr(strstr(sec, "<tr><td>other: "), "</tr>\n<tr>")); /* the last row */
	CHECK(strstr(sec, "<th>last 15 minutes</th>"));
	printf("# status page with 20 reasons: %zu bytes (drops table %zu)\n", strlen(p),
	       strlen(sec));
	CHECK(strlen(p) < 32 * 1024);
	free(p);
	status_free(s);
}

/* A reason quiet for a whole window leaves the table; a newcomer gets a row at once. */
static void test_quiet_window(void)
{
	struct status *s = status_new(sc, NULL);
	struct row_cells c;
	char *p;

	setup(false, false, NULL);
	set(&drops, "OLD", 0);
	status_sample_at(s, 0);
	set(&drops, "OLD", 10);
	status_sample_at(s, 15);
	for (unsigned k = 2; k <= STATUS_POINTS + 1; k++)
		status_sample_at(s, 15.0 * k);
	p = page(s);
	CHECK(strstr(section(p, "Drops by reason"),
		     "No drops in the last 15 minutes (10 since the collector started)."));
	free(p);
	set(&drops, "NEW", 45);
	status_sample_at(s, 15.0 * (STATUS_POINTS + 2));
	p = page(s);
	CHECK(row(section(p, "Drops by reason"), "NEW", &c));
	CHECK(c.sum == 45 && c.now == 3);
	CHECK(!strstr(p, "<tr><td>OLD"));
	free(p);
	status_free(s);
}

static void test_sources_missing(void)
{
	struct status *s = status_new(sc, NULL);
	struct fake other_family = { .family = "netstack_something_else_total" };
	struct row_cells c;
	char *p;

	setup(true, false, &resets);
	status_sample_at(s, 0);
	p = page(s);
	CHECK(strstr(section(p, "TCP resets sent by reason"),
		     "The resets collector is not enabled ([collector.resets] enabled = true)."));
	free(p);
	status_free(s);

	s = status_new(sc, NULL);
	setup(true, true, NULL);
	status_sample_at(s, 0);
	p = page(s);
	CHECK(strstr(section(p, "TCP resets sent by reason"),
		     "The resets collector is not running"));
	free(p);
	status_free(s);

	s = status_new(sc, NULL);
	setup(true, true, &other_family);
	status_sample_at(s, 0);
	p = page(s);
	CHECK(strstr(section(p, "TCP resets sent by reason"),
		     "The resets collector exports no netstack_tcp_resets_sent_total here."));
	free(p);
	status_free(s);

	/* Running with data: resets by reason like drops. */
	s = status_new(sc, NULL);
	setup(true, true, &resets);
	set(&resets, "TCP_ABORT_ON_CLOSE", 0);
	status_sample_at(s, 0);
	set(&resets, "TCP_ABORT_ON_CLOSE", 30);
	status_sample_at(s, 15);
	p = page(s);
	CHECK(row(section(p, "TCP resets sent by reason"), "TCP_ABORT_ON_CLOSE", &c));
	CHECK(c.now == 2 && c.sum == 30);
	CHECK(strstr(section(p, "Drops by reason"), "No drops in the last 15 s."));
	free(p);

	/* A collector going away forgets its history: collecting again when it is back. */
	table[1].state = NULL;
	status_sample_at(s, 30);
	table[1].state = &resets;
	status_sample_at(s, 45);
	p = page(s);
	CHECK(strstr(section(p, "TCP resets sent by reason"), "Collecting"));
	free(p);
	status_free(s);
}

/* Names are escaped; the collectors list says when it is empty. */
static void test_escaping_and_empty_list(void)
{
	struct status *s = status_new(sc, NULL);
	char *p;

	setup(false, false, NULL);
	set(&drops, "A<b>&\"", 0);
	status_sample_at(s, 0);
	set(&drops, "A<b>&\"", 15);
	status_sample_at(s, 15);
	p = page(s);
	CHECK(strstr(p, "<tr><td>A&lt;b&gt;&amp;&quot;</td>"));
	CHECK(strstr(p, "aria-label=\"A&lt;b&gt;&amp;&quot;: 1.00/s now"));
	CHECK(!strstr(p, "A<b>"));
	CHECK(strstr(p, "<ul>\n<li><b>drops</b> (up): fake drops</li>\n</ul>"));
	free(p);
	table[0].enabled = false;
	p = page(s);
	CHECK(strstr(p, "<p class=\"empty\">No collector is enabled.</p>"));
	free(p);
	status_free(s);
}

/* A quantile table's cell in seconds (its <data> value) in row name, column col (0: p50). */
static double qcell(const char *sec, const char *name, int col)
{
	char head[96];
	const char *p;
	double v;

	snprintf(head, sizeof(head), "<tr><td>%s</td>", name);
	p = strstr(sec, head);
	for (int i = 0; p && i <= col; i++)
		p = strstr(p + 1, "<data value=\"");
	return p && sscanf(p, "<data value=\"%lf\"", &v) == 1 ? v : NAN;
}

static bool near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

/*
 * Retransmits by cause, a table like drops; RTT quantiles over the last minute: collecting until
 * two readings, then Prometheus' interpolation within the bucket of the window's increase.
 */
static void test_retransmits_and_quantiles(void)
{
	struct status *s = status_new(sc, NULL);
	struct fake rt = { .family = RETRANSMITS_FAMILY, .label = "cause" };
	struct fakeh h = { 0 };
	struct row_cells c;
	const char *sec;
	char *p;

	setup(false, false, NULL);
	table[1] = (struct collector){ &retrans_ops, true, &rt, false, 0 };
	table[2] = (struct collector){ &rtt_ops, true, &h, false, 0 };
	set(&rt, "syn", 4);
	h.c[1] = 1000; /* before the window: never in it */
	status_sample_at(s, 0);
	p = page(s);
	CHECK(strstr(section(p, "TCP round-trip time"), "Collecting"));
	CHECK(strstr(section(p, "TCP handshake time"), "The connections collector is not in this "
						       "build."));
	free(p);

	set(&rt, "syn", 4 + 30);
	set(&rt, "fast", 15);
	h.c[2] += 100; /* (20, 40] ms */
	status_sample_at(s, 15);
	p = page(s);
	CHECK(row(section(p, "TCP retransmits by cause"), "syn", &c));
	CHECK(c.now == 2 && c.sum == 30 && c.total == 34);
	CHECK(row(section(p, "TCP retransmits by cause"), "fast", &c));
	CHECK(strstr(section(p, "TCP retransmits by cause"), "<tr><th>cause</th>"));
	sec = section(p, "TCP round-trip time");
	CHECK(strstr(sec, "<tr><th>family</th><th>p50</th><th>p99</th><th>in 15 s</th></tr>"));
	CHECK(near(qcell(sec, "ipv4", 0), 0.030));
	CHECK(near(qcell(sec, "ipv4", 1), 0.020 + 0.020 * 0.99));
	CHECK(strstr(sec, "<td class=\"num\"><data value=\"0.03\">30 ms</data></td>"));
	CHECK(strstr(sec, "<td class=\"num\">100</td></tr>"));
	free(p);

	/* 100 more in (10, 20] ms: p50 at the edge, p99 in (20, 40]. */
	h.c[1] += 100;
	status_sample_at(s, 30);
	p = page(s);
	sec = section(p, "TCP round-trip time");
	CHECK(near(qcell(sec, "ipv4", 0), 0.020));
	CHECK(near(qcell(sec, "ipv4", 1), 0.020 + 0.020 * 0.98));
	CHECK(strstr(sec, "<td class=\"num\">200</td></tr>"));
	free(p);

	/* Past the +Inf bound: the highest finite one. Four intervals later the first is out. */
	h.c[3] += 1000;
	status_sample_at(s, 45);
	status_sample_at(s, 60);
	status_sample_at(s, 75);
	p = page(s);
	sec = section(p, "TCP round-trip time");
	CHECK(strstr(sec, "in 60 s</th>"));
	CHECK(strstr(sec, "<td class=\"num\">1100</td></tr>"));
	CHECK(near(qcell(sec, "ipv4", 1), 0.040));
	free(p);
	status_sample_at(s, 90);
	status_sample_at(s, 105);
	status_sample_at(s, 120);
	p = page(s);
	CHECK(strstr(section(p, "TCP round-trip time"),
		     "No round trips measured in the last 60 s."));
	free(p);

	/* Native buckets: finer, so taken when there; their schema changed: collecting again. */
	h.native = true;
	status_sample_at(s, 135);
	p = page(s);
	CHECK(strstr(section(p, "TCP round-trip time"), "Collecting"));
	free(p);
	h.c[1] += 10; /* (1, 2] s */
	status_sample_at(s, 150);
	p = page(s);
	sec = section(p, "TCP round-trip time");
	CHECK(near(qcell(sec, "ipv4", 0), 1.5));
	CHECK(near(qcell(sec, "ipv4", 1), 1.99));
	CHECK(strstr(sec, "<data value=\"1.5\">1.5 s</data>"));
	free(p);
	status_free(s);
}

/* A family without the table's label says so (retrans with labels = family,kind,state). */
static void test_no_label(void)
{
	struct status *s = status_new(sc, NULL);
	struct fake rt = { .family = RETRANSMITS_FAMILY, .label = "kind" };
	char *p;

	setup(false, false, NULL);
	table[1] = (struct collector){ &retrans_ops, true, &rt, false, 0 };
	set(&rt, "retransmit", 4);
	status_sample_at(s, 0);
	p = page(s);
	CHECK(strstr(section(p, "TCP retransmits by cause"),
		     "The retrans collector exports no cause label here"));
	free(p);
	status_free(s);
}

int main(void)
{
	sc = scrape_new(table, NULL, NULL);
	CHECK(sc);
	RUN(test_collecting_then_rates);
	RUN(test_counter_reset);
	RUN(test_twenty_reasons);
	RUN(test_quiet_window);
	RUN(test_sources_missing);
	RUN(test_escaping_and_empty_list);
	RUN(test_retransmits_and_quantiles);
	RUN(test_no_label);
	scrape_free(sc);
	CHECK_EXIT();
}
