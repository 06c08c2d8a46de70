// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for exporter/pods/kubedecode.c (back-off, the watch-line splitter, event and list
 * decoders) and kubestats.c (the requests' series).
 */
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "metrics.h"
#include "pods/kubeapi.h"

#define UID1 "0a1b2c3d-4e5f-6789-abcd-ef0123456789"
#define UID2 "1a1b2c3d-4e5f-6789-abcd-ef0123456789"
#define POD(uid, node)                                                                             \
	"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"namespace\":\"team\",\"uid\":\"" uid   \
	"\",\"resourceVersion\":\"7\"},\"spec\":{\"nodeName\":\"" node "\"},\"status\":{"          \
	"\"containerStatuses\":[{\"name\":\"app\",\"containerID\":\"containerd://abc123\"}]}}"

static void backoff(void)
{
	struct kube_backoff b = { 0 };
	const double want[] = { 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30 };
	double now = 1000, d;

	/* Jitter 0: the bare sequence, capped. */
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		d = kube_backoff_next(&b, now, 0);
		CHECK(d > want[i] - 1e-9 && d < want[i] + 1e-9);
		now += d;
	}
	/* Jitter 1.0: up to twice the delay. */
	d = kube_backoff_next(&b, now, 0.999);
	CHECK(d > 59.9 && d < 60);
	now += d;
	/* Failing all along (delays up to 60 s) never resets... */
	d = kube_backoff_next(&b, now + 59, 0);
	CHECK(d == 30);
	/* ...2 minutes without a back-off do. */
	d = kube_backoff_next(&b, now + 59 + 121, 0);
	CHECK(d > 0.79 && d < 0.81);
	d = kube_backoff_next(&b, now + 59 + 122, 0.5);
	CHECK(d > 2.39 && d < 2.41);
}

struct got {
	char text[1024];
	size_t len;
	int lines, stop_at;
};

static int collect(void *arg, const char *line, size_t len)
{
	struct got *g = arg;

	if (g->len + len + 1 < sizeof(g->text)) {
		memcpy(g->text + g->len, line, len);
		g->len += len;
		g->text[g->len++] = '|';
	}
	return ++g->lines == g->stop_at ? 7 : 0;
}

static void lines(void)
{
	static const char in[] = "{\"a\":1}\n\n{\"b\":2}\nx\0y\n{\"c\":";
	const char want[] = "{\"a\":1}|{\"b\":2}|x\0y|";
	struct kube_lines l = { 0 };
	struct got g;

	/* Every split in two chunks, and one byte at a time: the same lines. */
	for (size_t cut = 0; cut <= sizeof(in) - 1; cut++) {
		memset(&g, 0, sizeof(g));
		CHECK(!kube_lines_feed(&l, in, cut, collect, &g));
		CHECK(!kube_lines_feed(&l, in + cut, sizeof(in) - 1 - cut, collect, &g));
		CHECK(g.lines == 3 && g.len == sizeof(want) - 1 && !memcmp(g.text, want, g.len));
		CHECK(l.len == 5); /* {"c": waits for its end */
		kube_lines_reset(&l);
	}
	memset(&g, 0, sizeof(g));
	for (size_t i = 0; i < sizeof(in) - 1; i++)
		CHECK(!kube_lines_feed(&l, in + i, 1, collect, &g));
	CHECK(g.lines == 3 && g.len == sizeof(want) - 1 && !memcmp(g.text, want, g.len));
	kube_lines_reset(&l);
	/* The callback stops the stream: its value comes back, nothing after is looked at. */
	memset(&g, 0, sizeof(g));
	g.stop_at = 1;
	CHECK(kube_lines_feed(&l, in, sizeof(in) - 1, collect, &g) == 7);
	CHECK(g.lines == 1);
	kube_lines_reset(&l);
	free(l.buf);
}

static int count(void *arg, const char *line, size_t len)
{
	(void)line;
	*(size_t *)arg += len;
	return 0;
}

/* A line over the limit fails as it grows; a long line in 1-byte chunks costs its length. */
static void lines_long(void)
{
	size_t n = KUBE_OBJECT_MAX, total = 0;
	char *big = malloc(n + 2);
	struct kube_lines l = { 0 };
	clock_t t;

	memset(big, 'x', n + 1);
	big[n] = '\n';
	t = clock();
	for (size_t i = 0; i <= n; i++)
		CHECK(!kube_lines_feed(&l, big + i, 1, count, &total));
	CHECK(total == n);
	/*
	 * Quadratic would be ~10^13 byte moves (hours); linear is well under a second here, and a
	 * few seconds in an emulated arm64 guest whose host is busy (its clock runs on).
	 */
	CHECK(clock() - t < 30 * CLOCKS_PER_SEC);
	kube_lines_reset(&l);
	CHECK(kube_lines_feed(&l, big, n, count, &total) == 0);
	CHECK(kube_lines_feed(&l, "y", 1, count, &total) == -EMSGSIZE);
	kube_lines_reset(&l);
	free(l.buf);
	free(big);
}

static void events(void)
{
	struct kube_event ev;
	static const char added[] = "{\"type\":\"ADDED\",\"object\":" POD(UID1, "n1") "}";
	static const char nul[] = "{\"type\":\"ADDED\",\0\"object\":{}}";
	char line[512];

	CHECK(!kube_event_decode(added, sizeof(added) - 1, "n1", &ev));
	CHECK(ev.type == KE_ADDED && ev.has_pod);
	CHECK_STR(ev.rv, "7");
	CHECK_STR(ev.pod.uid, UID1);
	CHECK_STR(ev.pod.name, "web");
	CHECK_STR(ev.pod.ns, "team");
	CHECK(ev.pod.nc == 1);
	CHECK_STR(ev.pod.c[0].id, "abc123");
	CHECK_STR(ev.pod.c[0].name, "app");
	/* Another node's pod: an event, no pod. */
	CHECK(!kube_event_decode(added, sizeof(added) - 1, "n2", &ev));
	CHECK(!ev.has_pod);
	snprintf(line, sizeof(line), "%s",
		 "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\","
		 "\"metadata\":{\"resourceVersion\":\"12345\"}}}");
	CHECK(!kube_event_decode(line, strlen(line), "n1", &ev));
	CHECK(ev.type == KE_BOOKMARK && !ev.has_pod);
	CHECK_STR(ev.rv, "12345");
	snprintf(line, sizeof(line), "%s",
		 "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}");
	CHECK(!kube_event_decode(line, strlen(line), "n1", &ev));
	CHECK(ev.type == KE_ERROR && ev.code == 410);
	/* What is no event. */
	CHECK(kube_event_decode(nul, sizeof(nul) - 1, "n1", &ev));
	CHECK(kube_event_decode(added, sizeof(added) - 2, "n1", &ev)); /* cut */
	snprintf(line, sizeof(line), "%s} x", added);
	CHECK(kube_event_decode(line, strlen(line), "n1", &ev)); /* trailing bytes */
	snprintf(line, sizeof(line), "%s", "{\"type\":\"SOMETHING\",\"object\":{}}");
	CHECK(kube_event_decode(line, strlen(line), "n1", &ev));
	snprintf(line, sizeof(line), "%s", "{\"type\":\"ADDED\",\"object\":[]}");
	CHECK(kube_event_decode(line, strlen(line), "n1", &ev));
	snprintf(line, sizeof(line),
		 "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":"
		 "{\"resourceVersion\":\"%0200d\"}}}",
		 1);
	CHECK(kube_event_decode(line, strlen(line), "n1", &ev)); /* rv too long */
	CHECK(kube_event_decode("", 0, "n1", &ev));
}

struct seen {
	int n;
	char uids[4][POD_UID_LEN + 1];
};

static void seen_pod(void *arg, const struct pod *p)
{
	struct seen *s = arg;

	if (s->n < 4)
		strcpy(s->uids[s->n], p->uid);
	s->n++;
}

/* Feeds text in chunks of size chunk; 0 when a PodList. */
static int decode(const char *text, size_t len, size_t chunk, const char *node, struct seen *s,
		  struct kube_list *d)
{
	int ret = 0;

	memset(s, 0, sizeof(*s));
	kube_list_init(d, node, seen_pod, s);
	for (size_t i = 0; i < len && !ret; i += chunk)
		ret = kube_list_feed(d, text + i, len - i < chunk ? len - i : chunk);
	ret = ret ? ret : kube_list_finish(d);
	kube_list_free(d);
	return ret;
}

static void podlists(void)
{
	static const char list[] = " {\"kind\":\"PodList\",\"items\": [ " POD(
		UID1, "n1") " , \"x\" ,{\"a\":[1,\"]\"]}," POD(UID2,
							       "n1") "],\"metadata\":{"
								     "\"resourceVersion\":\"99\","
								     "\"continue\":\"tok\"}}\n";
	struct kube_list d;
	struct seen s;
	char buf[4096];

	for (size_t chunk = 1; chunk <= sizeof(list); chunk++) {
		CHECK(!decode(list, sizeof(list) - 1, chunk, "n1", &s, &d));
		CHECK(s.n == 2 && d.pods == 2);
		CHECK_STR(s.uids[0], UID1);
		CHECK_STR(s.uids[1], UID2);
		CHECK_STR(d.rv, "99");
		CHECK_STR(d.cont, "tok");
	}
	/* The whole skeleton stays small: items are not in it. */
	CHECK(!decode(list, sizeof(list) - 1, 7, "n1", &s, &d) && d.skel_len < 120);
	CHECK(!decode(list, sizeof(list) - 1, 7, "n2", &s, &d) && s.n == 0);
	/* A key spelt with an escape: decoded from the skeleton, the same pods. */
	snprintf(buf, sizeof(buf), "{\"it\\u0065ms\":[%s],\"metadata\":{}}", POD(UID1, "n1"));
	CHECK(!decode(buf, strlen(buf), 3, "n1", &s, &d) && s.n == 1);
	CHECK_STR(d.rv, "");
	CHECK(!decode("{\"items\":null}", 14, 1, "", &s, &d) && s.n == 0);
	CHECK(!decode("{\"items\":[]}", 12, 5, "", &s, &d) && s.n == 0);
	/* No PodList. */
	CHECK(decode("<html>", 6, 1, "", &s, &d));
	CHECK(decode("", 0, 1, "", &s, &d));
	CHECK(decode("{\"kind\":\"Status\",\"code\":500}", 28, 4, "", &s, &d));
	CHECK(decode("{\"items\":[] ", 12, 4, "", &s, &d));	      /* cut */
	CHECK(decode("{\"items\":[]} {}", 15, 4, "", &s, &d));	      /* trailing */
	CHECK(decode("{\"items\":[{]}", 13, 4, "", &s, &d));	      /* bad item */
	CHECK(decode("{\"items\":[{\"a\":\0}]}", 19, 4, "", &s, &d)); /* NUL */
	CHECK(decode("[{\"items\":[]}]", 14, 4, "", &s, &d));
	/* Bounded: a huge item or skeleton stops the decoder at the limit. */
	{
		size_t n = KUBE_OBJECT_MAX + 64;
		char *big = malloc(n);

		memset(big, ' ', n);
		memcpy(big, "{\"items\":[{\"a\":\"", 16);
		memset(big + 16, 'x', n - 16);
		CHECK(decode(big, n, 65536, "", &s, &d));
		memcpy(big, "{\"other\":[\"", 11);
		CHECK(decode(big, KUBE_SKELETON_MAX + 64, 65536, "", &s, &d));
		free(big);
	}
}

/* code="other" is one series per verb: a request ended so and the codes past the table's room. */
static void other_once(void)
{
	struct kube_stats s = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct mbuf m = { 0 };
	struct expo e;
	char code[8];
	const char *p;
	int n = 0;

	kube_stats_count(&s, 0, "other");
	for (int i = 0; i <= KUBE_REQ_SERIES; i++) {
		snprintf(code, sizeof(code), "%d", 400 + i);
		kube_stats_count(&s, 0, code);
	}
	expo_init(&e, &m, FORMAT_PROMETHEUS);
	kube_stats_render(&s, true, &e);
	expo_finish(&e);
	for (p = m.data; (p = strstr(p, "{verb=\"list\",code=\"other\"}")); p++)
		n++;
	CHECK(n == 1);
	CHECK(strstr(m.data, "{verb=\"list\",code=\"other\"} 2\n") != NULL);
	mbuf_free(&m);
}

int main(void)
{
	RUN(backoff);
	RUN(lines);
	RUN(lines_long);
	RUN(events);
	RUN(podlists);
	RUN(other_once);
	CHECK_EXIT();
}
