// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stand-in for the Kubernetes API server's pod endpoints, for the pods and kubeapi tests.
 *
 *   fake_apiserver PORT CERT KEY PODLIST EVENTS MODE[,MODE...] [TOKEN]
 *
 * GET /api/v1/pods?...            the PodList file, whole (as the watch cache answers rv=0,
 *                                 whatever the limit), or in pages with MODE paging
 * GET /api/v1/pods?...&watch=true the lines of EVENTS (one JSON watch event each), streamed as
 *                                 they are appended, until timeoutSeconds or shutdown
 * CERT "-": plain HTTP. With TOKEN, requests without "Authorization: Bearer TOKEN" get 401.
 * MODEs:
 *   ok           nothing special
 *   garbage      200 with a body that is no JSON; forbidden: 403 Status; slow: answers after 30 s
 *   paging       lists honour limit and continue (tokens "c<offset>"), at any resourceVersion;
 *                PODLIST is read once, at start
 *   expire       a list page asked with a continue token: 410 Expired
 *   list_gone    a list at a resourceVersion other than "" and "0": 410 Expired
 *   gone         watches: HTTP 410
 *   throttle     watches: HTTP 429
 *   gone_event   watches: an ERROR event (Status 410), then the end of the stream
 *   error_event  watches: an ERROR event (Status 500), then the end of the stream
 *   bookmark     watches asking allowWatchBookmarks start with a BOOKMARK, rv 1000 + their number
 *   split        watch events go out in 7-byte chunks, 20 ms apart
 *   nul          the first watch starts with an event line holding a NUL byte
 *   empty        watches: 200 with an empty body; close: a chunked body that ends at once
 *   watch_seconds=N  watches end after N s (as the server ends them at timeoutSeconds)
 * Every request is logged on stdout, one line, e.g.
 *   "GET list rv=0 limit=500 continue=- t=0.012" or "GET watch rv=100 bookmarks=true timeout=321
 *   t=0.020" (t: seconds since start; "-": parameter absent).
 */
#define _GNU_SOURCE
#include <json-c/json.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *podlist, *events, *mode, *token;
static int watch_seconds;
static unsigned watches; /* watches served, under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct timespec t0;

static bool has(const char *flag)
{
	size_t n = strlen(flag);

	for (const char *p = mode; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, flag, n) && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n + 1);
	if (buf && fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = '\0';
	fclose(f);
	return buf;
}

struct stream {
	long offset;	 /* in EVENTS */
	time_t deadline; /* end of the watch */
	char pre[8192];	 /* sent before EVENTS' lines */
	size_t pre_len, pre_off;
	bool pre_only;	 /* end after pre */
	char line[8192]; /* a line of EVENTS being sent (split) */
	size_t line_len, line_off;
};

/* Blocks (thread per connection) until there is something to send or the watch ends. */
static ssize_t watch_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;
	size_t piece = has("split") ? 7 : max;

	(void)pos;
	if (s->pre_off < s->pre_len || s->line_off < s->line_len) {
		bool pre = s->pre_off < s->pre_len;
		const char *src = pre ? s->pre + s->pre_off : s->line + s->line_off;
		size_t n = pre ? s->pre_len - s->pre_off : s->line_len - s->line_off;

		n = n < piece ? n : piece;
		n = n < max ? n : max;
		if (piece < max)
			usleep(20000);
		memcpy(buf, src, n); /* a body chunk: no terminator wanted */ // NOLINT
		*(pre ? &s->pre_off : &s->line_off) += n;
		return n;
	}
	if (s->pre_only)
		return MHD_CONTENT_READER_END_OF_STREAM;
	while (time(NULL) < s->deadline) {
		FILE *f = fopen(events, "r");

		if (f && !fseek(f, s->offset, SEEK_SET) && fgets(s->line, sizeof(s->line), f) &&
		    strchr(s->line, '\n')) {
			fclose(f);
			s->line_len = strlen(s->line);
			s->line_off = 0;
			s->offset += s->line_len;
			return watch_reader(cls, pos, buf, max);
		}
		if (f)
			fclose(f);
		usleep(50000);
	}
	return MHD_CONTENT_READER_END_OF_STREAM;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result status_reply(struct MHD_Connection *c, unsigned code, const char *reason)
{
	char body[256];

	snprintf(body, sizeof(body),
		 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
		 "\"reason\":\"%s\",\"code\":%u}",
		 reason, code);
	return reply(c, code, body);
}

static const char *arg(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* For the log: the parameter, or "-" when absent. */
static const char *logged(struct MHD_Connection *c, const char *name)
{
	const char *v = arg(c, name);

	return v ? v : "-";
}

/* PODLIST parsed at start (paging): a page of a large list is then quick to cut. */
static struct json_object *parsed;

/* Items [offset, offset + limit) of the PodList, with a continue token when more follow. */
static enum MHD_Result page(struct MHD_Connection *c, long limit, long offset)
{
	struct json_object *root = parsed, *items, *out, *meta, *v, *slice;
	enum MHD_Result ret;
	long n;

	if (!root || !json_object_object_get_ex(root, "items", &items))
		return status_reply(c, 500, "InternalError");
	pthread_mutex_lock(&lock); /* requests share the items' reference counts */
	n = json_object_array_length(items);
	out = json_object_new_object();
	meta = json_object_new_object();
	slice = json_object_new_array();
	json_object_object_add(out, "kind", json_object_new_string("PodList"));
	json_object_object_add(out, "apiVersion", json_object_new_string("v1"));
	if (json_object_object_get_ex(root, "metadata", &v) &&
	    json_object_object_get_ex(v, "resourceVersion", &v))
		json_object_object_add(meta, "resourceVersion", json_object_get(v));
	if (offset + limit < n) {
		char token[32];

		snprintf(token, sizeof(token), "c%ld", offset + limit);
		json_object_object_add(meta, "continue", json_object_new_string(token));
	}
	json_object_object_add(out, "metadata", meta);
	for (long i = offset; i < n && i < offset + limit; i++)
		json_object_array_add(slice, json_object_get(json_object_array_get_idx(items, i)));
	json_object_object_add(out, "items", slice);
	ret = reply(c, 200, json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
	json_object_put(out);
	pthread_mutex_unlock(&lock);
	return ret;
}

static enum MHD_Result list(struct MHD_Connection *c)
{
	const char *rv = arg(c, "resourceVersion"), *limit = arg(c, "limit"),
		   *cont = arg(c, "continue");
	char *body;
	enum MHD_Result ret;

	if (cont && has("expire"))
		return status_reply(c, 410, "Expired");
	if (rv && *rv && strcmp(rv, "0") && has("list_gone"))
		return status_reply(c, 410, "Expired");
	if (has("paging") && limit && atol(limit) > 0)
		return page(c, atol(limit), cont && *cont == 'c' ? atol(cont + 1) : 0);
	body = slurp(podlist);
	if (!body)
		return status_reply(c, 500, "InternalError");
	ret = reply(c, 200, body);
	free(body);
	return ret;
}

static enum MHD_Result watch(struct MHD_Connection *c)
{
	const char *to = arg(c, "timeoutSeconds"), *bm = arg(c, "allowWatchBookmarks");
	struct stream *s;
	struct MHD_Response *r;
	enum MHD_Result ret;
	unsigned n;

	if (has("gone"))
		return status_reply(c, 410, "Expired");
	if (has("throttle"))
		return status_reply(c, 429, "TooManyRequests");
	if (has("empty"))
		return reply(c, 200, "");
	s = calloc(1, sizeof(*s));
	if (!s)
		return MHD_NO;
	pthread_mutex_lock(&lock);
	n = ++watches;
	pthread_mutex_unlock(&lock);
	s->deadline = time(NULL) + (watch_seconds ? watch_seconds : to ? atoi(to) : 60);
	if (has("close") || has("gone_event") || has("error_event"))
		s->pre_only = true;
	if (has("gone_event") || has("error_event"))
		s->pre_len =
			snprintf(s->pre, sizeof(s->pre),
				 "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
				 "\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":%d}}\n",
				 has("gone_event") ? 410 : 500);
	if (has("bookmark") && bm && !strcmp(bm, "true"))
		s->pre_len = snprintf(
			s->pre, sizeof(s->pre),
			"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\","
			"\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"%u\"}}}\n",
			1000 + n);
	if (has("nul") && n == 1) {
		static const char line[] =
			"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\0}}\n";

		memcpy(s->pre, line, sizeof(line) - 1);
		s->pre_len = sizeof(line) - 1;
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 8192, watch_reader, s, free);
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	const char *w = arg(c, "watch");
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	bool is_watch = w && !strcmp(w, "true");
	char want[512];
	struct timespec ts;

	(void)cls, (void)version, (void)upload, (void)upload_len, (void)state;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (is_watch)
		printf("%s watch rv=%s bookmarks=%s timeout=%s", method,
		       logged(c, "resourceVersion"), logged(c, "allowWatchBookmarks"),
		       logged(c, "timeoutSeconds"));
	else
		printf("%s list rv=%s limit=%s continue=%s", method, logged(c, "resourceVersion"),
		       logged(c, "limit"), logged(c, "continue"));
	printf(" t=%.3f auth=%s%s\n", ts.tv_sec - t0.tv_sec + (ts.tv_nsec - t0.tv_nsec) / 1e9,
	       auth ? "yes" : "no", strcmp(url, "/api/v1/pods") ? " (unknown path)" : "");
	fflush(stdout);
	if (strcmp(method, "GET"))
		return reply(c, 405, "{}");
	if (strcmp(url, "/api/v1/pods"))
		return status_reply(c, 404, "NotFound");
	snprintf(want, sizeof(want), "Bearer %s", token ? token : "");
	if (token && (!auth || strcmp(auth, want)))
		return status_reply(c, 401, "Unauthorized");
	if (has("forbidden"))
		return status_reply(c, 403, "Forbidden");
	if (has("garbage"))
		return reply(c, 200, "<html>this is no PodList");
	if (has("slow"))
		sleep(30);
	return is_watch ? watch(c) : list(c);
}

int main(int argc, char **argv)
{
	struct MHD_Daemon *d;
	char *cert = NULL, *key = NULL;
	bool tls;
	const char *ws;
	sigset_t sigs;
	int sig;

	if (argc < 7) {
		fprintf(stderr, "usage: %s PORT CERT KEY PODLIST EVENTS MODE [TOKEN]\n", argv[0]);
		return 2;
	}
	tls = strcmp(argv[2], "-");
	if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		fprintf(stderr, "libmicrohttpd built without TLS\n");
		return 77;
	}
	if (tls) {
		cert = slurp(argv[2]);
		key = slurp(argv[3]);
		if (!cert || !key) {
			fprintf(stderr, "cannot read %s or %s\n", argv[2], argv[3]);
			return 1;
		}
	}
	podlist = argv[4];
	events = argv[5];
	mode = argv[6];
	token = argc > 7 ? argv[7] : NULL;
	if (has("paging")) {
		char *body = slurp(podlist);

		parsed = body ? json_tokener_parse(body) : NULL;
		free(body);
	}
	ws = strstr(mode, "watch_seconds=");
	watch_seconds = ws ? atoi(ws + 14) : 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
				     (tls ? MHD_USE_TLS : 0) | MHD_USE_ERROR_LOG,
			     (uint16_t)atoi(argv[1]), NULL, NULL, handle, NULL,
			     tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, cert,
			     MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "cannot listen on port %s\n", argv[1]);
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	sigwait(&sigs, &sig);
	/* Watches block in their reader: do not wait for them. */
	_exit(0);
}
